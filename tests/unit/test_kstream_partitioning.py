"""Automatic and explicit repartitioning in the KStream DSL (rules RP-1..RP-5), Kafka's generated
names and ``describe()`` text (strings copied from Kafka's tests), and kspark's warning or
repartition before a stateful ``process()`` after a key change (seed 004's first bug)."""

import logging

import pytest

from kspark import (
    Branched, Consumed, Grouped, KeyValue, Materialized, Named, Produced, Repartitioned, Serdes, Stores, StreamsBuilder,
    StreamsConfig, TimeWindows, TopologyException,
)
from kspark.processor import ContextualProcessor
from kspark.runtime.metrics import MetricName
from kspark.testing import TestRecord, TopologyTestDriver
from kspark.topology import resolvePartitionCounts

S = Consumed.with_(Serdes.String(), Serdes.String())


class Recorder(ContextualProcessor):
    def __init__(self, seen):
        self.seen = seen

    def process(self, record):
        self.seen.append((record.key(), record.value(), record.timestamp()))


# --------------------------------------------------------------------------- Kafka describe() strings

def test_rp1_rp2_two_joins_of_one_rekeyed_stream_reuse_one_repartition_topic():
    # Kafka KStreamKTableJoinTest.shouldReuseRepartitionTopicWithGeneratedName (optimization off)
    builder = StreamsBuilder()
    streamA = builder.stream("topic", S)
    tableB = builder.table("topic2", S)
    tableC = builder.table("topic3", S)
    rekeyed = streamA.map(lambda k, v: KeyValue(v, k))
    rekeyed.join(tableB, lambda v1, v2: v1 + v2).to("out-one")
    rekeyed.join(tableC, lambda v1, v2: v1 + v2).to("out-two")
    topology = builder.build()
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])\n"
        "      --> KSTREAM-MAP-0000000007\n"
        "    Processor: KSTREAM-MAP-0000000007 (stores: [])\n"
        "      --> KSTREAM-FILTER-0000000009\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-FILTER-0000000009 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000008\n"
        "      <-- KSTREAM-MAP-0000000007\n"
        "    Sink: KSTREAM-SINK-0000000008 (topic: KSTREAM-MAP-0000000007-repartition)\n"
        "      <-- KSTREAM-FILTER-0000000009\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000010 (topics: [KSTREAM-MAP-0000000007-repartition])\n"
        "      --> KSTREAM-JOIN-0000000011, KSTREAM-JOIN-0000000016\n"
        "    Processor: KSTREAM-JOIN-0000000011 (stores: [topic2-STATE-STORE-0000000001])\n"
        "      --> KSTREAM-SINK-0000000012\n"
        "      <-- KSTREAM-SOURCE-0000000010\n"
        "    Processor: KSTREAM-JOIN-0000000016 (stores: [topic3-STATE-STORE-0000000004])\n"
        "      --> KSTREAM-SINK-0000000017\n"
        "      <-- KSTREAM-SOURCE-0000000010\n"
        "    Source: KSTREAM-SOURCE-0000000002 (topics: [topic2])\n"
        "      --> KTABLE-SOURCE-0000000003\n"
        "    Source: KSTREAM-SOURCE-0000000005 (topics: [topic3])\n"
        "      --> KTABLE-SOURCE-0000000006\n"
        "    Sink: KSTREAM-SINK-0000000012 (topic: out-one)\n"
        "      <-- KSTREAM-JOIN-0000000011\n"
        "    Sink: KSTREAM-SINK-0000000017 (topic: out-two)\n"
        "      <-- KSTREAM-JOIN-0000000016\n"
        "    Processor: KTABLE-SOURCE-0000000003 (stores: [topic2-STATE-STORE-0000000001])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000006 (stores: [topic3-STATE-STORE-0000000004])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000005\n\n"
    )
    with TopologyTestDriver(topology) as d:
        d.createInputTopic("topic2", Serdes.String(), Serdes.String()).pipeInput("v1", "B", 1)
        d.createInputTopic("topic3", Serdes.String(), Serdes.String()).pipeInput("v1", "C", 1)
        d.createInputTopic("topic", Serdes.String(), Serdes.String()).pipeInput("k1", "v1", 5)
        # kspark streams do not carry serdes downstream: sinks use the default (JSON) value serde
        assert d.createOutputTopic("out-one").readRecordsToList() == [TestRecord("v1", "k1B", 5)]
        assert d.createOutputTopic("out-two").readRecordsToList() == [TestRecord("v1", "k1C", 5)]


def test_rp1_joins_with_names_get_their_own_repartition_topics():
    # Kafka KStreamKTableJoinTest.shouldCreateRepartitionTopicsWithUserProvidedName
    builder = StreamsBuilder()
    streamA = builder.stream("topic", S)
    tableB = builder.table("topic2", S)
    tableC = builder.table("topic3", S)
    rekeyed = streamA.map(lambda k, v: KeyValue(v, k))
    rekeyed.join(tableB, lambda v1, v2: v1 + v2, Named.as_("first-join")).to("out-one")
    rekeyed.join(tableC, lambda v1, v2: v1 + v2, Named.as_("second-join")).to("out-two")
    assert str(builder.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])\n"
        "      --> KSTREAM-MAP-0000000007\n"
        "    Processor: KSTREAM-MAP-0000000007 (stores: [])\n"
        "      --> first-join-repartition-filter, second-join-repartition-filter\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: first-join-repartition-filter (stores: [])\n"
        "      --> first-join-repartition-sink\n"
        "      <-- KSTREAM-MAP-0000000007\n"
        "    Processor: second-join-repartition-filter (stores: [])\n"
        "      --> second-join-repartition-sink\n"
        "      <-- KSTREAM-MAP-0000000007\n"
        "    Sink: first-join-repartition-sink (topic: first-join-repartition)\n"
        "      <-- first-join-repartition-filter\n"
        "    Sink: second-join-repartition-sink (topic: second-join-repartition)\n"
        "      <-- second-join-repartition-filter\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: first-join-repartition-source (topics: [first-join-repartition])\n"
        "      --> first-join\n"
        "    Source: KSTREAM-SOURCE-0000000002 (topics: [topic2])\n"
        "      --> KTABLE-SOURCE-0000000003\n"
        "    Processor: first-join (stores: [topic2-STATE-STORE-0000000001])\n"
        "      --> KSTREAM-SINK-0000000012\n"
        "      <-- first-join-repartition-source\n"
        "    Sink: KSTREAM-SINK-0000000012 (topic: out-one)\n"
        "      <-- first-join\n"
        "    Processor: KTABLE-SOURCE-0000000003 (stores: [topic2-STATE-STORE-0000000001])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000002\n"
        "\n"
        "  Sub-topology: 2\n"
        "    Source: second-join-repartition-source (topics: [second-join-repartition])\n"
        "      --> second-join\n"
        "    Source: KSTREAM-SOURCE-0000000005 (topics: [topic3])\n"
        "      --> KTABLE-SOURCE-0000000006\n"
        "    Processor: second-join (stores: [topic3-STATE-STORE-0000000004])\n"
        "      --> KSTREAM-SINK-0000000017\n"
        "      <-- second-join-repartition-source\n"
        "    Sink: KSTREAM-SINK-0000000017 (topic: out-two)\n"
        "      <-- second-join\n"
        "    Processor: KTABLE-SOURCE-0000000006 (stores: [topic3-STATE-STORE-0000000004])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000005\n\n"
    )


def test_count_zero_arg_and_anonymous_materialized_name_burning():
    # Kafka TopologyTest.kGroupedStreamZeroArgCountShouldPreserveTopologyStructure
    builder = StreamsBuilder()
    builder.stream("input-topic").groupByKey().count()
    assert str(builder.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])\n"
        "      --> KSTREAM-AGGREGATE-0000000002\n"
        "    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000000\n\n"
    )
    # Kafka TopologyTest.kGroupedStreamAnonymousMaterializedCountShouldPreserveTopologyStructure
    builder = StreamsBuilder()
    builder.stream("input-topic").groupByKey().count(materialized=Materialized.with_(None, Serdes.Long()))
    assert str(builder.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])\n"
        "      --> KSTREAM-AGGREGATE-0000000003\n"
        "    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000000\n\n"
    )


def test_processValues_and_process_with_store_describe_as_kafka():
    # Kafka KStreamImplTest.shouldProcessValues
    builder = StreamsBuilder()
    builder.stream("input", S).processValues(lambda: LengthValue(), named=Named.as_("fkp")).to("output")
    topology = builder.build()
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
        "      --> fkp\n"
        "    Processor: fkp (stores: [])\n"
        "      --> KSTREAM-SINK-0000000001\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Sink: KSTREAM-SINK-0000000001 (topic: output)\n"
        "      <-- fkp\n\n"
    )
    with TopologyTestDriver(topology) as d:
        inp = d.createInputTopic("input")
        for k, v, ts in [("A", "0", 5), ("B", "00", 100), ("A", "00000", 10)]:
            inp.pipeInput(k, v, ts)
        assert d.createOutputTopic("output").readRecordsToList() == [
            TestRecord("A", 1, 5), TestRecord("B", 2, 100), TestRecord("A", 5, 10)]

    # Kafka KStreamImplTest.shouldProcessWithOldProcessorAndState (new Processor API here)
    builder = StreamsBuilder()
    builder.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("sum"), Serdes.String(), Serdes.Long()))
    builder.stream("input", S).process(lambda: SumLengths(), "sum", named=Named.as_("p"))
    topology = builder.build()
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
        "      --> p\n"
        "    Processor: p (stores: [sum])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000000\n\n"
    )
    with TopologyTestDriver(topology) as d:
        inp = d.createInputTopic("input")
        for k, v, ts in [("A", "0", 5), ("B", "00", 100), ("C", "000", 0), ("D", "0000", 0),
                         ("A", "00000", 10), ("A", "000000", 8)]:
            inp.pipeInput(k, v, ts)
        store = d.getKeyValueStore("sum")
        assert [store.get(k) for k in "ABCD"] == [12, 2, 3, 4]


def test_stream_table_join_with_kstream_to_ktable_describe():
    # Kafka KStreamImplTest.shouldSupportStreamTableJoinWithKStreamToKTable
    builder = StreamsBuilder()
    stream = builder.stream("streamTopic", S)
    table = builder.stream("tableTopic", S).toTable()
    stream.join(table, lambda v1, v2: f"{v1}+{v2}").to("output")
    topology = builder.build()
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [streamTopic])\n"
        "      --> KSTREAM-JOIN-0000000004\n"
        "    Processor: KSTREAM-JOIN-0000000004 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000003])\n"
        "      --> KSTREAM-SINK-0000000005\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [tableTopic])\n"
        "      --> KSTREAM-TOTABLE-0000000002\n"
        "    Sink: KSTREAM-SINK-0000000005 (topic: output)\n"
        "      <-- KSTREAM-JOIN-0000000004\n"
        "    Processor: KSTREAM-TOTABLE-0000000002 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000003])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000001\n\n"
    )
    with TopologyTestDriver(topology) as d:
        right, left = d.createInputTopic("tableTopic"), d.createInputTopic("streamTopic")
        right.pipeInput("lhs1", "rhsValue1")
        right.pipeInput("lhs3", "rhsValue3")
        left.pipeInput("lhs1", "lhsValue1")
        left.pipeInput("lhs2", "lhsValue2")
        left.pipeInput("lhs3", "lhsValue3")
        assert d.createOutputTopic("output").readKeyValuesToMap() == {
            "lhs1": "lhsValue1+rhsValue1", "lhs3": "lhsValue3+rhsValue3"}


def test_split_uses_kafka_names_for_splitter_and_branches():
    # Kafka StreamsBuilderTest.shouldUseSpecifiedNameForSplitOperation
    builder = StreamsBuilder()
    builder.stream("topic").split(Named.as_("branch-processor")) \
        .branch(lambda k, v: True, Branched.as_("-1")).branch(lambda k, v: False, Branched.as_("-2"))
    names = [n.name for s in builder.build().subtopologies() for n in s.nodes]
    assert names == ["KSTREAM-SOURCE-0000000000", "branch-processor", "branch-processor-1", "branch-processor-2"]


class LengthValue(ContextualProcessor):
    def process(self, record):
        self.context().forward(record.withValue(len(record.value())))


class SumLengths(ContextualProcessor):
    def init(self, context):
        super().init(context)
        self.store = context.getStateStore("sum")

    def process(self, record):
        self.store.put(record.key(), (self.store.get(record.key()) or 0) + len(record.value()))


# --------------------------------------------------------------------------- repartition topic naming

def test_rp1_groupBy_names_the_repartition_topic_after_the_store():
    # Kafka PurgeRepartitionTopicIntegrationTest: stream.groupBy(...).count() ->
    # "<app>-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition"
    builder = StreamsBuilder()
    builder.stream("in").groupBy(lambda k, v: v).count().toStream().to("out")
    topology = builder.build()
    assert topology.internalTopics() == {"KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition": None}
    with TopologyTestDriver(topology, {"application.id": "app"}) as d:
        inp = d.createInputTopic("in")
        inp.pipeInput("a", "green", 10)
        inp.pipeInput("b", "green", 9)
        inp.pipeInput("c", "blue", 12)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("green", 1, 10), TestRecord("green", 2, 10), TestRecord("blue", 1, 12)]


def test_rp1_grouped_name_names_topic_and_key_selector_and_is_shared_by_one_grouped_stream():
    # Kafka RepartitionTopicNamingTest.shouldNotFailWithSameRepartitionTopicNameUsingSameKGroupedStream
    builder = StreamsBuilder()
    grouped = builder.stream("topic").selectKey(lambda k, v: k).groupByKey(Grouped.as_("grouping"))
    grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count().toStream().to("output-one")
    grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(30)).count().toStream().to("output-two")
    assert builder.build().internalTopics() == {"grouping-repartition": None}

    # groupBy(selector, Grouped.as_(x)) also names the key-selecting node x (Kafka internalSelectKey)
    builder = StreamsBuilder()
    builder.stream("topic").groupBy(lambda k, v: v, Grouped.as_("kstream-grouping")).count()
    text = str(builder.build().describe())
    assert "Processor: kstream-grouping (stores: [])\n      --> kstream-grouping-repartition-filter" in text
    assert "(topic: kstream-grouping-repartition)" in text


def test_rp1_unnamed_groupings_get_one_topic_per_aggregation():
    # Kafka RepartitionTopicNamingTest.shouldNotReuseRepartitionNodeWithUnnamedRepartitionTopics
    builder = StreamsBuilder()
    grouped = builder.stream("topic").selectKey(lambda k, v: k).groupByKey()
    grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count().toStream().to("output-one")
    grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(30)).count().toStream().to("output-two")
    assert sorted(builder.build().internalTopics()) == [
        "KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition", "KSTREAM-AGGREGATE-STATE-STORE-0000000009-repartition"]


def test_rp1_same_grouped_name_on_two_streams_is_a_topology_exception():
    # Kafka RepartitionTopicNamingTest.shouldFailWithSameRepartitionTopicName
    builder = StreamsBuilder()
    builder.stream("topic").selectKey(lambda k, v: k).groupByKey(Grouped.as_("grouping")).count()
    # Kafka fails at build() with the same text (the second repartition node's filter is written first)
    with pytest.raises(TopologyException, match="Processor grouping-repartition-filter is already added"):
        builder.stream("topicII").selectKey(lambda k, v: k).groupByKey(Grouped.as_("grouping")).count()


def test_rp1_toTable_after_key_change_repartitions_through_a_topic_named_after_the_totable_node():
    # Kafka KStreamImplTest.shouldSupportKeyChangeKTableFromKStream: topic KSTREAM-TOTABLE-0000000002-repartition,
    # sink 4, filter 5, source 6 (the store name takes 3)
    builder = StreamsBuilder()
    builder.stream("input", S).map(lambda k, v: KeyValue(ord(k[0]) - ord("A"), v)) \
        .toTable(materialized=Materialized.with_(Serdes.Integer(), None)).toStream() \
        .to("output", Produced.with_(Serdes.Integer(), Serdes.String()))
    topology = builder.build()
    assert topology.internalTopics() == {"KSTREAM-TOTABLE-0000000002-repartition": None}
    text = str(topology.describe())
    assert "    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-TOTABLE-0000000002-repartition)\n" \
           "      <-- KSTREAM-FILTER-0000000005\n" in text
    assert "    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-TOTABLE-0000000002-repartition])\n" in text
    assert "    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])\n" in text
    with TopologyTestDriver(topology) as d:
        inp = d.createInputTopic("input")
        for k, v, ts in [("A", "01", 5), ("B", "02", 100), ("A", "05", 10), ("A", "06", 8)]:
            inp.pipeInput(k, v, ts)
        assert d.createOutputTopic("output", Serdes.Integer(), Serdes.String()).readRecordsToList() == [
            TestRecord(0, "01", 5), TestRecord(1, "02", 100), TestRecord(0, "05", 10), TestRecord(0, "06", 8)]


# --------------------------------------------------------------------------- RP-1 per operation

def _aggregateTopics(build):
    builder = StreamsBuilder()
    build(builder).groupByKey().count()
    return builder.build().internalTopics()


def test_rp1_key_changing_and_key_preserving_operations():
    flatMapped = _aggregateTopics(lambda b: b.stream("in").flatMap(lambda k, v: [(v, k)]))
    assert flatMapped == {"KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition": None}
    assert _aggregateTopics(lambda b: b.stream("in").flatMapValues(lambda v: [v, v])) == {}
    assert _aggregateTopics(lambda b: b.stream("in").processValues(LengthValue)) == {}
    assert _aggregateTopics(lambda b: b.stream("in").process(LengthValue)) == {
        "KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition": None}
    # flatMapValues and split branches keep the flag set by selectKey
    assert _aggregateTopics(lambda b: b.stream("in").selectKey(lambda k, v: v).flatMapValues(lambda v: [v])) == {
        "KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition": None}
    assert _aggregateTopics(
        lambda b: b.stream("in").selectKey(lambda k, v: v).split().defaultBranch()["KSTREAM-BRANCH-00000000020"]
    ) == {"KSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition": None}
    # repartition() resets it
    assert _aggregateTopics(lambda b: b.stream("in").selectKey(lambda k, v: v).repartition()) == {
        "KSTREAM-REPARTITION-0000000002-repartition": None}


def test_rp1_merge_of_a_rekeyed_stream_repartitions_once_downstream():
    builder = StreamsBuilder()
    rekeyed = builder.stream("a").selectKey(lambda k, v: v)
    merged = rekeyed.merge(builder.stream("b"))
    merged.groupByKey().count().toStream().to("out")
    topology = builder.build()
    assert topology.internalTopics() == {"KSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition": None}
    assert [s.sourceTopics for s in topology.subtopologies()] == [
        ["a", "b"], ["KSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition"]]
    with TopologyTestDriver(topology) as d:
        d.createInputTopic("a").pipeInput("x", "k1", 1)
        d.createInputTopic("b").pipeInput("k1", "y", 2)
        d.createInputTopic("a").pipeInput("z", "k2", 3)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("k1", 1, 1), TestRecord("k1", 2, 2), TestRecord("k2", 1, 3)]


def test_rp2_null_keys_are_dropped_before_the_repartition_topic_unless_a_left_join_follows():
    for left, expected in [(False, [TestRecord("A", "s2+tA", 2)]),
                           (True, [TestRecord(None, "s1+None", 1), TestRecord("A", "s2+tA", 2)])]:
        builder = StreamsBuilder()
        table = builder.table("tbl")
        rekeyed = builder.stream("str").selectKey(lambda k, v: v.get("code"))
        joiner = lambda v, t: f"{v['s']}+{t}"  # noqa: E731
        (rekeyed.leftJoin(table, joiner) if left else rekeyed.join(table, joiner)).to("out")
        with TopologyTestDriver(builder.build()) as d:
            d.createInputTopic("tbl").pipeInput("A", "tA", 0)
            st = d.createInputTopic("str")
            st.pipeInput("x", {"code": None, "s": "s1"}, 1)
            st.pipeInput("y", {"code": "A", "s": "s2"}, 2)
            assert d.createOutputTopic("out").readRecordsToList() == expected


def test_rp3_rp4_repartition_with_partitioner_and_count():
    calls = []

    def partitioner(topic, key, value, n):
        calls.append((topic, key, n))
        return 0

    builder = StreamsBuilder()
    builder.stream("in").repartition(
        Repartitioned.as_("by-x").withNumberOfPartitions(3).withStreamPartitioner(partitioner)).to("out")
    topology = builder.build()
    assert resolvePartitionCounts(topology, {"in": 7, "out": 1})["by-x-repartition"] == 3
    with TopologyTestDriver(topology, {"application.id": "app"}) as d:
        d.createInputTopic("in").pipeInput("k", 1, 4)
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("k", 1, 4)]
    assert calls == [("app-by-x-repartition", "k", 1)]  # TTD-1: every topic has one partition


# --------------------------------------------------------------------------- new operations

def run(build, inputs, output="out", serdes=(None, None)):
    builder = StreamsBuilder()
    build(builder.stream("in"))
    with TopologyTestDriver(builder.build()) as d:
        topic = d.createInputTopic("in")
        for k, v, ts in inputs:
            topic.pipeInput(k, v, ts)
        return d.createOutputTopic(output, *serdes).readRecordsToList()


def test_flatMap_forwards_each_pair_with_the_input_timestamp():
    out = run(lambda s: s.flatMap(lambda k, v: [KeyValue(f"{k}{i}", v * i) for i in range(v)]).to("out"),
              [("a", 2, 10), ("b", 0, 20), ("c", 1, 15)])
    assert out == [TestRecord("a0", 0, 10), TestRecord("a1", 2, 10), TestRecord("c0", 0, 15)]


def test_flatMap_returning_none_fails_the_record():
    with pytest.raises(Exception, match="returned null which is not allowed"):
        run(lambda s: s.flatMap(lambda k, v: None).to("out"), [("a", 1, 1)])


def test_flatMapValues_with_and_without_key():
    assert run(lambda s: s.flatMapValues(lambda v: [v, v + 1]).to("out"), [("a", 1, 5), ("b", 7, 6)]) == [
        TestRecord("a", 1, 5), TestRecord("a", 2, 5), TestRecord("b", 7, 6), TestRecord("b", 8, 6)]
    assert run(lambda s: s.flatMapValues(lambda k, v: [] if k == "b" else [f"{k}{v}"]).to("out"),
               [("a", 1, 5), ("b", 7, 6)]) == [TestRecord("a", "a1", 5)]


def test_merge_forwards_records_of_both_streams_in_processing_order():
    builder = StreamsBuilder()
    builder.stream("t1").merge(builder.stream("t2"), Named.as_("merge-processor")).to("out")
    topology = builder.build()
    assert str(topology.describe()).count("merge-processor (stores: [])\n      --> KSTREAM-SINK-0000000003\n"
                                          "      <-- KSTREAM-SOURCE-0000000000, KSTREAM-SOURCE-0000000001\n") == 1
    with TopologyTestDriver(topology) as d:
        t1, t2 = d.createInputTopic("t1"), d.createInputTopic("t2")
        t1.pipeInput("A", "aa", 0)
        t2.pipeInput("B", "bb", 0)
        t2.pipeInput("C", "cc", 0)
        t1.pipeInput("D", "dd", 0)
        assert d.createOutputTopic("out").readKeyValuesToList() == [
            KeyValue("A", "aa"), KeyValue("B", "bb"), KeyValue("C", "cc"), KeyValue("D", "dd")]


def test_split_first_matching_branch_wins_default_and_chains():
    builder = StreamsBuilder()
    consumed = []
    branches = (builder.stream("in").split(Named.as_("s-"))
                .branch(lambda k, v: v > 10, Branched.as_("big"))
                .branch(lambda k, v: v > 5, Branched.withFunction(lambda s: s.mapValues(lambda v: -v)))
                .branch(lambda k, v: v == 0, Branched.withConsumer(lambda s: consumed.append(s) or s.to("zero")))
                .defaultBranch(Branched.as_("rest")))
    assert sorted(branches) == ["s-2", "s-big", "s-rest"]
    branches["s-big"].to("big")
    branches["s-2"].to("mid")
    branches["s-rest"].to("rest")
    assert len(consumed) == 1
    with TopologyTestDriver(builder.build()) as d:
        inp = d.createInputTopic("in")
        for k, v in [("a", 20), ("b", 7), ("c", 0), ("d", 3), ("e", 11)]:
            inp.pipeInput(k, v, 1)
        assert d.createOutputTopic("big").readKeyValuesToList() == [KeyValue("a", 20), KeyValue("e", 11)]
        assert d.createOutputTopic("mid").readKeyValuesToList() == [KeyValue("b", -7)]
        assert d.createOutputTopic("zero").readKeyValuesToList() == [KeyValue("c", 0)]
        assert d.createOutputTopic("rest").readKeyValuesToList() == [KeyValue("d", 3)]


def test_split_without_default_branch_drops_unmatched_and_generates_kafka_names():
    builder = StreamsBuilder()
    branches = builder.stream("in").split().branch(lambda k, v: v == 1).branch(lambda k, v: v == 2).noDefaultBranch()
    # KSTREAM-BRANCH-0000000001 + branch index; each branch also burns a counter value
    assert sorted(branches) == ["KSTREAM-BRANCH-00000000011", "KSTREAM-BRANCH-00000000012"]
    branches["KSTREAM-BRANCH-00000000011"].to("one")
    with TopologyTestDriver(builder.build()) as d:
        inp = d.createInputTopic("in")
        for k, v in [("a", 1), ("b", 2), ("c", 3)]:
            inp.pipeInput(k, v, 1)
        assert d.createOutputTopic("one").readKeyValuesToList() == [KeyValue("a", 1)]
    assert "KSTREAM-SINK-0000000004" in str(builder.build().describe())


def test_processValues_may_not_change_the_key():
    class Rekey(ContextualProcessor):
        def process(self, record):
            self.context().forward(record.withKey("other"))

    with pytest.raises(Exception, match="fixed-key processor may not change the key"):
        run(lambda s: s.processValues(Rekey).to("out"), [("a", 1, 1)])


def test_a_record_forwarded_by_processValues_reaches_a_key_changing_node_as_a_record():
    """Kafka's fixed-key context forwards a ``Record`` made of the ``FixedKeyRecord``'s fields:
    a selectKey or map after processValues changes the key (found by issue 33's port of a Java
    topology: kspark's FixedKeyRecord reached selectKey and refused withKey)."""
    from kspark.processor import ContextualFixedKeyProcessor

    class Same(ContextualFixedKeyProcessor):
        def process(self, record):
            self.context().forward(record.withValue(record.value() + 1))

    out = run(lambda s: s.processValues(Same).selectKey(lambda k, v: f"{k}{v}").map(
        lambda k, v: KeyValue(k + "!", v)).to("out"), [("a", 1, 5)])
    assert out == [TestRecord("a2!", 2, 5)]


def test_foreach_and_print(tmp_path, capsys):
    from kspark.dsl import Printed

    seen = []
    path = tmp_path / "printed.txt"
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.foreach(lambda k, v: seen.append((k, v)))
    stream.print(Printed.toFile(str(path)))
    stream.print(Printed.toSysOut().withLabel("lbl").withKeyValueMapper(lambda k, v: f"{k}={v}"))
    with TopologyTestDriver(builder.build()) as d:
        inp = d.createInputTopic("in")
        inp.pipeInput("a", 1, 1)
        inp.pipeInput(None, None, 2)
    assert seen == [("a", 1), (None, None)]
    assert path.read_text() == "[KSTREAM-SOURCE-0000000000]: a, 1\n[KSTREAM-SOURCE-0000000000]: null, null\n"
    assert capsys.readouterr().out == "[lbl]: a=1\n[lbl]: None=None\n"


# --------------------------------------------------------------------------- beyond Kafka: seed 004's first bug

def seedTopology(builder: StreamsBuilder):
    """Seed 004's first attempt: both streams re-keyed, a KStream-KTable join, then a process()
    that deduplicates with a state store."""
    builder.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("signal-company-state-store")))
    table = builder.stream("topic-valuation").selectKey(lambda k, v: v["code"]).toTable()
    (builder.stream("topic-company").selectKey(lambda k, v: v["code"])
     .join(table, lambda price, valuation: {"price": price["price"], "per": valuation["per"]})
     .process(lambda: Dedup(), "signal-company-state-store")
     .to("topic-signal-company"))
    return builder


class Dedup(ContextualProcessor):
    def init(self, context):
        super().init(context)
        self.store = context.getStateStore("signal-company-state-store")

    def process(self, record):
        if self.store.get(record.key()) is None:
            self.store.put(record.key(), 1)
            self.context().forward(record)


def test_seed004_join_then_process_is_copartitioned_as_kafka_does_and_not_warned():
    # Kafka repartitions both re-keyed sides to max(5, 1) = 5 (RP-4, RP-5); the join output is
    # not re-keyed, so the store after it is safe: no warning.
    builder = seedTopology(StreamsBuilder())
    topology = builder.build()
    counts = resolvePartitionCounts(topology, {"topic-valuation": 1, "topic-company": 5, "topic-signal-company": 5})
    assert {t: counts[t] for t in topology.internalTopics()} == {
        "KSTREAM-TOTABLE-0000000002-repartition": 5, "KSTREAM-KEY-SELECT-0000000008-repartition": 5}
    assert builder._statefulAfterKeyChange == []


def test_seed004_without_rekeying_the_table_side_is_refused_with_kafkas_text():
    builder = StreamsBuilder()
    table = builder.table("topic-valuation")
    builder.stream("topic-company").join(table, lambda p, v: p).to("topic-signal-company")
    with pytest.raises(TopologyException) as e:
        resolvePartitionCounts(builder.build(), {"topic-valuation": 1, "topic-company": 5, "topic-signal-company": 5})
    assert str(e.value) == "Invalid topology: Topics not co-partitioned: [{topic-company=5, topic-valuation=1}]"


def statefulAfterRekey(builder: StreamsBuilder):
    builder.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("signal-company-state-store")))
    (builder.stream("topic-company").selectKey(lambda k, v: v["code"])
     .process(lambda: Dedup(), "signal-company-state-store")
     .to("topic-signal-company"))
    return builder


def test_stateful_process_after_key_change_warns_at_build(caplog):
    builder = statefulAfterRekey(StreamsBuilder())
    with caplog.at_level(logging.WARNING, logger="kspark.dsl"):
        topology = builder.build()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "Processor KSTREAM-PROCESSOR-0000000002 uses state stores ['signal-company-state-store'] but its input key "
        "was changed by KSTREAM-KEY-SELECT-0000000001 and not repartitioned")
    assert "kspark.repartition.before.stateful.process=true" in warnings[0]
    assert topology.internalTopics() == {}  # Kafka's topology is kept
    caplog.clear()
    builder.build()
    assert not caplog.records  # warned once


@pytest.mark.parametrize("where", ["builder", "build"])
def test_stateful_process_after_key_change_repartitions_with_the_flag(where, caplog):
    flag = {StreamsConfig.REPARTITION_BEFORE_STATEFUL_PROCESS_CONFIG: "true"}
    builder = statefulAfterRekey(StreamsBuilder(flag if where == "builder" else None))
    with caplog.at_level(logging.WARNING, logger="kspark.dsl"):
        topology = builder.build(flag if where == "build" else None)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    topic = "KSTREAM-PROCESSOR-0000000002-stores-repartition"
    assert topology.internalTopics() == {topic: None}
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [topic-company])\n"
        "      --> KSTREAM-KEY-SELECT-0000000001\n"
        "    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])\n"
        f"      --> {topic}-filter\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        f"    Processor: {topic}-filter (stores: [])\n"
        f"      --> {topic}-sink\n"
        "      <-- KSTREAM-KEY-SELECT-0000000001\n"
        f"    Sink: {topic}-sink (topic: {topic})\n"
        f"      <-- {topic}-filter\n"
        "\n"
        "  Sub-topology: 1\n"
        f"    Source: {topic}-source (topics: [{topic}])\n"
        "      --> KSTREAM-PROCESSOR-0000000002\n"
        "    Processor: KSTREAM-PROCESSOR-0000000002 (stores: [signal-company-state-store])\n"
        "      --> KSTREAM-SINK-0000000003\n"
        f"      <-- {topic}-source\n"
        "    Sink: KSTREAM-SINK-0000000003 (topic: topic-signal-company)\n"
        "      <-- KSTREAM-PROCESSOR-0000000002\n\n"
    )
    # RP-4: the new topic takes the upstream count, so the store is partitioned by the new key
    assert resolvePartitionCounts(topology, {"topic-company": 5, "topic-signal-company": 5})[topic] == 5
    with TopologyTestDriver(topology, {"application.id": "app"}) as d:
        inp = d.createInputTopic("topic-company")
        inp.pipeInput("p0", {"code": "014680"}, 1)
        inp.pipeInput("p3", {"code": "014680"}, 2)
        inp.pipeInput("p1", {"code": "005930"}, 3)
        assert d.createOutputTopic("topic-signal-company").readKeyValuesToList() == [
            KeyValue("014680", {"code": "014680"}), KeyValue("005930", {"code": "005930"})]


def test_processValues_with_store_after_key_change_also_warns(caplog):
    builder = StreamsBuilder()
    builder.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("s")))
    builder.stream("in").flatMap(lambda k, v: [(v, k)]).processValues(LengthValue, "s", named="pv")
    with caplog.at_level(logging.WARNING, logger="kspark.dsl"):
        builder.build()
    assert [r.getMessage().split(" and not")[0] for r in caplog.records] == [
        "Processor pv uses state stores ['s'] but its input key was changed by KSTREAM-FLATMAP-0000000001"]


def test_flag_must_be_a_boolean():
    from kspark import ConfigException

    with pytest.raises(ConfigException, match="kspark.repartition.before.stateful.process"):
        StreamsConfig({StreamsConfig.REPARTITION_BEFORE_STATEFUL_PROCESS_CONFIG: "yes"})
    assert StreamsConfig({StreamsConfig.REPARTITION_BEFORE_STATEFUL_PROCESS_CONFIG: "TRUE"}).get(
        StreamsConfig.REPARTITION_BEFORE_STATEFUL_PROCESS_CONFIG) is True


def test_rp5_enforced_counts_that_differ_across_a_join_fail_at_build():
    # Kafka KStreamRepartitionTest.shouldThrowAnExceptionWhenNumberOfPartitionsOfRepartitionOperationsDoNotMatchWhenJoining
    # (a stream-stream join there; a stream-table join co-partitions the same way)
    builder = StreamsBuilder()
    table = builder.stream("topic-b").repartition(
        Repartitioned.as_("topic-b-scale-up").withNumberOfPartitions(2)).toTable()
    builder.stream("input-topic").repartition(
        Repartitioned.as_("input-topic-scale-up").withNumberOfPartitions(4)).join(table, lambda a, b: b).to("out")
    with pytest.raises(TopologyException) as e:
        builder.build()
    assert str(e.value) == ("Invalid topology: Following topics do not have the same number of partitions: "
                            "[{input-topic-scale-up-repartition=4, topic-b-scale-up-repartition=2}]")


# --------------------------------------------------------------------------- ports of Kafka's operator tests

INT_STR = Consumed.with_(Serdes.Integer(), Serdes.String())


def test_kafka_KStreamFlatMapTest_testFlatMap():
    seen = []
    builder = StreamsBuilder()
    builder.stream("topic", INT_STR) \
        .flatMap(lambda k, v: [KeyValue(str(k * 10 + i), v) for i in range(k)]) \
        .process(lambda: Recorder(seen))
    with TopologyTestDriver(builder.build()) as d:
        inp = d.createInputTopic("topic", startTimestamp=0)
        for key in (0, 1, 2, 3):
            inp.pipeInput(key, f"V{key}")
    assert seen == [("10", "V1", 0), ("20", "V2", 0), ("21", "V2", 0), ("30", "V3", 0), ("31", "V3", 0),
                    ("32", "V3", 0)]


def test_kafka_KStreamFlatMapValuesTest_testFlatMapValues():
    seen = []
    builder = StreamsBuilder()
    builder.stream("topic", Consumed.with_(Serdes.Integer(), Serdes.Integer())) \
        .flatMapValues(lambda v: [f"v{v}", f"V{v}"]).process(lambda: Recorder(seen))
    with TopologyTestDriver(builder.build()) as d:
        inp = d.createInputTopic("topic")
        for key in (0, 1, 2, 3):
            inp.pipeInput(key, key, 0)
    assert seen == [(0, "v0", 0), (0, "V0", 0), (1, "v1", 0), (1, "V1", 0), (2, "v2", 0), (2, "V2", 0),
                    (3, "v3", 0), (3, "V3", 0)]


def _splitDriver(builder, outputs):
    with TopologyTestDriver(builder.build()) as d:
        inp = d.createInputTopic("topic")
        for key in (-1, 0, 1, 2, 3, 4, 5, 6, 7):
            inp.pipeInput(key, f"V{key}")
        return {t: d.createOutputTopic(t, Serdes.Integer(), Serdes.String()).readValuesToList() for t in outputs}


def test_kafka_KStreamSplitTest_testKStreamSplit_and_testResultingMap():
    isEven = lambda k, v: k % 2 == 0  # noqa: E731
    builder = StreamsBuilder()
    source = builder.stream("topic", INT_STR)
    produced = Produced.with_(Serdes.Integer(), Serdes.String())
    branches = (source.split()
                .branch(isEven, Branched.withConsumer(lambda ks: ks.to("x2", produced)))
                .branch(lambda k, v: k % 3 == 0, Branched.withConsumer(lambda ks: ks.to("x3", produced)))
                .branch(lambda k, v: k % 5 == 0, Branched.withConsumer(lambda ks: ks.to("x5", produced)))
                .noDefaultBranch())
    assert branches == {}
    assert _splitDriver(builder, ["x2", "x3", "x5"]) == {"x2": ["V0", "V2", "V4", "V6"], "x3": ["V3"], "x5": ["V5"]}

    builder = StreamsBuilder()
    branches = (builder.stream("topic", INT_STR).split(Named.as_("foo-"))
                .branch(isEven, Branched.as_("bar"))
                .branch(lambda k, v: k % 3 == 0, Branched.withConsumer(lambda ks: None))
                .branch(lambda k, v: k % 5 == 0, Branched.withFunction(lambda ks: None))
                .branch(lambda k, v: k < 0, Branched.withFunction(lambda ks: ks))
                .branch(lambda k, v: k % 7 == 0)
                .defaultBranch())
    assert sorted(branches) == ["foo-0", "foo-4", "foo-5", "foo-bar"]
    for name, stream in branches.items():
        stream.to(name, produced)
    assert _splitDriver(builder, ["foo-bar", "foo-4", "foo-5", "foo-0"]) == {
        "foo-bar": ["V0", "V2", "V4", "V6"], "foo-4": ["V-1"], "foo-5": ["V7"], "foo-0": ["V1"]}


def test_kafka_KStreamSplitTest_testBranchingWithNoTerminalOperation():
    builder = StreamsBuilder()
    produced = Produced.with_(Serdes.Integer(), Serdes.String())
    builder.stream("topic", INT_STR).split() \
        .branch(lambda k, v: k % 2 == 0, Branched.withConsumer(lambda ks: ks.to("output", produced))) \
        .branch(lambda k, v: k % 5 == 0, Branched.withConsumer(lambda ks: ks.to("output", produced)))
    assert _splitDriver(builder, ["output"]) == {"output": ["V0", "V2", "V4", "V5", "V6"]}


def test_kafka_KStreamPrintTest_testPrintStreamWithProvidedKeyValueMapper(tmp_path):
    from kspark import Printed

    path = tmp_path / "out.txt"
    builder = StreamsBuilder()
    builder.stream("topic", INT_STR).print(
        Printed.toFile(str(path)).withLabel("test-stream").withKeyValueMapper(lambda k, v: f"{k}, {v}"))
    with TopologyTestDriver(builder.build()) as d:
        inp = d.createInputTopic("topic")
        for k, v in [(0, "zero"), (1, "one"), (2, "two"), (3, "three")]:
            inp.pipeInput(k, v, 0)
    assert path.read_text().splitlines() == [
        "[test-stream]: 0, zero", "[test-stream]: 1, one", "[test-stream]: 2, two", "[test-stream]: 3, three"]


def test_merge_task_of_a_partition_only_one_topic_has_reads_that_topic_alone():
    # Kafka: with topics of 2 and 3 partitions in one sub-topology, task 0_2 reads b-2 only; a
    # queue for the missing a-2 (lag unknown forever) would stall it (seen on Spark).
    from kspark.runtime.record_queue import RawRecord
    from kspark.runtime.stream_task import StreamTask

    builder = StreamsBuilder()
    builder.stream("a").merge(builder.stream("b")).to("out")
    topology = builder.build()
    [sub] = topology.subtopologies()
    counts = {"a": 2, "b": 3, "out": 1}
    task = StreamTask("0_2", sub, topology.storeBuilders(), StreamsConfig({"application.id": "m"}), 2,
                      lambda t: t, lambda t: counts[t])
    assert sorted(task.queueOf) == ["b"]
    task.initialize()
    task.addRecords("b", [RawRecord(0, 7, b'"k"', b"1", ())], lag=None)
    assert task.processAll(0) == 1
    assert [(r.topic, r.timestamp) for r in task.drainProduced()] == [("out", 7)]


def test_given_names_still_burn_a_counter_value_as_in_kafka():
    # Kafka NamedInternal.orElseGenerateWithPrefix: filter(named) burns 1, so the sink is 0000000002
    builder = StreamsBuilder()
    builder.stream("in").filter(lambda k, v: True, Named.as_("f")).split(Named.as_("s")) \
        .branch(lambda k, v: True, Branched.as_("x"))
    builder.stream("in2").to("out")
    names = [n.name for s in builder.build().subtopologies() for n in s.nodes]
    assert names == ["KSTREAM-SOURCE-0000000000", "f", "s", "sx", "KSTREAM-SOURCE-0000000004", "KSTREAM-SINK-0000000005"]


def test_rp2_flag_inserted_repartition_keeps_null_keys_for_a_downstream_left_join():
    builder = StreamsBuilder({StreamsConfig.REPARTITION_BEFORE_STATEFUL_PROCESS_CONFIG: True})
    builder.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("seen")))
    table = builder.table("tbl")

    class Count(ContextualProcessor):
        def init(self, context):
            super().init(context)
            self.store = context.getStateStore("seen")

        def process(self, record):
            n = (self.store.get(str(record.key())) or 0) + 1
            self.store.put(str(record.key()), n)
            self.context().forward(record.withValue(n))

    (builder.stream("in").selectKey(lambda k, v: v).process(Count, "seen")
     .leftJoin(table, lambda n, t: f"{n}/{t}").to("out"))
    with TopologyTestDriver(builder.build()) as d:
        d.createInputTopic("tbl").pipeInput("A", "tA", 0)
        inp = d.createInputTopic("in")
        inp.pipeInput("x", "A", 1)
        inp.pipeInput("y", None, 2)
        inp.pipeInput("z", "A", 3)
        # process() re-keys (RP-1): the left join repartitions again; null keys pass both topics
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("A", "1/tA", 1), TestRecord(None, "1/None", 2), TestRecord("A", "2/tA", 3)]


def test_rp5_reused_join_repartition_topic_is_not_checked_against_the_second_table_as_in_kafka(caplog):
    # Kafka: the second join's co-partition group holds a source node that is never added, so only
    # topic3 is in it; kspark starts the same topology and warns at build time.
    builder = StreamsBuilder()
    rekeyed = builder.stream("topic").map(lambda k, v: KeyValue(v, k))
    tableB, tableC = builder.table("topic2"), builder.table("topic3")
    rekeyed.join(tableB, lambda a, b: a).to("out-one")
    with caplog.at_level(logging.WARNING, logger="kspark.dsl"):
        rekeyed.join(tableC, lambda a, b: a).to("out-two")
    assert [r.getMessage() for r in caplog.records] == [
        "Join KSTREAM-JOIN-0000000016 reuses repartition topic KSTREAM-MAP-0000000001-repartition of an earlier join "
        "of KSTREAM-MAP-0000000001; as in Kafka Streams it is not checked for co-partitioning with ['topic3']. "
        "Name the join (Joined/Named) to get its own repartition topic."]
    topology = builder.build()
    assert [sorted(g) for g in topology.copartitionGroups()] == [
        ["KSTREAM-MAP-0000000001-repartition", "topic2"], ["topic3"]]
    counts = resolvePartitionCounts(topology, {"topic": 4, "topic2": 2, "topic3": 3, "out-one": 1, "out-two": 1})
    assert counts["KSTREAM-MAP-0000000001-repartition"] == 2


def test_rp5_copartition_groups_sharing_a_topic_are_merged_as_in_kafka():
    builder = StreamsBuilder()
    table = builder.table("t")
    s = builder.stream("s")
    s.join(table, lambda a, b: a).to("o1")
    builder.stream("u").join(table, lambda a, b: a).to("o2")
    topology = builder.build()
    assert [sorted(g) for g in topology.copartitionGroups()] == [["s", "t", "u"]]
    with pytest.raises(TopologyException, match=r"Topics not co-partitioned: \[\{s=2, t=2, u=3\}\]"):
        resolvePartitionCounts(topology, {"t": 2, "s": 2, "u": 3, "o1": 1, "o2": 1})


def test_named_ktable_operations_burn_counter_values_as_in_kafka():
    # Kafka StreamsBuilderTest.shouldUseSpecifiedNameForToStream / ...ForAggregateOperationGivenTable
    builder = StreamsBuilder()
    builder.table("topic").toStream(Named.as_("to-stream"))
    assert [n.name for s in builder.build().subtopologies() for n in s.nodes] == [
        "KSTREAM-SOURCE-0000000001", "KTABLE-SOURCE-0000000002", "to-stream"]

    builder = StreamsBuilder()
    builder.table("topic").groupBy(lambda k, v: KeyValue(k, v), Grouped.as_("group-operation")).count(Named.as_("op"))
    topology = builder.build()
    assert sorted(topology.storeBuilders()) == ["KTABLE-AGGREGATE-STATE-STORE-0000000004", "topic-STATE-STORE-0000000000"]
    assert sorted(n.name for s in topology.subtopologies() for n in s.nodes) == sorted([
        "KSTREAM-SOURCE-0000000001", "KTABLE-SOURCE-0000000002", "group-operation", "op-sink", "op-source", "op"])
