"""Issue 19 item 1: Kafka's Java overloads resolved by argument type, never by position.

Each test is a line ported from a Kafka Streams application as a user writes it (positional
overloads) and pins the records, stores and errors Kafka gives for it. Rules cited where the
spec has one (T-17 aggregation timestamps, E-2 store order, DP-1 partitioning); the overload
resolution itself has no rule id in the spec yet.
"""

import re
import struct
from datetime import datetime, timedelta, timezone

import pytest

from kspark import (Consumed, Grouped, KeyValue, Materialized, Named, Produced, Serdes, Stores, StreamsBuilder,
                    TimestampExtractor, TimeWindows)
from kspark.testing import TestRecord, TopologyTestDriver

RAW = (Serdes.ByteArray(), Serdes.ByteArray())


def long(n: int) -> bytes:
    return struct.pack(">q", n)


def test_count_with_materialized_names_the_store_and_uses_its_serdes():
    # KGroupedStream#count(Materialized): the store is "my-count", keyed with the Materialized's
    # Integer serde: all() iterates by serialized key (E-2), so -1 (0xffffffff) comes last
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.Integer(), Serdes.String())).groupByKey()
     .count(Materialized.as_("my-count").withKeySerde(Serdes.Integer())).toStream().to("out"))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("in").pipeKeyValueList([(-1, "a"), (2, "b"), (1, "c"), (2, "d")])
        assert list(d.getKeyValueStore("my-count").all()) == [KeyValue(1, 1), KeyValue(2, 2), KeyValue(-1, 1)]
        assert d.createOutputTopic("out", *RAW).readKeyValuesToList() == [
            KeyValue(struct.pack(">i", -1), long(1)), KeyValue(struct.pack(">i", 2), long(1)),
            KeyValue(struct.pack(">i", 1), long(1)), KeyValue(struct.pack(">i", 2), long(2))]


def test_count_named_and_materialized_in_java_order():
    b = StreamsBuilder()
    b.stream("in").groupByKey().count(Named.as_("counter"), Materialized.as_("c")).toStream().to("out")
    topology = b.build()
    assert "Processor: counter (stores: [c])" in str(topology.describe())
    with TopologyTestDriver(topology) as d:
        d.createInputTopic("in").pipeInput("k", "v", 5)
        assert d.getKeyValueStore("c").get("k") == 1
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("k", 1, 5)]


def test_aggregate_and_reduce_with_materialized_name_store_and_write_with_its_value_serde():
    b = StreamsBuilder()
    grouped = b.stream("in").groupByKey()
    (grouped.aggregate(lambda: "", lambda k, v, agg: agg + v, Materialized.as_("agg").withValueSerde(Serdes.String()))
     .toStream().to("agg-out"))
    grouped.reduce(lambda a, v: a + v, Materialized.as_("red")).toStream().to("red-out")
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("in").pipeKeyValueList([("k", "x"), ("k", "y")])
        assert d.getKeyValueStore("agg").get("k") == "xy"
        assert d.getKeyValueStore("red").get("k") == "xy"
        # the aggregate's Materialized String serde: plain UTF-8, not the default JSON '"xy"'
        assert d.createOutputTopic("agg-out", *RAW).readValuesToList() == [b"x", b"xy"]
        assert d.createOutputTopic("red-out", *RAW).readValuesToList() == [b'"x"', b'"xy"']


def test_windowed_count_with_materialized():
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count(Materialized.as_("w")).toStream().to("out"))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", "x"), ("a", "y")], 12, 1)
        assert list(d.getWindowStore("w").fetch("a", 0, 100)) == [KeyValue(10, 2)]
        # TimeWindowedSerializer (inner key bytes + 8-byte start) and a Long, inherited (DP-1)
        assert d.createOutputTopic("out", *RAW).readKeyValuesToList() == [
            KeyValue(b"a" + long(10), long(1)), KeyValue(b"a" + long(10), long(2))]


def test_ktable_filter_mapvalues_join_with_materialized():
    b = StreamsBuilder()
    left, right = b.table("l"), b.table("r")
    left.filter(lambda k, v: v > 1, Materialized.as_("filtered"))
    left.mapValues(lambda v: v * 10, Materialized.as_("mapped"))
    left.join(right, lambda a, c: a + c, Materialized.as_("joined"))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("l").pipeKeyValueList([("a", 1), ("b", 2)])
        d.createInputTopic("r").pipeInput("b", 5)
        assert list(d.getKeyValueStore("filtered").all()) == [KeyValue("b", 2)]
        assert list(d.getKeyValueStore("mapped").all()) == [KeyValue("a", 10), KeyValue("b", 20)]
        assert list(d.getKeyValueStore("joined").all()) == [KeyValue("b", 7)]


class PayloadTime(TimestampExtractor):
    def extract(self, record, partitionTime):
        return record.value()["t"]


def test_consumed_with_extractor_alone_is_the_extractor():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(PayloadTime())).to("out")
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("in").pipeInput("k", {"t": 42}, 1)
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("k", {"t": 42}, 42)]


def test_offset_reset_policy_is_bound_by_type_and_kept_by_the_source_node():
    """Kafka 4's AutoOffsetReset (KIP-1106): Consumed.with_(resetPolicy), with_(k, v, extractor,
    resetPolicy), withOffsetResetPolicy, Topology.addSource(resetPolicy, name, topics...)."""
    from datetime import timedelta

    from kspark import AutoOffsetReset, Topology

    assert Consumed.with_(AutoOffsetReset.latest()).offsetResetPolicy == AutoOffsetReset.latest()
    full = Consumed.with_(Serdes.String(), Serdes.Long(), PayloadTime(), AutoOffsetReset.byDuration(timedelta(hours=2)))
    assert (full.valueSerde, full.offsetResetPolicy.policy()) == (Serdes.Long(), "by_duration:7200000")
    assert Consumed.with_(Serdes.String(), Serdes.Long()).withOffsetResetPolicy(AutoOffsetReset.none()).keySerde == Serdes.String()
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(AutoOffsetReset.earliest())).to("out")
    b.table("t", Consumed.withOffsetResetPolicy(AutoOffsetReset.latest()))
    sources = {n.topics[0]: n.offsetReset for n in b.build()._nodes.values() if getattr(n, "topics", None)}
    assert sources == {"in": AutoOffsetReset.earliest(), "t": AutoOffsetReset.latest()}
    t = Topology().addSource(AutoOffsetReset.none(), "src", "a", "b")
    assert (t._nodes["src"].topics, t._nodes["src"].offsetReset) == (["a", "b"], AutoOffsetReset.none())
    with pytest.raises(ValueError, match="^Duration cannot be negative$"):
        AutoOffsetReset.byDuration(-1)
    with pytest.raises(TypeError, match="resetPolicy must be AutoOffsetReset, got str 'latest'"):
        Consumed.withOffsetResetPolicy("latest")


def test_ktable_tostream_with_mapper_rekeys():
    b = StreamsBuilder()
    b.table("in").toStream(lambda k, v: f"{k}-{v}").to("out")
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("in").pipeInput("a", "x", 3)
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("a-x", "x", 3)]


def test_to_topic_name_extractor_routes_each_record():
    b = StreamsBuilder()
    b.stream("in").to(lambda key, value, context: f"{context.topic()}-{value % 2}")
    topology = b.build()
    assert re.search(r"Sink: KSTREAM-SINK-0000000001 \(extractor class: .+\)", str(topology.describe()))
    with TopologyTestDriver(topology) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", 1), ("b", 2), ("c", 3)])
        assert d.createOutputTopic("in-1").readKeyValuesToList() == [KeyValue("a", 1), KeyValue("c", 3)]
        assert d.createOutputTopic("in-0").readKeyValuesToList() == [KeyValue("b", 2)]


def test_table_with_materialized_only_and_store_supplier():
    b = StreamsBuilder()
    b.table("t", Materialized.as_("t-store").withValueSerde(Serdes.Long()))
    b.table("u", Materialized.as_(Stores.inMemoryKeyValueStore("u-store")))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("t", valueSerializer=Serdes.Long()).pipeInput("k", 7)
        d.createInputTopic("u").pipeInput("k", "v")
        assert d.getKeyValueStore("t-store").get("k") == 7
        assert d.getKeyValueStore("u-store").get("k") == "v"
        assert d.getStateStore("u-store").persistent() is False


def test_pipe_input_one_argument_is_the_value_and_instant_forms():
    b = StreamsBuilder()
    b.stream("in").to("out")
    b.stream("text", Consumed.with_(Serdes.String(), Serdes.String())).to("text-out")
    at = datetime(2024, 1, 1, tzinfo=timezone.utc)
    ms = 1704067200000
    with TopologyTestDriver(b.build()) as d:
        topic = d.createInputTopic("in", startTimestamp=100)
        topic.pipeInput("Hello")
        topic.pipeInput("World", at)
        topic.pipeValueList(["a", "b"], at, timedelta(seconds=1))
        topic.pipeKeyValueList([("k", "c")], 7, 0)
        # String values cannot hold an int: (value, long) is Kafka's pipeInput(V, long timestampMs)
        d.createInputTopic("text").pipeInput("v", 55)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord(None, "Hello", 100), TestRecord(None, "World", ms), TestRecord(None, "a", ms),
            TestRecord(None, "b", ms + 1000), TestRecord("k", "c", 7)]
        assert d.createOutputTopic("text-out").readRecordsToList() == [TestRecord(None, "v", 55)]


@pytest.mark.parametrize("call, message", [
    (lambda g: g.count(Produced.with_(Serdes.String(), Serdes.Long())), "count(), count(Named), count(Materialized)"),
    (lambda g: g.count(Materialized.as_("m"), Named.as_("n")), "count(Named, Materialized)"),
    (lambda g: g.count(Named.as_("n"), Named.as_("m")), "fits none of Kafka's overloads"),
    (lambda g: g.reduce(lambda a, b: a, Grouped.as_("x")), "reduce(reducer, Named, Materialized)"),
])
def test_an_argument_fitting_no_overload_raises_type_error_naming_the_forms(call, message):
    grouped = StreamsBuilder().stream("in").groupByKey()
    with pytest.raises(TypeError, match=re.escape(message)):
        call(grouped)


def test_a_keyword_argument_is_bound_by_its_type_too():
    b = StreamsBuilder()
    b.stream("in").groupByKey().count(named=Materialized.as_("m"))
    assert b.build().storeBuilders().keys() == {"m"}


def test_config_objects_reject_misplaced_arguments():
    with pytest.raises(TypeError, match=re.escape("with_(timestampExtractor)")):
        Consumed.with_(Serdes.String(), Serdes.String(), Serdes.String())
    with pytest.raises(TypeError, match="as_\\(storeName\\), as_\\(storeSupplier\\)"):
        Materialized.as_(42)
    with pytest.raises(TypeError, match="to\\(topic\\), to\\(topic, Produced\\)"):
        StreamsBuilder().stream("in").to("out", Materialized.as_("x"))
    with pytest.raises(TypeError, match="toStream\\(mapper, Named\\)"):
        StreamsBuilder().table("t").toStream(Materialized.as_("x"))
    with pytest.raises(TypeError, match="foreign-key"):
        t = StreamsBuilder().table("t")
        t.join(t, lambda v: v, lambda a, b: a)
    assert Consumed.with_(None, Serdes.Long()).valueSerde == Serdes.Long()
    assert Grouped.with_("g", Serdes.String(), Serdes.Long()).name == "g"
