"""Session windows, emit on update (rules SW-1..SW-9, SA-1..SA-9, SA-12, ST-1, ST-3, ST-5, ST-7)."""

import pytest

from kspark import (
    Consumed, Materialized, Produced, Serdes, SessionWindow, SessionWindows, StreamsBuilder, Windowed, WindowedSerdes,
)
from kspark.runtime.metrics import MetricName
from kspark.testing import TestRecord, TopologyTestDriver


def sessions(windows, agg="count", materialized=None):
    b = StreamsBuilder()
    grouped = b.stream("in").groupByKey().windowedBy(windows)
    if agg == "count":
        table = grouped.count(materialized=materialized or Materialized.as_("sessions"))
        valueSerde = Serdes.Long()
    elif agg == "reduce":
        table = grouped.reduce(lambda a, v: f"{a}:{v}", materialized=Materialized.as_("sessions"))
        valueSerde = Serdes.String()
    else:
        table = grouped.aggregate(lambda: "0", lambda k, v, a: f"{a}+{v}", lambda k, a1, a2: f"{a1}+{a2}",
                                  materialized=Materialized.as_("sessions"))
        valueSerde = Serdes.String()
    table.toStream().to("out", Produced.with_(WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String()), valueSerde))
    return b.build()


def run(topology, inputs, config=None):
    d = TopologyTestDriver(topology, config)
    i = d.createInputTopic("in")
    for k, v, ts in inputs:
        i.pipeInput(k, v, ts)
    return d, d.createOutputTopic("out").readRecordsToList()


def W(key, start, end):
    return Windowed(key, SessionWindow(start, end))


def dropped(d):
    return {m.tag("reason"): v for m, v in d.metrics().items() if m.group == "kspark-dropped-records"}


def test_sw1_sw3_factories_and_validation():
    assert SessionWindows.ofInactivityGapWithNoGrace(5) == SessionWindows.ofInactivityGapAndGrace(5, 0)
    # SW-3 as Kafka 4.3.1 has it (the spec quotes 4.0, which also refused a zero gap; FINDINGS F16)
    with pytest.raises(ValueError, match=r"^Gap time cannot be negative\.$"):
        SessionWindows.ofInactivityGapWithNoGrace(-1)
    with pytest.raises(ValueError, match=r"^Grace period cannot be negative\.$"):
        SessionWindows.ofInactivityGapAndGrace(5, -1)


def test_sw7_sw9_inclusive_bounds_and_overlap():
    assert SessionWindow(0, 5).overlap(SessionWindow(5, 9))
    assert not SessionWindow(0, 5).overlap(SessionWindow(6, 9))
    assert str(W("k1", 0, 5)) == "[k1@0/5]"


def test_sa5_sa8_bridging_record_merges_two_sessions_with_tombstones_first():
    keepAll = Materialized.as_("sessions").withRetention(1_000)
    d, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(10), materialized=keepAll),
                 [("k", "a", 0), ("k", "b", 20), ("k", "c", 10)])
    assert out == [
        TestRecord(W("k", 0, 0), 1, 0),
        TestRecord(W("k", 20, 20), 1, 20),
        TestRecord(W("k", 0, 0), None, 0),      # tombstones in store order (end asc), timestamp = old end
        TestRecord(W("k", 20, 20), None, 20),
        TestRecord(W("k", 0, 20), 3, 20),       # SA-9: timestamp = merged window end
    ]
    assert [(kv.key, kv.value) for kv in d.getSessionStore("sessions").fetch("k")] == [(W("k", 0, 20), 3)]


def test_st8_default_retention_hides_sessions_before_the_processor_can_merge_them():
    # retention = gap + grace = 10; at observed end 20, [0,0] (end <= 10) is invisible to findSessions,
    # as in Kafka's stores (ST-6/ST-7): the bridging record only merges [20,20]
    # (cache off: with the record cache, ST-9 lets the lookup see [0,0], next test)
    _, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(10)), [("k", "a", 0), ("k", "b", 20), ("k", "c", 10)],
                 {"statestore.cache.max.bytes": 0})
    assert out[2:] == [TestRecord(W("k", 20, 20), None, 20), TestRecord(W("k", 10, 20), 2, 20)]


def test_st9_with_the_record_cache_the_lookup_still_sees_a_session_the_store_hides():
    """ST-9: Kafka's ``CachingSessionStore.findSessions`` merges the cache (clean entries stay
    cached after a flush, with no retention bound) with the store's clamped read. So [0,0],
    hidden by the store at observed end 20, is still merged by k@10: one session [0,20] of 3.
    The flush finds no old value for [0,0] in the store (hidden), so its tombstone is skipped;
    [20,20]'s is forwarded."""
    d, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(10)), [("k", "a", 0), ("k", "b", 20), ("k", "c", 10)])
    assert out == [TestRecord(W("k", 0, 0), 1, 0), TestRecord(W("k", 20, 20), 1, 20),
                   TestRecord(W("k", 20, 20), None, 20), TestRecord(W("k", 0, 20), 3, 20)]


def test_sa8a_record_inside_a_wider_session_tombstones_and_rewrites_the_same_window():
    # SuppressScenarioTest (cache off) raw output: [k1@0/5] null then [k1@0/5] 3
    _, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(5)), [("k1", "a", 0), ("k1", "b", 5), ("k1", "c", 3)],
                 {"statestore.cache.max.bytes": 0})
    assert out[-2:] == [TestRecord(W("k1", 0, 5), None, 5), TestRecord(W("k1", 0, 5), 3, 5)]


def test_sa10_with_the_default_cache_one_record_updating_a_window_twice_forwards_only_the_last_value():
    _, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(5)), [("k1", "a", 0), ("k1", "b", 5), ("k1", "c", 3)])
    assert out == [TestRecord(W("k1", 0, 0), 1, 0), TestRecord(W("k1", 0, 0), None, 0),
                   TestRecord(W("k1", 0, 5), 2, 5), TestRecord(W("k1", 0, 5), 3, 5)]


def test_sa10_cache_forwards_in_last_update_order_and_drops_windows_created_and_removed_before_a_commit():
    """One commit over several records (the Spark host commits once per micro-batch)."""
    from kspark.config import StreamsConfig
    from kspark.runtime.record_queue import RawRecord
    from kspark.runtime.stream_task import StreamTask

    # a long retention keeps this test away from ST-9 (reads through the cache), not modelled yet
    topology = sessions(SessionWindows.ofInactivityGapWithNoGrace(5), materialized=Materialized.as_("s").withRetention(1_000))
    task = StreamTask("0_0", topology.subtopologies()[0], topology.storeBuilders(), StreamsConfig(), 0,
                      lambda t: t, lambda t: 1)
    task.initialize()
    task.addRecords("in", [RawRecord(0, 0, b"a", b"1"), RawRecord(1, 6, b"b", b"1"),
                           RawRecord(2, 4, b"a", b"1"), RawRecord(3, 30, b"c", b"1")])
    task.processAll(0)
    assert task.drainProduced() == []
    task.commit()
    serde = WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String())
    out = [(serde.deserialize("o", r.key), Serdes.Long().deserialize("o", r.value), r.timestamp) for r in task.drainProduced()]
    # [a@0/0] was created and merged away before the commit: no tombstone; order = last update
    assert out == [(W("b", 6, 6), 1, 6), (W("a", 0, 4), 2, 4), (W("c", 30, 30), 1, 30)]


def test_sa8b_record_at_an_existing_single_point_session_overwrites_without_tombstone():
    _, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(5)), [("k", "a", 7), ("k", "b", 7)])
    assert out == [TestRecord(W("k", 7, 7), 1, 7), TestRecord(W("k", 7, 7), 2, 7)]


def test_sa4_sa7_late_drop_is_judged_on_the_merged_window():
    d, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(5)),
                 [("k", "a", 0), ("k", "b", 20), ("k", "late", 10), ("k", "c", 16), ("k", "d", 13)])
    # close time = 20 - 0 - 5 = 15: 10 alone ends before it (dropped); 16 and 13 merge into [..,20]
    assert out[2:] == [
        TestRecord(W("k", 20, 20), None, 20), TestRecord(W("k", 16, 20), 2, 20),
        TestRecord(W("k", 16, 20), None, 20), TestRecord(W("k", 13, 20), 3, 20),
    ]
    assert dropped(d) == {"expired window": 1}


def test_sa1_null_key_is_skipped_counted_and_does_not_advance_stream_time():
    d, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(5)), [(None, "x", 100), ("k", "a", 10)])
    assert out == [TestRecord(W("k", 10, 10), 1, 10)]  # not late: the null-key record's 100 did not count
    assert dropped(d) == {"null key": 1}
    assert d.metrics()[MetricName("dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0")))] == 1


def test_sa2_null_value_is_aggregated_by_count():
    _, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(5)), [("k", None, 1)])
    assert out == [TestRecord(W("k", 1, 1), 1, 1)]


def test_sa12_reduce_applies_the_new_value_last():
    _, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(10), "reduce"), [("k", "A", 0), ("k", "B", 5), ("k", "C", 10)])
    assert out[-1] == TestRecord(W("k", 0, 10), "A:B:C", 10)


def test_sa12_aggregate_merges_through_the_session_merger():
    _, out = run(sessions(SessionWindows.ofInactivityGapWithNoGrace(10), "aggregate"), [("k", "1", 0), ("k", "2", 5)])
    assert out[-1] == TestRecord(W("k", 0, 5), "0+0+1+2", 5)


def test_st1_retention_must_cover_gap_plus_grace():
    with pytest.raises(ValueError, match=r"must be no smaller than the session inactivity gap plus the grace period. "
                                         r"Got gap=\[10\], grace=\[5\], retention=\[14\]"):
        sessions(SessionWindows.ofInactivityGapAndGrace(10, 5), materialized=Materialized.as_("s").withRetention(14))


def test_st3_st7_session_store_order_and_expiry():
    from kspark import Stores

    store = Stores.sessionStoreBuilder(Stores.inMemorySessionStore("s", 10), Serdes.String(), Serdes.Long()).build(
        Serdes.String(), Serdes.JSON())
    store.put(W("b", 0, 5), 1)
    store.put(W("a", 2, 5), 2)
    store.put(W("a", 1, 5), 3)
    store.put(W("a", 6, 8), 4)
    assert [kv.key for kv in store.findSessionsByEnd(0, 10)] == [W("a", 2, 5), W("a", 1, 5), W("b", 0, 5), W("a", 6, 8)]
    assert [kv.key for kv in store.findSessions("a", 6, 8)] == [W("a", 6, 8)]
    assert store.fetchSession("a", 1, 5) == 3
    store.put(W("a", 16, 16), 5)            # observed end 16: sessions ending <= 6 expire
    assert [kv.key for kv in store.fetch("a")] == [W("a", 6, 8), W("a", 16, 16)]
    store.put(W("c", 3, 4), 6)              # ends at or before 16 - 10: dropped (ST-7)
    assert store.fetchSession("c", 3, 4) is None
    store.remove(W("a", 6, 8))
    assert [kv.key for kv in store.backwardFetch("a")] == [W("a", 16, 16)]


def test_session_windowed_serde_round_trips():
    serde = WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String())
    assert serde.deserialize("t", serde.serialize("t", W("k", 3, 9))) == W("k", 3, 9)


def test_processor_stream_time_survives_a_task_rebuild_from_its_checkpoint():
    """A host that rebuilds a task from its checkpoint (Spark between micro-batches) must not
    forget the aggregation's observed stream time, or late records would be accepted."""
    from kspark.config import StreamsConfig
    from kspark.runtime.record_queue import RawRecord
    from kspark.runtime.stream_task import StreamTask

    topology = sessions(SessionWindows.ofInactivityGapWithNoGrace(5))
    whole = topology.subtopologies()[0]

    def newTask():
        return StreamTask("0_0", whole, topology.storeBuilders(), StreamsConfig(), 0, lambda t: t, lambda t: 1)

    first = newTask()
    first.initialize()
    first.addRecords("in", [RawRecord(0, 100, b"k", b"1")])
    first.processAll(0)
    rebuilt = newTask()
    rebuilt.restore(first.checkpoint())
    rebuilt.initialize()
    rebuilt.addRecords("in", [RawRecord(1, 10, b"k", b"2")])  # close time 95: late
    rebuilt.processAll(0)
    assert rebuilt.drainProduced() == []


def finalTopology(mode, windows=None):
    from kspark import EmitStrategy, Suppressed

    windows = windows or SessionWindows.ofInactivityGapWithNoGrace(5)
    b = StreamsBuilder()
    # String keys known to the table: its suppress buffer serializes Windowed keys (F13)
    grouped = b.stream("in", Consumed.with_(Serdes.String(), Serdes.JSON())).groupByKey().windowedBy(windows)
    if mode == "emit-final":
        table = grouped.emitStrategy(EmitStrategy.onWindowClose()).count(materialized=Materialized.as_("s"))
    else:
        table = grouped.count(materialized=Materialized.as_("s")).suppress(
            Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
    table.toStream().to("out", Produced.with_(WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String()), Serdes.Long()))
    return b.build()


def test_sa11_emit_final_once_stream_time_passes_end_plus_gap_plus_grace():
    _, out = run(finalTopology("emit-final"), [("k", "a", 0), ("k", "b", 3), ("j", "c", 8)])
    assert out == []                                  # 8 < 3 + 5 + 1: not closed yet; no updates, no tombstones
    _, out = run(finalTopology("emit-final"), [("k", "a", 0), ("k", "b", 3), ("j", "c", 9), ("k", "d", 20)])
    assert out == [TestRecord(W("k", 0, 3), 2, 3), TestRecord(W("j", 9, 9), 1, 9)]


def test_sa11_emission_order_is_end_then_start_then_key():
    _, out = run(finalTopology("emit-final"), [("b", "x", 0), ("a", "x", 0), ("c", "x", 1), ("c", "x", 2), ("z", "x", 30)])
    assert [r.key() for r in out] == [W("a", 0, 0), W("b", 0, 0), W("c", 1, 2)]


def test_su3_suppress_emits_final_results_and_drops_tombstones():
    _, out = run(finalTopology("suppress"), [("k", "a", 0), ("k", "b", 3), ("j", "c", 7)])
    assert out == []                                  # suppress stream time 7: 3 > 7 - 5
    _, out = run(finalTopology("suppress"), [("k", "a", 0), ("k", "b", 3), ("j", "c", 8)])
    # SU-6: suppress emits at end + gap + grace = 8, one ms before emit-final would; the merged-away
    # [0,0] tombstone is dropped
    assert out == [TestRecord(W("k", 0, 3), 2, 3)]


def test_su1_suppress_needs_a_windowed_table():
    from kspark import Suppressed, TopologyException

    b = StreamsBuilder()
    with pytest.raises(TopologyException, match="Window close time is only defined for windowed computations"):
        b.stream("in").groupByKey().count().suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))


def test_su4_bounded_buffer_that_overflows_fails():
    from kspark import StreamsException, Suppressed

    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.JSON())).groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5)).count()
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.maxRecords(1).shutDownWhenFull()).withName("sup")))
    with TopologyTestDriver(b.build()) as d:
        i = d.createInputTopic("in")
        i.pipeInput("a", "x", 0)
        # the count is cached: the session comes out of the cache at commit, so (as in Kafka 4.3.1)
        # the store's flush fails with the suppress buffer's exception as its cause
        with pytest.raises(StreamsException, match="^topology-test-driver Failed to flush cache of store ") as failure:
            i.pipeInput("b", "x", 1)
        assert str(failure.value.__cause__).startswith("sup buffer exceeded its max capacity. Currently [2/1] records")


def test_st6_persistent_store_expires_whole_segments_and_hides_old_sessions_from_key_reads():
    from kspark import Stores

    store = Stores.sessionStoreBuilder(Stores.persistentSessionStore("s", 10), Serdes.String(), Serdes.Long()).build(
        Serdes.String(), Serdes.JSON())
    store.put(W("a", 0, 3), 1)
    store.put(W("a", 100, 100), 2)                  # observed end 100; segments are 60,000 ms wide
    assert [kv.key for kv in store.fetch("a")] == [W("a", 100, 100)]          # 3 <= 100 - 10: hidden
    assert [kv.key for kv in store.findSessionsByEnd(0, 200)] == [W("a", 0, 3), W("a", 100, 100)]
    store.put(W("b", 130_000, 130_000), 3)          # segment 0 is now older than segmentId(129,990) = 2
    assert [kv.key for kv in store.findSessionsByEnd(0, 200_000)] == [W("b", 130_000, 130_000)]


def test_sa11_st6_a_stream_time_jump_expires_a_segment_before_its_sessions_are_emitted():
    """Emit on close with default retention gap + grace (here 5 ms): in Kafka the aggregate puts
    the new session before ``maybeForwardFinalResult``, and the put of the time-ordered store
    deletes every segment below ``segmentId(observedEnd - retention)`` (segments are
    ``max(retention / 2, 60 s)`` wide, ``KeyValueSegments.getOrCreateSegmentIfLive``). So a jump
    of more than one segment drops closed-but-unemitted sessions silently; ``fetchSessions`` does
    not clamp by retention, so a smaller jump still emits them."""
    _, out = run(finalTopology("emit-final"), [("a", "x", 0), ("a", "x", 3), ("b", "x", 50_000), ("c", "x", 200_000)])
    # b@50000 closes [0,3] (segment 0 still live); c@200000 deletes segment 0 holding [50000,50000]
    assert out == [TestRecord(W("a", 0, 3), 2, 3)]
    _, out = run(finalTopology("emit-final"), [("a", "x", 0), ("c", "x", 59_000)])
    assert out == [TestRecord(W("a", 0, 0), 1, 0)]     # segmentId(58,995) = 0: segment 0 lives, [0,0] emitted
    _, out = run(finalTopology("emit-final"), [("a", "x", 0), ("c", "x", 60_005)])
    assert out == []                                   # segmentId(60,000) = 1: segment 0 deleted first


@pytest.mark.parametrize("cached", [False, True])
def test_sa8_uncached_session_updates_carry_no_headers_cached_ones_their_records(cached):
    """FINDINGS F7: Kafka 4.3.1 forwards an uncached session update as new Record(windowedKey,
    change, end), without headers; a cached one carries the headers of the record that wrote the
    entry (here a@300's for both the tombstone and the merged session). Kafka 4.3.1's records."""
    from kspark import KeyValue
    from kspark.testing import TestRecord

    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(500)).count().toStream()
     .map(lambda w, c: KeyValue.pair(f"{w.key()}@{w.window().start()}/{w.window().end()}", c))
     .to("out", Produced.with_(Serdes.String(), Serdes.Long())))
    config = {} if cached else {"statestore.cache.max.bytes": 0}
    with TopologyTestDriver(b.build(), config) as d:
        i = d.createInputTopic("in", Serdes.String(), Serdes.String())
        i.pipeInput(TestRecord("a", "x", 1, (("h", b"\x01"),)))
        i.pipeInput(TestRecord("a", "y", 300, (("h", b"\x02"),)))
        out = [(r.key(), r.value(), r.timestamp(), r.headers())
               for r in d.createOutputTopic("out", Serdes.String(), Serdes.Long()).readRecordsToList()]
    h1, h2 = ((("h", b"\x01"),), (("h", b"\x02"),)) if cached else ((), ())
    assert out == [("a@1/1", 1, 1, h1), ("a@1/1", None, 1, h2), ("a@1/300", 2, 300, h2)]
