"""Suppressed.untilTimeLimit with BufferConfig bounds (rules SU-4, SU-5; Kafka
``SuppressScenarioTest`` / ``KTableSuppressProcessorSupplier``). Kafka's scenarios count a
re-grouped KTable; here a grouped stream's count gives the same update pattern."""

from datetime import timedelta

import pytest

from kspark import (Consumed, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, StreamsException,
                    Suppressed, WindowedSerdes)
from kspark.testing import TopologyTestDriver

BufferConfig = Suppressed.BufferConfig
LONG_MAX = (1 << 63) - 1


def countsSuppressed(suppressed):
    b = StreamsBuilder()
    counts = (b.stream("input", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
              .count(materialized=Materialized.as_("counts").withCachingDisabled()))
    counts.suppress(suppressed).toStream().to("suppressed", Produced.with_(Serdes.String(), Serdes.Long()))
    return b.build()


def drive(topology, steps):
    """Pipe records, reading the suppressed output after each."""
    with TopologyTestDriver(topology) as d:
        i = d.createInputTopic("input", Serdes.String(), Serdes.String())
        o = d.createOutputTopic("suppressed", Serdes.String(), Serdes.Long())
        seen = []
        for key, ts in steps:
            i.pipeInput(key, "x", ts)
            seen.append([(r.key(), r.value(), r.timestamp()) for r in o.readRecordsToList()])
        return seen


def test_su5_time_limit_counts_from_the_first_buffered_update_and_emits_the_latest():
    """As ``shouldSuppressIntermediateEventsWithTimeLimit``: limit 2 ms."""
    out = drive(countsSuppressed(Suppressed.untilTimeLimit(timedelta(milliseconds=2), BufferConfig.unbounded())),
                [("v1", 0), ("v1", 1), ("v2", 1), ("v1", 2), ("tick", 3), ("tick", 4)])
    assert out == [[], [], [],
                   [("v1", 3, 2)],      # stream time 2 reaches v1's first update (0) + 2: latest value and timestamp
                   [("v2", 1, 1)],      # stream time 3 >= 1 + 2
                   []]                  # tick was first buffered at 3: still held at 4


def test_su5_zero_time_limit_forwards_every_update_at_once():
    out = drive(countsSuppressed(Suppressed.untilTimeLimit(0, BufferConfig.unbounded())),
                [("a", 5), ("a", 3), ("b", 4)])
    assert out == [[("a", 1, 5)], [("a", 2, 5)], [("b", 1, 4)]]


def test_su4_max_records_emit_early_when_full_evicts_the_oldest_buffered_key():
    """As ``shouldSuppressIntermediateEventsWithRecordLimit``: time limit Long.MAX_VALUE, one record."""
    out = drive(countsSuppressed(Suppressed.untilTimeLimit(LONG_MAX, BufferConfig.maxRecords(1).emitEarlyWhenFull())),
                [("v1", 0), ("v1", 1), ("v2", 1), ("v1", 2), ("x", 3)])
    # consecutive updates to v1 collapse; each new key pushes out the one buffered first
    assert out == [[], [], [("v1", 2, 1)], [("v2", 1, 1)], [("v1", 3, 2)]]


def test_su4_max_bytes_emit_early_when_full():
    """FINDINGS F8. Sizes (``computeRecordSize``): 8 + key "k" 1 byte + prior value + old value
    (unless it is the prior one) + new value 8 + record context 8 + 8 + 4 + topic "input" 5.
    Suppress turns old values on upstream, and the uncached count sends the initializer's 0 as a
    new key's old value: 50 bytes for a first count (prior = old = 0), 58 for an update (prior
    0, old 1). 100 bytes hold two first counts, not three. Kafka 4.3.1's records."""
    config = BufferConfig.maxBytes(100).emitEarlyWhenFull()
    out = drive(countsSuppressed(Suppressed.untilTimeLimit(LONG_MAX, config)),
                [("a", 0), ("b", 1), ("c", 2), ("c", 3), ("d", 4)])
    # c@2: 150 bytes, a leaves; c@3 re-buffers c (58): b + c = 108, b leaves; d@4: c + d = 108, c leaves
    assert out == [[], [], [("a", 1, 0)], [("b", 1, 1)], [("c", 2, 3)]]


def test_su4_shut_down_when_full_raises_kafkas_exception_with_records_and_bytes():
    """As ``shouldShutdownWhenRecordConstraintIsViolated`` / ``...BytesConstraintIsViolated``."""
    sup = Suppressed.untilTimeLimit(LONG_MAX, BufferConfig.maxRecords(1).shutDownWhenFull()).withName("sup")
    # a failure in a processor goes through the processing handler (LogAndFail), which wraps it
    with pytest.raises(StreamsException, match="^Exception caught in process. taskId=0_0, processor=sup, topic=input, "
                                               "partition=0, offset=1") as failure:
        drive(countsSuppressed(sup), [("a", 0), ("b", 1)])
    assert str(failure.value.__cause__) == (  # Kafka 4.3.1: 2 x 50 bytes (F8)
        f"sup buffer exceeded its max capacity. Currently [2/1] records and [100/{LONG_MAX}] bytes.")
    sup = Suppressed.untilTimeLimit(LONG_MAX, BufferConfig.maxBytes(60).shutDownWhenFull()).withName("sup")
    with pytest.raises(StreamsException) as failure:
        drive(countsSuppressed(sup), [("a", 0), ("b", 1)])
    assert str(failure.value.__cause__).endswith(f"Currently [2/{LONG_MAX}] records and [100/60] bytes.")


def test_su4_records_due_by_time_leave_before_the_capacity_check():
    """Kafka's enforceConstraints evicts by time first, then checks the bounds: with a 1 ms
    limit, b@5 makes a (buffered at 0) due, so the buffer never holds two keys."""
    sup = Suppressed.untilTimeLimit(1, BufferConfig.maxRecords(1).shutDownWhenFull())
    assert drive(countsSuppressed(sup), [("a", 0), ("b", 5)]) == [[], [("a", 1, 0)]]


def test_su5_time_limit_keeps_tombstones():
    b = StreamsBuilder()
    (b.table("input", Consumed.with_(Serdes.String(), Serdes.String()))
     .suppress(Suppressed.untilTimeLimit(0, BufferConfig.unbounded()))
     .toStream().to("suppressed", Produced.with_(Serdes.String(), Serdes.String())))
    with TopologyTestDriver(b.build()) as d:
        i = d.createInputTopic("input", Serdes.String(), Serdes.String())
        i.pipeInput("k", "v", 1)
        i.pipeInput("k", None, 2)
        assert d.createOutputTopic("suppressed", Serdes.String(), Serdes.String()).readKeyValuesToList() == [
            ("k", "v"), ("k", None)]


def test_su3_ties_in_buffer_time_leave_in_serialized_key_order():
    """Kafka's buffer is a TreeMap on (buffer time, key bytes): two sessions ending at the same
    time leave in key order, not in the order they were buffered."""
    serde = WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String())
    b = StreamsBuilder()
    (b.stream("input", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5)).count(materialized=Materialized.as_("s"))
     .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
     .toStream().to("suppressed", Produced.with_(serde, Serdes.Long())))
    with TopologyTestDriver(b.build()) as d:
        i = d.createInputTopic("input", Serdes.String(), Serdes.String())
        for key, ts in [("b", 0), ("a", 0), ("z", 20)]:
            i.pipeInput(key, "x", ts)
        assert [r.key().key() for r in d.createOutputTopic("suppressed", serde, Serdes.Long()).readRecordsToList()] == ["a", "b"]
