"""Punctuation: schedule validation, the queue, skipping, alignment, cancel, context (rules P-1..P-7, TTD-1, TTD-3)."""

from datetime import timedelta

import pytest

from kspark import Cancellable, ContextualProcessor, PunctuationType, Record, StreamsException, Topology
from kspark.runtime.punctuation_queue import PunctuationQueue, PunctuationSchedule
from kspark.testing import TestRecord, TopologyTestDriver


def test_p5_next_skips_missed_intervals_seed_001_example():
    # seed 001: first punctuation at 5 s, interval 5 s, checked at 21 s -> next is 25 s
    sched = PunctuationSchedule(None, 5_000, 5_000, None, Cancellable(), ())
    assert sched.next(21_000).timestamp == 25_000
    assert sched.next(7_000).timestamp == 10_000
    assert sched.next(10_000).timestamp == 15_000


def test_p4_queue_fires_due_schedules_once_per_check_with_now():
    q, fired = PunctuationQueue(), []
    q.schedule(PunctuationSchedule("a", 0, 10, None, Cancellable(), ()))
    q.schedule(PunctuationSchedule("b", 5, 100, None, Cancellable(), ()))
    assert q.mayPunctuate(37, lambda s, now: fired.append((s.node, now))) is True
    assert fired == [("a", 37), ("b", 37)]
    assert [(s.node, s.timestamp) for s in q.schedules()] == [("a", 40), ("b", 105)]
    assert q.mayPunctuate(39, lambda s, now: fired.append(s.node)) is False


class Punctuating(ContextualProcessor):
    """Forwards what it sees; its punctuators forward the time they are called with."""

    def __init__(self, interval, type, cancelAfter=None, log=None):
        self.interval, self.type, self.cancelAfter, self.log = interval, type, cancelAfter, log
        self.fired = 0

    def init(self, context):
        super().init(context)
        self.cancellable = context.schedule(self.interval, self.type, self.punctuate)

    def punctuate(self, timestamp):
        self.fired += 1
        if self.log is not None:
            self.log.append((self.context().recordMetadata(), self.context().currentStreamTimeMs()))
        self.context().forward(Record("tick", timestamp, timestamp))
        if self.cancelAfter and self.fired >= self.cancelAfter:
            self.cancellable.cancel()

    def process(self, record):
        self.context().forward(record)


def driver(supplier, **kw):
    t = Topology().addSource("src", "in").addProcessor("p", supplier, "src").addSink("sink", "out", "p")
    return TopologyTestDriver(t, **kw)


def test_p1_interval_below_one_millisecond_is_rejected():
    # raised in init(), so wrapped as Kafka's ProcessorNode.init does
    with pytest.raises(StreamsException, match="^failed to initialize processor ") as failure:
        driver(lambda: Punctuating(timedelta(microseconds=999), PunctuationType.STREAM_TIME))
    assert isinstance(failure.value.__cause__, ValueError)
    assert str(failure.value.__cause__) == "The minimum supported scheduling interval is 1 millisecond."


def test_p2_p3_stream_time_fires_on_first_record_aligned_to_zero_with_current_stream_time():
    with driver(lambda: Punctuating(10, PunctuationType.STREAM_TIME)) as d:
        i, o = d.createInputTopic("in"), d.createOutputTopic("out")
        i.pipeInput("a", 1, 3)    # stream time 3 >= 0: fires with 3, next at 10
        i.pipeInput("b", 2, 9)    # not yet
        i.pipeInput("c", 3, 5)    # out of order: stream time stays 9
        i.pipeInput("d", 4, 27)   # fires with 27 (not 10), next at 30 (grid kept, 10 and 20 skipped)
        i.pipeInput("e", 5, 30)
        assert o.readKeyValuesToList() == [
            ("a", 1), ("tick", 3), ("b", 2), ("c", 3), ("d", 4), ("tick", 27), ("e", 5), ("tick", 30)
        ]


def test_punctuate_total_counts_each_punctuator_call_per_task():
    """Kafka's task-level ``punctuate-total`` (TaskMetrics, "calls to punctuate"): the progress
    view and summary show it."""
    from kspark.runtime.metrics import MetricName

    with driver(lambda: Punctuating(10, PunctuationType.STREAM_TIME)) as d:
        i = d.createInputTopic("in")
        for ts in (3, 9, 27, 30):  # fires at 3, 27, 30 (as in the test above)
            i.pipeInput("k", ts, ts)
        assert d.metrics()[MetricName("punctuate-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0")))] == 3


def test_p3_nothing_fires_before_the_first_record():
    with driver(lambda: Punctuating(10, PunctuationType.STREAM_TIME)) as d:
        d.advanceWallClockTime(1000)
        assert d.createOutputTopic("out").isEmpty()


def test_p2_ttd3_wall_clock_first_fires_at_registration_plus_interval_and_skips():
    with driver(lambda: Punctuating(100, PunctuationType.WALL_CLOCK_TIME), initialWallClockTime=1_000) as d:
        o = d.createOutputTopic("out")
        d.advanceWallClockTime(99)
        assert o.isEmpty()
        d.advanceWallClockTime(1)        # 1100
        d.advanceWallClockTime(350)      # 1450: fires once, next at 1500
        d.advanceWallClockTime(50)       # 1500
        assert o.readRecordsToList() == [
            TestRecord("tick", 1100, 1100), TestRecord("tick", 1450, 1450), TestRecord("tick", 1500, 1500)
        ]


def test_p6_cancel_from_inside_the_punctuator_stops_future_firings():
    with driver(lambda: Punctuating(10, PunctuationType.STREAM_TIME, cancelAfter=2)) as d:
        i = d.createInputTopic("in")
        for ts in (0, 10, 20, 30):
            i.pipeInput("k", ts, ts)
        assert [v for k, v in d.createOutputTopic("out").readKeyValuesToList() if k == "tick"] == [0, 10]


def test_p7_punctuation_has_no_record_metadata_and_sees_stream_time():
    log = []
    with driver(lambda: Punctuating(10, PunctuationType.STREAM_TIME, log=log)) as d:
        d.createInputTopic("in").pipeInput("k", 1, 12)
    assert log == [(None, 12)]


def test_p8_punctuator_error_names_the_processor():
    from kspark import StreamsException

    class Failing(Punctuating):
        def punctuate(self, timestamp):
            raise RuntimeError("boom")

    with driver(lambda: Failing(10, PunctuationType.STREAM_TIME)) as d:
        with pytest.raises(StreamsException, match="Exception caught while punctuating processor 'p'"):
            d.createInputTopic("in").pipeInput("k", 1, 1)


def test_schedule_outside_init_or_process_is_an_error():
    holder = []

    class Late(ContextualProcessor):
        def init(self, context):
            super().init(context)
            holder.append(context)

        def process(self, record):
            pass

    with driver(Late):
        with pytest.raises(RuntimeError, match="Current node is unknown"):
            holder[0].schedule(10, PunctuationType.STREAM_TIME, print)


def test_stream_time_punctuation_across_two_partitions_with_a_gap():
    """Two input partitions of one task: stream time follows the smallest-head choice (T-12),
    and punctuation is checked after every record."""
    from kspark.config import StreamsConfig
    from kspark.runtime.record_queue import RawRecord
    from kspark.runtime.stream_task import StreamTask

    t = Topology().addSource("src", "a", "b").addProcessor(
        "p", lambda: Punctuating(100, PunctuationType.STREAM_TIME), "src").addSink("sink", "out", "p")
    task = StreamTask("0_0", t.subtopologies()[0], {}, StreamsConfig(), 0, lambda x: x, lambda x: 1)
    task.initialize()
    task.addRecords("a", [RawRecord(0, 50, b"a", b"1"), RawRecord(1, 420, b"a", b"2")])
    task.addRecords("b", [RawRecord(0, 60, b"b", b"3"), RawRecord(1, 70, b"b", b"4")])
    task.processAll(0)
    out = [(r.key, r.value, r.timestamp) for r in task.drainProduced()]
    assert out == [(b"a", b"1", 50), (b"tick", b"50", 50), (b"b", b"3", 60), (b"b", b"4", 70),
                   (b"a", b"2", 420), (b"tick", b"420", 420)]


def test_schedules_survive_a_checkpoint_and_rebuild():
    from kspark.config import StreamsConfig
    from kspark.runtime.record_queue import RawRecord
    from kspark.runtime.stream_task import StreamTask

    t = Topology().addSource("src", "a").addProcessor(
        "p", lambda: Punctuating(100, PunctuationType.STREAM_TIME, cancelAfter=2), "src").addSink("sink", "out", "p")

    def newTask():
        return StreamTask("0_0", t.subtopologies()[0], {}, StreamsConfig(), 0, lambda x: x, lambda x: 1)

    task = newTask()
    task.initialize()
    task.addRecords("a", [RawRecord(0, 50, b"a", b"1")])
    task.processAll(0)                       # fires at 50, next at 100
    rebuilt = newTask()
    rebuilt.restore(task.checkpoint())
    rebuilt.initialize()                     # init() registers again: continues at 100, not 0
    rebuilt.addRecords("a", [RawRecord(1, 60, b"a", b"2"), RawRecord(2, 130, b"a", b"3"), RawRecord(3, 250, b"a", b"4")])
    rebuilt.processAll(0)
    assert [(r.key, r.timestamp) for r in rebuilt.drainProduced()] == [
        (b"a", 60), (b"a", 130), (b"tick", 130), (b"a", 250), (b"tick", 250)]
    # (the rebuilt processor counts its firings from 0 again: instance fields are not state)
    again = newTask()
    again.restore(rebuilt.checkpoint())
    again.initialize()
    again.addRecords("a", [RawRecord(4, 900, b"a", b"5")])
    again.processAll(0)
    assert [(r.key, r.timestamp) for r in again.drainProduced()] == [(b"a", 900)]  # the cancel survived
