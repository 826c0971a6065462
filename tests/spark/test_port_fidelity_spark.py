"""Issue 19 on Spark: inherited serdes (a count written as 8-byte longs without a Produced), an
aggregate changed in place by its aggregator (no store aliasing; the old value a cached
aggregation forwards is the stored one) and the record context of cache flushes give the same
records as TopologyTestDriver (rules SA-10, E-5, T-17)."""

from kspark import Grouped, KafkaStreams, Materialized, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

RECORDS = [(f"k{i % 7}", f"w{i % 5}", 1_000 + i) for i in range(120)]
RAW = Serdes.ByteArray()


def append(key, value, agg):
    agg.append(value)
    return agg


class LastOffset:
    """Forwards ``key -> "<topic>@<offset>"`` of the record context it sees."""

    def init(self, context):
        self.context = context

    def process(self, record):
        meta = self.context.recordMetadata()
        self.context.forward(record.withValue(f"{meta.topic}@{meta.offset}"))

    def close(self):
        pass


def topology():
    b = StreamsBuilder()
    grouped = b.stream("words").groupByKey()
    counts = grouped.count()
    counts.toStream().to("counts")
    counts.toStream().process(LastOffset).to("meta")
    lists = grouped.aggregate(list, append, Materialized.as_("lists"))
    (lists.groupBy(lambda k, v: ("total", v), Grouped.with_(Serdes.String(), Serdes.JSON()))
     .aggregate(lambda: 0, lambda k, v, agg: agg + len(v), lambda k, v, agg: agg - len(v)).toStream().to("totals"))
    return b.build()


def onDriver(cacheBytes):
    with TopologyTestDriver(topology(), {"statestore.cache.max.bytes": cacheBytes}) as d:
        for k, v, ts in RECORDS:
            d.createInputTopic("words").pipeInput(k, v, ts)
        return {t: [(r.key(), r.value()) for r in d.createOutputTopic(t, RAW, RAW).readRecordsToList()]
                for t in ("counts", "meta", "totals")}


def test_port_fidelity_on_spark_matches_the_driver(spark, tmp_path):
    topics = LocalTopics(tmp_path / "topics")
    for t in ("words", "counts", "meta", "totals"):
        topics.createTopic(t, 1)
    topics.produce("words", [(Serdes.String().serialize("w", k), Serdes.JSON().serialize("w", v), ts)
                             for k, v, ts in RECORDS], partitioner=partitionForKey)

    def runOnSpark(appId, cacheBytes):
        before = {t: topics.endOffsets(t)[0] for t in ("counts", "meta", "totals")}
        streams = KafkaStreams(topology(), {
            "application.id": appId, "kspark.topics.dir": str(tmp_path / "topics"), "state.dir": str(tmp_path / appId),
            "kspark.max.records.per.trigger": 40, "statestore.cache.max.bytes": cacheBytes}, spark=spark)
        streams.start()
        streams.awaitTermination()
        streams.close()
        out = {}
        for t, start in before.items():
            table = topics.read(t, 0, start, topics.endOffset(t, 0))
            out[t] = list(zip(table.column("key").to_pylist(), table.column("value").to_pylist()))
        return out

    uncached = onDriver(0)
    assert uncached["counts"][0] == (b"k0", (1).to_bytes(8, "big"))   # Kafka's Long serde, inherited
    assert runOnSpark("uncached", 0) == uncached

    cached, driverCached = runOnSpark("cached", 10 * 1024 * 1024), onDriver(10 * 1024 * 1024)
    # Spark commits once per micro-batch: fewer updates, the same last one per key, in the record
    # context of the key's last input record, and the same totals (the stored old list subtracted)
    for topic in ("counts", "meta", "totals"):
        assert dict(cached[topic]) == dict(driverCached[topic])
    assert dict(driverCached["totals"]) == {b"total": b"120"}
