"""The same topology on TopologyTestDriver and on Spark in continuous mode gives the same
records, in the same order per key (rules T-11, T-15, E-3, DP-2)."""

import time

from kspark import ContextualProcessor, KafkaStreams, Serdes, StreamsBuilder, Stores
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics


class RunningTotal(ContextualProcessor):
    def init(self, context):
        super().init(context)
        self.store = context.getStateStore("totals")

    def process(self, record):
        total = (self.store.get(record.key()) or 0) + record.value()
        self.store.put(record.key(), total)
        self.context().forward(record.withValue(total))


def topology():
    b = StreamsBuilder()
    b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("totals"), Serdes.String(), Serdes.Long()))
    (b.stream("in").filter(lambda k, v: v % 3 != 0).mapValues(lambda v: v * 2)
     .process(RunningTotal, "totals").to("out"))
    return b.build()


RECORDS = [(f"user-{i % 7}", i, 1_000 + 10 * i) for i in range(300)]


def test_continuous_spark_run_matches_the_driver(spark, tmp_path):
    with TopologyTestDriver(topology()) as d:
        topic = d.createInputTopic("in")
        for k, v, ts in RECORDS:
            topic.pipeInput(k, v, ts)
        expected = [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("out").readRecordsToList()]

    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("in", 3)
    topics.createTopic("out", 3)
    key, value = Serdes.String(), Serdes.JSON()
    topics.produce("in", [(key.serialize("in", k), value.serialize("in", v), ts) for k, v, ts in RECORDS],
                   partitioner=partitionForKey)
    streams = KafkaStreams(topology(), {
        "application.id": "parity", "kspark.topics.dir": str(tmp_path / "topics"),
        "state.dir": str(tmp_path / "state"), "kspark.trigger": "500 milliseconds",
        "kspark.max.records.per.trigger": 100,
    }, spark=spark)
    streams.start()
    deadline = time.time() + 180
    while sum(topics.endOffsets("out").values()) < len(expected) and time.time() < deadline:
        time.sleep(0.5)
    streams.close()

    got = []
    for p in range(3):
        t = topics.read("out", p, 0, topics.endOffset("out", p))
        for k, v, ts in zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist()):
            assert partitionForKey(k, 3) == p
            got.append((key.deserialize("out", k), value.deserialize("out", v), ts))
    assert sorted(got) == sorted(expected)
    for user in {k for k, _, _ in RECORDS}:
        assert [r for r in got if r[0] == user] == [r for r in expected if r[0] == user]
