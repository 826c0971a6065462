"""Poisoned records on Spark: LogAndContinue skips and counts them, the dead-letter topic gets
the original bytes, and KafkaStreams.metrics() reports the drops (issue 8)."""

from kspark import Consumed, KafkaStreams, LogAndContinueExceptionHandler, Produced, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.topics import LocalTopics


def test_poisoned_values_go_to_the_dead_letter_topic_and_are_counted(spark, tmp_path):
    topics = LocalTopics(tmp_path / "topics")
    for name in ("in", "out", "dlq"):
        topics.createTopic(name, 2)
    good = [(f"k{i}".encode(), i.to_bytes(8, "big"), 100 + i) for i in range(6)]
    poison = [(b"k1", b"not-a-long", 200), (b"k4", b"\x01", 201)]
    topics.produce("in", good + poison, partitioner=partitionForKey)

    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).mapValues(lambda v: v * 10).to(
        "out", Produced.with_(Serdes.String(), Serdes.Long()))
    streams = KafkaStreams(b.build(), {
        "application.id": "poison", "kspark.topics.dir": str(tmp_path / "topics"), "state.dir": str(tmp_path / "state"),
        "default.deserialization.exception.handler": LogAndContinueExceptionHandler,
        "errors.deadletterqueue.topic.name": "dlq",
    }, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()

    def read(topic):
        rows = []
        for p in range(2):
            t = topics.read(topic, p, 0, topics.endOffset(topic, p))
            rows += list(zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist()))
        return sorted(rows)

    assert read("out") == sorted((k, (int.from_bytes(v, "big") * 10).to_bytes(8, "big"), ts) for k, v, ts in good)
    assert read("dlq") == sorted(poison)
    drops = [(m.tag("task-id"), m.tag("reason"), v) for m, v in streams.metrics().items()
             if m.group == "kspark-dropped-records"]
    assert sorted(drops) == [("0_0", "deserialization error", 1), ("0_1", "deserialization error", 1)]
