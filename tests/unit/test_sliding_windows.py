"""Sliding-window aggregations (KIP-450): count, reduce, aggregate; emit on update and on close;
caching; early records; late drops; suppress.

Concrete-record tests ported from Kafka's ``KStreamSlidingWindowAggregateTest`` (each names the
one it ports; Kafka runs each with emit-on-update and emit-on-close, cache on and off, as here):
``MockInitializer.STRING_INIT`` ("0"), ``MockAggregator.TOSTRING_ADDER`` (``agg + "+" + value``),
``MockReducer.STRING_ADDER``. Every expected record was also checked against Kafka 4.3.1's
TopologyTestDriver. Rule ids: SA-11 (emit on close), SU-1 (suppress until windows close),
TTD-2 (emit interval 0).
"""

import logging

import pytest

from kspark import (Consumed, EmitStrategy, Grouped, Materialized, Produced, Serdes, SlidingWindows, Stores,
                    StreamsBuilder, Suppressed, TopologyException, WindowedSerdes)
from kspark.runtime.metrics import MetricName
from kspark.testing import TopologyTestDriver

PROPS = {"application.id": "sliding-test", "default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
MODES = [(False, False), (False, True), (True, False), (True, True)]  # (emitFinal, withCache)
DROPPED = MetricName("dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0")))


def STRING_INIT():  # noqa: N802 - Kafka's MockInitializer.STRING_INIT
    return "0"


def TOSTRING_ADDER(key, value, aggregate):  # noqa: N802 - Kafka's MockAggregator.TOSTRING_ADDER
    return f"{aggregate}+{value}"


def windowed(table_fn, windows, emitFinal, withCache, store="store-name"):
    """``topic`` grouped by key, in ``windows``, aggregated by ``table_fn(windowedStream, materialized)``
    into ``out`` (key serde: the time-windowed String serde)."""
    b = StreamsBuilder()
    w = (b.stream("topic", Consumed.with_(Serdes.String(), Serdes.String()))
         .groupByKey(Grouped.with_(Serdes.String(), Serdes.String())).windowedBy(windows))
    if emitFinal:
        w.emitStrategy(EmitStrategy.onWindowClose())
    m = Materialized.as_(store)
    m = m.withCachingEnabled() if withCache else m.withCachingDisabled()
    table_fn(w, m).toStream().to("out")
    return b.build()


def run(topology, records):
    with TopologyTestDriver(topology, PROPS) as d:
        inp = d.createInputTopic("topic")
        for key, value, ts in records:
            inp.pipeInput(key, value, ts)
        out = d.createOutputTopic("out", WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), windowSize(topology)),
                                  Serdes.String())
        return [(r.key(), r.value(), r.timestamp()) for r in out.readRecordsToList()], d.metrics().get(DROPPED, 0)


def windowSize(topology):
    return next(b._supplier.windowSize for b in topology.storeBuilders().values())


def gather(records):
    """Kafka's ``gatherOutput``: window start -> set of (value, timestamp)."""
    out = {}
    for key, value, ts in records:
        out.setdefault(key.window().start(), set()).add((value, ts))
    return out


@pytest.mark.parametrize("emitFinal, withCache", MODES)
def test_aggregate_small_input_KStreamSlidingWindowAggregateTest_testAggregateSmallInput(emitFinal, withCache):
    topology = windowed(lambda w, m: w.aggregate(STRING_INIT, TOSTRING_ADDER, m),
                        SlidingWindows.ofTimeDifferenceAndGrace(10, 5), emitFinal, withCache)
    records, _ = run(topology, [("A", "1", 10), ("A", "2", 10), ("A", "3", 14), ("A", "4", 15), ("A", "5", 20),
                                ("A", "6", 22), ("A", "7", 30)])
    if emitFinal:
        expected = {0: {("0+1+2", 10)}, 4: {("0+1+2+3", 14)}, 5: {("0+1+2+3+4", 15)}, 10: {("0+1+2+3+4+5", 20)},
                    11: {("0+3+4+5", 20)}, 12: {("0+3+4+5+6", 22)}}
    else:
        expected = {0: {("0+1", 10), ("0+1+2", 10)}, 4: {("0+1+2+3", 14)}, 5: {("0+1+2+3+4", 15)},
                    10: {("0+1+2+3+4+5", 20)}, 11: {("0+3", 14), ("0+3+4", 15), ("0+3+4+5", 20)},
                    12: {("0+3+4+5+6", 22)}, 15: {("0+4", 15), ("0+4+5", 20), ("0+4+5+6", 22)},
                    16: {("0+5", 20), ("0+5+6", 22)}, 20: {("0+5+6+7", 30)}, 21: {("0+6", 22), ("0+6+7", 30)},
                    23: {("0+7", 30)}}
    assert gather(records) == expected


@pytest.mark.parametrize("emitFinal, withCache", MODES)
def test_reduce_small_input_KStreamSlidingWindowAggregateTest_testReduceSmallInput(emitFinal, withCache):
    topology = windowed(lambda w, m: w.reduce(lambda a, v: f"{a}+{v}", m),
                        SlidingWindows.ofTimeDifferenceAndGrace(10, 5), emitFinal, withCache)
    records, _ = run(topology, [("A", "1", 10), ("A", "2", 14), ("A", "3", 15), ("A", "4", 22), ("A", "5", 26),
                                ("A", "6", 30)])
    if emitFinal:
        expected = {0: {("1", 10)}, 4: {("1+2", 14)}, 5: {("1+2+3", 15)}, 11: {("2+3", 15)}, 12: {("2+3+4", 22)}}
    else:
        expected = {0: {("1", 10)}, 4: {("1+2", 14)}, 5: {("1+2+3", 15)}, 11: {("2", 14), ("2+3", 15)},
                    12: {("2+3+4", 22)}, 15: {("3", 15), ("3+4", 22)}, 16: {("4", 22), ("4+5", 26)},
                    20: {("4+5+6", 30)}, 23: {("5", 26), ("5+6", 30)}, 27: {("6", 30)}}
    assert gather(records) == expected


LARGE_INPUT = [("A", "1", 10), ("A", "2", 20), ("A", "3", 22), ("A", "4", 15), ("B", "1", 12), ("B", "2", 13),
               ("B", "3", 18), ("B", "4", 19), ("B", "5", 25), ("B", "6", 14), ("C", "1", 11), ("C", "2", 15),
               ("C", "3", 16), ("C", "4", 21), ("C", "5", 23), ("D", "4", 11), ("D", "2", 12), ("D", "3", 29),
               ("D", "5", 16)]
LARGE_FINAL = [
    ("A", 0, 10, "0+1", 10),
    ("A", 5, 15, "0+1+4", 15),
    ("B", 2, 12, "0+1", 12),
    ("B", 3, 13, "0+1+2", 13),
    ("B", 8, 18, "0+1+2+3+6", 18),
    ("C", 5, 15, "0+2", 15),
    ("C", 6, 16, "0+2+3", 16)
]
LARGE_UPDATES = [
    ("A", 0, 10, "0+1", 10),
    ("A", 5, 15, "0+1+4", 15),
    ("A", 10, 20, "0+1+2", 20),
    ("A", 10, 20, "0+1+2+4", 20),
    ("A", 11, 21, "0+2", 20),
    ("A", 11, 21, "0+2+4", 20),
    ("A", 12, 22, "0+2+3", 22),
    ("A", 12, 22, "0+2+3+4", 22),
    ("A", 16, 26, "0+2+3", 22),
    ("A", 21, 31, "0+3", 22),
    ("B", 2, 12, "0+1", 12),
    ("B", 3, 13, "0+1+2", 13),
    ("B", 4, 14, "0+1+2+6", 14),
    ("B", 8, 18, "0+1+2+3", 18),
    ("B", 8, 18, "0+1+2+3+6", 18),
    ("B", 9, 19, "0+1+2+3+4", 19),
    ("B", 9, 19, "0+1+2+3+4+6", 19),
    ("B", 13, 23, "0+2", 13),
    ("B", 13, 23, "0+2+3", 18),
    ("B", 13, 23, "0+2+3+4", 19),
    ("B", 13, 23, "0+2+3+4+6", 19),
    ("B", 14, 24, "0+3", 18),
    ("B", 14, 24, "0+3+4", 19),
    ("B", 14, 24, "0+3+4+6", 19),
    ("B", 15, 25, "0+3+4+5", 25),
    ("B", 19, 29, "0+4", 19),
    ("B", 19, 29, "0+4+5", 25),
    ("B", 20, 30, "0+5", 25),
    ("C", 1, 11, "0+1", 11),
    ("C", 5, 15, "0+1+2", 15),
    ("C", 6, 16, "0+1+2+3", 16),
    ("C", 11, 21, "0+1+2+3+4", 21),
    ("C", 12, 22, "0+2", 15),
    ("C", 12, 22, "0+2+3", 16),
    ("C", 12, 22, "0+2+3+4", 21),
    ("C", 13, 23, "0+2+3+4+5", 23),
    ("C", 16, 26, "0+3", 16),
    ("C", 16, 26, "0+3+4", 21),
    ("C", 16, 26, "0+3+4+5", 23),
    ("C", 17, 27, "0+4", 21),
    ("C", 17, 27, "0+4+5", 23),
    ("C", 22, 32, "0+5", 23),
    ("D", 1, 11, "0+4", 11),
    ("D", 2, 12, "0+4+2", 12),
    ("D", 6, 16, "0+4+2+5", 16),
    ("D", 12, 22, "0+2", 12),
    ("D", 12, 22, "0+2+5", 16),
    ("D", 13, 23, "0+5", 16),
    ("D", 19, 29, "0+3", 29)
]


@pytest.mark.parametrize("emitFinal, withCache", MODES)
def test_aggregate_large_input_KStreamSlidingWindowAggregateTest_testAggregateLargeInput(emitFinal, withCache):
    """Out-of-order records update earlier windows; with emit-on-close (grace 10) the records that
    come too late for their windows ("skip for emit final") are dropped and counted."""
    topology = windowed(lambda w, m: w.aggregate(STRING_INIT, TOSTRING_ADDER, m),
                        SlidingWindows.ofTimeDifferenceAndGrace(10, 10 if emitFinal else 50), emitFinal, withCache)
    records, dropped = run(topology, LARGE_INPUT)
    # Kafka sorts by key, then window start (a stable sort of the output order)
    got = sorted(records, key=lambda r: (r[0].key(), r[0].window().start()))
    assert [(k.key(), k.window().start(), k.window().end(), v, ts) for k, v, ts in got] == (
        LARGE_FINAL if emitFinal else LARGE_UPDATES)
    assert dropped == (5 if emitFinal else 0)


@pytest.mark.parametrize("emitFinal, withCache", MODES)
def test_early_records_KStreamSlidingWindowAggregateTest_testEarlyRecordsSmallInput(emitFinal, withCache):
    """Records before the time difference share the window [0, d]."""
    topology = windowed(lambda w, m: w.aggregate(STRING_INIT, TOSTRING_ADDER, m.withValueSerde(Serdes.String())),
                        SlidingWindows.ofTimeDifferenceAndGrace(50, 0), emitFinal, withCache, "topic-Canonized")
    records, _ = run(topology, [("A", "1", 0), ("A", "2", 5), ("A", "3", 6), ("A", "4", 3), ("A", "5", 13),
                                ("A", "6", 10), ("A", "7", 70)])
    if emitFinal:
        expected = {0: {("0+1+2+3+4+5+6", 13)}, 1: {("0+2+3+4+5+6", 13)}, 4: {("0+2+3+5+6", 13)},
                    6: {("0+3+5+6", 13)}, 7: {("0+5+6", 13)}, 11: {("0+5", 13)}}
    else:
        expected = {
            0: {("0+1", 0), ("0+1+2", 5), ("0+1+2+3", 6), ("0+1+2+3+4", 6), ("0+1+2+3+4+5", 13), ("0+1+2+3+4+5+6", 13)},
            1: {("0+2", 5), ("0+2+3", 6), ("0+2+3+4", 6), ("0+2+3+4+5", 13), ("0+2+3+4+5+6", 13)},
            4: {("0+2+3", 6), ("0+2+3+5", 13), ("0+2+3+5+6", 13)},
            6: {("0+3", 6), ("0+3+5", 13), ("0+3+5+6", 13)},
            7: {("0+5", 13), ("0+5+6", 13)},
            11: {("0+5", 13)},
            20: {("0+7", 70)},
        }
    assert gather(records) == expected


@pytest.mark.parametrize("emitFinal, withCache", MODES)
def test_null_key_is_skipped_logged_and_counted_KStreamSlidingWindowAggregateTest_shouldLogAndMeterWhenSkippingNullKey(
        emitFinal, withCache, caplog):
    topology = windowed(lambda w, m: w.aggregate(STRING_INIT, TOSTRING_ADDER, m),
                        SlidingWindows.ofTimeDifferenceAndGrace(10, 100), emitFinal, withCache, "topic1-Canonized")
    with caplog.at_level(logging.WARNING, logger="kspark.dsl"):
        records, dropped = run(topology, [(None, "1", 0)])
    assert "Skipping record due to null key or value. topic=[topic] partition=[0] offset=[0]" in caplog.text
    assert (records, dropped) == ([], 1)


@pytest.mark.parametrize("emitFinal, withCache", MODES)
def test_expired_windows_are_skipped_logged_and_counted_KStreamSlidingWindowAggregateTest_shouldLogAndMeterWhenSkippingExpiredWindowByGrace(
        emitFinal, withCache, caplog):
    topology = windowed(lambda w, m: w.aggregate(STRING_INIT, TOSTRING_ADDER, m),
                        SlidingWindows.ofTimeDifferenceAndGrace(10, 90), emitFinal, withCache)
    with caplog.at_level(logging.WARNING, logger="kspark.dsl"):
        records, dropped = run(topology, [("k", "100", 200), ("k", "0", 100), ("k", "1", 101), ("k", "2", 102),
                                          ("k", "3", 103), ("k", "4", 104), ("k", "5", 105), ("k", "6", 15),
                                          ("k", "101", 300), ("k", "102", 400)])
    for offset, ts, window in [(1, 100, "[90,100]"), (2, 101, "[91,101]"), (3, 102, "[92,102]"), (4, 103, "[93,103]"),
                               (5, 104, "[94,104]"), (6, 105, "[95,105]"), (7, 15, "[15,25]")]:
        assert (f"Skipping record for expired window. topic=[topic] partition=[0] offset=[{offset}] timestamp=[{ts}] "
                f"window={window} expiration=[110] streamTime=[200]") in caplog.text
    assert dropped == 7
    expected = [("k", 190, 200, "0+100", 200), ("k", 290, 300, "0+101", 300)]
    if not emitFinal:
        expected.append(("k", 390, 400, "0+102", 400))
    assert [(k.key(), k.window().start(), k.window().end(), v, ts) for k, v, ts in records] == expected


# ---------------------------------------------------------------------------------- count, suppress, API
def test_count_emits_every_window_update_and_describe_names_kafkas():
    """The class docstring's example, and Kafka's names (store ``KSTREAM-AGGREGATE-STATE-STORE-<n>``,
    no store name burnt by ``count(Materialized)``)."""
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(10)).count(Materialized.with_(Serdes.String(), Serdes.Long()))
     .toStream().to("out"))
    topology = b.build()
    assert list(topology.storeBuilders()) == ["KSTREAM-AGGREGATE-STATE-STORE-0000000001"]
    assert [n.name for s in topology.subtopologies() for n in s.nodes] == [
        "KSTREAM-SOURCE-0000000000", "KSTREAM-AGGREGATE-0000000002", "KTABLE-TOSTREAM-0000000003",
        "KSTREAM-SINK-0000000004"]
    with TopologyTestDriver(topology, PROPS | {"statestore.cache.max.bytes": 0}) as d:
        inp, out = d.createInputTopic("in"), d.createOutputTopic("out")
        steps = []
        for ts in (5, 12, 30):
            inp.pipeInput("k", "v", ts)
            steps.append([(r.key().window().start(), r.key().window().end(), r.value(), r.timestamp())
                          for r in out.readRecordsToList()])
    assert steps == [[(0, 10, 1, 5)], [(6, 16, 1, 12), (2, 12, 2, 12)], [(20, 30, 1, 30)]]


def test_suppress_until_window_closes_forwards_each_final_window_once():
    """SU-1: a sliding window closes at its end + grace; suppress forwards its final aggregate then."""
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, 5))
     .count(Materialized.with_(Serdes.String(), Serdes.Long()))
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
     .toStream().to("out"))
    with TopologyTestDriver(b.build(), PROPS) as d:
        inp, out = d.createInputTopic("in"), d.createOutputTopic("out")
        for ts in (10, 14, 30, 31):
            inp.pipeInput("k", "v", ts)
        assert [(r.key().window().start(), r.value(), r.timestamp()) for r in out.readRecordsToList()] == [
            (0, 1, 10), (4, 2, 14), (11, 1, 14)]


def test_sliding_windows_api_and_errors():
    w = SlidingWindows.ofTimeDifferenceAndGrace(10, 5)
    assert (w.timeDifferenceMs(), w.gracePeriodMs()) == (10, 5)
    assert repr(w) == "SlidingWindows{, sizeMs=10, graceMs=5}"
    with pytest.raises(ValueError, match="Window time difference must not be negative."):
        SlidingWindows.ofTimeDifferenceWithNoGrace(-1)
    with pytest.raises(ValueError, match="Window grace period must not be negative."):
        SlidingWindows.ofTimeDifferenceAndGrace(1, -1)
    grouped = StreamsBuilder().stream("in").groupByKey()
    with pytest.raises(ValueError, match=r"must be no smaller than 2 \* time difference plus the grace period. "
                                         r"Got time difference=\[10\], grace=\[5\], retention=\[20\]"):
        grouped.windowedBy(w).count(Materialized.as_("c").withRetention(20))
    with pytest.raises(ValueError, match="retains duplicates"):
        grouped.windowedBy(w).count(Materialized.as_(Stores.inMemoryWindowStore("s", 25, 10, True)))


def test_zero_time_difference_fails_every_record_as_in_kafka():
    """Kafka builds a window ``[t, t]`` as a ``TimeWindow``, which must be longer than zero: the
    first record fails ("Window endMs must be greater than window startMs.")."""
    from kspark import StreamsException

    topology = windowed(lambda w, m: w.count(m), SlidingWindows.ofTimeDifferenceWithNoGrace(0), False, False)
    with TopologyTestDriver(topology, PROPS) as d:
        with pytest.raises(StreamsException, match="Window endMs must be greater than window startMs."):
            d.createInputTopic("topic").pipeInput("k", "v", 5)


def test_windowed_table_mapped_before_suppress_still_closes_its_windows():
    """Kafka finds the window close time through ``mapValues``/``filter`` up to the aggregation."""
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(10)).count(Materialized.with_(Serdes.String(), Serdes.Long()))
     .filter(lambda k, v: True).mapValues(lambda v: v * 10)
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream().to("out"))
    b.build()
    b2 = StreamsBuilder()
    with pytest.raises(TopologyException, match="Window close time is only defined for windowed computations"):
        b2.stream("in").groupByKey().count().mapValues(lambda v: v).suppress(
            Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))


# ---------------------------------------------------------------------------------- joining windowed tables
class Captured:
    """Kafka's ``MockApiProcessorSupplier``/``MockApiProcessor``: the records one ``process()``
    node got, as ``(key, window start, window end, value, timestamp)``; ``take()`` checks and clears."""

    def __init__(self):
        self.records = []

    def supplier(self):
        from kspark import ContextualProcessor

        records = self.records

        class Capture(ContextualProcessor):
            def process(self, record):
                w = record.key()
                records.append((w.key(), w.window().start(), w.window().end(), record.value(), record.timestamp()))
        return Capture

    def take(self):
        out, self.records[:] = list(self.records), []
        return out


@pytest.mark.parametrize("emitFinal, withCache", MODES)
def test_join_of_two_windowed_tables_KStreamSlidingWindowAggregateTest_testJoin(emitFinal, withCache):
    """Two sliding-window aggregations joined by their ``Windowed`` keys (issue 36 item 3): the
    join reads the other table's window ``[start, end]`` of the same key (Kafka's
    ``KStreamWindowAggregateValueGetter``: ``windowStore.fetch(key, start)``). Kafka's expected
    records, its "reverse" store variant (kspark's sliding aggregation always iterates latest
    first); also checked against Kafka 4.3.1 (conformance ``sliding.join.*``)."""
    b = StreamsBuilder()
    grace = 0 if emitFinal else 100

    def table(topic, index):
        m = (Materialized.as_(f"store-name{index}") if emitFinal
             else Materialized.as_(Stores.inMemoryWindowStore(f"Reverse{index}", 50000, 10, False)))
        if emitFinal:
            m = m.withCachingEnabled() if withCache else m.withCachingDisabled()
        w = (b.stream(topic, Consumed.with_(Serdes.String(), Serdes.String()))
             .groupByKey(Grouped.with_(Serdes.String(), Serdes.String()))
             .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, grace)))
        if emitFinal:
            w.emitStrategy(EmitStrategy.onWindowClose())
        return w.aggregate(STRING_INIT, TOSTRING_ADDER, m)

    table1, table2 = table("topic1", 1), table("topic2", 2)
    p0, p1, p2 = Captured(), Captured(), Captured()
    table1.toStream().process(p0.supplier())
    table2.toStream().process(p1.supplier())
    table1.join(table2, lambda v1, v2: f"{v1}%{v2}").toStream().process(p2.supplier())

    with TopologyTestDriver(b.build(), PROPS) as d:
        in1, in2 = d.createInputTopic("topic1"), d.createInputTopic("topic2")
        for k, v, ts in (("A", "1", 10), ("B", "2", 11), ("C", "3", 12)):
            in1.pipeInput(k, v, ts)
        # left windows created by the first set of records to table 1
        expected = [("A", 0, 10, "0+1", 10), ("B", 1, 11, "0+2", 11)]
        assert p0.take() == (expected if emitFinal else expected + [("C", 2, 12, "0+3", 12)])
        assert p1.take() == [] and p2.take() == []

        for k, v, ts in (("A", "1", 15), ("B", "2", 16), ("C", "3", 19)):
            in1.pipeInput(k, v, ts)
        # right windows from previous records are created, and left windows from new records to table 1
        assert p0.take() == ([("C", 2, 12, "0+3", 12), ("A", 5, 15, "0+1+1", 15), ("B", 6, 16, "0+2+2", 16)]
                             if emitFinal else
                             [("A", 11, 21, "0+1", 15), ("A", 5, 15, "0+1+1", 15), ("B", 12, 22, "0+2", 16),
                              ("B", 6, 16, "0+2+2", 16), ("C", 13, 23, "0+3", 19), ("C", 9, 19, "0+3+3", 19)])
        assert p1.take() == [] and p2.take() == []

        in2.pipeInput("A", "a", 10)
        in2.pipeInput("C", "c", 12)
        assert p0.take() == []
        if emitFinal:  # left windows from the first set of records sent to table 2, and their joins
            assert p1.take() == [("A", 0, 10, "0+a", 10)]
            assert p2.take() == [("A", 0, 10, "0+1%0+a", 10)]
        else:
            assert p1.take() == [("A", 0, 10, "0+a", 10), ("C", 2, 12, "0+c", 12)]
            assert p2.take() == [("A", 0, 10, "0+1%0+a", 10), ("C", 2, 12, "0+3%0+c", 12)]

        for k, v, ts in (("A", "a", 15), ("B", "b", 16), ("C", "c", 17)):
            in2.pipeInput(k, v, ts)
        assert p0.take() == []
        if emitFinal:
            assert p1.take() == [("C", 2, 12, "0+c", 12), ("A", 5, 15, "0+a+a", 15), ("B", 6, 16, "0+b", 16)]
            assert p2.take() == [("C", 2, 12, "0+3%0+c", 12), ("A", 5, 15, "0+1+1%0+a+a", 15),
                                 ("B", 6, 16, "0+2+2%0+b", 16)]
        else:
            assert p1.take() == [("A", 11, 21, "0+a", 15), ("A", 5, 15, "0+a+a", 15), ("B", 6, 16, "0+b", 16),
                                 ("C", 13, 23, "0+c", 17), ("C", 7, 17, "0+c+c", 17)]
            assert p2.take() == [("A", 11, 21, "0+1%0+a", 15), ("A", 5, 15, "0+1+1%0+a+a", 15),
                                 ("B", 6, 16, "0+2+2%0+b", 16), ("C", 13, 23, "0+3%0+c", 19)]


# ---------------------------------------------------------------------------------- retention edge of emit-final
@pytest.mark.parametrize("userStore", [False, True])
def test_emit_final_store_keeps_the_window_at_its_retention_edge(userStore):
    """Issue 36 item 5. Time difference 500, grace 200, retention 1200: c's late record puts its right
    window [2000, 2500] (store time 2000), so a's left window [800, 1300] starts exactly at
    ``2000 - 1200``. Emit-final's own store is Kafka's time-ordered one, whose reads still show it
    (``AbstractDualSchemaRocksDBSegmentedBytesStore.getActualFrom``): a@1500 finds a@1300 and creates
    its right window [1301, 1801], emitted when d@2600 closes it. A user's in-memory store hides it
    (``observedStreamTime - retention + 1``) and the window is never made. Kafka 4.3.1's records
    (conformance ``sliding.count.emitFinal[.inMemory].retentionEdge``)."""
    b = StreamsBuilder()
    m = (Materialized.as_(Stores.inMemoryWindowStore("sw", 1200, 500, False)) if userStore
         else Materialized.with_(Serdes.String(), Serdes.Long()))
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(500, 200)).emitStrategy(EmitStrategy.onWindowClose())
     .count(m).toStream().to("out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 500),
                                                   Serdes.Long())))
    steps = []
    with TopologyTestDriver(b.build(), PROPS) as d:
        inp = d.createInputTopic("in")
        out = d.createOutputTopic("out", WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 500), Serdes.Long())
        for k, ts in (("a", 1300), ("c", 2000), ("c", 1999), ("a", 1500), ("d", 2100), ("d", 2600)):
            inp.pipeInput(k, "x", ts)
            steps.append([(f"{r.key().key()}@{r.key().window().start()}/{r.key().window().end()}", r.value(),
                           r.timestamp()) for r in out.readRecordsToList()])
    created = [] if userStore else [("a@1301/1801", 1, 1500)]
    assert steps == [[], [("a@800/1300", 1, 1300)], [], [], created,
                     [("c@1499/1999", 1, 1999), ("c@1500/2000", 2, 2000), ("d@1600/2100", 1, 2100)]]
