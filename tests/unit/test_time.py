"""Record order, stream time and timestamp extractors in the task engine (rules T-1..T-13)."""

from datetime import datetime, timezone

import pytest

from kspark import (
    Consumed, ContextualProcessor, FailOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp, StreamsBuilder,
    StreamsException, TimestampExtractor, Topology, UsePartitionTimeOnInvalidTimestamp,
)
from kspark.config import StreamsConfig
from kspark.runtime.metrics import MetricName
from kspark.runtime.record_queue import RawRecord
from kspark.runtime.stream_task import StreamTask
from kspark.testing import TestRecord, TopologyTestDriver


class Trace(ContextualProcessor):
    def process(self, record):
        self.context().forward(record.withValue(
            [record.value(), record.timestamp(), self.context().currentStreamTimeMs()]))


def twoTopicTask(config=None):
    t = Topology().addSource("src", "a", "b").addProcessor("trace", Trace, "src").addSink("sink", "out", "trace")
    return StreamTask("0_1", t.subtopologies()[0], {}, StreamsConfig(config), 1, lambda x: x, lambda x: 2)


def raw(offset, ts, value):
    return RawRecord(offset, ts, b"k", str(value).encode())


def values(task):
    import json
    return [json.loads(r.value) for r in task.drainProduced()]


def test_t11_t12_t13_fifo_per_partition_smallest_head_across_partitions_stream_time_is_max():
    task = twoTopicTask()
    task.initialize()
    task.addRecords("a", [raw(0, 10, 1), raw(1, 5, 2), raw(2, 30, 3)])
    task.addRecords("b", [raw(0, 20, 4), raw(1, 25, 5)])
    task.processAll(0)
    # a's 5 stays behind a's 10 (FIFO); heads compared across partitions; stream time never decreases
    assert values(task) == [[1, 10, 10], [2, 5, 10], [4, 20, 20], [5, 25, 25], [3, 30, 30]]
    assert task.queueOf["a"].partitionTime == 30 and task.queueOf["b"].partitionTime == 25


def test_t14_waits_for_a_partition_with_known_lag_and_not_for_a_caught_up_one():
    task = twoTopicTask()
    task.initialize()
    task.addRecords("a", [raw(0, 10, 1)], lag=0)
    task.addRecords("b", [], lag=3)  # data exists upstream but is not here yet
    assert task.processAll(0) == 0
    task.addRecords("b", [raw(0, 5, 2)], lag=0)
    assert task.processAll(0) == 2
    assert values(task) == [[2, 5, 5], [1, 10, 10]]
    task.addRecords("a", [raw(1, 40, 3)], lag=0)  # b empty but caught up: enforced processing
    assert task.processAll(0) == 1


def test_t14_unknown_lag_is_waited_for_and_idle_ms_minus_one_never_waits():
    task = twoTopicTask()
    task.addRecords("a", [raw(0, 10, 1)], lag=0)
    assert task.processAll(0) == 0
    eager = twoTopicTask({"max.task.idle.ms": -1})
    eager.initialize()
    eager.addRecords("a", [raw(0, 10, 1)], lag=0)
    assert eager.processAll(0) == 1


def test_t14_max_task_idle_ms_waits_on_the_wall_clock():
    task = twoTopicTask({"max.task.idle.ms": 100})
    task.initialize()
    task.addRecords("a", [raw(0, 10, 1)], lag=0)
    task.addRecords("b", [], lag=0)
    assert task.processAll(1000) == 0
    assert task.processAll(1099) == 0
    assert task.processAll(1100) == 1


def test_checkpoint_and_restore_keep_times_unprocessed_records_and_stores():
    task = twoTopicTask()
    task.initialize()
    task.addRecords("a", [raw(0, 10, 1), raw(1, 50, 2)], lag=0)
    task.addRecords("b", [], lag=2)
    assert task.processAll(0) == 0
    state = task.checkpoint()
    again = twoTopicTask()
    again.restore(state)
    again.initialize()
    again.addRecords("b", [raw(0, 20, 3)], lag=0)
    again.processAll(0)
    assert values(again) == [[1, 10, 10], [3, 20, 20], [2, 50, 50]]
    resumed = twoTopicTask()
    resumed.restore(again.checkpoint())
    assert resumed.partitionGroup.streamTime == 50 and resumed.queueOf["b"].partitionTime == 20


class PayloadTime(TimestampExtractor):
    def extract(self, record, partitionTime):
        return record.value()["t"]


def drive(extractor, inputs, config=None):
    b = StreamsBuilder()
    b.stream("in", Consumed.withTimestampExtractor(extractor) if extractor else None).to("out")
    d = TopologyTestDriver(b.build(), config)
    i = d.createInputTopic("in")
    for v, ts in inputs:
        i.pipeInput("k", v, ts)
    return d, d.createOutputTopic("out").readRecordsToList()


def droppedTotal(d):
    return d.metrics().get(MetricName("dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0"))), 0)


def test_t1_custom_extractor_reads_the_payload_and_sets_output_timestamp():
    _, out = drive(PayloadTime(), [({"t": 500}, 1)])
    assert out == [TestRecord("k", {"t": 500}, 500)]


def test_t8_negative_extracted_timestamp_drops_and_counts():
    d, out = drive(PayloadTime(), [({"t": -5}, 1), ({"t": 7}, 2)])
    assert out == [TestRecord("k", {"t": 7}, 7)] and droppedTotal(d) == 1


BEFORE_EPOCH = datetime(1969, 12, 31, 23, 59, 59, tzinfo=timezone.utc)


def test_t2_t4_default_extractor_fails_on_negative_metadata_timestamp():
    with pytest.raises(StreamsException, match=r"Input record ConsumerRecord\(topic = in, partition = 0, offset = 0, "
                                               r"timestamp = -1000.*has invalid \(negative\) timestamp"):
        drive(None, [(1, BEFORE_EPOCH)])


def test_t5_log_and_skip_drops_negative_metadata_timestamp():
    d, out = drive(None, [(1, BEFORE_EPOCH), (2, 3)], {"default.timestamp.extractor": LogAndSkipOnInvalidTimestamp()})
    assert out == [TestRecord("k", 2, 3)] and droppedTotal(d) == 1


def test_t6_use_partition_time_replaces_negative_and_fails_without_partition_time():
    d, out = drive(UsePartitionTimeOnInvalidTimestamp(), [(1, 40), (2, BEFORE_EPOCH)])
    assert out == [TestRecord("k", 1, 40), TestRecord("k", 2, 40)]
    with pytest.raises(StreamsException, match="because partition time is unknown"):
        drive(UsePartitionTimeOnInvalidTimestamp(), [(1, BEFORE_EPOCH)])


def test_t8_extractor_user_error_is_wrapped():
    class Broken(TimestampExtractor):
        def extract(self, record, partitionTime):
            raise KeyError("t")

    with pytest.raises(StreamsException, match="Fatal user code error in TimestampExtractor callback"):
        drive(Broken(), [(1, 1)])


def test_default_extractor_is_fail_on_invalid_timestamp():
    assert isinstance(StreamsConfig().defaultTimestampExtractor(), FailOnInvalidTimestamp)


def test_bulk_extracted_timestamps_skip_the_extractor_call():
    """Hosts may pass timestamps they extracted in bulk for the built-in metadata extractors."""
    task = twoTopicTask()
    task.initialize()
    assert task.queueOf["a"].extractsMetadataTimestamp()
    task.addRecords("a", [RawRecord(0, 10, b"k", b"1", (), 10)], lag=0)
    task.addRecords("b", [], lag=0)
    task.processAll(0)
    assert values(task) == [[1, 10, 10]]


def test_t3_only_the_built_in_extractors_are_skipped_not_a_subclass_of_one():
    """A record without a bulk timestamp takes a valid metadata timestamp as is only for the
    built-in extractors' own classes (RecordQueue._updateHead); a subclass's extract is called."""
    class Shifted(FailOnInvalidTimestamp):
        def extract(self, record, partitionTime):
            return record.timestamp() + 1000

    assert drive(FailOnInvalidTimestamp(), [(1, 40)])[1] == [TestRecord("k", 1, 40)]
    assert drive(Shifted(), [(1, 40)])[1] == [TestRecord("k", 1, 1040)]


def test_t7_wallclock_extractor_uses_processing_time():
    import time

    from kspark import WallclockTimestampExtractor

    before = time.time_ns() // 1_000_000
    _, out = drive(WallclockTimestampExtractor(), [(1, 5)])
    after = time.time_ns() // 1_000_000
    assert before <= out[0].timestamp() <= after
