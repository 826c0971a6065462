"""cogroup (KIP-150): KGroupedStream.cogroup -> CogroupedKStream.cogroup/aggregate, windowed by
time, sliding and session windows, with repartitioning of the inputs that need it.

Concrete-record and describe() tests ported from Kafka's ``CogroupedKStreamImplTest`` (each names
the one it ports; describe strings are Kafka's own); the windowed scenarios are kspark's. Every
expected record was also checked against Kafka 4.3.1's TopologyTestDriver. Rule ids:
RP-1 (repartitioning), T-17 (aggregate timestamps), SU-1.
"""

import pytest

from kspark import (Consumed, Grouped, KeyValue, Materialized, Named, Serdes, SessionWindows, SlidingWindows,
                    StreamsBuilder, Suppressed, TimeWindows)
from kspark.testing import TopologyTestDriver

PROPS = {"application.id": "cogroup-test", "default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
STRING = Consumed.with_(Serdes.String(), Serdes.String())


def STRING_AGGREGATOR(key, value, aggregate):  # noqa: N802 - Kafka's test constants
    return aggregate + value


def STRING_INITIALIZER():  # noqa: N802
    return ""


def STRING_SUM_AGGREGATOR(key, value, aggregate):  # noqa: N802
    return aggregate + int(value)


def run(builder, *pipes, output="output", valueSerde=None):
    """Pipe ``(topic, key, value, ts)`` records; return ``output``'s (key, value, timestamp)."""
    with TopologyTestDriver(builder.build(), PROPS) as d:
        topics = {}
        for topic, key, value, ts in pipes:
            if topic not in topics:
                topics[topic] = d.createInputTopic(topic)
            topics[topic].pipeInput(key, value, ts)
        out = d.createOutputTopic(output, Serdes.String(), valueSerde or Serdes.String())
        return [(r.key(), r.value(), r.timestamp()) for r in out.readRecordsToList()]


# ---------------------------------------------------------------------------------- describe()
def test_named_processors_and_store_CogroupedKStreamImplTest_shouldNameProcessorsAndStoreBasedOnNamedParameter():
    b = StreamsBuilder()
    one, two = b.stream("one", STRING).groupByKey(), b.stream("two", STRING).groupByKey()
    (one.cogroup(STRING_AGGREGATOR).cogroup(two, STRING_AGGREGATOR)
     .aggregate(STRING_INITIALIZER, Named.as_("test"), Materialized.as_("store")).toStream().to("output"))
    assert str(b.build().describe()) == DESCRIBE_NAMED


def test_grouped_name_names_the_repartition_topic_CogroupedKStreamImplTest_shouldNameRepartitionTopic():
    b = StreamsBuilder()
    stream1, stream2 = b.stream("one", STRING), b.stream("two", STRING)
    one = stream1.map(lambda k, v: KeyValue(v, k)).groupByKey(Grouped.as_("repartition-test"))
    two = stream2.groupByKey()
    one.cogroup(STRING_AGGREGATOR).cogroup(two, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER).toStream().to("output")
    topology = b.build()
    assert str(topology.describe()) == DESCRIBE_NAMED_REPARTITION
    # Kafka co-partitions the grouped streams' own topics (before the repartition topic)
    assert topology.copartitionGroups() == [{"one", "two"}]


def test_store_name_names_the_repartition_topic_CogroupedKStreamImplTest_shouldInsertRepartitionsTopicForUpstreamKeyModification():
    b = StreamsBuilder()
    stream1, stream2 = b.stream("one", STRING), b.stream("two", STRING)
    one = stream1.map(lambda k, v: KeyValue(v, k)).groupByKey()
    two = stream2.groupByKey()
    (one.cogroup(STRING_AGGREGATOR).cogroup(two, STRING_AGGREGATOR)
     .aggregate(STRING_INITIALIZER, Named.as_("test"), Materialized.as_("store")).toStream().to("output"))
    assert str(b.build().describe()) == DESCRIBE_KEY_MODIFICATION


def test_grouped_stream_in_two_cogroups_CogroupedKStreamImplTest_shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReusedInSameCogroups():
    b = StreamsBuilder()
    stream1, stream2 = b.stream("one", STRING), b.stream("two", STRING)
    one = stream1.map(lambda k, v: KeyValue(v, k)).groupByKey()
    two = stream2.groupByKey()
    cogroupedTwo = one.cogroup(STRING_AGGREGATOR).cogroup(two, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER)
    cogroupedOne = one.cogroup(STRING_AGGREGATOR).cogroup(two, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER)
    cogroupedOne.toStream().to("output")
    cogroupedTwo.toStream().to("OUTPUT2")
    assert str(b.build().describe()) == DESCRIBE_REUSED_IN_SAME_COGROUPS


def test_grouped_stream_in_different_cogroups_CogroupedKStreamImplTest_shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReusedInDifferentCogroups():
    b = StreamsBuilder()
    stream1, stream2, stream3 = b.stream("one", STRING), b.stream("two", STRING), b.stream("three", STRING)
    one = stream1.map(lambda k, v: KeyValue(v, k)).groupByKey()
    two, three = stream2.groupByKey(), stream3.groupByKey()
    one.cogroup(STRING_AGGREGATOR).cogroup(three, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER)
    one.cogroup(STRING_AGGREGATOR).cogroup(two, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER)
    assert str(b.build().describe()) == DESCRIBE_REUSED_IN_DIFFERENT_COGROUPS


def test_grouped_stream_cogrouped_and_aggregated_CogroupedKStreamImplTest_shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReused():
    b = StreamsBuilder()
    stream1, stream2 = b.stream("one", STRING), b.stream("two", STRING)
    one = stream1.map(lambda k, v: KeyValue(v, k)).groupByKey()
    two = stream2.groupByKey()
    one.cogroup(STRING_AGGREGATOR).cogroup(two, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER)
    one.aggregate(STRING_INITIALIZER, STRING_AGGREGATOR)
    assert str(b.build().describe()) == DESCRIBE_GROUPED_REUSED


def test_cogroup_aggregated_twice_reuses_its_repartition_topic_CogroupedKStreamImplTest_shouldInsertRepartitionsTopicForCogroupsUsedTwice():
    b = StreamsBuilder()
    one = b.stream("one", STRING).map(lambda k, v: KeyValue(v, k)).groupByKey(Grouped.as_("foo"))
    cogrouped = one.cogroup(STRING_AGGREGATOR)
    cogrouped.aggregate(STRING_INITIALIZER)
    cogrouped.aggregate(STRING_INITIALIZER)
    assert str(b.build().describe()) == DESCRIBE_COGROUP_USED_TWICE


# ---------------------------------------------------------------------------------- records
def _twoStreams(agg1=STRING_AGGREGATOR, agg2=STRING_AGGREGATOR, init=STRING_INITIALIZER, materialized=None,
                two=STRING, three=False):
    b = StreamsBuilder()
    g1, g2 = b.stream("one", STRING).groupByKey(), b.stream("two", two).groupByKey()
    cogrouped = g1.cogroup(agg1).cogroup(g2, agg2)
    if three:
        cogrouped = cogrouped.cogroup(b.stream("three", STRING).groupByKey(), STRING_AGGREGATOR)
    (cogrouped.aggregate(init) if materialized is None else cogrouped.aggregate(init, materialized)).toStream().to("output")
    return b


def test_single_stream_CogroupedKStreamImplTest_shouldCogroupAndAggregateSingleKStreams():
    b = StreamsBuilder()
    b.stream("one", STRING).groupByKey().cogroup(STRING_AGGREGATOR).aggregate(STRING_INITIALIZER).toStream().to("output")
    assert run(b, ("one", "k1", "A", 0), ("one", "k2", "B", 0), ("one", "k2", "B", 0), ("one", "k1", "A", 0)) == [
        ("k1", "A", 0), ("k2", "B", 0), ("k2", "BB", 0), ("k1", "AA", 0)]


def test_null_values_are_skipped_CogroupedKStreamImplTest_testCogroupHandleNullValues():
    b = StreamsBuilder()
    b.stream("one", STRING).groupByKey().cogroup(STRING_AGGREGATOR).aggregate(STRING_INITIALIZER).toStream().to("output")
    assert run(b, ("one", "k1", "A", 0), ("one", "k2", "B", 0), ("one", "k2", None, 0), ("one", "k2", "B", 0),
               ("one", "k1", "A", 0)) == [("k1", "A", 0), ("k2", "B", 0), ("k2", "BB", 0), ("k1", "AA", 0)]


def test_distinct_keys_CogroupedKStreamImplTest_shouldCogroupAndAggregateTwoKStreamsWithDistinctKeys():
    """T-17: an update's timestamp is the largest input timestamp of the key so far."""
    assert run(_twoStreams(), *[("one", "k1", "A", t) for t in (0, 1, 10, 100)],
               *[("two", "k2", "B", t) for t in (100, 200, 1, 500, 500, 100)]) == [
        ("k1", "A", 0), ("k1", "AA", 1), ("k1", "AAA", 10), ("k1", "AAAA", 100), ("k2", "B", 100), ("k2", "BB", 200),
        ("k2", "BBB", 200), ("k2", "BBBB", 500), ("k2", "BBBBB", 500), ("k2", "BBBBBB", 500)]


SHARED = [("one", "k1", "A", 0), ("one", "k2", "A", 1), ("one", "k1", "A", 10), ("one", "k2", "A", 100),
          ("two", "k2", "B", 100), ("two", "k2", "B", 200), ("two", "k1", "B", 1), ("two", "k2", "B", 500),
          ("two", "k1", "B", 500), ("two", "k2", "B", 500), ("two", "k3", "B", 500), ("two", "k2", "B", 100)]


def test_shared_keys_CogroupedKStreamImplTest_shouldCogroupAndAggregateTwoKStreamsWithSharedKeys():
    # Kafka's test reads the first ten records
    assert run(_twoStreams(), *SHARED)[:10] == [
        ("k1", "A", 0), ("k2", "A", 1), ("k1", "AA", 10), ("k2", "AA", 100), ("k2", "AAB", 100), ("k2", "AABB", 200),
        ("k1", "AAB", 10), ("k2", "AABBB", 500), ("k1", "AABB", 500), ("k2", "AABBBB", 500)]


def test_other_output_type_CogroupedKStreamImplTest_shouldAllowDifferentOutputTypeInCoGroup():
    b = _twoStreams(STRING_SUM_AGGREGATOR, STRING_SUM_AGGREGATOR, lambda: 0,
                    Materialized.as_("store1").withValueSerde(Serdes.Integer()))
    pipes = [(t, k, v.replace("A", "1").replace("B", "2"), ts) for t, k, v, ts in SHARED]
    pipes[9] = ("two", "k2", "3", 500)
    assert run(b, *pipes, valueSerde=Serdes.Integer())[:10] == [
        ("k1", 1, 0), ("k2", 1, 1), ("k1", 2, 10), ("k2", 2, 100), ("k2", 4, 100), ("k2", 6, 200), ("k1", 4, 10),
        ("k2", 8, 500), ("k1", 6, 500), ("k2", 11, 500)]


def test_other_input_types_CogroupedKStreamImplTest_shouldCoGroupStreamsWithDifferentInputTypes():
    b = _twoStreams(STRING_SUM_AGGREGATOR, lambda k, v, agg: agg + v, lambda: 0,
                    Materialized.as_("store1").withValueSerde(Serdes.Integer()),
                    two=Consumed.with_(Serdes.String(), Serdes.Integer()))
    pipes = [(t, k, ("1" if t == "one" else 2), ts) for t, k, v, ts in SHARED]
    pipes[9] = ("two", "k2", 3, 500)
    assert run(b, *pipes, valueSerde=Serdes.Integer()) == [
        ("k1", 1, 0), ("k2", 1, 1), ("k1", 2, 10), ("k2", 2, 100), ("k2", 4, 100), ("k2", 6, 200), ("k1", 4, 10),
        ("k2", 8, 500), ("k1", 6, 500), ("k2", 11, 500), ("k3", 2, 500), ("k2", 13, 500)]


def test_mixed_aggregators_CogroupedKStreamImplTest_testCogroupKeyMixedAggregators():
    b = _twoStreams(lambda k, v, agg: f"{agg}-{v}", lambda k, v, agg: f"{agg}+{v}", lambda: "0",
                    Materialized.as_("store1").withValueSerde(Serdes.String()))
    assert run(b, ("one", "k1", "1", 0), ("one", "k2", "1", 1), ("one", "k1", "1", 10), ("one", "k2", "1", 100),
               ("two", "k1", "2", 500), ("two", "k2", "2", 500), ("two", "k1", "2", 500), ("two", "k2", "2", 100)) == [
        ("k1", "0-1", 0), ("k2", "0-1", 1), ("k1", "0-1-1", 10), ("k2", "0-1-1", 100), ("k1", "0-1-1+2", 500),
        ("k2", "0-1-1+2", 500), ("k1", "0-1-1+2+2", 500), ("k2", "0-1-1+2+2", 500)]


def test_three_streams_CogroupedKStreamImplTest_testCogroupWithThreeGroupedStreams():
    pipes = [(("three" if i >= 8 else t), k, v, ts) for i, (t, k, v, ts) in enumerate(SHARED)]
    pipes = pipes[:8] + [("three", "k1", "B", 500), ("three", "k2", "B", 500), ("three", "k3", "B", 500),
                         ("three", "k2", "B", 100)]
    assert run(_twoStreams(three=True), *pipes) == [
        ("k1", "A", 0), ("k2", "A", 1), ("k1", "AA", 10), ("k2", "AA", 100), ("k2", "AAB", 100), ("k2", "AABB", 200),
        ("k1", "AAB", 10), ("k2", "AABBB", 500), ("k1", "AABB", 500), ("k2", "AABBBB", 500), ("k3", "B", 500),
        ("k2", "AABBBBB", 500)]


def test_cogrouped_table_joins_a_table_CogroupedKStreamImplTest_testCogroupWithKTableKTableInnerJoin():
    b = StreamsBuilder()
    g1, g2 = b.stream("one", STRING).groupByKey(), b.stream("two", STRING).groupByKey()
    table1 = (g1.cogroup(STRING_AGGREGATOR).cogroup(g2, STRING_AGGREGATOR)
              .aggregate(STRING_INITIALIZER, Named.as_("name"), Materialized.as_("store")))
    table2 = b.table("three", STRING)
    table1.join(table2, lambda a, c: f"{a}+{c}", Materialized.with_(Serdes.String(), Serdes.String())).toStream().to("output")
    assert run(b, ("one", "k1", "A", 5), ("two", "k2", "B", 6), ("three", "k1", "C", 0), ("three", "k2", "D", 10)) == [
        ("k1", "A+C", 5), ("k2", "B+D", 10)]


def test_repartitioned_input_is_aggregated_after_the_repartition_topic():
    """RP-1: the re-keyed input reaches the shared store through its repartition topic."""
    b = StreamsBuilder()
    stream1, stream2 = b.stream("one", STRING), b.stream("two", STRING)
    one = stream1.map(lambda k, v: KeyValue(v, k)).groupByKey()
    two = stream2.groupByKey()
    one.cogroup(STRING_AGGREGATOR).cogroup(two, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER).toStream().to("output")
    assert run(b, ("one", "x", "k1", 1), ("two", "k1", "B", 2), ("one", "y", "k1", 3)) == [
        ("k1", "x", 1), ("k1", "xB", 2), ("k1", "xBy", 3)]


# ---------------------------------------------------------------------------------- windowed
def _windowed(windowedBy, aggregate):
    b = StreamsBuilder()
    g1, g2 = b.stream("one", STRING).groupByKey(), b.stream("two", STRING).groupByKey()
    table = aggregate(windowedBy(g1.cogroup(STRING_AGGREGATOR).cogroup(g2, STRING_AGGREGATOR)))
    table.toStream().map(lambda k, v: KeyValue(f"{k.key()}@{k.window().start()}/{k.window().end()}", v)).to("output")
    return b


WINDOWED_INPUT = [("one", "k1", "A", 0), ("one", "k2", "A", 0), ("one", "k2", "A", 1), ("one", "k1", "A", 2),
                  ("two", "k1", "B", 3), ("two", "k2", "B", 3), ("two", "k2", "B", 500), ("two", "k1", "B", 500)]


def test_time_windowed_cogroup():
    b = _windowed(lambda c: c.windowedBy(TimeWindows.ofSizeWithNoGrace(500)),
                  lambda w: w.aggregate(STRING_INITIALIZER, Materialized.with_(Serdes.String(), Serdes.String())))
    assert run(b, *WINDOWED_INPUT) == [
        ("k1@0/500", "A", 0), ("k2@0/500", "A", 0), ("k2@0/500", "AA", 1), ("k1@0/500", "AA", 2),
        ("k1@0/500", "AAB", 3), ("k2@0/500", "AAB", 3), ("k2@500/1000", "B", 500), ("k1@500/1000", "B", 500)]


def test_sliding_windowed_cogroup():
    """Each input's records create and update sliding windows in the one shared store."""
    b = _windowed(lambda c: c.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(10)),
                  lambda w: w.aggregate(STRING_INITIALIZER, Materialized.with_(Serdes.String(), Serdes.String())))
    assert run(b, *WINDOWED_INPUT) == [
        ("k1@0/10", "A", 0), ("k2@0/10", "A", 0), ("k2@1/11", "A", 1), ("k2@0/10", "AA", 1), ("k1@1/11", "A", 2),
        ("k1@0/10", "AA", 2), ("k1@1/11", "AB", 3), ("k1@3/13", "B", 3), ("k1@0/10", "AAB", 3), ("k2@1/11", "AB", 3),
        ("k2@2/12", "B", 3), ("k2@0/10", "AAB", 3), ("k2@490/500", "B", 500), ("k1@490/500", "B", 500)]


def test_session_windowed_cogroup():
    """Sessions merge across inputs: the merger joins the two halves' aggregates."""
    b = _windowed(lambda c: c.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5)),
                  lambda w: w.aggregate(STRING_INITIALIZER, lambda k, a1, a2: a1 + "|" + a2,
                                        Materialized.with_(Serdes.String(), Serdes.String())))
    assert run(b, *WINDOWED_INPUT) == [
        ("k1@0/0", "A", 0), ("k2@0/0", "A", 0), ("k2@0/0", None, 0), ("k2@0/1", "|AA", 1), ("k1@0/0", None, 0),
        ("k1@0/2", "|AA", 2), ("k1@0/2", None, 2), ("k1@0/3", "||AAB", 3), ("k2@0/1", None, 1), ("k2@0/3", "||AAB", 3),
        ("k2@500/500", "B", 500), ("k1@500/500", "B", 500)]


def test_windowed_cogroup_can_be_suppressed_until_windows_close():
    b = _windowed(lambda c: c.windowedBy(TimeWindows.ofSizeWithNoGrace(500)),
                  lambda w: w.aggregate(STRING_INITIALIZER, Materialized.with_(Serdes.String(), Serdes.String()))
                  .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())))
    assert run(b, *WINDOWED_INPUT) == [("k1@0/500", "AAB", 3), ("k2@0/500", "AAB", 3)]


def test_cogroup_api_errors():
    b = StreamsBuilder()
    grouped = b.stream("one", STRING).groupByKey()
    with pytest.raises(TypeError, match="aggregator can't be null"):
        grouped.cogroup(None)
    with pytest.raises(TypeError, match="groupedStream must be a KGroupedStream"):
        grouped.cogroup(STRING_AGGREGATOR).cogroup(None, STRING_AGGREGATOR)
    with pytest.raises(TypeError, match="takes Windows, SlidingWindows or SessionWindows"):
        grouped.cogroup(STRING_AGGREGATOR).windowedBy(None)
    with pytest.raises(TypeError, match="fits none of Kafka's overloads"):
        grouped.cogroup(STRING_AGGREGATOR).aggregate(STRING_INITIALIZER, Serdes.String())


DESCRIBE_NAMED = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> test-cogroup-agg-0
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> test-cogroup-agg-1
    Processor: test-cogroup-agg-0 (stores: [store])
      --> test-cogroup-merge
      <-- KSTREAM-SOURCE-0000000000
    Processor: test-cogroup-agg-1 (stores: [store])
      --> test-cogroup-merge
      <-- KSTREAM-SOURCE-0000000001
    Processor: test-cogroup-merge (stores: [])
      --> KTABLE-TOSTREAM-0000000005
      <-- test-cogroup-agg-0, test-cogroup-agg-1
    Processor: KTABLE-TOSTREAM-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000006
      <-- test-cogroup-merge
    Sink: KSTREAM-SINK-0000000006 (topic: output)
      <-- KTABLE-TOSTREAM-0000000005

"""

DESCRIBE_NAMED_REPARTITION = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000002
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> repartition-test-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: repartition-test-repartition-filter (stores: [])
      --> repartition-test-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Sink: repartition-test-repartition-sink (topic: repartition-test-repartition)
      <-- repartition-test-repartition-filter

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> COGROUPKSTREAM-AGGREGATE-0000000008
    Source: repartition-test-repartition-source (topics: [repartition-test-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000007
    Processor: COGROUPKSTREAM-AGGREGATE-0000000007 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- repartition-test-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-MERGE-0000000009 (stores: [])
      --> KTABLE-TOSTREAM-0000000010
      <-- COGROUPKSTREAM-AGGREGATE-0000000007, COGROUPKSTREAM-AGGREGATE-0000000008
    Processor: KTABLE-TOSTREAM-0000000010 (stores: [])
      --> KSTREAM-SINK-0000000011
      <-- COGROUPKSTREAM-MERGE-0000000009
    Sink: KSTREAM-SINK-0000000011 (topic: output)
      <-- KTABLE-TOSTREAM-0000000010

"""

DESCRIBE_KEY_MODIFICATION = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000002
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> store-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: store-repartition-filter (stores: [])
      --> store-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Sink: store-repartition-sink (topic: store-repartition)
      <-- store-repartition-filter

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> test-cogroup-agg-1
    Source: store-repartition-source (topics: [store-repartition])
      --> test-cogroup-agg-0
    Processor: test-cogroup-agg-0 (stores: [store])
      --> test-cogroup-merge
      <-- store-repartition-source
    Processor: test-cogroup-agg-1 (stores: [store])
      --> test-cogroup-merge
      <-- KSTREAM-SOURCE-0000000001
    Processor: test-cogroup-merge (stores: [])
      --> KTABLE-TOSTREAM-0000000009
      <-- test-cogroup-agg-0, test-cogroup-agg-1
    Processor: KTABLE-TOSTREAM-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000010
      <-- test-cogroup-merge
    Sink: KSTREAM-SINK-0000000010 (topic: output)
      <-- KTABLE-TOSTREAM-0000000009

"""

DESCRIBE_REUSED_IN_SAME_COGROUPS = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000002
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-filter, COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-filter (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition)
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter
    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition)
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-filter

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> COGROUPKSTREAM-AGGREGATE-0000000008, COGROUPKSTREAM-AGGREGATE-0000000015
    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000007
    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000014
    Processor: COGROUPKSTREAM-AGGREGATE-0000000007 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-AGGREGATE-0000000014 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010])
      --> COGROUPKSTREAM-MERGE-0000000016
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000015 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010])
      --> COGROUPKSTREAM-MERGE-0000000016
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-MERGE-0000000009 (stores: [])
      --> KTABLE-TOSTREAM-0000000019
      <-- COGROUPKSTREAM-AGGREGATE-0000000007, COGROUPKSTREAM-AGGREGATE-0000000008
    Processor: COGROUPKSTREAM-MERGE-0000000016 (stores: [])
      --> KTABLE-TOSTREAM-0000000017
      <-- COGROUPKSTREAM-AGGREGATE-0000000014, COGROUPKSTREAM-AGGREGATE-0000000015
    Processor: KTABLE-TOSTREAM-0000000017 (stores: [])
      --> KSTREAM-SINK-0000000018
      <-- COGROUPKSTREAM-MERGE-0000000016
    Processor: KTABLE-TOSTREAM-0000000019 (stores: [])
      --> KSTREAM-SINK-0000000020
      <-- COGROUPKSTREAM-MERGE-0000000009
    Sink: KSTREAM-SINK-0000000018 (topic: output)
      <-- KTABLE-TOSTREAM-0000000017
    Sink: KSTREAM-SINK-0000000020 (topic: OUTPUT2)
      <-- KTABLE-TOSTREAM-0000000019

"""

DESCRIBE_REUSED_IN_DIFFERENT_COGROUPS = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000003
    Processor: KSTREAM-MAP-0000000003 (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter, COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-sink
      <-- KSTREAM-MAP-0000000003
    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-filter (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-sink
      <-- KSTREAM-MAP-0000000003
    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition)
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-filter
    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition)
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-filter

  Sub-topology: 1
    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000015
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> COGROUPKSTREAM-AGGREGATE-0000000016
    Processor: COGROUPKSTREAM-AGGREGATE-0000000015 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011])
      --> COGROUPKSTREAM-MERGE-0000000017
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000016 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011])
      --> COGROUPKSTREAM-MERGE-0000000017
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-MERGE-0000000017 (stores: [])
      --> none
      <-- COGROUPKSTREAM-AGGREGATE-0000000015, COGROUPKSTREAM-AGGREGATE-0000000016

  Sub-topology: 2
    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000008
    Source: KSTREAM-SOURCE-0000000002 (topics: [three])
      --> COGROUPKSTREAM-AGGREGATE-0000000009
    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004])
      --> COGROUPKSTREAM-MERGE-0000000010
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000009 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004])
      --> COGROUPKSTREAM-MERGE-0000000010
      <-- KSTREAM-SOURCE-0000000002
    Processor: COGROUPKSTREAM-MERGE-0000000010 (stores: [])
      --> none
      <-- COGROUPKSTREAM-AGGREGATE-0000000008, COGROUPKSTREAM-AGGREGATE-0000000009

"""

DESCRIBE_GROUPED_REUSED = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000002
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter, KSTREAM-FILTER-0000000013
      <-- KSTREAM-SOURCE-0000000000
    Processor: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter (stores: [])
      --> COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Processor: KSTREAM-FILTER-0000000013 (stores: [])
      --> KSTREAM-SINK-0000000012
      <-- KSTREAM-MAP-0000000002
    Sink: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-sink (topic: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition)
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-filter
    Sink: KSTREAM-SINK-0000000012 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition)
      <-- KSTREAM-FILTER-0000000013

  Sub-topology: 1
    Source: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-source (topics: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000007
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> COGROUPKSTREAM-AGGREGATE-0000000008
    Processor: COGROUPKSTREAM-AGGREGATE-0000000007 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-MERGE-0000000009 (stores: [])
      --> none
      <-- COGROUPKSTREAM-AGGREGATE-0000000007, COGROUPKSTREAM-AGGREGATE-0000000008

  Sub-topology: 2
    Source: KSTREAM-SOURCE-0000000014 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000010-repartition])
      --> KSTREAM-AGGREGATE-0000000011
    Processor: KSTREAM-AGGREGATE-0000000011 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000010])
      --> none
      <-- KSTREAM-SOURCE-0000000014

"""

DESCRIBE_COGROUP_USED_TWICE = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000001
    Processor: KSTREAM-MAP-0000000001 (stores: [])
      --> foo-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: foo-repartition-filter (stores: [])
      --> foo-repartition-sink
      <-- KSTREAM-MAP-0000000001
    Sink: foo-repartition-sink (topic: foo-repartition)
      <-- foo-repartition-filter

  Sub-topology: 1
    Source: foo-repartition-source (topics: [foo-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000006, COGROUPKSTREAM-AGGREGATE-0000000012
    Processor: COGROUPKSTREAM-AGGREGATE-0000000006 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> COGROUPKSTREAM-MERGE-0000000007
      <-- foo-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000012 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000008])
      --> COGROUPKSTREAM-MERGE-0000000013
      <-- foo-repartition-source
    Processor: COGROUPKSTREAM-MERGE-0000000007 (stores: [])
      --> none
      <-- COGROUPKSTREAM-AGGREGATE-0000000006
    Processor: COGROUPKSTREAM-MERGE-0000000013 (stores: [])
      --> none
      <-- COGROUPKSTREAM-AGGREGATE-0000000012

"""
