"""Issue 19 items 5 and 10: repartition topics read with the record timestamps; the small API
gaps a port hits (Serdes.Void/UUID/Float/serdeFrom, Produced with a partitioner, stream(Pattern),
Materialized logging flags)."""

import re
import struct
import uuid

import pytest

from kspark import (Consumed, Grouped, KeyValue, Materialized, Produced, Serdes, StreamsBuilder, TimestampExtractor)
from kspark.serialization import SerializationException
from kspark.testing import TestRecord, TopologyTestDriver


class PayloadTime(TimestampExtractor):
    def extract(self, record, partitionTime):
        return record.value()["t"]


@pytest.mark.parametrize("regroup", ["groupBy", "repartition", "stores-repartition"])
def test_repartition_topics_are_read_with_record_timestamps_not_the_default_extractor(regroup):
    # Kafka reads repartition topics with FailOnInvalidTimestamp: the payload extractor ran once,
    # at the source; after mapValues the value has no "t" any more (T-1, T-3, RP-3)
    b = StreamsBuilder()
    values = b.stream("in").mapValues(lambda v: v["n"])
    if regroup == "groupBy":
        values.groupBy(lambda k, v: "all", Grouped.with_(Serdes.String(), Serdes.Long())).count().toStream().to("out")
    elif regroup == "repartition":
        values.selectKey(lambda k, v: "all").repartition().to("out")
    else:
        class Echo:
            def init(self, context):
                self.context = context

            def process(self, record):
                self.context.forward(record)

            def close(self):
                pass
        from kspark import Stores
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("s")))
        values.selectKey(lambda k, v: "all").process(Echo, "s").to("out")
    config = {"default.timestamp.extractor": PayloadTime(), "kspark.repartition.before.stateful.process": True}
    with TopologyTestDriver(b.build(config), config) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", {"t": 50, "n": 1}), ("b", {"t": 60, "n": 2})], 1, 1)
        out = d.createOutputTopic("out").readRecordsToList()
    assert [(r.key(), r.timestamp()) for r in out] == [("all", 50), ("all", 60)]


def test_void_uuid_float_serdes_are_kafkas_bytes():
    u = uuid.UUID("123e4567-e89b-12d3-a456-426614174000")
    assert Serdes.UUID().serialize("t", u) == b"123e4567-e89b-12d3-a456-426614174000"
    assert Serdes.UUID().deserialize("t", b"123e4567-e89b-12d3-a456-426614174000") == u
    assert Serdes.Float().serialize("t", 1.5) == struct.pack(">f", 1.5)
    assert Serdes.Float().deserialize("t", struct.pack(">f", 0.1)) == struct.unpack(">f", struct.pack(">f", 0.1))[0]
    assert Serdes.Void().serialize("t", None) is None
    with pytest.raises(SerializationException, match="Data should be null for a VoidSerializer"):
        Serdes.Void().serialize("t", 1)
    with pytest.raises(SerializationException, match="Error parsing data into UUID"):
        Serdes.UUID().deserialize("t", b"nope")


def test_short_and_boolean_serdes_are_kafkas_bytes():
    """Kafka ShortSerializer (2 bytes big-endian) and BooleanSerializer/-Deserializer (one byte,
    1 or 0; Kafka 4.3.1 refuses any other); the interop test checks them against Kafka's own."""
    assert Serdes.Short().serialize("t", -2) == b"\xff\xfe"
    assert Serdes.Short().deserialize("t", b"\x7f\xff") == 32767
    with pytest.raises(SerializationException, match="cannot serialize 32768"):
        Serdes.Short().serialize("t", 32768)
    with pytest.raises(SerializationException, match="is not 2"):
        Serdes.Short().deserialize("t", b"\x00")
    assert [Serdes.Boolean().serialize("t", b) for b in (True, False, None)] == [b"\x01", b"\x00", None]
    assert [Serdes.Boolean().deserialize("t", b) for b in (b"\x01", b"\x00")] == [True, False]
    with pytest.raises(SerializationException, match="^Unexpected byte received by BooleanDeserializer: 2$"):
        Serdes.Boolean().deserialize("t", b"\x02")
    with pytest.raises(SerializationException, match="expected bool"):
        Serdes.Boolean().serialize("t", 1)
    with pytest.raises(SerializationException, match="is not 1"):
        Serdes.Boolean().deserialize("t", b"")
    assert Serdes.serdeFrom(bool) == Serdes.Boolean()


def test_serde_from_functions_objects_and_types():
    upper = Serdes.serdeFrom(lambda t, d: d.upper().encode(), lambda t, b: b.decode())
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).to("out", Produced.with_(Serdes.String(), upper))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("in").pipeInput("k", "abc", 1)
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("k", "ABC", 1)]
    assert Serdes.serdeFrom(int) == Serdes.Long() and Serdes.serdeFrom(uuid.UUID) == Serdes.UUID()
    with pytest.raises(ValueError, match="Unknown class for built-in serializer"):
        Serdes.serdeFrom(dict)


def test_produced_with_serdes_and_partitioner():
    b = StreamsBuilder()
    b.stream("in").to("out", Produced.with_(Serdes.String(), Serdes.JSON(), lambda topic, k, v, n: 1))
    assert b.build().subtopologies()[0].nodes[-1].partitioner("out", "k", 1, 2) == 1

    class Partitioner:  # Kafka's StreamPartitioner shape
        def partition(self, topic, key, value, numPartitions):
            return 0
    assert Produced.with_(None, None, Partitioner()).partitioner("out", "k", 1, 2) == 0


def test_stream_of_a_pattern_reads_every_matching_topic_in_one_partition():
    b = StreamsBuilder()
    b.stream(re.compile("orders-.*"), Consumed.with_(Serdes.String(), Serdes.Long())).to("out")
    topology = b.build()
    assert "Source: KSTREAM-SOURCE-0000000000 (topics: orders-.*)" in str(topology.describe())

    class Topics:
        def init(self, context):
            self.context = context

        def process(self, record):
            meta = self.context.recordMetadata()
            self.context.forward(record.withValue(f"{meta.topic()}@{meta.offset()}"))

        def close(self):
            pass
    b2 = StreamsBuilder()
    b2.stream(re.compile("orders-.*"), Consumed.with_(Serdes.String(), Serdes.Long())).process(Topics).to("where")
    with TopologyTestDriver(b2.build()) as d:
        d.createInputTopic("orders-eu").pipeInput("a", 1, 5)
        d.createInputTopic("orders-us").pipeInput("b", 2, 6)
        with pytest.raises(ValueError, match="Unknown topic: returns"):
            d.createInputTopic("returns")
        assert d.createOutputTopic("where").readKeyValuesToList() == [
            KeyValue("a", "orders-eu@0"), KeyValue("b", "orders-us@1")]


def test_materialized_logging_flags_are_accepted():
    m = Materialized.as_("s").withLoggingDisabled()
    assert (m.logging, Materialized.as_("s").withLoggingEnabled({"retention.ms": "1"}).topicConfig) == (
        False, {"retention.ms": "1"})
    b = StreamsBuilder()
    b.stream("in").groupByKey().count(m)
    assert b.build().storeBuilders()["s"].loggingEnabled() is False
