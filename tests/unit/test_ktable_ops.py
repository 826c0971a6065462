"""KTable filter / filterNot / mapValues, value getters and old values, through TopologyTestDriver.

Mirrors Kafka's KTableFilterTest, KTableMapValuesTest, StreamsBuilderTest.shouldAllowJoin*KTable and
TopologyTest.kTable*ShouldPreserveTopologyStructure (expected describe() strings copied verbatim).
Rules: T-15 (stateless ops keep the timestamp), J-1..J-4 (stream-table join against a derived table).
"""

import pytest

from kspark import Change, ContextualProcessor, Materialized, Serdes, StreamsBuilder
from kspark.testing import TestRecord, TopologyTestDriver


class Capture(ContextualProcessor):
    """Kafka's MockApiProcessor: records (key, value, timestamp) of what reaches it."""

    def __init__(self, sink: list) -> None:
        self.sink = sink

    def process(self, record) -> None:
        self.sink.append((record.key(), record.value(), record.timestamp()))


def capture(topology, name: str, parent: str) -> list:
    seen: list = []
    topology.addProcessor(name, lambda: Capture(seen), parent)
    return seen


def even(k, v):
    return v % 2 == 0


def pipeFilterInput(d):
    t = d.createInputTopic("topic1")
    t.pipeInput("A", 1, 10)
    t.pipeInput("B", 2, 5)
    t.pipeInput("C", 3, 8)
    t.pipeInput("D", 4, 14)
    t.pipeInput("A", None, 18)
    t.pipeInput("B", None, 15)


def _doTestKTable(materializeFilter: bool):
    b = StreamsBuilder()
    table1 = b.table("topic1")
    table2 = table1.filter(even, materialized=Materialized.as_("store2") if materializeFilter else None)
    table3 = table1.filterNot(even)
    table2.toStream().to("out2")
    table3.toStream().to("out3")
    # KTableFilterTest's drivers run without the record cache (statestore.cache.max.bytes 0): with
    # it, the materialized filter's store would not forward deletes of keys it never held (F6)
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 0}) as d:
        pipeFilterInput(d)
        out2 = d.createOutputTopic("out2").readRecordsToList()
        out3 = d.createOutputTopic("out3").readRecordsToList()
    return table1, table2, table3, out2, out3


def test_filter_and_filterNot_forward_tombstones_for_filtered_out_updates():
    """KTableFilterTest.shouldPassThroughWithoutMaterialization: the source is not materialized, so
    no old values: every filtered-out update is a tombstone (T-15: timestamps unchanged)."""
    table1, table2, table3, out2, out3 = _doTestKTable(False)
    assert (table1.queryableStoreName(), table2.queryableStoreName(), table3.queryableStoreName()) == (None, None, None)
    assert out2 == [TestRecord("A", None, 10), TestRecord("B", 2, 5), TestRecord("C", None, 8),
                    TestRecord("D", 4, 14), TestRecord("A", None, 18), TestRecord("B", None, 15)]
    assert out3 == [TestRecord("A", 1, 10), TestRecord("B", None, 5), TestRecord("C", 3, 8),
                    TestRecord("D", None, 14), TestRecord("A", None, 18), TestRecord("B", None, 15)]


def test_filter_with_named_materialized_store_is_queryable_and_gives_the_same_updates():
    """KTableFilterTest.shouldPassThroughOnMaterialization."""
    _, table2, table3, out2, out3 = _doTestKTable(True)
    assert table2.queryableStoreName() == "store2" and table3.queryableStoreName() is None
    assert [r.value() for r in out2] == [None, 2, None, 4, None, None]
    assert [r.value() for r in out3] == [1, None, 3, None, None, None]


def test_filter_store_holds_only_passing_values_with_their_timestamps():
    b = StreamsBuilder()
    b.table("topic1").filter(even, materialized=Materialized.as_("store2"))
    with TopologyTestDriver(b.build()) as d:
        t = d.createInputTopic("topic1")
        t.pipeInput("A", 2, 7)
        t.pipeInput("B", 4, 9)
        t.pipeInput("A", 3, 11)   # now filtered out: deleted from the filter's store
        store = d.getTimestampedKeyValueStore("store2")
        assert [(kv.key, kv.value) for kv in store.all()] == [("B", (4, 9))]


def _oldValuesTopology(materializeSource: bool, materializeFilter: bool, force: bool | None):
    b = StreamsBuilder()
    table1 = b.table("topic1", materialized=Materialized.as_("store1") if materializeSource else None)
    table2 = table1.filter(even, materialized=Materialized.as_("store2") if materializeFilter else None)
    if force is not None:
        table2._enableSendingOldValues(force)
    topology = b.build()
    return table1, table2, topology


def _pipeOldValueInput(d):
    t = d.createInputTopic("topic1")
    for k, v, ts in [("A", 1, 5), ("B", 1, 10), ("C", 1, 15), ("A", 2, 15), ("B", 2, 8), ("A", 3, 20),
                     ("A", None, 10), ("B", None, 20)]:
        t.pipeInput(k, v, ts)


def test_filter_without_old_values_forwards_change_with_null_old_value():
    """KTableFilterTest.shouldNotSendOldValuesWithoutMaterialization / ...IfNotAlreadyMaterializedAndNotForcedToMaterialize."""
    table1, table2, topology = _oldValuesTopology(False, False, False)
    p1, p2 = capture(topology, "proc1", table1._name), capture(topology, "proc2", table2._name)
    with TopologyTestDriver(topology) as d:
        _pipeOldValueInput(d)
    assert not table1._sendOldValues and not table2._sendOldValues
    assert p1 == [("A", Change(1, None), 5), ("B", Change(1, None), 10), ("C", Change(1, None), 15),
                  ("A", Change(2, None), 15), ("B", Change(2, None), 8), ("A", Change(3, None), 20),
                  ("A", Change(None, None), 10), ("B", Change(None, None), 20)]
    assert p2 == [("A", Change(None, None), 5), ("B", Change(None, None), 10), ("C", Change(None, None), 15),
                  ("A", Change(2, None), 15), ("B", Change(2, None), 8), ("A", Change(None, None), 20),
                  ("A", Change(None, None), 10), ("B", Change(None, None), 20)]


def _expectSendingOldValues(p1, p2, parentSendsOld: bool):
    """KTableFilterTest.doTestSendingOldValue: updates absent before and after the filter vanish."""
    o = (lambda v: v) if parentSendsOld else (lambda v: None)
    assert p1 == [("A", Change(1, None), 5), ("B", Change(1, None), 10), ("C", Change(1, None), 15),
                  ("A", Change(2, o(1)), 15), ("B", Change(2, o(1)), 8), ("A", Change(3, o(2)), 20),
                  ("A", Change(None, o(3)), 10), ("B", Change(None, o(2)), 20)]
    assert p2 == [("A", Change(2, None), 15), ("B", Change(2, None), 8), ("A", Change(None, 2), 20),
                  ("B", Change(None, 2), 20)]


def test_filter_forced_to_send_old_values_materializes_the_source():
    """KTableFilterTest.shouldEnableSendOldValuesWhenNotMaterializedAlreadyButForcedToMaterialize."""
    table1, table2, topology = _oldValuesTopology(False, False, True)
    assert table1._sendOldValues and table2._sendOldValues
    assert "KTABLE-SOURCE-0000000002 (stores: [topic1-STATE-STORE-0000000000])" in str(topology.describe())
    p1, p2 = capture(topology, "proc1", table1._name), capture(topology, "proc2", table2._name)
    with TopologyTestDriver(topology) as d:
        _pipeOldValueInput(d)
    _expectSendingOldValues(p1, p2, True)


def test_materialized_filter_sends_old_values_from_its_own_store():
    """KTableFilterTest.shouldEnableSendOldValuesWhenMaterializedAlreadyAndForcedToMaterialize."""
    table1, table2, topology = _oldValuesTopology(False, True, True)
    assert not table1._sendOldValues and table2._sendOldValues
    p1, p2 = capture(topology, "proc1", table1._name), capture(topology, "proc2", table2._name)
    with TopologyTestDriver(topology) as d:
        _pipeOldValueInput(d)
    _expectSendingOldValues(p1, p2, False)


def test_filter_over_a_materialized_source_gets_old_values_without_being_asked():
    """KTableFilterTest.shouldSendOldValuesWhenEnabledOnUpStreamMaterialization."""
    table1, table2, topology = _oldValuesTopology(True, False, False)
    assert table1._sendOldValues and table2._sendOldValues
    p1, p2 = capture(topology, "proc1", table1._name), capture(topology, "proc2", table2._name)
    with TopologyTestDriver(topology) as d:
        _pipeOldValueInput(d)
    _expectSendingOldValues(p1, p2, True)


def test_filter_before_groupBy_skips_null_to_null_changes():
    """KTableFilterTest.shouldSkipNullToRepartitionWithoutMaterialization: groupBy asks for old
    values, so rejected updates of keys never in the filter result reach nothing downstream."""
    b = StreamsBuilder()
    table1 = b.table("topic1")
    table2 = table1.filter(lambda k, v: v.lower() == "accept")
    table2.groupBy(lambda k, v: (k, v)).reduce(lambda a, v: a + v, lambda a, v: a.replace(v, ""))
    topology = b.build()
    p1, p2 = capture(topology, "proc1", table1._name), capture(topology, "proc2", table2._name)
    with TopologyTestDriver(topology) as d:
        t = d.createInputTopic("topic1")
        t.pipeInput("A", "reject", 5)
        t.pipeInput("B", "reject", 10)
        t.pipeInput("C", "reject", 20)
    assert p1 == [("A", Change("reject", None), 5), ("B", Change("reject", None), 10), ("C", Change("reject", None), 20)]
    assert p2 == []


def test_mapValues_with_and_without_key_keeps_timestamps_and_tombstones():
    """KTableMapValuesTest.testKTable (+ a ValueMapperWithKey): the mapper never sees a null."""
    b = StreamsBuilder()
    table1 = b.table("topic1")
    calls = []

    def length(v):
        calls.append(v)
        return len(v)

    table1.mapValues(length).toStream().to("out")
    table1.mapValues(lambda k, v: f"{k}:{v}", materialized=Materialized.as_("kv")).toStream().to("outWithKey")
    with TopologyTestDriver(b.build()) as d:
        t = d.createInputTopic("topic1")
        t.pipeInput("A", "01", 5)
        t.pipeInput("B", "01", 10)
        t.pipeInput("C", "01", 15)
        t.pipeInput("A", None, 20)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("A", 2, 5), TestRecord("B", 2, 10), TestRecord("C", 2, 15), TestRecord("A", None, 20)]
        assert d.createOutputTopic("outWithKey").readValuesToList() == ["A:01", "B:01", "C:01", None]
        assert [(kv.key, kv.value) for kv in d.getTimestampedKeyValueStore("kv").all()] == [
            ("B", ("B:01", 10)), ("C", ("C:01", 15))]
    assert calls == ["01", "01", "01"]


def test_j1_j4_stream_joins_a_non_materialized_filtered_table_through_its_parent_store():
    """StreamsBuilderTest.shouldAllowJoinUnmaterializedFilteredKTable: one store (the source's),
    connected to the join, none to the filter; the join sees the filtered view."""
    b = StreamsBuilder()
    filtered = b.table("table-topic").filter(lambda k, v: v != "hidden")
    b.stream("stream-topic").join(filtered, lambda s, t: f"{s}+{t}").to("out")
    topology = b.build()
    described = str(topology.describe())
    assert "Processor: KSTREAM-JOIN-0000000005 (stores: [table-topic-STATE-STORE-0000000000])" in described
    assert "Processor: KTABLE-FILTER-0000000003 (stores: [])" in described
    with TopologyTestDriver(topology) as d:
        tbl, st = d.createInputTopic("table-topic"), d.createInputTopic("stream-topic")
        tbl.pipeInput("a", "visible", 1)
        tbl.pipeInput("b", "hidden", 2)
        st.pipeInput("a", "s1", 3)
        st.pipeInput("b", "s2", 4)   # the filter hides b: no match
        tbl.pipeInput("a", "hidden", 5)
        st.pipeInput("a", "s3", 6)
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("a", "s1+visible", 3)]


def test_stream_joins_a_non_materialized_mapped_table():
    """StreamsBuilderTest.shouldAllowJoinUnmaterializedMapValuedKTable."""
    b = StreamsBuilder()
    mapped = b.table("table-topic").mapValues(str.upper)
    b.stream("stream-topic").leftJoin(mapped, lambda s, t: f"{s}+{t}").to("out")
    topology = b.build()
    assert "Processor: KTABLE-MAPVALUES-0000000003 (stores: [])" in str(topology.describe())
    with TopologyTestDriver(topology) as d:
        d.createInputTopic("table-topic").pipeInput("a", "x", 1)
        st = d.createInputTopic("stream-topic")
        st.pipeInput("a", "s1", 2)
        st.pipeInput("b", "s2", 3)
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("a", "s1+X", 2), TestRecord("b", "s2+None", 3)]


# -- TopologyTest: expected strings copied from Kafka --------------------------------------
def test_describe_non_materialized_filter_matches_kafka():
    """TopologyTest.kTableNonMaterializedFilterShouldPreserveTopologyStructure."""
    b = StreamsBuilder()
    b.table("input-topic").filter(lambda k, v: False)
    assert str(b.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [])\n"
        "      --> KTABLE-FILTER-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-FILTER-0000000003 (stores: [])\n"
        "      --> none\n"
        "      <-- KTABLE-SOURCE-0000000002\n\n")


def test_describe_anonymous_materialized_filter_matches_kafka():
    """TopologyTest.kTableAnonymousMaterializedFilterShouldPreserveTopologyStructure: an unnamed
    Materialized burns index 3 and materializes nothing."""
    b = StreamsBuilder()
    b.table("input-topic").filter(lambda k, v: False, materialized=Materialized.with_(None, None))
    assert str(b.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [])\n"
        "      --> KTABLE-FILTER-0000000004\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-FILTER-0000000004 (stores: [])\n"
        "      --> none\n"
        "      <-- KTABLE-SOURCE-0000000002\n"
        "\n")


def test_describe_named_materialized_mapValues_matches_kafka():
    """TopologyTest.kTableNamedMaterializedMapValuesShouldPreserveTopologyStructure."""
    b = StreamsBuilder()
    b.table("input-topic").mapValues(lambda k, v: None, materialized=Materialized.as_("store-name"))
    assert str(b.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [])\n"
        "      --> KTABLE-MAPVALUES-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-MAPVALUES-0000000003 (stores: [store-name])\n"
        "      --> none\n"
        "      <-- KTABLE-SOURCE-0000000002\n"
        "\n")


def test_filter_over_an_aggregation_enables_its_old_values():
    """KTableFilter's constructor asks a materialized parent (a KGroupedStream aggregation) for old
    values: a count leaving the filter gives one tombstone, later counts outside it give nothing."""
    from kspark import TimeWindows

    b = StreamsBuilder()
    grouped = b.stream("clicks").groupByKey()
    grouped.count(materialized=Materialized.as_("plain").withCachingDisabled()).filter(lambda k, n: n < 2).toStream().to("plain-out")
    (grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(100)).count(materialized=Materialized.as_("win").withCachingDisabled())
     .filter(lambda k, n: n < 2).toStream().map(lambda wk, n: (f"{wk.key()}@{wk.window().start()}", n)).to("win-out"))
    with TopologyTestDriver(b.build()) as d:
        t = d.createInputTopic("clicks")
        for ts in (1, 2, 3):
            t.pipeInput("u", "x", ts)
        assert d.createOutputTopic("plain-out").readRecordsToList() == [TestRecord("u", 1, 1), TestRecord("u", None, 2)]
        assert d.createOutputTopic("win-out").readRecordsToList() == [TestRecord("u@0", 1, 1), TestRecord("u@0", None, 2)]


def _tableDeletes(build, pipes, cached):
    b = StreamsBuilder()
    build(b)
    config = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
    if not cached:
        config["statestore.cache.max.bytes"] = 0
    with TopologyTestDriver(b.build(), config) as d:
        for topic, key, value, ts in pipes:
            d.createInputTopic(topic).pipeInput(key, value, ts)
        return [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("out").readRecordsToList()]


@pytest.mark.parametrize("cached", [False, True])
def test_a_cached_table_store_forwards_no_delete_of_a_key_it_does_not_hold(cached):
    """FINDINGS F6 (Kafka's CachingKeyValueStore.putAndMaybeForward skips an entry whose new and old
    values are both null): a materialized source table, a materialized filter, and a join whose
    source tables are materialized (and cached) to be looked up. Kafka 4.3.1's records."""
    source = _tableDeletes(lambda b: b.table("in", Materialized.as_("t")).toStream().to("out"),
                           [("in", "a", None, 1), ("in", "b", "x", 2), ("in", "b", None, 3)], cached)
    assert source == ([] if cached else [("a", None, 1)]) + [("b", "x", 2), ("b", None, 3)]
    filtered = _tableDeletes(lambda b: b.table("in").filter(lambda k, v: v != "x", Materialized.as_("f"))
                             .toStream().to("out"), [("in", "a", "x", 1), ("in", "a", "y", 2)], cached)
    assert filtered == ([] if cached else [("a", None, 1)]) + [("a", "y", 2)]
    joined = _tableDeletes(lambda b: b.table("in1").join(b.table("in2"), lambda l, r: l + r).toStream().to("out"),
                           [("in1", "a", "l", 1), ("in2", "a", None, 2), ("in2", "a", "r", 3)], cached)
    assert joined == ([] if cached else [("a", None, 2)]) + [("a", "lr", 3)]
