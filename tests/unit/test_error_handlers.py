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
        assert dict(dead[0].headers())["__streams.errors.exception"] == b"kspark.serialization.SerializationException"


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
        task = MetricName("dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0")))
        assert d.metrics()[task] == 3


# ---------------------------------------------------------------- issue 36 item 2: processing errors reach the DLQ
def _dlqRecords(d):
    return d.createOutputTopic("dlq", Serdes.ByteArray(), Serdes.ByteArray()).readRecordsToList()


def _headers(record) -> dict:
    return {name: (None if value is None else value.decode()) for name, value in record.headers()}


def test_processing_error_under_log_and_continue_writes_the_input_bytes_and_kip_1034_headers():
    """KIP-1034 (Kafka 4.3 ``LogAndContinueProcessingExceptionHandler``: ``Response.resume(
    maybeBuildDeadLetterQueueRecords(...))``): the failing input's original key and value bytes,
    its timestamp and headers, then the ``__streams.errors.*`` headers. Compared with Kafka
    Streams 4.3 by the conformance scenario ``fail.processing.continue.dlq``."""
    config = {"processing.exception.handler": LogAndContinueProcessingExceptionHandler,
              "errors.dead.letter.queue.topic.name": "dlq"}
    with TopologyTestDriver(oddTopology(), config) as d:
        i = d.createInputTopic("in", Serdes.String(), Serdes.ByteArray())
        i.pipeInput("k", b"2", 1)
        d._pipeRecord("in", b"k1", b"3", 7, (("h", b"x"),))
        assert d.createOutputTopic("out").readValuesToList() == [2]
        dead = _dlqRecords(d)
        assert [(r.key(), r.value(), r.timestamp()) for r in dead] == [(b"k1", b"3", 7)]
        h = _headers(dead[0])
        assert list(h) == ["h", "__streams.errors.exception", "__streams.errors.message", "__streams.errors.stacktrace",
                           "__streams.errors.topic", "__streams.errors.partition", "__streams.errors.offset"]
        assert (h["h"], h["__streams.errors.exception"], h["__streams.errors.message"]) == ("x", "ValueError", "odd 3")
        assert h["__streams.errors.stacktrace"].startswith("Traceback") and "odd 3" in h["__streams.errors.stacktrace"]
        assert (h["__streams.errors.topic"], h["__streams.errors.partition"], h["__streams.errors.offset"]) == ("in", "0", "1")


def test_processing_error_under_the_default_handler_writes_the_dlq_record_then_fails():
    """Kafka 4.3 ``LogAndFailProcessingExceptionHandler``: ``Response.fail(records)``, the
    dead-letter record sent before the task fails."""
    with TopologyTestDriver(oddTopology(), {"errors.dead.letter.queue.topic.name": "dlq"}) as d:
        with pytest.raises(StreamsException, match="processor=odd"):
            d._pipeRecord("in", b"k", b"1", 5, ())
        assert [(r.key(), r.value(), r.timestamp()) for r in _dlqRecords(d)] == [(b"k", b"1", 5)]


def test_punctuator_error_dlq_record_has_no_key_value_or_topic():
    """A punctuator's error (Kafka ``StreamTask.punctuate``): no input record, so a null key,
    value and topic header, partition and offset -1, the punctuation's timestamp."""
    config = {"processing.exception.handler": LogAndContinueProcessingExceptionHandler,
              "errors.dead.letter.queue.topic.name": "dlq"}
    with TopologyTestDriver(oddTopology(), config) as d:
        d._pipeRecord("in", b"k", b"2", 25, ())
        dead = _dlqRecords(d)
        assert [(r.key(), r.value(), r.timestamp()) for r in dead] == [(None, None, 25)]
        h = _headers(dead[0])
        assert (h["__streams.errors.topic"], h["__streams.errors.partition"], h["__streams.errors.offset"]) == (None, "-1", "-1")


def test_a_kafka_4_handler_returns_its_own_dead_letter_records():
    """``handleError`` returning ``ProcessingExceptionHandler.Response.resume(records)``: the
    task writes the records the handler built (here with Kafka's ``buildDeadLetterQueueRecord``)."""
    from kspark.errors import ProcessingExceptionHandler, buildDeadLetterQueueRecord

    class ToMyTopic(ProcessingExceptionHandler):
        def handleError(self, context, record, exception):
            return ProcessingExceptionHandler.Response.resume(
                [buildDeadLetterQueueRecord("mine", b"K", context.sourceRawValue, context, exception)])

    with TopologyTestDriver(oddTopology(), {"processing.exception.handler": ToMyTopic}) as d:
        d._pipeRecord("in", b"k", b"1", 3, ())
        mine = d.createOutputTopic("mine", Serdes.ByteArray(), Serdes.ByteArray()).readRecordsToList()
        assert [(r.key(), r.value(), r.timestamp()) for r in mine] == [(b"K", b"1", 3)]
        assert dropped(d) == {"processing error: ValueError": 1}
