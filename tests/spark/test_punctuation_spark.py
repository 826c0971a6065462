"""Punctuators on Spark: stream-time punctuation gives the driver's records across
micro-batches; wall-clock punctuation fires in continuous mode without new records
(rules P-2..P-7, TTD-1, TTD-3)."""

import time

from kspark import ContextualProcessor, KafkaStreams, PunctuationType, Record, Serdes, StreamsBuilder, Stores
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics


class CountAndReport(ContextualProcessor):
    """Counts records per key; a punctuator forwards the whole store (task-scoped iteration)."""

    def __init__(self, type, interval):
        self.type, self.interval = type, interval

    def init(self, context):
        super().init(context)
        self.store = context.getStateStore("counts")
        context.schedule(self.interval, self.type, self.report)

    def process(self, record):
        self.store.put(record.key(), (self.store.get(record.key()) or 0) + 1)

    def report(self, timestamp):
        totals = [[kv.key, kv.value] for kv in self.store.all()]
        self.context().forward(Record("report", totals, timestamp))


def topology(type, interval):
    b = StreamsBuilder()
    b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("counts"), Serdes.String(), Serdes.Long()))
    b.stream("events").process(lambda: CountAndReport(type, interval), "counts").to("reports")
    return b.build()


def load(topics, records, partitions=1):
    topics.createTopic("events", partitions)
    topics.createTopic("reports", 1)
    key, value = Serdes.String(), Serdes.JSON()
    topics.produce("events", [(key.serialize("e", k), value.serialize("e", v), ts) for k, v, ts in records],
                   partitioner=partitionForKey)


def readReports(topics):
    t = topics.read("reports", 0, 0, topics.endOffset("reports", 0))
    return [(Serdes.JSON().deserialize("r", v), ts) for v, ts in zip(t.column("value").to_pylist(), t.column("timestamp").to_pylist())]


def test_stream_time_punctuation_on_spark_equals_the_driver(spark, tmp_path):
    records = [(f"k{i % 4}", i, 1_000 + 37 * i + (500 if i == 40 else 0)) for i in range(120)]
    with TopologyTestDriver(topology(PunctuationType.STREAM_TIME, 300)) as d:
        i = d.createInputTopic("events")
        for k, v, ts in records:
            i.pipeInput(k, v, ts)
        expected = [(r.value(), r.timestamp()) for r in d.createOutputTopic("reports").readRecordsToList()]
    assert len(expected) > 10

    topics = LocalTopics(tmp_path / "topics")
    load(topics, records)
    props = {"application.id": "punct", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "kspark.max.records.per.trigger": 25}
    streams = KafkaStreams(topology(PunctuationType.STREAM_TIME, 300), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    assert readReports(topics) == expected
    assert len(streams.queries()[0].recentProgress) == 5  # the schedule crossed micro-batches


def test_wall_clock_punctuation_fires_without_new_records_in_continuous_mode(spark, tmp_path):
    topics = LocalTopics(tmp_path / "topics")
    load(topics, [("a", 1, 10), ("b", 2, 20), ("a", 3, 30)])
    props = {"application.id": "wall", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "kspark.trigger": "500 milliseconds"}
    streams = KafkaStreams(topology(PunctuationType.WALL_CLOCK_TIME, 1_000), props, spark=spark)
    started = int(time.time() * 1000)
    streams.start()
    deadline = time.time() + 120
    while topics.endOffset("reports", 0) < 3 and time.time() < deadline:
        time.sleep(0.5)
    streams.close()
    reports = readReports(topics)
    assert len(reports) >= 3
    assert [v for v, _ in reports[-2:]] == [[["a", 2], ["b", 1]]] * 2
    stamps = [ts for _, ts in reports]
    assert stamps == sorted(stamps) and stamps[0] >= started + 1_000
    # at most once per 1 s grid point (P-5: a late check fires once and keeps the grid)
    assert len(stamps) <= (stamps[-1] - stamps[0]) // 1_000 + 2
