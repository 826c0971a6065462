"""Issue 19 item 2: serdes carried down the graph as Kafka's KStreamImpl / KTableImpl /
KGroupedStreamImpl carry them (no rule id in the spec yet). Every test reads the output topic's
raw bytes, since that is what another Kafka client sees."""

import struct

import pytest

from kspark import (Consumed, Grouped, Materialized, Produced, Repartitioned, Serde, Serdes, SessionWindows,
                    StreamsBuilder, StreamsException, TimeWindows)
from kspark.errors import ProcessorStateException
from kspark.testing import TopologyTestDriver

RAW = (Serdes.ByteArray(), Serdes.ByteArray())


def long(n: int) -> bytes:
    return struct.pack(">q", n)


def rawOutput(builder, pipe, topic="out"):
    with TopologyTestDriver(builder.build()) as d:
        pipe(d)
        return [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic(topic, *RAW).readRecordsToList()]


def test_count_writes_an_8_byte_big_endian_long():
    b = StreamsBuilder()
    b.stream("in").groupByKey().count().toStream().to("out")
    out = rawOutput(b, lambda d: d.createInputTopic("in").pipeKeyValueList([("a", "x"), ("a", "y")], 1, 1))
    assert out == [(b"a", long(1), 1), (b"a", long(2), 2)]


def test_consumed_serdes_reach_the_sink():
    b = StreamsBuilder()
    source = b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long()))
    source.to("straight")
    source.filter(lambda k, v: v > 1).to("out")
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", 1), ("b", 2)], 5)
        assert d.createOutputTopic("straight", *RAW).readKeyValuesToList() == [(b"a", long(1)), (b"b", long(2))]
        assert d.createOutputTopic("out", *RAW).readKeyValuesToList() == [(b"b", long(2))]


def test_mapvalues_drops_the_value_serde_selectkey_the_key_serde():
    b = StreamsBuilder()
    source = b.stream("in", Consumed.with_(Serdes.Integer(), Serdes.Long()))
    source.mapValues(lambda v: v * 2).to("mapped")        # Integer key kept, value: the default (JSON)
    source.selectKey(lambda k, v: str(k)).to("rekeyed")   # key: the default (String), Long value kept
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("in").pipeInput(7, 3, 1)
        assert d.createOutputTopic("mapped", *RAW).readKeyValuesToList() == [(struct.pack(">i", 7), b"6")]
        assert d.createOutputTopic("rekeyed", *RAW).readKeyValuesToList() == [(b"7", long(3))]


def test_grouped_value_serde_is_the_reduce_stores_and_the_results():
    b = StreamsBuilder()
    (b.stream("in").groupByKey(Grouped.with_(Serdes.String(), Serdes.String()))
     .reduce(lambda a, v: a + v).toStream().to("out"))
    out = rawOutput(b, lambda d: d.createInputTopic("in").pipeKeyValueList([("k", "x"), ("k", "y")], 1))
    assert out == [(b"k", b"x", 1), (b"k", b"xy", 1)]


def test_groupbykey_with_grouped_uses_only_the_groupeds_serdes():
    # Kafka: groupByKey() is groupByKey(Grouped.with(keySerde, valueSerde)), but a given Grouped is
    # used as it is: here its value serde is unset, so the reduce writes the default (JSON)
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).groupByKey(Grouped.as_("g"))
     .reduce(lambda a, v: a + v).toStream().to("out"))
    out = rawOutput(b, lambda d: d.createInputTopic("in").pipeInput("k", 4, 1))
    assert out == [(b"k", b"4", 1)]


def test_table_serdes_reach_tostream_and_materialized_serdes_the_aggregation():
    b = StreamsBuilder()
    b.table("t", Consumed.with_(Serdes.String(), Serdes.Long())).toStream().to("out")
    (b.stream("s").groupByKey().aggregate(lambda: 0, lambda k, v, a: a + v, Materialized.with_(None, Serdes.Long()))
     .toStream().to("agg"))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("t").pipeInput("a", 9, 2)
        d.createInputTopic("s").pipeInput("a", 5, 3)
        assert d.createOutputTopic("out", *RAW).readKeyValuesToList() == [(b"a", long(9))]
        assert d.createOutputTopic("agg", *RAW).readKeyValuesToList() == [(b"a", long(5))]


def test_windowed_aggregations_carry_windowed_key_serdes():
    b = StreamsBuilder()
    grouped = b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
    grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count().toStream().to("time")
    grouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5)).count().toStream().to("session")
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 0}) as d:
        d.createInputTopic("in").pipeInput("a", "x", 13)
        # TimeWindowedSerializer: key + start; SessionKeySchema: key + end + start
        assert d.createOutputTopic("time", *RAW).readKeyValuesToList() == [(b"a" + long(10), long(1))]
        assert d.createOutputTopic("session", *RAW).readKeyValuesToList() == [(b"a" + long(13) + long(13), long(1))]


def test_windowed_key_without_a_known_key_serde_fails_loudly_as_in_kafka():
    # Kafka 4.3.1: no key serde known, the default String serializer gets a Windowed key; the
    # record comes out of the cache at commit, so the flush of the store fails
    b = StreamsBuilder()
    b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count().toStream().to("out")
    with TopologyTestDriver(b.build()) as d:
        with pytest.raises(ProcessorStateException, match="^topology-test-driver Failed to flush cache of store "
                                                          "KSTREAM-AGGREGATE-STATE-STORE-0000000001$") as failure:
            d.createInputTopic("in").pipeInput("a", "x", 1)
    assert str(failure.value.__cause__).startswith(
        "ClassCastException while producing data to topic out. The key serializer "
        "org.apache.kafka.common.serialization.StringSerializer is not compatible to the actual key type: "
        "org.apache.kafka.streams.kstream.Windowed.")


def test_repartition_result_keeps_the_streams_serdes_and_produced_overrides():
    # Kafka doRepartition: the result carries the stream's serdes where Repartitioned sets none
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).repartition(Repartitioned.as_("r")).to("out")
    b.stream("in2", Consumed.with_(Serdes.String(), Serdes.Long())).to("plain", Produced.with_(None, Serdes.Integer()))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("in").pipeInput("k", 3, 1)
        d.createInputTopic("in2").pipeInput("k", 3, 1)
        assert d.createOutputTopic("out", *RAW).readKeyValuesToList() == [(b"k", long(3))]
        assert d.createOutputTopic("plain", *RAW).readKeyValuesToList() == [(b"k", struct.pack(">i", 3))]


def test_store_serdes_see_the_changelog_topic_name():
    """FINDINGS F19 (stores), rule E-4: Kafka's metered stores call their serdes with the changelog topic,
    ``<application.id>-<store>-changelog`` (``ProcessorContextUtils.changelogFor``), so a serde that
    names schema-registry subjects by topic sees the same names on both; kspark passed the bare
    store name."""
    seen = set()

    class Recording(Serde):
        def __init__(self, inner):
            self.inner, self.name = inner, inner.name

        def serialize(self, topic, data):
            seen.add(topic)
            return self.inner.serialize(topic, data)

        def deserialize(self, topic, data):
            return self.inner.deserialize(topic, data)

    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .count(Materialized.as_("counts").withKeySerde(Recording(Serdes.String())).withValueSerde(Recording(Serdes.Long())))
     .toStream().to("out", Produced.with_(Recording(Serdes.String()), Recording(Serdes.Long()))))
    with TopologyTestDriver(b.build(), {"application.id": "app"}) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", "x"), ("b", "y")], 1, 1)
        assert [(r.key(), r.value()) for r in d.createOutputTopic("out", Serdes.String(), Serdes.Long()).readRecordsToList()] == [
            ("a", 1), ("b", 1)]
    assert seen == {"app-counts-changelog", "out"}
