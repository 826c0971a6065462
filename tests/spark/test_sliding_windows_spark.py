"""A sliding-window aggregation on Spark gives, per partition, TopologyTestDriver's records:
every window update, late drops, in micro-batches of 40 (the window store and the processor's
stream time in the task's checkpointed state; issue 20 item 2, KIP-450)."""

import random

from kspark import (Consumed, KafkaStreams, Materialized, Produced, Serdes, SlidingWindows, StreamsBuilder,
                    WindowedSerdes)
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

PARTITIONS = 2
CONFIG = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String(), "statestore.cache.max.bytes": 0}
rng, ts = random.Random(3), 0
RECORDS = []
for i in range(150):
    ts += rng.choice([1, 5, 20, 80])
    RECORDS.append((rng.choice("abcde"), str(i), max(0, ts - rng.choice([0, 0, 0, 60]))))


def topology():
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(50, 30))
     .aggregate(lambda: "", lambda k, v, agg: f"{agg}|{v}", Materialized.with_(Serdes.String(), Serdes.String()))
     .toStream().to("out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 50), Serdes.String())))
    return b.build()


def test_sliding_window_aggregate_on_spark_matches_the_driver_per_partition(spark, tmp_path):
    key = Serdes.String()
    expected = []
    for p in range(PARTITIONS):
        with TopologyTestDriver(topology(), CONFIG) as d:
            inp = d.createInputTopic("in")
            for k, v, t in RECORDS:
                if partitionForKey(key.serialize("in", k), PARTITIONS) == p:
                    inp.pipeInput(k, v, t)
            expected.append([(r.key().key(), r.key().window().start(), r.value(), r.timestamp())
                             for r in d.createOutputTopic("out").readRecordsToList()])
    assert sum(map(len, expected)) > 150

    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("in", PARTITIONS)
    topics.createTopic("out", PARTITIONS)
    topics.produce("in", [(key.serialize("in", k), key.serialize("in", v), t) for k, v, t in RECORDS],
                   partitioner=partitionForKey)
    props = {"application.id": "sliding", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "kspark.max.records.per.trigger": 40, **CONFIG}
    streams = KafkaStreams(topology(), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    serde = WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 50)
    got = []
    for p in range(PARTITIONS):
        t = topics.read("out", p, 0, topics.endOffset("out", p))
        rows = []
        for k, v, ts_ in zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist()):
            w = serde.deserialize("out", k)
            rows.append((w.key(), w.window().start(), v.decode(), ts_))
        got.append(rows)
    assert got == expected
