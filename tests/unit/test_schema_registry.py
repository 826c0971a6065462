"""Schema-registry serdes: GenericAvroSerde, SpecificAvroSerde, KafkaProtobufSerde,
KafkaJsonSchemaSerde on confluent-kafka's serializers (issue 35; rules SR-1..SR-4, DP-1).

The registry is confluent-kafka's in-process ``MockSchemaRegistryClient`` through
``schema.registry.url=mock://<scope>`` (kspark shares one per scope and process, as Confluent's
``MockSchemaRegistry``). "Plain" readers and writers are confluent-kafka's own
``AvroSerializer``/``AvroDeserializer``/... on the same registry: a byte-level check that kspark
writes and reads Confluent's wire format.

Rules (kafka-streams-semantics.md has no serde section; shared/reference is read-only here, so
they are stated in this docstring in its style):

- SR-1 Default serdes are configured with the streams config: ``StreamsConfig.defaultKeySerde()``/
  ``defaultValueSerde()`` call ``serde.configure(originals(), isKey)``. Serdes given in
  ``Consumed``/``Produced``/``Grouped``/``Materialized``/``Joined``/``StreamJoined`` are used as
  given; the application configures them (Confluent's docs: ``serde.configure(serdeConfig, false)``).
  [src ``S/StreamsConfig.java``, ``S/kstream/internals/WrappingNullableUtils.prepareSerde``]
- SR-2 A serde sees the topic it reads or writes: sinks and repartition sinks their topic, a
  logged store its changelog ``<application.id>-<store>-changelog``; with Confluent's
  ``TopicNameStrategy`` the subjects are ``<topic>-key``/``<topic>-value``.
  [src ``S/state/internals/StoreSerdeInitializer``, ``S/processor/internals/ProcessorStateManager.changelogFor``]
- SR-3 An exception from a source's deserializer goes to ``deserialization.exception.handler``:
  FAIL stops the task naming topic, partition, offset; CONTINUE skips it, counts it as dropped,
  and writes the original bytes to the dead-letter queue (KIP-1034).
  [src ``S/processor/internals/RecordDeserializer.handleDeserializationFailure``]
- SR-4 [kspark] A registry that cannot be reached is not the record's fault: kspark fails the task
  with ``SchemaRegistryUnavailableException`` naming the URL instead of handing it to the handler.
  (Confluent's Java deserializer throws ``SerializationException("Error retrieving Avro schema for
  id ...")``, which Kafka Streams hands to the handler, so LogAndContinue would drop records.)
"""

import base64
import dataclasses
import io
import json
import pickle
import sys
import types
import uuid

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.common.serde import SchemaId
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kspark import (
    Consumed, GenericAvroSerde, Grouped, Joined, KafkaJsonSchemaSerde, KafkaProtobufSerde, LogAndContinueExceptionHandler,
    Materialized, Produced, Serdes, SpecificAvroSerde, StreamJoined, StreamsBuilder, StreamsConfig, StreamsException,
    JoinWindows,
)
from kspark.errors import ConfigException
from kspark.schema_registry import SchemaRegistryUnavailableException, dropMockScope, registryClient
from kspark.serialization import SerializationException
from kspark.testing import TestRecord, TopologyTestDriver

from _registry_stub import RegistryStub

PRICE = {"type": "record", "name": "Price", "namespace": "krx",
         "fields": [{"name": "code", "type": "string"}, {"name": "close", "type": "double"}]}
TOTAL = {"type": "record", "name": "Total", "namespace": "krx",
         "fields": [{"name": "n", "type": "long"}, {"name": "sum", "type": "double"}]}
COMPANY = {"type": "record", "name": "Company", "namespace": "krx",
           "fields": [{"name": "name", "type": "string"}, {"name": "sector", "type": "string"}]}


@pytest.fixture
def url():
    scope = f"kspark-{uuid.uuid4().hex[:8]}"
    yield f"mock://{scope}"
    dropMockScope(scope)


def conf(url, **more):
    return {"schema.registry.url": url, **more}


def avro(url, schema, isKey=False, **more):
    return GenericAvroSerde(schema, configs=conf(url, **more), isKey=isKey)


def ctx(topic, isKey=False):
    return SerializationContext(topic, MessageField.KEY if isKey else MessageField.VALUE)


def plainAvroWrite(url, schema, topic, value):
    return AvroSerializer(registryClient(conf(url)), json.dumps(schema))(value, ctx(topic))


def plainAvroRead(url, topic, data):
    return AvroDeserializer(registryClient(conf(url)))(data, ctx(topic))


def test_generic_avro_reads_plain_confluent_records_and_writes_what_a_plain_consumer_reads(url):
    """Byte-level interop both ways: input written by confluent-kafka's AvroSerializer, output read
    by its AvroDeserializer; Consumed/Produced serdes configured by the application (SR-1)."""
    b = StreamsBuilder()
    b.stream("prices", Consumed.with_(Serdes.String(), avro(url, PRICE))) \
        .mapValues(lambda v: {"code": v["code"], "close": v["close"] * 2}) \
        .to("doubled", Produced.with_(Serdes.String(), avro(url, PRICE)))
    with TopologyTestDriver(b.build(), {"application.id": "app"}) as d:
        raw = d.createInputTopic("prices", Serdes.String(), Serdes.ByteArray())
        raw.pipeInput("005930", plainAvroWrite(url, PRICE, "prices", {"code": "005930", "close": 71000.0}), 10)
        out = d.createOutputTopic("doubled", Serdes.String(), Serdes.ByteArray()).readRecordsToList()
    assert [(r.key(), plainAvroRead(url, "doubled", r.value()), r.timestamp()) for r in out] == [
        ("005930", {"code": "005930", "close": 142000.0}, 10)]
    client = registryClient(conf(url))
    assert sorted(client.get_subjects()) == ["doubled-value", "prices-value"]
    # the same schema under both subjects: one id, in the record's bytes 1..4
    assert out[0].value()[0] == 0
    assert int.from_bytes(out[0].value()[1:5], "big") == client.get_latest_version("doubled-value").schema_id


def test_avro_keys_and_values_as_default_serdes_by_confluent_class_names(url):
    """default.key.serde / default.value.serde by Confluent's class names, configured with the
    streams config (schema.registry.url, use.latest.version, auto.register.schemas; SR-1).
    Partitioning hashes the Avro key bytes (DP-1)."""
    key = {"type": "record", "name": "Code", "namespace": "krx", "fields": [{"name": "code", "type": "string"}]}
    client = registryClient(conf(url))
    for subject, schema in (("prices-key", key), ("prices-value", PRICE), ("out-key", key), ("out-value", PRICE)):
        client.register_schema(subject, Schema(json.dumps(schema), "AVRO"))
    config = {"application.id": "app", "schema.registry.url": url, "use.latest.version": "true",
              "auto.register.schemas": "false",
              "default.key.serde": "io.confluent.kafka.streams.serdes.avro.GenericAvroSerde",
              "default.value.serde": "io.confluent.kafka.streams.serdes.avro.GenericAvroSerde"}
    b = StreamsBuilder()
    b.stream("prices").filter(lambda k, v: v["close"] > 100).to("out")
    with TopologyTestDriver(b.build(), config) as d:
        assert isinstance(StreamsConfig(config).defaultKeySerde(), GenericAvroSerde)
        src = d.createInputTopic("prices")
        src.pipeInput({"code": "A"}, {"code": "A", "close": 50.0}, 1)
        src.pipeInput({"code": "B"}, {"code": "B", "close": 500.0}, 2)
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord({"code": "B"}, {"code": "B", "close": 500.0}, 2)]
    assert sorted(client.get_subjects()) == ["out-key", "out-value", "prices-key", "prices-value"]


def test_default_serde_without_registry_url_is_a_config_error():
    with pytest.raises(ConfigException, match="schema.registry.url"):
        StreamsConfig({"application.id": "a", "default.value.serde": "io.confluent.kafka.streams.serdes.avro.GenericAvroSerde"})
    with pytest.raises(ConfigException, match=r"Unknown configuration 'schema.registry.max.retry'. Did you mean "
                                              r"'schema.registry.max.retries'"):
        StreamsConfig({"schema.registry.max.retry": 1})
    assert StreamsConfig({"schema.registry.max.retries": "1"}).get("schema.registry.max.retries") == "1"


def test_unconfigured_serde_in_consumed_fails_the_task_naming_configure():
    """Kafka Streams configures only the default serdes (SR-1): a serde given to Consumed that the
    application did not configure cannot reach a registry. Not a bad record: the task fails."""
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), GenericAvroSerde(PRICE))).to("out", Produced.with_(Serdes.String(), Serdes.JSON()))
    with TopologyTestDriver(b.build(), {"deserialization.exception.handler": LogAndContinueExceptionHandler}) as d:
        with pytest.raises(StreamsException, match=r"GenericAvroSerde is not configured: call configure"):
            d.createInputTopic("in", Serdes.String(), Serdes.ByteArray()).pipeInput("k", b"\x00\x00\x00\x00\x01\x02", 1)


def test_internal_topics_register_subjects_named_after_them(url):
    """Grouped, Materialized: the repartition topic and the store's changelog topic register
    <application.id>-<name>-repartition-value and <application.id>-<store>-changelog-value (SR-2, RP-3)."""
    priceSerde, totalSerde = avro(url, PRICE), avro(url, TOTAL)
    b = StreamsBuilder()
    b.stream("prices", Consumed.with_(Serdes.String(), priceSerde)) \
        .groupBy(lambda k, v: v["code"], Grouped.with_("by-code", Serdes.String(), priceSerde)) \
        .aggregate(lambda: {"n": 0, "sum": 0.0}, lambda k, v, agg: {"n": agg["n"] + 1, "sum": agg["sum"] + v["close"]},
                   Materialized.as_("totals").withKeySerde(Serdes.String()).withValueSerde(totalSerde)) \
        .toStream().to("totals-out", Produced.with_(Serdes.String(), totalSerde))
    with TopologyTestDriver(b.build(), {"application.id": "app", "statestore.cache.max.bytes": 0}) as d:
        src = d.createInputTopic("prices", Serdes.String(), priceSerde)
        src.pipeInput("x", {"code": "A", "close": 1.5}, 1)
        src.pipeInput("y", {"code": "A", "close": 2.5}, 2)
        assert d.createOutputTopic("totals-out", Serdes.String(), totalSerde).readKeyValuesToList() == [
            ("A", {"n": 1, "sum": 1.5}), ("A", {"n": 2, "sum": 4.0})]
        assert d.getKeyValueStore("totals").get("A") == {"n": 2, "sum": 4.0}
    assert sorted(registryClient(conf(url)).get_subjects()) == [
        "app-by-code-repartition-value", "app-totals-changelog-value", "prices-value", "totals-out-value"]


def test_joined_and_stream_joined_with_avro_values(url):
    """Joined (stream-table) and StreamJoined (stream-stream, its stores' changelogs register
    <application.id>-<store>-changelog-value subjects)."""
    companySerde, priceSerde = avro(url, COMPANY), avro(url, PRICE)
    b = StreamsBuilder()
    companies = b.table("companies", Consumed.with_(Serdes.String(), companySerde))
    prices = b.stream("prices", Consumed.with_(Serdes.String(), priceSerde))
    prices.join(companies, lambda p, c: {"code": p["code"], "sector": c["sector"]},
                Joined.with_(Serdes.String(), priceSerde, companySerde)).to("enriched", Produced.with_(Serdes.String(), Serdes.JSON()))
    prices.join(prices, lambda a, c: {"n": 2, "sum": a["close"] + c["close"]}, JoinWindows.ofTimeDifferenceWithNoGrace(10),
                StreamJoined.with_(Serdes.String(), priceSerde, priceSerde).withStoreName("pp")) \
        .to("pairs", Produced.with_(Serdes.String(), avro(url, TOTAL)))
    with TopologyTestDriver(b.build(), {"application.id": "app"}) as d:
        d.createInputTopic("companies", Serdes.String(), companySerde).pipeInput("A", {"name": "Acme", "sector": "tech"}, 1)
        d.createInputTopic("prices", Serdes.String(), priceSerde).pipeInput("A", {"code": "A", "close": 3.0}, 2)
        assert d.createOutputTopic("enriched", Serdes.String(), Serdes.JSON()).readKeyValuesToList() == [
            ("A", {"code": "A", "sector": "tech"})]
        assert d.createOutputTopic("pairs", Serdes.String(), avro(url, TOTAL)).readKeyValuesToList() == [
            ("A", {"n": 2, "sum": 6.0})]
    # the source table's store <topic>-STATE-STORE-0000000000 has a changelog (topology.optimization=none)
    assert sorted(registryClient(conf(url)).get_subjects()) == [
        "app-companies-STATE-STORE-0000000000-changelog-value", "app-pp-other-join-store-changelog-value", "app-pp-this-join-store-changelog-value",
        "companies-value", "pairs-value", "prices-value"]


def test_global_table_store_serdes_see_its_source_topic(url):
    """A GlobalKTable's store has no changelog of its own: its source topic is its changelog
    (``GlobalStateManagerImpl.changelogFor``), so its serdes register nothing but
    ``<topic>-value``. (Checked on Kafka Streams 4.3's TopologyTestDriver with a serde recording
    its topics: ``companies`` only, never ``app-company-master-changelog``.)"""
    companySerde = avro(url, COMPANY)
    b = StreamsBuilder()
    companies = b.globalTable("companies", Consumed.with_(Serdes.String(), companySerde), Materialized.as_("company-master"))
    b.stream("codes", Consumed.with_(Serdes.String(), Serdes.String())) \
        .join(companies, lambda k, v: v, lambda v, c: c["sector"]).to("sectors", Produced.with_(Serdes.String(), Serdes.String()))
    with TopologyTestDriver(b.build(), {"application.id": "app"}) as d:
        d.createInputTopic("companies", Serdes.String(), companySerde).pipeInput("A", {"name": "Acme", "sector": "tech"}, 1)
        d.createInputTopic("codes", Serdes.String(), Serdes.String()).pipeInput("x", "A", 2)
        assert d.createOutputTopic("sectors", Serdes.String(), Serdes.String()).readKeyValuesToList() == [("x", "tech")]
        assert d.getKeyValueStore("company-master").get("A") == {"name": "Acme", "sector": "tech"}
    assert registryClient(conf(url)).get_subjects() == ["companies-value"]


def test_tombstones_stay_null_through_avro_tables(url):
    """A null value is null in every serde (no registry call, no framing): a KTable delete and its
    changelog tombstone, and the table's downstream delete record."""
    companySerde = avro(url, COMPANY)
    assert companySerde.serialize("companies", None) is None and companySerde.deserialize("companies", None) is None
    b = StreamsBuilder()
    b.table("companies", Consumed.with_(Serdes.String(), companySerde), Materialized.as_("co")) \
        .mapValues(lambda c: c["sector"]).toStream().to("sectors", Produced.with_(Serdes.String(), Serdes.String()))
    with TopologyTestDriver(b.build(), {"application.id": "app", "statestore.cache.max.bytes": 0}) as d:
        src = d.createInputTopic("companies", Serdes.String(), companySerde)
        src.pipeInput("A", {"name": "Acme", "sector": "tech"}, 1)
        src.pipeInput("A", None, 2)
        assert d.createOutputTopic("sectors", Serdes.String(), Serdes.String()).readRecordsToList() == [
            TestRecord("A", "tech", 1), TestRecord("A", None, 2)]
        assert d.getKeyValueStore("co").get("A") is None


# ------------------------------------------------------------------ SpecificAvroSerde
@dataclasses.dataclass
class Price:
    SCHEMA = PRICE
    code: str
    close: float


def test_specific_avro_reads_and_writes_a_declared_class(url):
    serde = SpecificAvroSerde(Price, configs=conf(url), isKey=False)
    b = StreamsBuilder()
    b.stream("prices", Consumed.with_(Serdes.String(), serde)) \
        .mapValues(lambda p: Price(p.code, p.close + 1)).to("out", Produced.with_(Serdes.String(), serde))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("prices", Serdes.String(), Serdes.ByteArray()).pipeInput(
            "k", plainAvroWrite(url, PRICE, "prices", {"code": "A", "close": 1.0}), 5)
        assert d.createOutputTopic("out", Serdes.String(), serde).readRecordsToList() == [TestRecord("k", Price("A", 2.0), 5)]


def test_specific_avro_by_class_name_finds_the_class_of_the_writer_schema(url, monkeypatch):
    """SpecificAvroSerde as default.value.serde finds the class by the writer schema's full name
    (krx.Price: module krx, class Price), as Avro's SpecificData does."""
    monkeypatch.setitem(sys.modules, "krx", types.SimpleNamespace(Price=Price))
    config = {"application.id": "app", "schema.registry.url": url, "specific.avro.reader": "true",
              "default.value.serde": "io.confluent.kafka.streams.serdes.avro.SpecificAvroSerde"}
    b = StreamsBuilder()
    b.stream("prices").filter(lambda k, p: isinstance(p, Price)).mapValues(lambda p: Price(p.code, p.close * 3)).to("out")
    with TopologyTestDriver(b.build(), config) as d:
        d.createInputTopic("prices", Serdes.String(), Serdes.ByteArray()).pipeInput(
            "k", plainAvroWrite(url, PRICE, "prices", {"code": "A", "close": 2.0}), 5)
        out = d.createOutputTopic("out", Serdes.String(), Serdes.ByteArray()).readRecordsToList()
    assert [plainAvroRead(url, "out", r.value()) for r in out] == [{"code": "A", "close": 6.0}]


# ------------------------------------------------------------------ Protobuf
@pytest.fixture(scope="module")
def tick(tmp_path_factory):
    """A message class generated by protoc (grpcio-tools) at test time."""
    from grpc_tools import protoc

    root = tmp_path_factory.mktemp("proto")
    (root / "ksp_tick.proto").write_text(
        'syntax = "proto3";\npackage ksp;\nmessage Tick {\n  string code = 1;\n  int64 volume = 2;\n}\n')
    assert protoc.main(["protoc", f"-I{root}", f"--python_out={root}", str(root / "ksp_tick.proto")]) == 0
    sys.path.insert(0, str(root))
    try:
        import ksp_tick_pb2
    finally:
        sys.path.remove(str(root))
    return ksp_tick_pb2.Tick


def test_protobuf_serde_interop_with_plain_confluent_protobuf(url, tick):
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

    serde = KafkaProtobufSerde(tick, configs=conf(url), isKey=False)
    b = StreamsBuilder()
    b.stream("ticks", Consumed.with_(Serdes.String(), serde)) \
        .mapValues(lambda t: tick(code=t.code, volume=t.volume * 10)).to("out", Produced.with_(Serdes.String(), serde))
    plain = ProtobufSerializer(tick, registryClient(conf(url)), {"use.deprecated.format": False})
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("ticks", Serdes.String(), Serdes.ByteArray()).pipeInput(
            "k", plain(tick(code="A", volume=7), ctx("ticks")), 3)
        out = d.createOutputTopic("out", Serdes.String(), Serdes.ByteArray()).readRecordsToList()
    read = ProtobufDeserializer(tick, {"use.deprecated.format": False})
    assert [(r.key(), read(r.value(), ctx("out")), r.timestamp()) for r in out] == [("k", tick(code="A", volume=70), 3)]
    assert sorted(registryClient(conf(url)).get_subjects()) == ["out-value", "ticks-value"]


def test_protobuf_and_json_schema_as_default_serdes_by_confluent_class_names(url, tick):
    """default.value.serde=...KafkaProtobufSerde with specific.protobuf.value.type, and
    ...KafkaJsonSchemaSerde writing with the subject's latest schema (use.latest.version; SR-1)."""
    b = StreamsBuilder()
    b.stream("ticks").mapValues(lambda t: tick(code=t.code, volume=t.volume + 1)).to("out")
    config = {"application.id": "app", "schema.registry.url": url,
              "default.value.serde": "io.confluent.kafka.streams.serdes.protobuf.KafkaProtobufSerde",
              "specific.protobuf.value.type": f"{tick.__module__}.Tick"}
    with TopologyTestDriver(b.build(), config) as d:
        d.createInputTopic("ticks").pipeInput("k", tick(code="B", volume=1), 1)
        assert d.createOutputTopic("out").readKeyValuesToList() == [("k", tick(code="B", volume=2))]

    registryClient(conf(url)).register_schema("trades-value", Schema(json.dumps(TRADE), "JSON"))
    registryClient(conf(url)).register_schema("out2-value", Schema(json.dumps(TRADE), "JSON"))
    b = StreamsBuilder()
    b.stream("trades").filter(lambda k, t: t["qty"] > 1).to("out2")
    config = {"application.id": "app", "schema.registry.url": url, "use.latest.version": True,
              "default.value.serde": "io.confluent.kafka.streams.serdes.json.KafkaJsonSchemaSerde"}
    with TopologyTestDriver(b.build(), config) as d:
        src = d.createInputTopic("trades")
        src.pipeInput("k", {"code": "A", "qty": 1}, 1)
        src.pipeInput("k", {"code": "A", "qty": 5}, 2)
        assert d.createOutputTopic("out2").readKeyValuesToList() == [("k", {"code": "A", "qty": 5})]
        with pytest.raises(SerializationException, match=r"KafkaJsonSchemaSerde cannot serialize .* for topic trades: "
                                                         r"SerializationError: 'qty' is a required property"):
            src.pipeInput("k", {"code": "A"}, 3)  # the input topic's serializer is the default serde


# ------------------------------------------------------------------ JSON Schema
TRADE = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Trade", "type": "object",
         "properties": {"code": {"type": "string"}, "qty": {"type": "integer"}}, "required": ["code", "qty"]}


def test_json_schema_serde_interop_and_validation(url):
    serde = KafkaJsonSchemaSerde(TRADE, configs=conf(url), isKey=False)
    b = StreamsBuilder()
    b.stream("trades", Consumed.with_(Serdes.String(), serde)).mapValues(lambda t: dict(t, qty=t["qty"] + 1)) \
        .to("out", Produced.with_(Serdes.String(), serde))
    plain = JSONSerializer(json.dumps(TRADE), registryClient(conf(url)))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("trades", Serdes.String(), Serdes.ByteArray()).pipeInput(
            "k", plain({"code": "A", "qty": 1}, ctx("trades")), 3)
        out = d.createOutputTopic("out", Serdes.String(), Serdes.ByteArray()).readRecordsToList()
    read = JSONDeserializer(None, schema_registry_client=registryClient(conf(url)))
    assert [read(r.value(), ctx("out")) for r in out] == [{"code": "A", "qty": 2}]
    with pytest.raises(SerializationException, match=r"KafkaJsonSchemaSerde cannot serialize .* for topic out: .*'qty' is a required"):
        serde.serialize("out", {"code": "A"})


# ------------------------------------------------------------------ bad input (SR-3, SR-4)
def priceTopology(url, **serdeConf):
    b = StreamsBuilder()
    b.stream("prices", Consumed.with_(Serdes.String(), avro(url, PRICE, **serdeConf))) \
        .mapValues(lambda v: v["close"]).to("out", Produced.with_(Serdes.String(), Serdes.Double()))
    return b.build()


def dropped(d):
    return {m.tag("reason"): v for m, v in d.metrics().items() if m.group == "kspark-dropped-records"}


def test_payload_without_magic_byte_fails_naming_topic_partition_offset_and_schema_id(url):
    with TopologyTestDriver(priceTopology(url)) as d:
        src = d.createInputTopic("prices", Serdes.String(), Serdes.ByteArray())
        src.pipeInput("k", plainAvroWrite(url, PRICE, "prices", {"code": "A", "close": 1.0}), 1)
        with pytest.raises(StreamsException, match=r"topic=prices, partition=0, offset=1: SerializationException: "
                                                   r"GenericAvroSerde: error deserializing AVRO record for topic prices, "
                                                   r"schema id none \(no magic byte\)"):
            src.pipeInput("k", b'{"code": "A"}', 2)


def test_unknown_schema_id_is_skipped_counted_and_dead_lettered_with_original_bytes(url):
    config = {"deserialization.exception.handler": LogAndContinueExceptionHandler,
              "errors.dead.letter.queue.topic.name": "dlq"}
    bad = b"\x00" + (4242).to_bytes(4, "big") + b"\x02A"
    with TopologyTestDriver(priceTopology(url), config) as d:
        src = d.createInputTopic("prices", Serdes.String(), Serdes.ByteArray())
        src.pipeInput("k", bad, 1)
        src.pipeInput("k", plainAvroWrite(url, PRICE, "prices", {"code": "A", "close": 4.0}), 2)
        assert d.createOutputTopic("out", Serdes.String(), Serdes.Double()).readKeyValuesToList() == [("k", 4.0)]
        assert dropped(d) == {"deserialization error": 1}
        dead = d.createOutputTopic("dlq", Serdes.ByteArray(), Serdes.ByteArray()).readRecordsToList()
    assert [(r.key(), r.value()) for r in dead] == [(b"k", bad)]
    message = dict(dead[0].headers())["__streams.errors.message"].decode()
    assert "schema id 4242" in message and url in message


def test_writer_schema_the_reader_cannot_resolve_goes_to_the_handler_with_its_schema_id(url):
    reader = {**PRICE, "fields": PRICE["fields"] + [{"name": "market", "type": "string"}]}  # no default
    b = StreamsBuilder()
    b.stream("prices", Consumed.with_(Serdes.String(), GenericAvroSerde(PRICE, reader, conf(url), False))).to(
        "out", Produced.with_(Serdes.String(), Serdes.JSON()))
    data = plainAvroWrite(url, PRICE, "prices", {"code": "A", "close": 1.0})
    sid = int.from_bytes(data[1:5], "big")
    with TopologyTestDriver(b.build()) as d:
        with pytest.raises(StreamsException, match=rf"offset=0: SerializationException: .*schema id {sid}: .*market"):
            d.createInputTopic("prices", Serdes.String(), Serdes.ByteArray()).pipeInput("k", data, 1)


def test_avro_backward_evolution_newer_reader_reads_older_records_with_the_default(url):
    """BACKWARD compatibility: records written with v1, read by a consumer with v2 (an added field
    with a default): the field takes its default."""
    v2 = {**PRICE, "fields": PRICE["fields"] + [{"name": "market", "type": "string", "default": "KOSPI"}]}
    client = registryClient(conf(url))
    old = plainAvroWrite(url, PRICE, "prices", {"code": "A", "close": 1.0})
    client.register_schema("prices-value", Schema(json.dumps(v2), "AVRO"))
    b = StreamsBuilder()
    b.stream("prices", Consumed.with_(Serdes.String(), GenericAvroSerde(v2, v2, conf(url), False))).to(
        "out", Produced.with_(Serdes.String(), Serdes.JSON()))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("prices", Serdes.String(), Serdes.ByteArray()).pipeInput("k", old, 1)
        assert d.createOutputTopic("out", Serdes.String(), Serdes.JSON()).readValuesToList() == [
            {"code": "A", "close": 1.0, "market": "KOSPI"}]
    assert sorted(client.get_versions("prices-value")) == [1, 2]


def test_schema_not_registered_with_auto_register_off_raises_naming_the_subject(url):
    serde = avro(url, PRICE, **{"auto.register.schemas": False})
    with pytest.raises(SerializationException, match=r"refused the schema for subject prices-value \(topic prices\): "
                                                     r"Schema Not Found"):
        serde.serialize("prices", {"code": "A", "close": 1.0})


def test_subject_name_strategies(url):
    for strategy, subject in (("io.confluent.kafka.serializers.subject.RecordNameStrategy", "krx.Price"),
                              ("TopicRecordNameStrategy", "prices-krx.Price")):
        avro(url, PRICE, **{"value.subject.name.strategy": strategy}).serialize("prices", {"code": "A", "close": 1.0})
        assert subject in registryClient(conf(url)).get_subjects()
    with pytest.raises(ConfigException, match="value.subject.name.strategy"):
        avro(url, PRICE, **{"value.subject.name.strategy": "Nope"})


# ------------------------------------------------------------------ over HTTP: confluent-kafka's real client
# against tests/_registry_stub.py, which counts requests with their Authorization header and can
# fail on purpose; the real registry's tests (compatibility, interop, evolution on Spark and
# Kafka) are in tests/kafka/test_schema_registry_kafka.py and tests/spark/.
@pytest.fixture
def stub():
    with RegistryStub({7: json.dumps(PRICE)}) as registry:
        yield registry


@pytest.mark.parametrize("source", ["USER_INFO", "URL"])
def test_one_client_per_process_caches_schemas_by_id_and_sends_basic_auth(stub, source):
    """A pickled serde (what a Spark worker gets) builds its deserializer on the worker with the
    process's one client; a schema id is fetched once, not per record. Credentials from
    basic.auth.user.info (USER_INFO) or from the URL (URL, the default source)."""
    configs = ({"schema.registry.url": stub.url, "basic.auth.credentials.source": "USER_INFO",
                "basic.auth.user.info": "fred:s3cret"} if source == "USER_INFO" else
               {"schema.registry.url": stub.url.replace("http://", "http://fred:s3cret@")})
    configs["schema.registry.max.retries"] = "0"
    body = io.BytesIO()  # a record in Confluent's framing, as a producer wrote it with schema id 7
    fastavro.schemaless_writer(body, fastavro.parse_schema(PRICE), {"code": "A", "close": 1.0})
    data = SchemaId("AVRO", 7).id_to_bytes() + body.getvalue()
    serdes = [pickle.loads(pickle.dumps(GenericAvroSerde(configs=configs, isKey=False))) for _ in range(2)]
    values = [s.deserialize("prices", data) for s in serdes for _ in range(50)]
    assert values == [{"code": "A", "close": 1.0}] * 100
    assert registryClient(configs) is registryClient(dict(configs))
    auth = "Basic " + base64.b64encode(b"fred:s3cret").decode()
    assert stub.requests == [("GET", "/schemas/ids/7?subject=prices-value", auth)]  # once for the process


def test_failing_registry_fails_the_task_and_drops_nothing():
    """A registry answering 503 (after the client's retries) is the registry's fault, not the record's (SR-4)."""
    config = {"deserialization.exception.handler": LogAndContinueExceptionHandler}
    with RegistryStub(failWith=503) as registry:
        b = StreamsBuilder()
        b.stream("prices", Consumed.with_(Serdes.String(), avro(registry.url, PRICE, **{"schema.registry.max.retries": "0"}))) \
            .to("out", Produced.with_(Serdes.String(), Serdes.JSON()))
        with TopologyTestDriver(b.build(), config) as d:
            with pytest.raises(SchemaRegistryUnavailableException,
                               match=rf"schema registry {registry.url} unreachable or failing while fetching schema id 5 "
                                     r"for topic prices: SchemaRegistryError: failing \(HTTP status code 503"):
                d.createInputTopic("prices", Serdes.String(), Serdes.ByteArray()).pipeInput(
                    "k", b"\x00\x00\x00\x00\x05\x02A", 1)
            assert dropped(d) == {}


def test_unreachable_registry_fails_the_task_naming_the_url_and_drops_nothing():
    url = "http://127.0.0.1:9"  # discard port: nothing listens
    config = {"deserialization.exception.handler": LogAndContinueExceptionHandler}
    b = StreamsBuilder()
    b.stream("prices", Consumed.with_(Serdes.String(), avro(url, PRICE, **{"schema.registry.max.retries": "0"}))).to(
        "out", Produced.with_(Serdes.String(), Serdes.JSON()))
    with TopologyTestDriver(b.build(), config) as d:
        with pytest.raises(SchemaRegistryUnavailableException,
                           match=r"schema registry http://127.0.0.1:9 unreachable or failing while fetching schema id 5 "
                                 r"for topic prices: ConnectError"):
            d.createInputTopic("prices", Serdes.String(), Serdes.ByteArray()).pipeInput(
                "k", b"\x00\x00\x00\x00\x05\x02A", 1)
        assert dropped(d) == {}


# ---------------------------------------------------------------- the Avro fast path (issue 35, speed)
EVERY = {"type": "record", "name": "Every", "namespace": "krx", "fields": [
    {"name": "code", "type": "string"}, {"name": "close", "type": "double"}, {"name": "n", "type": "long"},
    {"name": "ok", "type": "boolean"}, {"name": "raw", "type": "bytes"},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "side", "type": {"type": "enum", "name": "Side", "symbols": ["BUY", "SELL"]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "int"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}}]}


def everyRecords():
    import datetime
    import decimal

    at = datetime.datetime(2024, 1, 2, 9, 0, tzinfo=datetime.timezone.utc)
    return [{"code": f"c{i}", "close": i / 3, "n": -i * 10**12, "ok": i % 2 == 0, "raw": bytes([i, 0, 255]),
             "note": None if i % 2 else f"n{i}", "side": "SELL" if i % 3 else "BUY", "tags": ["a"] * (i % 3),
             "attrs": {"k": i}, "at": at, "amount": decimal.Decimal(f"{i}.25"), "inner": {"x": i}} for i in range(6)]


@pytest.fixture
def confluentReads(monkeypatch):
    """How many records went through confluent-kafka's AvroDeserializer.__call__ (the general path)."""
    calls = []
    general = AvroDeserializer.__call__

    def counted(self, data, ctx=None):
        calls.append(data)
        return general(self, data, ctx)

    monkeypatch.setattr(AvroDeserializer, "__call__", counted)
    return calls


def test_avro_fast_path_gives_what_confluent_kafkas_deserializer_gives(url, confluentReads):
    """The fast path (schema_registry._AvroFastReader) against confluent-kafka's AvroDeserializer on
    the same bytes: two writer schema ids (v2 adds a field with a default), as value and as key, with
    and without a reader schema: the same dicts; after the first record of each id, confluent-kafka's
    path is not taken again."""
    v2 = {**EVERY, "fields": EVERY["fields"] + [{"name": "market", "type": "string", "default": "KOSPI"}]}
    records = everyRecords()
    data = [plainAvroWrite(url, EVERY, "prices", r) for r in records[:3]] + [
        plainAvroWrite(url, v2, "prices", {**r, "market": "KOSDAQ"}) for r in records[3:]]
    assert len({d[1:5] for d in data}) == 2
    expected = [plainAvroRead(url, "prices", d) for d in data]
    assert expected[3]["market"] == "KOSDAQ" and expected[0]["amount"] == records[0]["amount"]
    for isKey in (False, True):
        del confluentReads[:]
        serde = avro(url, None, isKey=isKey)
        assert [serde.deserialize("prices", d) for d in data + data] == expected + expected
        assert confluentReads == [data[0], data[3]]  # one per schema id, then the fast path
    withReader = GenericAvroSerde(None, v2, conf(url), False)
    expectedV2 = [AvroDeserializer(registryClient(conf(url)), json.dumps(v2))(d, ctx("prices")) for d in data]
    assert [r["market"] for r in expectedV2] == ["KOSPI"] * 3 + ["KOSDAQ"] * 3
    del confluentReads[:]
    assert [withReader.deserialize("prices", d) for d in data + data] == expectedV2 + expectedV2
    assert confluentReads == [data[0], data[3]]
    # bad bytes after the id was learnt: confluent-kafka's path and its error, as on the first record
    cut = data[1][:-3]
    with pytest.raises(SerializationException, match="schema id 1"):
        withReader.deserialize("prices", cut)
    assert confluentReads[-1] == cut


def test_avro_fast_path_is_not_taken_for_a_schema_with_rules_or_latest_version(url, confluentReads):
    """A writer schema with a rule set (here a domain rule whose executor is missing: confluent-kafka
    fails every record on it) and use.latest.version=true keep confluent-kafka's path for every record."""
    from confluent_kafka.schema_registry import Rule, RuleKind, RuleMode, RuleSet

    client = registryClient(conf(url))
    ruled = Schema(json.dumps(PRICE), "AVRO", rule_set=RuleSet(migration_rules=None, domain_rules=[Rule(
        "check", None, RuleKind.CONDITION, RuleMode.READ, "NO-SUCH-EXECUTOR", None, None, None, None, None, False)]))
    sid = client.register_schema("ruled-value", ruled)
    data = SchemaId("AVRO", sid).id_to_bytes() + fastavro_bytes(PRICE, {"code": "A", "close": 1.0})
    serde = avro(url, None)
    for _ in range(2):
        with pytest.raises(SerializationException, match=rf"schema id {sid}: SerializationError"):
            serde.deserialize("ruled", data)
    assert confluentReads == [data, data]
    latest = avro(url, None, **{"use.latest.version": True})
    plain = plainAvroWrite(url, PRICE, "prices", {"code": "B", "close": 2.0})
    del confluentReads[:]
    assert [latest.deserialize("prices", plain) for _ in range(3)] == [{"code": "B", "close": 2.0}] * 3
    assert confluentReads == [plain] * 3


def fastavro_bytes(schema, value):
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def test_protobuf_serde_pickles_its_class_as_proto_files_for_a_process_without_the_module(url, tmp_path):
    """A upb message class does not pickle, and a ``_pb2`` module generated at run time is not on a
    Spark worker's path: the serde ships the .proto files (with the imported well-known type) and a
    fresh Python process (no kspark test paths, no such module) rebuilds the class from them; the
    message it builds has the same bytes as the driver's. In this process the module's class itself
    comes back."""
    import os
    import pickle
    import subprocess
    from pathlib import Path

    import grpc_tools
    from grpc_tools import protoc
    from pyspark import cloudpickle

    (tmp_path / "ksp_ship.proto").write_text(
        'syntax = "proto3";\npackage kspship;\nimport "google/protobuf/timestamp.proto";\n'
        "message Tick {\n  string code = 1;\n  google.protobuf.Timestamp at = 2;\n"
        "  message Venue { string name = 1; }\n  Venue venue = 3;\n}\n")
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    assert protoc.main(["protoc", f"-I{tmp_path}", f"-I{include}", f"--python_out={tmp_path}",
                        str(tmp_path / "ksp_ship.proto")]) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        import ksp_ship_pb2
    finally:
        sys.path.remove(str(tmp_path))
    Tick = ksp_ship_pb2.Tick
    shipped = cloudpickle.dumps(KafkaProtobufSerde(Tick, configs=conf(url), isKey=False))
    assert pickle.loads(shipped)._messageClass is Tick
    expected = Tick(code="A", venue=Tick.Venue(name="KRX"))
    expected.at.seconds = 60
    src = str(Path(__file__).resolve().parents[2] / "src")
    code = ("import pickle, sys; sys.path.insert(0, %r); cls = pickle.loads(sys.stdin.buffer.read())._messageClass\n"
            "t = cls(code='A', venue=cls.Venue(name='KRX')); t.at.seconds = 60\n"
            "assert 'ksp_ship_pb2' not in sys.modules\n"
            "sys.stdout.write(cls.DESCRIPTOR.full_name + ' ' + t.SerializeToString().hex())" % src)
    done = subprocess.run([sys.executable, "-c", code], input=shipped, capture_output=True, cwd=tmp_path.parent,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == "kspship.Tick " + expected.SerializeToString().hex()
