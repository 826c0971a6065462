"""KStream-GlobalKTable joins on Spark: every task gets the global topic's records (read whole in
every micro-batch) and applies them in timestamp order with its stream records, so seed 004's
race (a valuation update at T, a price at T+60 ms that missed it) cannot happen, whether the
update and the price share a micro-batch or not, and across a restart from the checkpoint; nor
does a price see an update stamped after it. Same output as TopologyTestDriver (rules J-7, J-8,
T-12, T-14, TTD-4)."""

from kspark import Consumed, KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

T = 1_773_000_000_000
DAY = 86_400_000
KEY, JSON = Serdes.String(), Serdes.JSON()


def topology():
    b = StreamsBuilder()
    master = b.globalTable("valuations", Consumed.with_(KEY, JSON), Materialized.as_("valuations-global"))
    prices = b.stream("prices", Consumed.with_(KEY, JSON))
    (prices.join(master, lambda code, p: p.get("code"), lambda code, p, v: {"close": p["close"], "per": v["per"]})
     .to("joined", Produced.with_(KEY, JSON)))
    (prices.leftJoin(master, lambda code, p: p.get("code"), lambda p, v: {"close": p["close"], "per": v and v["per"]})
     .to("left", Produced.with_(KEY, JSON)))
    return b.build()


def seedRace():
    """Seed 004: valuation v1 a day before, price at T-1, update v2 at T, price at T+60 ms."""
    valuations = [("005930", {"per": 30.0}, T - DAY), ("005930", {"per": 28.0}, T)]
    prices = [("005930", {"code": "005930", "close": 100}, T - 1), ("005930", {"code": "005930", "close": 101}, T + 60)]
    return valuations, prices


def manyCodes():
    """8 codes over 5 price partitions, a valuation update every 37 ms round-robin, prices every
    11 ms; code C7 has no valuation (inner join drops it), one price lacks a code (J-8 drop)."""
    codes = [f"C{i}" for i in range(8)]
    valuations = [(codes[i % 7], {"per": float(i)}, T + 37 * i) for i in range(30)]
    prices = [(codes[i % 8], {"code": codes[i % 8], "close": i}, T + 11 * i + 5) for i in range(100)]
    prices.append(("C1", {"close": -1}, T + 500))
    return valuations, prices


def onDriver(valuations, prices):
    events = sorted([(ts, 0, "valuations", k, v) for k, v, ts in valuations] +
                    [(ts, 1, "prices", k, v) for k, v, ts in prices])
    with TopologyTestDriver(topology()) as d:
        inputs = {"valuations": d.createInputTopic("valuations", KEY, JSON), "prices": d.createInputTopic("prices", KEY, JSON)}
        for ts, _, topic, k, v in events:
            inputs[topic].pipeInput(k, v, ts)
        return ({t: sorted((r.key(), r.timestamp(), r.value()["close"], r.value()["per"])
                           for r in d.createOutputTopic(t, KEY, JSON).readRecordsToList()) for t in ("joined", "left")},
                list(d.getTimestampedKeyValueStore("valuations-global").all()))


def produce(topics, topic, records):
    """Append in timestamp order, as the seed's producers write (each partition is FIFO, T-11)."""
    records = sorted(records, key=lambda r: r[2])
    topics.produce(topic, [(KEY.serialize(topic, k), JSON.serialize(topic, v), ts) for k, v, ts in records],
                   partitioner=partitionForKey)


def createTopics(topics):
    topics.createTopic("prices", 5)
    topics.createTopic("valuations", 1)
    topics.createTopic("joined", 5)
    topics.createTopic("left", 5)


def run(spark, tmp_path, maxRecords=None):
    props = {"application.id": "global-join", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state")}
    if maxRecords:
        props["kspark.max.records.per.trigger"] = maxRecords
    streams = KafkaStreams(topology(), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    return streams


def outputs(topics):
    result = {}
    for t in ("joined", "left"):
        rows = []
        for p in range(5):
            table = topics.read(t, p, 0, topics.endOffset(t, p))
            for k, ts, v in zip(table.column("key").to_pylist(), table.column("timestamp").to_pylist(),
                                table.column("value").to_pylist()):
                value = JSON.deserialize(t, v)
                rows.append((KEY.deserialize(t, k), ts, value["close"], value["per"]))
        result[t] = sorted(rows)
    return result


def test_seed_004_update_and_prices_in_different_micro_batches(spark, tmp_path):
    """One price per micro-batch (global topics are read whole, outside the limit): batch 0 has
    both valuations and the price at T-1, which must see the old one (the update at T waits in
    the global queue: the task waits for its price partition, T-14); batch 1 has the price at
    T+60, which must see the update."""
    valuations, prices = seedRace()
    expected, _ = onDriver(valuations, prices)
    assert expected["joined"] == [("005930", T - 1, 100, 30.0), ("005930", T + 60, 101, 28.0)]
    topics = LocalTopics(tmp_path / "topics")
    createTopics(topics)
    produce(topics, "prices", prices)
    produce(topics, "valuations", valuations)
    streams = run(spark, tmp_path, maxRecords=1)
    assert outputs(topics) == expected
    assert streams.queries()[0].lastProgress["batchId"] == 1


def test_same_batch_race_then_restart_from_checkpoint_equals_the_driver(spark, tmp_path):
    """First run: the update at T and the price at T+60 in one micro-batch. Second run, after
    a restart: the rest, whose prices join valuations applied before the restart (the global
    store comes back from the checkpoint). Output and store equal TopologyTestDriver's."""
    valuations, prices = manyCodes()
    race = seedRace()
    valuations, prices = valuations + race[0], prices + race[1]
    expected, _ = onDriver(valuations, prices)
    assert ("005930", T + 60, 101, 28.0) in expected["joined"]
    assert not any(k == "C7" for k, *_ in expected["joined"])  # no valuation: inner join drops
    assert sum(1 for k, *_ in expected["left"] if k == "C7") == 12  # left join: per None
    assert not any(close == -1 for _, _, close, _ in expected["left"])  # J-8: null mapped key dropped
    topics = LocalTopics(tmp_path / "topics")
    createTopics(topics)
    first = lambda records: [r for r in records if r[2] <= T + 60]  # noqa: E731
    later = lambda records: [r for r in records if r[2] > T + 60]  # noqa: E731
    produce(topics, "valuations", first(valuations))
    produce(topics, "prices", first(prices))
    run(spark, tmp_path)
    assert ("005930", T + 60, 101, 28.0) in outputs(topics)["joined"]
    produce(topics, "valuations", later(valuations))
    produce(topics, "prices", later(prices))
    streams = run(spark, tmp_path)  # resumes from the checkpoint: global store restored
    assert outputs(topics) == expected
    with TopologyTestDriver(topology()) as d:
        for k, v, ts in sorted(valuations, key=lambda r: r[2]):
            d.createInputTopic("valuations", KEY, JSON).pipeInput(k, v, ts)
        driverStore = list(d.getTimestampedKeyValueStore("valuations-global").all())
    assert list(streams.checkpointedStore("valuations-global").all()) == driverStore


def test_reader_reads_global_topics_to_their_end_outside_max_records_per_trigger(tmp_path):
    from pyspark.sql.streaming.datasource import ReadMaxRows

    from kspark.spark._datasource import TopicsStreamReader

    topics = LocalTopics(tmp_path)
    createTopics(topics)
    valuations, prices = manyCodes()
    produce(topics, "valuations", valuations)
    produce(topics, "prices", prices)
    reader = TopicsStreamReader({"root": str(tmp_path), "topics": "prices,valuations",
                                      "maxRecordsPerTrigger": "10", "unlimitedTopics": "valuations"})
    end = reader.latestOffset(reader.initialOffset(), ReadMaxRows(10))
    assert end["valuations/0"] == 30  # all of the global topic
    assert sum(end[f"prices/{p}"] for p in range(5)) == 10  # the limit applies to the rest
