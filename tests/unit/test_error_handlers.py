"""Deserialization and processing exception handlers, dead-letter queue (issue 8; rules P-8, T-8)."""

import pytest

from kspark import (
    Consumed, ContextualProcessor, LogAndContinueExceptionHandler, LogAndContinueProcessingExceptionHandler,
    PunctuationType, Serdes, StreamsBuilder, StreamsException, Topology,
)
from kspark.runtime.metrics import MetricName
from kspark.testing import TestRecord, TopologyTestDriver


def longValues(config=None):
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).mapValues(lambda v: v + 1).to(
        "out", __import__("kspark").Produced.with_(Serdes.String(), Serdes.Long()))
    return TopologyTestDriver(b.build(), config)


def pipeRaw(d, key, value, ts):
    d._pipeRecord("in", key, value, ts, ())


def dropped(d):
    return {m.tag("reason"): v for m, v in d.metrics().items() if m.group == "kspark-dropped-records"}


def test_log_and_fail_is_the_default_and_names_topic_partition_offset():
    with longValues() as d:
        pipeRaw(d, b"k", (5).to_bytes(8, "big"), 1)
        with pytest.raises(StreamsException, match=r"Deserialization exception handler is set to fail upon a "
                                                   r"deserialization error. If you would rather have the streaming pipeline continue after a deserialization "
                                                   r"error, please set the deserialization.exception.handler appropriately. "
                                                   r"topic=in, partition=0, offset=1: "
                                                   r"SerializationException: Size of data received by LongDeserializer is not 8"):
            pipeRaw(d, b"k", b"abc", 2)


def test_log_and_continue_skips_counts_and_writes_the_dead_letter_queue():
    config = {"default.deserialization.exception.handler": LogAndContinueExceptionHandler,
              "errors.deadletterqueue.topic.name": "dlq"}
    with longValues(config) as d:
        pipeRaw(d, b"k", b"abc", 2)
        pipeRaw(d, b"k", (5).to_bytes(8, "big"), 3)
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("k", 6, 3)]
        assert dropped(d) == {"deserialization error": 1}
        dead = d.createOutputTopic("dlq", Serdes.ByteArray(), Serdes.ByteArray()).readRecordsToList()
        assert [(r.key(), r.value(), r.timestamp()) for r in dead] == [(b"k", b"abc", 2)]
        assert dict(dead[0].headers())["__streams.errors.offset"] == b"0"
        assert dict(dead[0].headers())["__streams.errors.exception"] == b"SerializationException"


class FailsOnOdd(ContextualProcessor):
    def init(self, context):
        super().init(context)
        context.schedule(10, PunctuationType.STREAM_TIME, self.punctuate)

    def punctuate(self, ts):
        if ts >= 20:
            raise ValueError("punctuator failed")

    def process(self, record):
        if record.value() % 2:
            raise ValueError(f"odd {record.value()}")
        self.context().forward(record)


def oddTopology():
    t = Topology().addSource("src", "in").addProcessor("odd", FailsOnOdd, "src").addSink("sink", "out", "odd")
    t.addProcessor("echo", lambda: _Echo(), "src").addSink("echoSink", "echo", "echo")
    return t


class _Echo(ContextualProcessor):
    def process(self, record):
        self.context().forward(record)


def test_processing_error_fails_by_default_naming_node_and_record():
    with TopologyTestDriver(oddTopology()) as d:
        with pytest.raises(StreamsException, match=r"taskId=0_0, processor=odd, topic=in, partition=0, offset=0, "
                                                   r"stacktrace=ValueError: odd 1"):
            d.createInputTopic("in").pipeInput("k", 1, 1)


def test_processing_handler_continue_drops_at_the_failing_node_only_and_counts():
    with TopologyTestDriver(oddTopology(), {"processing.exception.handler": LogAndContinueProcessingExceptionHandler}) as d:
        i = d.createInputTopic("in")
        for v, ts in [(1, 1), (2, 2), (3, 25)]:
            i.pipeInput("k", v, ts)
        assert d.createOutputTopic("out").readValuesToList() == [2]
        assert d.createOutputTopic("echo").readValuesToList() == [1, 2, 3]  # sibling branch unaffected
        assert dropped(d) == {"processing error: ValueError": 2, "punctuator error: ValueError": 1}
        task = MetricName("dropped-records-total", "stream-task-metrics", (("task-id", "0_0"),))
        assert d.metrics()[task] == 3
