"""KTable.groupBy + KGroupedTable aggregations and KTable-KTable joins through TopologyTestDriver.

Mirrors Kafka's KTableAggregateTest, KTableKTableInnerJoinTest / LeftJoinTest / OuterJoinTest,
KStreamImplTest.shouldSupportTableTableJoinWithKStreamToKTable / shouldSupportGroupByCountWithKStreamToKTable
and TopologyTest.tableZeroArgCountShouldPreserveTopologyStructure (describe() strings copied verbatim).
Rules: T-17 (aggregation timestamps), T-19 (table-table join timestamp = max), J-6 / RP-5
(co-partitioning), RP-1 / RP-3 / RP-4 (groupBy repartition topic).
"""

import pytest

from kspark import Change, ContextualProcessor, Grouped, Materialized, Serdes, StreamsBuilder, TopologyException
from kspark.dsl._internals.aggregation import ChangedSerde
from kspark.runtime.metrics import MetricName
from kspark.testing import TestRecord, TopologyTestDriver
from kspark.topology import resolvePartitionCounts


class Capture(ContextualProcessor):
    def __init__(self, sink: list) -> None:
        self.sink = sink

    def process(self, record) -> None:
        self.sink.append((record.key(), record.value(), record.timestamp()))


def capture(topology, parent: str) -> list:
    seen: list = []
    topology.addProcessor("proc", lambda: Capture(seen), parent)
    return seen


def s(v):
    return "null" if v is None else str(v)


def TOSTRING_JOINER(a, b):  # Kafka MockValueJoiner.TOSTRING_JOINER
    return f"{s(a)}+{s(b)}"


# ------------------------------------------------------------------------- groupBy + aggregate
def aggregateTopology(selector):
    b = StreamsBuilder()
    (b.table("topic1")
     .groupBy(selector, Grouped.with_(Serdes.String(), Serdes.String()))
     .aggregate(lambda: "0", lambda k, v, agg: f"{agg}+{v}", lambda k, v, agg: f"{agg}-{v}",
                materialized=Materialized.as_("topic1-Canonized").withValueSerde(Serdes.String()))
     .toStream().to("out", ))
    return b.build()


def test_t17_aggregate_subtracts_then_adds_when_the_key_is_unchanged():
    """KTableAggregateTest.testAggBasic (KIP-904: old and new value in one repartition record)."""
    with TopologyTestDriver(aggregateTopology(lambda k, v: (k, v))) as d:
        t = d.createInputTopic("topic1")
        for k, v, ts in [("A", "1", 10), ("B", "2", 15), ("A", "3", 20), ("B", "4", 18), ("C", "5", 5),
                         ("D", "6", 25), ("B", "7", 15), ("C", "8", 10)]:
            t.pipeInput(k, v, ts)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("A", "0+1", 10), TestRecord("B", "0+2", 15), TestRecord("A", "0+1-1+3", 20),
            TestRecord("B", "0+2-2+4", 18), TestRecord("C", "0+5", 5), TestRecord("D", "0+6", 25),
            TestRecord("B", "0+2-2+4-4+7", 18), TestRecord("C", "0+5-5+8", 10)]


def test_t17_aggregate_repartition_skips_null_pairs_and_moves_values_between_keys():
    """KTableAggregateTest.testAggRepartition: a null pair or a pair with a null key is skipped."""
    def selector(k, v):
        return {"null": (None, v), "NULL": None}.get(k, (v, v))

    with TopologyTestDriver(aggregateTopology(selector)) as d:
        t = d.createInputTopic("topic1")
        for k, v, ts in [("A", "1", 10), ("A", None, 15), ("A", "1", 12), ("B", "2", 20), ("null", "3", 25),
                         ("B", "4", 23), ("NULL", "5", 24), ("B", "7", 22)]:
            t.pipeInput(k, v, ts)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("1", "0+1", 10), TestRecord("1", "0+1-1", 15), TestRecord("1", "0+1-1+1", 15),
            TestRecord("2", "0+2", 20), TestRecord("2", "0+2-2", 23), TestRecord("4", "0+4", 23),
            TestRecord("4", "0+4-4", 23), TestRecord("7", "0+7", 22)]


@pytest.mark.parametrize("named", [True, False])
def test_t17_count_moves_a_record_between_groups(named):
    """KTableAggregateTest.testCount / testCountWithInternalStore (same records as
    KStreamImplTest.shouldSupportGroupByCountWithKStreamToKTable)."""
    b = StreamsBuilder()
    counted = (b.table("count-test-input").groupBy(lambda k, v: (v, v), Grouped.with_(Serdes.String(), Serdes.String()))
               .count(materialized=Materialized.as_("count") if named else None))
    counted.toStream().to("out")
    assert counted.queryableStoreName() == ("count" if named else None)
    with TopologyTestDriver(b.build()) as d:
        t = d.createInputTopic("count-test-input")
        for k, v, ts in [("A", "green", 10), ("B", "green", 9), ("A", "blue", 12), ("C", "yellow", 15), ("D", "green", 11)]:
            t.pipeInput(k, v, ts)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("green", 1, 10), TestRecord("green", 2, 10), TestRecord("green", 1, 12),
            TestRecord("blue", 1, 12), TestRecord("yellow", 1, 15), TestRecord("green", 2, 12)]


def test_remove_old_before_add_new():
    """KTableAggregateTest.testRemoveOldBeforeAddNew."""
    b = StreamsBuilder()
    (b.table("count-test-input")
     .groupBy(lambda k, v: (k[0], k[1]), Grouped.with_(Serdes.String(), Serdes.String()))
     .aggregate(lambda: "", lambda k, v, agg: agg + v, lambda k, v, agg: agg.replace(v, ""),
                materialized=Materialized.as_("someStore").withValueSerde(Serdes.String()))
     .toStream().to("out"))
    with TopologyTestDriver(b.build()) as d:
        t = d.createInputTopic("count-test-input")
        t.pipeInput("11", "A", 10)
        t.pipeInput("12", "B", 8)
        t.pipeInput("11", None, 12)
        t.pipeInput("12", "C", 6)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("1", "1", 10), TestRecord("1", "12", 10), TestRecord("1", "2", 12), TestRecord("1", "2", 12)]


def test_count_key_unchanged_sends_no_transient_state():
    """KTableAggregateTest.testShouldNotSendTransientStateIfNotUpgrading (KIP-904)."""
    b = StreamsBuilder()
    b.table("input-topic").groupBy(lambda k, v: (k, v)).count().toStream().to("output-topic")
    with TopologyTestDriver(b.build()) as d:
        t = d.createInputTopic("input-topic")
        t.pipeInput("1", "", 8)
        t.pipeInput("1", "", 9)
        assert d.createOutputTopic("output-topic").readRecordsToList() == [
            TestRecord("1", 1, 8), TestRecord("1", 1, 9)]


def test_reduce_to_none_deletes_the_key_and_forwards_a_tombstone():
    """KTableReduce: a null aggregate is removed from the store and forwarded as a tombstone."""
    b = StreamsBuilder()
    (b.table("t").groupBy(lambda k, v: ("all", v))
     .reduce(lambda agg, v: agg + v, lambda agg, v: None if agg - v == 0 else agg - v, materialized=Materialized.as_("sum"))
     .toStream().to("out"))
    with TopologyTestDriver(b.build()) as d:
        t = d.createInputTopic("t")
        t.pipeInput("a", 5, 1)
        t.pipeInput("b", 3, 2)
        t.pipeInput("a", None, 3)
        t.pipeInput("b", None, 4)
        t.pipeInput("c", 7, 5)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("all", 5, 1), TestRecord("all", 8, 2), TestRecord("all", 3, 3), TestRecord("all", None, 4),
            TestRecord("all", 7, 5)]
        assert [(kv.key, kv.value) for kv in d.getTimestampedKeyValueStore("sum").all()] == [("all", (7, 5))]


def test_repartition_map_forwards_old_then_new_and_one_record_when_the_key_is_kept():
    """KTableRepartitionMap (KIP-904): same key -> Change(new, old); different keys -> old first."""
    b = StreamsBuilder()
    grouped = b.table("t").groupBy(lambda k, v: (v[0], v))
    grouped.count()
    topology = b.build()
    seen = capture(topology, grouped._selectName)
    with TopologyTestDriver(topology) as d:
        t = d.createInputTopic("t")
        t.pipeInput("k", "apple", 1)
        t.pipeInput("k", "avocado", 2)
        t.pipeInput("k", "banana", 3)
        t.pipeInput("k", None, 4)
    assert seen == [("a", Change("apple", None), 1), ("a", Change("avocado", "apple"), 2),
                    ("a", Change(None, "avocado"), 3), ("b", Change("banana", None), 3),
                    ("b", Change(None, "banana"), 4)]


def test_changed_serde_is_kafkas_byte_format():
    """ChangedSerializer / ChangedDeserializer: {old}{0}, {new}{1}, {varint len}{new}{old}{2}."""
    serde = ChangedSerde(Serdes.String())
    assert serde.serialize("t", Change(None, "ab")) == b"ab\x00"
    assert serde.serialize("t", Change("xy", None)) == b"xy\x01"
    assert serde.serialize("t", Change("xyz", "ab")) == b"\x06xyzab\x02"  # zig-zag varint 3 -> 6
    for change in [Change(None, "ab"), Change("xy", None), Change("xyz", "ab"), Change("n" * 200, "o")]:
        assert serde.deserialize("t", serde.serialize("t", change)) == change
    assert serde.deserialize("t", b"xy\x01\x04") == Change("xy", None)  # flag 4: with an isLatest byte
    with pytest.raises(Exception, match="Both old and new values are null"):
        serde.serialize("t", Change(None, None))


def test_describe_table_group_by_count_matches_kafka():
    """TopologyTest.tableZeroArgCountShouldPreserveTopologyStructure (copied verbatim)."""
    b = StreamsBuilder()
    b.table("input-topic").groupBy(lambda k, v: None).count()
    assert str(b.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [input-topic-STATE-STORE-0000000000])\n"
        "      --> KTABLE-SELECT-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-SELECT-0000000003 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000005\n"
        "      <-- KTABLE-SOURCE-0000000002\n"
        "    Sink: KSTREAM-SINK-0000000005 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)\n"
        "      <-- KTABLE-SELECT-0000000003\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000006 (topics: [KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition])\n"
        "      --> KTABLE-AGGREGATE-0000000007\n"
        "    Processor: KTABLE-AGGREGATE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000006\n"
        "\n")


def test_describe_named_materialized_count_names_the_repartition_topic_after_the_store():
    """TopologyTest.tableNamedMaterializedCountShouldPreserveTopologyStructure; RP-4: the
    repartition topic takes the max partition count of the sub-topology writing it."""
    b = StreamsBuilder()
    b.table("input-topic").groupBy(lambda k, v: None).count(materialized=Materialized.as_("count-store"))
    topology = b.build()
    described = str(topology.describe())
    assert "    Sink: KSTREAM-SINK-0000000004 (topic: count-store-repartition)\n" in described
    assert "    Processor: KTABLE-AGGREGATE-0000000006 (stores: [count-store])\n" in described
    assert resolvePartitionCounts(topology, {"input-topic": 3})["count-store-repartition"] == 3


# ------------------------------------------------------------------------- KTable-KTable joins
def joinTopology(kind: str, capturing: bool = False, sendOld: bool = False):
    b = StreamsBuilder()
    table1, table2 = b.table("topic1"), b.table("topic2")
    joined = getattr(table1, kind)(table2, TOSTRING_JOINER)
    if sendOld:
        joined._enableSendingOldValues(True)
    joined.toStream().to("output")
    topology = b.build()
    return topology, (capture(topology, joined._name) if capturing else None), (table1, table2, joined)


def runJoinScript(d):
    """The input script of Kafka's KTableKTable*JoinTest.testJoin, step by step; returns the
    records read after each step."""
    t1, t2, out = d.createInputTopic("topic1"), d.createInputTopic("topic2"), d.createOutputTopic("output")
    steps = []
    for i in range(2):
        t1.pipeInput(i, f"X{i}", 5 + i)
    t1.pipeInput(None, "SomeVal", 42)
    steps.append(out.readRecordsToList())
    for i in range(2):
        t2.pipeInput(i, f"Y{i}", 10 * i)
    t2.pipeInput(None, "AnotherVal", 73)
    steps.append(out.readRecordsToList())
    for k in range(4):
        t1.pipeInput(k, f"XX{k}", 7)
    steps.append(out.readRecordsToList())
    for k in range(4):
        t2.pipeInput(k, f"YY{k}", k * 5)
    steps.append(out.readRecordsToList())
    for k in range(4):
        t1.pipeInput(k, f"XXX{k}", 6)
    steps.append(out.readRecordsToList())
    t2.pipeInput(0, None, 5)
    t2.pipeInput(1, None, 7)
    steps.append(out.readRecordsToList())
    for k in range(4):
        t1.pipeInput(k, f"XXXX{k}", 13)
    steps.append(out.readRecordsToList())
    for k, ts in [(0, 0), (1, 42), (2, 5), (3, 20)]:
        t1.pipeInput(k, None, ts)
    steps.append(out.readRecordsToList())
    return steps


JSON_KEYS = {"default.key.serde": Serdes.JSON()}  # the join tests use integer keys


def R(k, v, ts):
    return TestRecord(k, v, ts)


def test_t19_inner_join_both_sides_trigger_and_take_the_max_timestamp():
    """KTableKTableInnerJoinTest.testJoin; null keys skipped and counted."""
    topology, _, tables = joinTopology("join")
    with TopologyTestDriver(topology, JSON_KEYS) as d:
        steps = runJoinScript(d)
        dropped = d.metrics().get(MetricName("dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0"))), 0)
    assert steps == [
        [],
        [R(0, "X0+Y0", 5), R(1, "X1+Y1", 10)],
        [R(0, "XX0+Y0", 7), R(1, "XX1+Y1", 10)],
        [R(0, "XX0+YY0", 7), R(1, "XX1+YY1", 7), R(2, "XX2+YY2", 10), R(3, "XX3+YY3", 15)],
        [R(0, "XXX0+YY0", 6), R(1, "XXX1+YY1", 6), R(2, "XXX2+YY2", 10), R(3, "XXX3+YY3", 15)],
        [R(0, None, 6), R(1, None, 7)],
        [R(2, "XXXX2+YY2", 13), R(3, "XXXX3+YY3", 15)],
        [R(2, None, 10), R(3, None, 20)],
    ]
    assert dropped == 2
    assert [t._sendOldValues for t in tables] == [False, False, False]


def test_t19_inner_join_sending_old_values():
    """KTableKTableInnerJoinTest.testSendingOldValue: old results travel in Change.oldValue."""
    topology, seen, tables = joinTopology("join", capturing=True, sendOld=True)
    assert [t._sendOldValues for t in tables] == [True, True, True]
    with TopologyTestDriver(topology, JSON_KEYS) as d:
        runJoinScript(d)
    assert seen == [
        (0, Change("X0+Y0", None), 5), (1, Change("X1+Y1", None), 10),
        (0, Change("XX0+Y0", "X0+Y0"), 7), (1, Change("XX1+Y1", "X1+Y1"), 10),
        (0, Change("XX0+YY0", "XX0+Y0"), 7), (1, Change("XX1+YY1", "XX1+Y1"), 7),
        (2, Change("XX2+YY2", None), 10), (3, Change("XX3+YY3", None), 15),
        (0, Change("XXX0+YY0", "XX0+YY0"), 6), (1, Change("XXX1+YY1", "XX1+YY1"), 6),
        (2, Change("XXX2+YY2", "XX2+YY2"), 10), (3, Change("XXX3+YY3", "XX3+YY3"), 15),
        (0, Change(None, "XXX0+YY0"), 6), (1, Change(None, "XXX1+YY1"), 7),
        (2, Change("XXXX2+YY2", "XXX2+YY2"), 13), (3, Change("XXXX3+YY3", "XXX3+YY3"), 15),
        (2, Change(None, "XXXX2+YY2"), 10), (3, Change(None, "XXXX3+YY3"), 20),
    ]


def test_t19_left_join_emits_left_values_with_null_right():
    """KTableKTableLeftJoinTest.testJoin; the left side is asked for old values, the right not."""
    topology, _, tables = joinTopology("leftJoin")
    assert [t._sendOldValues for t in tables] == [True, False, False]
    with TopologyTestDriver(topology, JSON_KEYS) as d:
        steps = runJoinScript(d)
    assert steps == [
        [R(0, "X0+null", 5), R(1, "X1+null", 6)],
        [R(0, "X0+Y0", 5), R(1, "X1+Y1", 10)],
        [R(0, "XX0+Y0", 7), R(1, "XX1+Y1", 10), R(2, "XX2+null", 7), R(3, "XX3+null", 7)],
        [R(0, "XX0+YY0", 7), R(1, "XX1+YY1", 7), R(2, "XX2+YY2", 10), R(3, "XX3+YY3", 15)],
        [R(0, "XXX0+YY0", 6), R(1, "XXX1+YY1", 6), R(2, "XXX2+YY2", 10), R(3, "XXX3+YY3", 15)],
        [R(0, "XXX0+null", 6), R(1, "XXX1+null", 7)],
        [R(0, "XXXX0+null", 13), R(1, "XXXX1+null", 13), R(2, "XXXX2+YY2", 13), R(3, "XXXX3+YY3", 15)],
        [R(0, None, 0), R(1, None, 42), R(2, None, 10), R(3, None, 20)],
    ]


def test_t19_left_join_sending_old_values():
    """KTableKTableLeftJoinTest.testSendingOldValue."""
    topology, seen, _ = joinTopology("leftJoin", capturing=True, sendOld=True)
    with TopologyTestDriver(topology, JSON_KEYS) as d:
        runJoinScript(d)
    assert seen[-8:] == [
        (0, Change("XXXX0+null", "XXX0+null"), 13), (1, Change("XXXX1+null", "XXX1+null"), 13),
        (2, Change("XXXX2+YY2", "XXX2+YY2"), 13), (3, Change("XXXX3+YY3", "XXX3+YY3"), 15),
        (0, Change(None, "XXXX0+null"), 0), (1, Change(None, "XXXX1+null"), 42),
        (2, Change(None, "XXXX2+YY2"), 10), (3, Change(None, "XXXX3+YY3"), 20),
    ]
    assert seen[2:6] == [(0, Change("X0+Y0", "X0+null"), 5), (1, Change("X1+Y1", "X1+null"), 10),
                         (0, Change("XX0+Y0", "X0+Y0"), 7), (1, Change("XX1+Y1", "X1+Y1"), 10)]


def test_t19_outer_join_keeps_either_side_and_tombstones_when_both_are_gone():
    """KTableKTableOuterJoinTest.testJoin."""
    topology, _, tables = joinTopology("outerJoin")
    assert [t._sendOldValues for t in tables] == [True, True, False]
    with TopologyTestDriver(topology, JSON_KEYS) as d:
        steps = runJoinScript(d)
    assert steps == [
        [R(0, "X0+null", 5), R(1, "X1+null", 6)],
        [R(0, "X0+Y0", 5), R(1, "X1+Y1", 10)],
        [R(0, "XX0+Y0", 7), R(1, "XX1+Y1", 10), R(2, "XX2+null", 7), R(3, "XX3+null", 7)],
        [R(0, "XX0+YY0", 7), R(1, "XX1+YY1", 7), R(2, "XX2+YY2", 10), R(3, "XX3+YY3", 15)],
        [R(0, "XXX0+YY0", 6), R(1, "XXX1+YY1", 6), R(2, "XXX2+YY2", 10), R(3, "XXX3+YY3", 15)],
        [R(0, "XXX0+null", 6), R(1, "XXX1+null", 7)],
        [R(0, "XXXX0+null", 13), R(1, "XXXX1+null", 13), R(2, "XXXX2+YY2", 13), R(3, "XXXX3+YY3", 15)],
        [R(0, None, 0), R(1, None, 42), R(2, "null+YY2", 10), R(3, "null+YY3", 20)],
    ]


def test_join_materialized_store_and_queryable_name():
    """A join with Materialized keeps its result in a store (generated name without as_)."""
    b = StreamsBuilder()
    t1, t2 = b.table("topic1"), b.table("topic2")
    named = t1.join(t2, TOSTRING_JOINER, materialized=Materialized.as_("joined"))
    anonymous = t1.leftJoin(t2, TOSTRING_JOINER, materialized=Materialized.with_(None, None))
    assert named.queryableStoreName() == "joined"
    assert anonymous.queryableStoreName() == "KTABLE-MERGE-STATE-STORE-0000000009"
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("topic1").pipeInput("k", "a", 3)
        d.createInputTopic("topic2").pipeInput("k", "b", 8)
        d.createInputTopic("topic1").pipeInput("j", "c", 4)
        assert [(kv.key, kv.value) for kv in d.getTimestampedKeyValueStore("joined").all()] == [("k", ("a+b", 8))]
        assert [(kv.key, kv.value) for kv in d.getTimestampedKeyValueStore(anonymous.queryableStoreName()).all()] == [
            ("j", ("c+null", 4)), ("k", ("a+b", 8))]


def test_stream_joins_a_non_materialized_table_table_join_result():
    """StreamsBuilderTest.shouldAllowJoinUnmaterializedJoinedKTable: the lookup joins both stores on the fly."""
    b = StreamsBuilder()
    t1, t2 = b.table("table-topic1"), b.table("table-topic2")
    b.stream("stream-topic").join(t1.join(t2, TOSTRING_JOINER), TOSTRING_JOINER).to("out")
    topology = b.build()
    described = str(topology.describe())
    assert ("KSTREAM-JOIN-0000000010 (stores: [table-topic1-STATE-STORE-0000000000, "
            "table-topic2-STATE-STORE-0000000003])") in described
    assert "KTABLE-MERGE-0000000007 (stores: [])" in described
    with TopologyTestDriver(topology) as d:
        d.createInputTopic("table-topic1").pipeInput("k", "a", 1)
        st = d.createInputTopic("stream-topic")
        st.pipeInput("k", "s0", 2)       # right side missing: inner join result absent
        d.createInputTopic("table-topic2").pipeInput("k", "b", 3)
        st.pipeInput("k", "s1", 4)
        assert d.createOutputTopic("out").readRecordsToList() == [R("k", "s1+a+b", 4)]


def test_describe_table_table_join_of_toTable_matches_kafka():
    """KStreamImplTest.shouldSupportTableTableJoinWithKStreamToKTable (string copied verbatim) + its records."""
    b = StreamsBuilder()
    from kspark import Consumed, Produced

    consumed = Consumed.with_(Serdes.String(), Serdes.String())
    table1 = b.stream("left", consumed).toTable()
    table2 = b.stream("right", consumed).toTable()
    table1.join(table2, lambda a, c: f"{a}+{c}").toStream().to("output", Produced.with_(Serdes.String(), Serdes.String()))
    topology = b.build()
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [left])\n"
        "      --> KSTREAM-TOTABLE-0000000001\n"
        "    Source: KSTREAM-SOURCE-0000000003 (topics: [right])\n"
        "      --> KSTREAM-TOTABLE-0000000004\n"
        "    Processor: KSTREAM-TOTABLE-0000000001 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])\n"
        "      --> KTABLE-JOINTHIS-0000000007\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-TOTABLE-0000000004 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])\n"
        "      --> KTABLE-JOINOTHER-0000000008\n"
        "      <-- KSTREAM-SOURCE-0000000003\n"
        "    Processor: KTABLE-JOINOTHER-0000000008 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])\n"
        "      --> KTABLE-MERGE-0000000006\n"
        "      <-- KSTREAM-TOTABLE-0000000004\n"
        "    Processor: KTABLE-JOINTHIS-0000000007 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])\n"
        "      --> KTABLE-MERGE-0000000006\n"
        "      <-- KSTREAM-TOTABLE-0000000001\n"
        "    Processor: KTABLE-MERGE-0000000006 (stores: [])\n"
        "      --> KTABLE-TOSTREAM-0000000009\n"
        "      <-- KTABLE-JOINTHIS-0000000007, KTABLE-JOINOTHER-0000000008\n"
        "    Processor: KTABLE-TOSTREAM-0000000009 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000010\n"
        "      <-- KTABLE-MERGE-0000000006\n"
        "    Sink: KSTREAM-SINK-0000000010 (topic: output)\n"
        "      <-- KTABLE-TOSTREAM-0000000009\n\n")
    with TopologyTestDriver(topology) as d:
        left = d.createInputTopic("left", Serdes.String(), Serdes.String())
        right = d.createInputTopic("right", Serdes.String(), Serdes.String())
        out = d.createOutputTopic("output", Serdes.String(), Serdes.String())
        right.pipeInput("lhs1", "rhsValue1")
        right.pipeInput("rhs2", "rhsValue2")
        right.pipeInput("lhs3", "rhsValue3")
        assert out.readKeyValuesToMap() == {}
        left.pipeInput("lhs1", "lhsValue1")
        left.pipeInput("lhs2", "lhsValue2")
        assert out.readKeyValuesToMap() == {"lhs1": "lhsValue1+rhsValue1"}
        left.pipeInput("lhs3", "lhsValue3")
        assert out.readKeyValuesToMap() == {"lhs3": "lhsValue3+rhsValue3"}
        left.pipeInput("lhs1", "lhsValue4")
        assert out.readKeyValuesToMap() == {"lhs1": "lhsValue4+rhsValue1"}


def test_j6_table_table_join_requires_copartitioned_topics():
    """KTableKTableLeftJoinTest.testJoin's copartition group; RP-5's error when counts differ."""
    topology, _, _ = joinTopology("leftJoin")
    assert topology.copartitionGroups() == [{"topic1", "topic2"}]
    with pytest.raises(TopologyException, match=r"^Invalid topology: Topics not co-partitioned: \[\{topic1=2, topic2=3\}\]$"):
        resolvePartitionCounts(topology, {"topic1": 2, "topic2": 3, "output": 1})


def test_named_join_uses_kafkas_suffixes():
    b = StreamsBuilder()
    b.table("a").join(b.table("b"), TOSTRING_JOINER, named="j").toStream().to("out")
    described = str(b.build().describe())
    for name in ("Processor: j-join-this ", "Processor: j-join-other ", "Processor: j (stores: [])"):
        assert name in described


# ------------------------------------------------------------------------- Nexmark Q3 shape
def test_nexmark_q3_shape_filtered_persons_join_filtered_auctions_by_seller():
    """Nexmark Q3 as KTables: persons in OR/ID/CA (filter), auctions of category 10 re-keyed by
    seller (groupBy + reduce into a table), KTable-KTable inner join; updates on either side
    re-emit, a person moving out of state retracts with a tombstone (T-19 timestamps)."""
    b = StreamsBuilder()
    persons = b.table("persons").filter(lambda k, p: p["state"] in ("OR", "ID", "CA"))
    auctions = (b.table("auctions")
                .filter(lambda k, a: a["category"] == 10)
                .groupBy(lambda k, a: (a["seller"], [k]))
                .reduce(lambda agg, v: sorted(agg + v), lambda agg, v: [x for x in agg if x not in v] or None,
                        materialized=Materialized.as_("auctions-by-seller")))
    persons.join(auctions, lambda p, ids: {"name": p["name"], "city": p["city"], "state": p["state"], "auctions": ids},
                 materialized=Materialized.as_("q3")).toStream().to("q3-out")
    topology = b.build()
    with TopologyTestDriver(topology, JSON_KEYS) as d:
        p, a, out = d.createInputTopic("persons"), d.createInputTopic("auctions"), d.createOutputTopic("q3-out")
        p.pipeInput(1, {"name": "ann", "city": "Portland", "state": "OR"}, 100)
        p.pipeInput(2, {"name": "bob", "city": "Boise", "state": "ID"}, 101)
        p.pipeInput(3, {"name": "cy", "city": "Austin", "state": "TX"}, 102)
        a.pipeInput(1000, {"seller": 1, "category": 10}, 110)
        a.pipeInput(1001, {"seller": 3, "category": 10}, 111)   # seller in TX: no result
        a.pipeInput(1002, {"seller": 2, "category": 7}, 112)    # other category: no result
        a.pipeInput(1003, {"seller": 1, "category": 10}, 113)
        assert out.readRecordsToList() == [
            R(1, {"name": "ann", "city": "Portland", "state": "OR", "auctions": [1000]}, 110),
            R(1, {"name": "ann", "city": "Portland", "state": "OR", "auctions": [1000, 1003]}, 113)]
        a.pipeInput(1002, {"seller": 2, "category": 10}, 114)   # recategorised: bob now matches
        p.pipeInput(1, {"name": "ann", "city": "Austin", "state": "TX"}, 120)  # ann leaves: retraction
        a.pipeInput(1000, {"seller": 1, "category": 3}, 121)    # ann's auction leaves: nothing more (ann gone)
        assert out.readRecordsToList() == [
            R(2, {"name": "bob", "city": "Boise", "state": "ID", "auctions": [1002]}, 114),
            R(1, None, 120)]
        assert [kv.key for kv in d.getTimestampedKeyValueStore("q3").all()] == [2]
        assert d.getTimestampedKeyValueStore("auctions-by-seller").get(1) == ([1003], 121)


def test_nexmark_q3_shape_auction_stream_rekeyed_by_seller_to_a_filtered_table():
    """Nexmark Q3 in the other common shape: the auction stream re-keyed by seller (RP-1: a
    repartition topic before toTable) to a table filtered by category, joined with the persons
    table filtered by state. The repartition topic is co-partitioned with persons (J-6, RP-5)."""
    b = StreamsBuilder()
    persons = b.table("persons").filter(lambda k, p: p["state"] in ("OR", "ID", "CA"))
    auctions = (b.stream("auctions").selectKey(lambda k, a: a["seller"]).toTable()
                .filter(lambda seller, a: a["category"] == 10))
    auctions.join(persons, lambda a, p: [p["name"], p["city"], p["state"], a["id"]]).toStream().to("q3")
    topology = b.build()
    repartition = "KSTREAM-TOTABLE-0000000006-repartition"  # Kafka names it after the toTable node
    assert topology.copartitionGroups() == [{"persons", repartition}]
    assert resolvePartitionCounts(topology, {"persons": 4, "auctions": 2, "q3": 1})[repartition] == 4
    with TopologyTestDriver(topology, JSON_KEYS) as d:
        p, a, out = d.createInputTopic("persons"), d.createInputTopic("auctions"), d.createOutputTopic("q3")
        p.pipeInput(7, {"name": "ann", "city": "Portland", "state": "OR"}, 100)
        p.pipeInput(8, {"name": "cy", "city": "Austin", "state": "TX"}, 101)
        a.pipeInput("x", {"id": 1000, "seller": 7, "category": 10}, 105)
        a.pipeInput("y", {"id": 1001, "seller": 8, "category": 10}, 106)   # seller in TX
        a.pipeInput("z", {"id": 1002, "seller": 7, "category": 3}, 107)    # ann's latest auction leaves category 10
        p.pipeInput(8, {"name": "cy", "city": "Boise", "state": "ID"}, 108)  # cy moves in: joins his auction
        assert out.readRecordsToList() == [
            R(7, ["ann", "Portland", "OR", 1000], 105),
            R(7, None, 107),
            R(8, ["cy", "Boise", "ID", 1001], 108)]


def test_histogram_of_a_stream_count_regroups_with_old_values():
    """KTable.groupBy over a KGroupedStream count enables the aggregation's old values, so a user
    moving from 1 to 2 clicks is subtracted from bucket 1 and added to bucket 2 (RP-1, T-17)."""
    b = StreamsBuilder()
    perUser = b.stream("clicks").groupByKey().count()
    perUser.groupBy(lambda user, n: (n, user)).count().toStream().to("histogram")
    with TopologyTestDriver(b.build(), JSON_KEYS) as d:
        t = d.createInputTopic("clicks")
        t.pipeInput("u1", "x", 1)
        t.pipeInput("u2", "x", 2)
        t.pipeInput("u1", "x", 3)
        assert d.createOutputTopic("histogram").readRecordsToList() == [
            R(1, 1, 1), R(1, 2, 2), R(1, 1, 3), R(2, 1, 3)]
