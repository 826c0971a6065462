"""Schema-registry serdes through a real registry and a real broker (issue 35; rules SR-1..SR-3
in tests/unit/test_schema_registry.py's docstring): the session's ``schemaRegistry`` is Apicurio
Registry serving Confluent's API (kspark.testing.SchemaRegistry), so compatibility checks,
schema ids and errors are a registry's, not a stand-in's.

"Plain" clients are confluent-kafka's own ``Producer``/``Consumer`` with its ``AvroSerializer``/
``AvroDeserializer``, ``ProtobufSerializer``/``ProtobufDeserializer``, ``JSONSerializer``/
``JSONDeserializer``: byte-level interop with kspark's serdes in both directions.
"""

import json
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import valuation_signals as vs  # noqa: E402
from kspark import (  # noqa: E402
    Consumed, GenericAvroSerde, KafkaJsonSchemaSerde, KafkaProtobufSerde, KafkaStreams, LogAndContinueExceptionHandler,
    Produced, Serdes, StreamsBuilder,
)
from kspark.runtime.stream_task import decodeHeaders  # noqa: E402
from kspark.serialization import SerializationException  # noqa: E402
from kspark.topics import openTopics  # noqa: E402

PRICE = {"type": "record", "name": "Price", "namespace": "krx",
         "fields": [{"name": "code", "type": "string"}, {"name": "close", "type": "double"}]}
PRICE_V2 = {**PRICE, "fields": PRICE["fields"] + [{"name": "market", "type": "string", "default": "KOSPI"}]}
TRADE = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Trade", "type": "object",
         "properties": {"code": {"type": "string"}, "qty": {"type": "integer"}}, "required": ["code", "qty"]}


def ctx(topic):
    return SerializationContext(topic, MessageField.VALUE)


def plainProduce(broker, topic, records, serializer):
    """confluent-kafka's Producer: (key, value) pairs, the value through ``serializer`` (or raw bytes)."""
    producer = Producer({"bootstrap.servers": broker.bootstrapServers})
    for key, value in records:
        producer.produce(topic, key=key.encode(), value=value if isinstance(value, bytes) else serializer(value, ctx(topic)))
    assert producer.flush(30) == 0


def plainConsume(broker, topic, deserializer):
    """confluent-kafka's Consumer, read_committed, every partition to its end: (key, value) pairs
    in partition and offset order, the value through ``deserializer``."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrapServers, "group.id": f"plain-{uuid.uuid4().hex}",
                         "isolation.level": "read_committed", "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        atEnd, out = set(), {p: [] for p in partitions}
        while atEnd != set(partitions):
            message = consumer.poll(10)
            assert message is not None, f"no record from {topic} within 10 s"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                atEnd.add(message.partition())
                continue
            out[message.partition()].append((message.key().decode(), deserializer(message.value(), ctx(topic))))
        return [kv for p in sorted(out) for kv in out[p]]
    finally:
        consumer.close()


def test_avro_and_json_schema_on_spark_over_kafka_interoperate_with_plain_clients(spark, kafkaBroker, schemaRegistry, tmp_path):
    """A plain producer writes Avro (v1, then v2 under BACKWARD: an added field with a default)
    and JSON Schema records; kspark on Spark reads them with its serdes, the Avro ones with v2 as
    reader (v1 records take the default), and writes with its serdes; a plain consumer reads
    kspark's output. A record with a schema id the registry does not know is skipped, counted and
    dead-lettered with its original bytes, the error naming the schema id (SR-3)."""
    client = SchemaRegistryClient({"url": schemaRegistry.url})
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    for topic, partitions in (("sr-avro-in", 2), ("sr-avro-out", 2), ("sr-json-in", 1), ("sr-json-out", 1), ("sr-dlq", 1)):
        topics.createTopic(topic, partitions)

    plainProduce(kafkaBroker, "sr-avro-in", [("A", {"code": "A", "close": 1.5}), ("B", {"code": "B", "close": 2.0})],
                 AvroSerializer(client, json.dumps(PRICE)))
    client.set_compatibility("sr-avro-in-value", "BACKWARD")
    unknownId = b"\x00" + (987_654).to_bytes(4, "big") + b"\x02A"
    plainProduce(kafkaBroker, "sr-avro-in", [("C", {"code": "C", "close": 3.0, "market": "KOSDAQ"}), ("D", unknownId)],
                 AvroSerializer(client, json.dumps(PRICE_V2)))  # v2 registers: BACKWARD-compatible with v1
    assert len(client.get_versions("sr-avro-in-value")) == 2
    plainProduce(kafkaBroker, "sr-json-in", [("A", {"code": "A", "qty": 1}), ("B", {"code": "B", "qty": 7})],
                 JSONSerializer(json.dumps(TRADE), client))

    conf = {"schema.registry.url": schemaRegistry.url}
    b = StreamsBuilder()
    (b.stream("sr-avro-in", Consumed.with_(Serdes.String(), GenericAvroSerde(PRICE_V2, PRICE_V2, conf, False)))
     .mapValues(lambda v: {**v, "close": v["close"] * 10})
     .to("sr-avro-out", Produced.with_(Serdes.String(), GenericAvroSerde(PRICE_V2, configs=conf, isKey=False))))
    (b.stream("sr-json-in", Consumed.with_(Serdes.String(), KafkaJsonSchemaSerde(TRADE, configs=conf, isKey=False)))
     .mapValues(lambda t: {**t, "qty": t["qty"] + 1})
     .to("sr-json-out", Produced.with_(Serdes.String(), KafkaJsonSchemaSerde(TRADE, configs=conf, isKey=False))))
    props = {"application.id": "sr-interop", "bootstrap.servers": kafkaBroker.bootstrapServers,
             "state.dir": str(tmp_path / "state"), "processing.guarantee": "exactly_once_v2",
             "deserialization.exception.handler": LogAndContinueExceptionHandler,
             "errors.dead.letter.queue.topic.name": "sr-dlq"}
    streams = KafkaStreams(b.build(), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()

    avroOut = plainConsume(kafkaBroker, "sr-avro-out", AvroDeserializer(client))
    assert sorted(avroOut) == [("A", {"code": "A", "close": 15.0, "market": "KOSPI"}),
                               ("B", {"code": "B", "close": 20.0, "market": "KOSPI"}),
                               ("C", {"code": "C", "close": 30.0, "market": "KOSDAQ"})]
    assert sorted(plainConsume(kafkaBroker, "sr-json-out", JSONDeserializer(None, schema_registry_client=client))) == [
        ("A", {"code": "A", "qty": 2}), ("B", {"code": "B", "qty": 8})]
    assert {m.tag("reason"): v for m, v in streams.metrics().items() if m.group == "kspark-dropped-records"} == {
        "deserialization error": 1}
    [dead] = topics.read("sr-dlq", 0, 0, topics.endOffsets("sr-dlq")[0]).to_pylist()
    assert (dead["key"], dead["value"]) == (b"D", unknownId)
    message = dict(decodeHeaders(dead["headers"]))["__streams.errors.message"].decode()
    assert "schema id 987654" in message and schemaRegistry.url in message
    # kspark registered its output schemas under TopicNameStrategy subjects
    assert json.loads(client.get_latest_version("sr-avro-out-value").schema.schema_str) == PRICE_V2
    assert {"sr-avro-out-value", "sr-json-out-value"} <= set(client.get_subjects())


@pytest.fixture(scope="module")
def tick(tmp_path_factory):
    """A message class generated by protoc (grpcio-tools) at test time."""
    from grpc_tools import protoc

    root = tmp_path_factory.mktemp("proto")
    (root / "ksp_kafka_tick.proto").write_text(
        'syntax = "proto3";\npackage kspk;\nmessage Tick {\n  string code = 1;\n  int64 volume = 2;\n}\n')
    assert protoc.main(["protoc", f"-I{root}", f"--python_out={root}", str(root / "ksp_kafka_tick.proto")]) == 0
    sys.path.insert(0, str(root))
    try:
        import ksp_kafka_tick_pb2
    finally:
        sys.path.remove(str(root))
    return ksp_kafka_tick_pb2.Tick


def test_protobuf_interop_with_plain_clients_through_kafka_and_the_registry(kafkaBroker, schemaRegistry, tick):
    """Protobuf both ways through the broker and the registry: kspark's KafkaProtobufSerde reads
    what a plain ProtobufSerializer producer wrote, and a plain ProtobufDeserializer consumer reads
    what kspark's serde wrote. (Not on Spark: a class generated into a test's temporary directory
    is not importable in the Python workers.)"""
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

    client = SchemaRegistryClient({"url": schemaRegistry.url})
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    topics.createTopic("sr-proto-in", 1)
    topics.createTopic("sr-proto-out", 1)
    plainProduce(kafkaBroker, "sr-proto-in", [("A", tick(code="A", volume=7))],
                 ProtobufSerializer(tick, client, {"use.deprecated.format": False}))
    serde = KafkaProtobufSerde(tick, configs={"schema.registry.url": schemaRegistry.url}, isKey=False)
    [(key, value)] = plainConsume(kafkaBroker, "sr-proto-in", lambda data, _: serde.deserialize("sr-proto-in", data))
    assert (key, value) == ("A", tick(code="A", volume=7))
    plainProduce(kafkaBroker, "sr-proto-out", [(key, serde.serialize("sr-proto-out", tick(code="A", volume=70)))], None)
    assert plainConsume(kafkaBroker, "sr-proto-out", ProtobufDeserializer(tick, {"use.deprecated.format": False})) == [
        ("A", tick(code="A", volume=70))]
    assert {"sr-proto-in-value", "sr-proto-out-value"} <= set(client.get_subjects())


def test_incompatible_schema_on_produce_raises_the_registrys_error_naming_the_subject(schemaRegistry):
    """Under BACKWARD, a v2 that changes a field's type is refused by the registry (409): kspark's
    serializer raises its error naming the subject; nothing is written."""
    conf = {"schema.registry.url": schemaRegistry.url}
    GenericAvroSerde(PRICE, configs=conf, isKey=False).serialize("sr-incompatible", {"code": "A", "close": 1.0})
    SchemaRegistryClient({"url": schemaRegistry.url}).set_compatibility("sr-incompatible-value", "BACKWARD")
    changed = {**PRICE, "fields": [{"name": "code", "type": "int"}, PRICE["fields"][1]]}
    with pytest.raises(SerializationException, match=r"refused the schema for subject sr-incompatible-value \(topic "
                                                     r"sr-incompatible\): Incompatible artifact: sr-incompatible-value .*"
                                                     r"HTTP status code 409"):
        GenericAvroSerde(changed, configs=conf, isKey=False).serialize("sr-incompatible", {"code": 1, "close": 1.0})


def test_concurrent_first_registrations_of_a_subject_all_get_its_id(schemaRegistry):
    """Two Spark tasks writing a new topic register its subject at the same time (each Python
    worker has its own client). Apicurio answers the later ones 409 "already exists" (and may add
    a version of the same content); the serde asks again and gets the id (a run of
    bench/ab/avro_vs_json.py failed on it)."""
    import threading

    conf = {"schema.registry.url": schemaRegistry.url}
    for round_ in range(3):
        topic = f"sr-race-{uuid.uuid4().hex[:8]}"
        serdes = [GenericAvroSerde(PRICE, configs=conf, isKey=False) for _ in range(6)]
        for s in serdes:  # one client each, as in separate Python workers
            s._client = lambda: SchemaRegistryClient({"url": schemaRegistry.url})
        start, out = threading.Barrier(len(serdes)), {}

        def write(i):
            start.wait()
            try:
                out[i] = serdes[i].serialize(topic, {"code": "A", "close": 1.0})
            except Exception as e:  # noqa: BLE001 - the assertion below shows it
                out[i] = e

        threads = [threading.Thread(target=write, args=(i,)) for i in range(len(serdes))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(set(out.values())) == 1 and isinstance(out[0], bytes), out
        plain = AvroDeserializer(SchemaRegistryClient({"url": schemaRegistry.url}))
        assert plain(out[0], SerializationContext(topic, MessageField.VALUE)) == {"code": "A", "close": 1.0}


def test_flagship_job_on_avro_gives_the_json_runs_signals(spark, kafkaBroker, schemaRegistry, tmp_path, request):
    """examples/valuation_signals.py --kafka --avro: prices, valuations and companies loaded as
    Avro with registered schemas, signals written as Avro and read back by a plain
    AvroDeserializer; the same signals as the JSON job under TopologyTestDriver (rules J-1..J-8)."""
    prices = vs.readPrices(3_000)
    valuations = [v for v in vs.readValuations() if v["date"] <= prices[-1]["trade_date"]]
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    serdes = vs.avroSerdes(schemaRegistry.url)
    vs.loadTopics(topics, prices, valuations, serdes)
    request.addfinalizer(lambda: [topics.deleteTopic(t) for t in vs.TOPICS])
    expected = vs.driverSignals(prices, valuations)

    props = {"application.id": "flagship-avro", "bootstrap.servers": kafkaBroker.bootstrapServers,
             "state.dir": str(tmp_path / "state"), "processing.guarantee": "exactly_once_v2"}
    streams = KafkaStreams(vs.buildTopology(serdes=serdes), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    got = vs.readSignals(topics, vs.avroReader(schemaRegistry.url))
    assert len(expected) > 50
    assert got == expected
    client = SchemaRegistryClient({"url": schemaRegistry.url})
    assert json.loads(client.get_latest_version("signals-value").schema.schema_str) == vs.AVRO_SCHEMAS["signals"]
    # internal topics register subjects under their own names (SR-2): the repartition topic; not
    # the global store (its serdes see "companies") nor valuations-in-force (toTable() after
    # repartition() without serdes: the default value serde, JSON, as in Kafka Streams)
    assert {s for s in client.get_subjects() if s.startswith("flagship-avro-")} == {
        "flagship-avro-valuations-by-code-repartition-value"}
