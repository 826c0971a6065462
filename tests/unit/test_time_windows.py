"""Time-window aggregations: windowsFor, grace, late drops, timestamps (rules T-18, SW-8-like
validation, DP-1 windowed partitioning)."""

import pytest

from kspark import KeyValue, Materialized, Produced, Serdes, StreamsBuilder, TimeWindow, TimeWindows, Windowed, WindowedSerdes
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TestRecord, TopologyTestDriver


def test_windows_for_tumbling_and_hopping():
    assert TimeWindows.ofSizeWithNoGrace(10).windowsFor(25) == {20: TimeWindow(20, 30)}
    assert TimeWindows.ofSizeWithNoGrace(10).advanceBy(5).windowsFor(25) == {20: TimeWindow(20, 30), 25: TimeWindow(25, 35)}
    assert TimeWindows.ofSizeWithNoGrace(10).advanceBy(5).windowsFor(3) == {0: TimeWindow(0, 10)}


def test_validation_messages():
    with pytest.raises(ValueError, match="Window size"):
        TimeWindows.ofSizeWithNoGrace(0)
    with pytest.raises(ValueError, match="Window advancement interval"):
        TimeWindows.ofSizeWithNoGrace(10).advanceBy(11)
    with pytest.raises(ValueError, match="Grace period must not be negative."):
        TimeWindows.ofSizeAndGrace(10, -1)
    with pytest.raises(ValueError, match="Window startMs time cannot be negative."):
        TimeWindow(-1, 5)


def windowedCount(windows, materialized=None):
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(windows).count(materialized=materialized)
     .toStream().to("out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), windows.size()), Serdes.Long())))
    return b.build()


def test_t18_tumbling_count_with_grace_drops_records_of_closed_windows():
    windows = TimeWindows.ofSizeAndGrace(10, 5)
    with TopologyTestDriver(windowedCount(windows, Materialized.as_("counts"))) as d:
        i = d.createInputTopic("in")
        for ts in (1, 12, 8, 16, 9, 25):
            i.pipeInput("k", "v", ts)
        # 9 arrives at stream time 16: window [0,10) closes at 16 - 5 = 11 >= 10 -> dropped
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord(Windowed("k", TimeWindow(0, 10)), 1, 1),
            TestRecord(Windowed("k", TimeWindow(10, 20)), 1, 12),
            TestRecord(Windowed("k", TimeWindow(0, 10)), 2, 8),
            TestRecord(Windowed("k", TimeWindow(10, 20)), 2, 16),
            TestRecord(Windowed("k", TimeWindow(20, 30)), 1, 25),
        ]
        drops = {m.tag("reason"): v for m, v in d.metrics().items() if m.group == "kspark-dropped-records"}
        assert drops == {"expired window": 1}
        # [0,10) is past the store's retention (size + grace) but still in the record cache, which
        # Kafka's CachingWindowStore reads through (checked on Kafka 4.3.1: [0=2, 10=2, 20=1])
        assert list(d.getWindowStore("counts").fetch("k", 0, 30)) == [
            KeyValue(0, 2), KeyValue(10, 2), KeyValue(20, 1)]
        assert list(d.getTimestampedWindowStore("counts").fetch("k", 10, 30)) == [
            KeyValue(10, (2, 16)), KeyValue(20, (1, 25))]


def test_hopping_windows_update_every_containing_window():
    windows = TimeWindows.ofSizeWithNoGrace(10).advanceBy(5)
    with TopologyTestDriver(windowedCount(windows)) as d:
        d.createInputTopic("in").pipeInput("k", "v", 7)
        assert d.createOutputTopic("out").readKeyValuesToList() == [
            (Windowed("k", TimeWindow(0, 10)), 1), (Windowed("k", TimeWindow(5, 15)), 1)]


def test_windowed_key_serde_round_trips_and_partitions_by_the_base_key():
    serde = WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 10)
    data = serde.serialize("t", Windowed("alice", TimeWindow(20, 30)))
    assert data == b"alice" + (20).to_bytes(8, "big")
    assert serde.deserialize("t", data) == Windowed("alice", TimeWindow(20, 30))
    assert str(Windowed("alice", TimeWindow(20, 30))) == "[alice@20/30]"
    assert partitionForKey(serde.baseKeyBytes(data), 5) == 4  # DP-3: "alice" -> 4 of 5


def emitFinalTopology(windows, caching=True):
    from kspark import Consumed, EmitStrategy

    b = StreamsBuilder()
    materialized = Materialized.as_("w").withValueSerde(Serdes.String())
    if not caching:
        materialized = materialized.withCachingDisabled()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey().windowedBy(windows)
     .emitStrategy(EmitStrategy.onWindowClose())
     .aggregate(lambda: "0", lambda k, v, agg: agg + "+" + v, materialized=materialized)
     .toStream().to("out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), windows.size()),
                                          Serdes.String())))
    return b.build()


def pipe(topology, records):
    with TopologyTestDriver(topology) as d:
        i = d.createInputTopic("in", Serdes.String(), Serdes.String())
        outputs = []
        for k, v, ts in records:
            i.pipeInput(k, v, ts)
            outputs.append([(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("out").readRecordsToList()])
        return outputs


def W(key, start, end):
    return Windowed(key, TimeWindow(start, end))


@pytest.mark.parametrize("caching", [True, False])
def test_kip825_emit_final_time_windows_as_kafkas_should_emit_with_interval0(caching):
    """Kafka ``KStreamWindowAggregateTest.shouldEmitWithInterval0``: size 10, advance 5, grace 5;
    each window is forwarded once with its final aggregate and *its own* timestamp (the max
    input timestamp, T-18), by start then key. [5,15) leaves with D@20 although the store's
    observed window start (20) minus retention (15) is 5: the time-ordered read keeps that bound."""
    out = pipe(emitFinalTopology(TimeWindows.ofSizeAndGrace(10, 5).advanceBy(5), caching),
               [("A", "1", 0), ("A", "1", 5), ("B", "2", 10), ("C", "3", 15), ("D", "4", 20)])
    assert out == [[], [], [], [(W("A", 0, 10), "0+1+1", 5)],
                   [(W("A", 5, 15), "0+1", 5), (W("B", 5, 15), "0+2", 10)]]


def test_kip825_emit_final_waits_until_a_new_window_closes():
    """Kafka ``shouldNotEmitFinalIfNotProgressEnough``: after C@15 (close time 10) only windows
    ending by 10 leave; D@15 does not advance the close time; E@19 advances it to 14 but no new
    window ends by then (``shouldRangeFetch``); F@20 closes [5,15)."""
    out = pipe(emitFinalTopology(TimeWindows.ofSizeAndGrace(10, 5).advanceBy(5)),
               [("A", "1", 0), ("B", "2", 5), ("C", "3", 15), ("D", "4", 15), ("E", "5", 19), ("F", "6", 20)])
    assert out == [[], [], [(W("A", 0, 10), "0+1", 0), (W("B", 0, 10), "0+2", 5)], [], [],
                   [(W("B", 5, 15), "0+2", 5)]]


def test_kip825_emit_final_drops_late_records_and_never_re_emits_a_window():
    out = pipe(emitFinalTopology(TimeWindows.ofSizeWithNoGrace(10)),
               [("A", "1", 3), ("A", "2", 10), ("A", "3", 4), ("A", "4", 25), (None, "5", 40), ("B", "6", 31)])
    # A@4 is late for [0,10) (close time 10): dropped; a null key neither aggregates nor emits
    assert out == [[], [(W("A", 0, 10), "0+1", 3)], [], [(W("A", 10, 20), "0+2", 10)], [],
                   [(W("A", 20, 30), "0+4", 25)]]


def test_kip825_dsl_count_with_default_retention_as_kafkas_time_windowed_kstream_impl_test():
    """``TimeWindowedKStreamImplTest.shouldCountWindowed`` (emit final): tumbling 500 ms, no
    grace, default retention 500: at 1000 the windows starting at 500 leave although the store's
    observed start (1000) minus retention is exactly 500."""
    from kspark import Consumed, EmitStrategy

    b = StreamsBuilder()
    serde = WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 500)
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(TimeWindows.ofSizeWithNoGrace(500)).emitStrategy(EmitStrategy.onWindowClose()).count()
     .toStream().to("out", Produced.with_(serde, Serdes.Long())))
    with TopologyTestDriver(b.build()) as d:
        i = d.createInputTopic("in", Serdes.String(), Serdes.String())
        for k, v, ts in [("1", "1", 10), ("1", "2", 15), ("1", "3", 500), ("2", "10", 550), ("2", "20", 500),
                         ("2", "30", 1000)]:
            i.pipeInput(k, v, ts)
        assert [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("out", serde, Serdes.Long()).readRecordsToList()] == [
            (W("1", 0, 500), 2, 15), (W("1", 500, 1000), 1, 500), (W("2", 500, 1000), 2, 550)]


def test_kip825_a_stream_time_jump_past_the_retention_hides_unemitted_windows():
    """The emit read of the time-ordered window store starts at ``observedStart - retention``
    (``getActualFrom``), observedStart being the largest window start put. With default retention
    (size + grace) and no cache, a jump of more than about one window makes windows that closed
    during the jump invisible before they are emitted: here [0,10) is never forwarded. Cached
    (Kafka's default), the scan reads through the cache (``CachingWindowStore.fetchAll``), which
    has no retention: [0,10) leaves (Kafka 4.3.1, conformance ``wcount.emitFinal.expiredInCache``,
    FINDINGS F17). A longer ``Materialized.withRetention`` keeps them either way."""
    out = pipe(emitFinalTopology(TimeWindows.ofSizeWithNoGrace(10), caching=False), [("A", "1", 5), ("A", "2", 35)])
    assert out == [[], []]
    out = pipe(emitFinalTopology(TimeWindows.ofSizeWithNoGrace(10)), [("A", "1", 5), ("A", "2", 35)])
    assert out == [[], [(W("A", 0, 10), "0+1", 5)]]

    from kspark import Consumed, EmitStrategy

    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(TimeWindows.ofSizeWithNoGrace(10)).emitStrategy(EmitStrategy.onWindowClose())
     .aggregate(lambda: "0", lambda k, v, agg: agg + "+" + v,
                materialized=Materialized.as_("w").withValueSerde(Serdes.String()).withRetention(100))
     .toStream().to("out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 10), Serdes.String())))
    assert pipe(b.build(), [("A", "1", 5), ("A", "2", 35)]) == [[], [(W("A", 0, 10), "0+1", 5)]]


def test_window_store_without_cache_hides_windows_past_retention():
    # Kafka 4.3.1 with statestore.cache.max.bytes=0: [10=2, 20=1], fetch(k, 0) = null
    windows = TimeWindows.ofSizeAndGrace(10, 5)
    with TopologyTestDriver(windowedCount(windows, Materialized.as_("counts")), {"statestore.cache.max.bytes": 0}) as d:
        for ts in (1, 12, 8, 16, 9, 25):
            d.createInputTopic("in").pipeInput("k", "v", ts)
        assert list(d.getWindowStore("counts").fetch("k", 0, 30)) == [KeyValue(10, 2), KeyValue(20, 1)]
        assert d.getWindowStore("counts").fetch("k", 0) is None


@pytest.mark.parametrize("cached", [False, True])
def test_t18_windowed_reduce_after_a_null_value_starts_again_from_the_next_value(cached):
    """FINDINGS F15: Kafka's windowed reduce aggregates with ``agg == null ? value : reducer(agg,
    value)``; a null first value makes a null aggregate, which deletes the window
    (ValueAndTimestamp.make(null) is null) and is forwarded uncached as a tombstone (cached: a
    window the store never held forwards nothing). Later nulls go to the reducer. Kafka 4.3.1's
    records for a=null@100, x@200, y@300, null@400, z@500 (window [0, 1000))."""
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(1000)).reduce(lambda a, v: f"{a}+{v}")
     .toStream().map(lambda w, v: KeyValue.pair(f"{w.key()}@{w.window().start()}", v)).to("out"))
    config = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
    if not cached:
        config["statestore.cache.max.bytes"] = 0
    with TopologyTestDriver(b.build(), config) as d:
        i = d.createInputTopic("in")
        for value, ts in [(None, 100), ("x", 200), ("y", 300), (None, 400), ("z", 500)]:
            i.pipeInput("a", value, ts)
        out = [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("out").readRecordsToList()]
    first = [] if cached else [("a@0", None, 100)]
    assert out == first + [("a@0", "x", 200), ("a@0", "x+y", 300), ("a@0", "x+y+None", 400), ("a@0", "x+y+None+z", 500)]
