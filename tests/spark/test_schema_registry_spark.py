"""Schema-registry serdes on Spark (issue 35; rules SR-1, SR-2 in tests/unit/test_schema_registry.py):
the serde travels to the Python workers pickled without its client; each worker process builds
one confluent-kafka ``SchemaRegistryClient`` and fetches a schema id once, whatever the number
of records, tasks and micro-batches.

The registry is the session's real one (``schemaRegistry``: Apicurio Registry with Confluent's
API); the requests are counted by the registry's own metrics."""

import json
import os

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kspark import Consumed, GenericAvroSerde, KafkaStreams, Produced, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.topics import LocalTopics

PRICE = {"type": "record", "name": "Price", "namespace": "krx",
         "fields": [{"name": "code", "type": "string"}, {"name": "close", "type": "double"}]}


def test_one_registry_client_per_worker_fetches_each_schema_id_once(spark, schemaRegistry, tmp_path):
    # input written by confluent-kafka's own producer-side serializer, which registers the schema
    plain = AvroSerializer(SchemaRegistryClient({"url": schemaRegistry.url}), json.dumps(PRICE))
    ctx = SerializationContext("sr-spark-prices", MessageField.VALUE)
    records = [(f"c{i % 13}", {"code": f"c{i % 13}", "close": float(i)}, 1_000 + i) for i in range(300)]
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("sr-spark-prices", 2)
    topics.createTopic("out", 2)
    topics.produce("sr-spark-prices", [(k.encode(), plain(v, ctx), ts) for k, v, ts in records], partitioner=partitionForKey)
    before = schemaRegistry.requestCount(), schemaRegistry.requestCount("GET", "/schemas/ids/{id}")

    serde = GenericAvroSerde(configs={"schema.registry.url": schemaRegistry.url}, isKey=False)
    b = StreamsBuilder()
    b.stream("sr-spark-prices", Consumed.with_(Serdes.String(), serde)) \
        .mapValues(lambda v: {"close": v["close"], "pid": os.getpid()}) \
        .to("out", Produced.with_(Serdes.String(), Serdes.JSON()))
    streams = KafkaStreams(b.build(), {"application.id": "sr", "kspark.topics.dir": str(tmp_path / "topics"),
                                       "state.dir": str(tmp_path / "state"),
                                       "kspark.max.records.per.trigger": 60}, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()

    out = []
    for p in range(2):
        t = topics.read("out", p, 0, topics.endOffset("out", p))
        out += [(k.decode(), json.loads(v)) for k, v in zip(t.column("key").to_pylist(), t.column("value").to_pylist())]
    assert sorted((k, v["close"]) for k, v in out) == sorted((k, v["close"]) for k, v, _ in records)
    workers = {v["pid"] for _, v in out}
    assert os.getpid() not in workers
    requests = schemaRegistry.requestCount() - before[0]
    fetches = schemaRegistry.requestCount("GET", "/schemas/ids/{id}") - before[1]
    assert requests == fetches                    # nothing but schema fetches
    assert fetches == len(workers)                # one per Python worker process, not per record or batch


def test_protobuf_class_from_a_module_the_workers_cannot_import(spark, schemaRegistry, tmp_path):
    """A ``_pb2`` module generated into tmp_path (importable only in this driver process; a upb
    class does not pickle) with a nested message and an imported well-known type: the serde ships
    the message's .proto files and each worker builds the class from them. Input by a plain
    confluent-kafka ProtobufSerializer, output read by a plain ProtobufDeserializer."""
    import sys

    import grpc_tools
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from grpc_tools import protoc

    from kspark import KafkaProtobufSerde

    (tmp_path / "ksp_spark_tick.proto").write_text(
        'syntax = "proto3";\npackage kspspark;\nimport "google/protobuf/timestamp.proto";\n'
        "message Tick {\n  string code = 1;\n  int64 volume = 2;\n  google.protobuf.Timestamp at = 3;\n"
        "  message Venue { string name = 1; }\n  Venue venue = 4;\n}\n")
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    assert protoc.main(["protoc", f"-I{tmp_path}", f"-I{include}", f"--python_out={tmp_path}",
                        str(tmp_path / "ksp_spark_tick.proto")]) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        import ksp_spark_tick_pb2
    finally:
        sys.path.remove(str(tmp_path))
    Tick = ksp_spark_tick_pb2.Tick

    def tick(code, volume, seconds, venue):
        t = Tick(code=code, volume=volume, venue=Tick.Venue(name=venue))
        t.at.seconds = seconds
        return t

    conf = {"schema.registry.url": schemaRegistry.url}
    client = SchemaRegistryClient({"url": schemaRegistry.url})
    plain = ProtobufSerializer(Tick, client, {"use.deprecated.format": False})
    ctx = SerializationContext("sr-spark-ticks", MessageField.VALUE)
    topics = LocalTopics(tmp_path / "topics")
    for t in ("sr-spark-ticks", "ticks-out", "ticks-where"):
        topics.createTopic(t, 2)
    topics.produce("sr-spark-ticks", [(b"A", plain(tick("A", 7, 60, "KRX"), ctx), 10),
                                      (b"B", plain(tick("B", 9, 120, "NXT"), ctx), 20)], partitioner=partitionForKey)

    serde = KafkaProtobufSerde(Tick, configs=conf, isKey=False)
    b = StreamsBuilder()
    ticks = b.stream("sr-spark-ticks", Consumed.with_(Serdes.String(), serde))
    # a new message of the worker's class (type(t): the test's Tick does not pickle either)
    ticks.mapValues(lambda t: type(t)(code=t.code, volume=t.volume * 10, at=t.at, venue=t.venue)) \
        .to("ticks-out", Produced.with_(Serdes.String(), serde))
    ticks.mapValues(lambda t: {"imported": "ksp_spark_tick_pb2" in sys.modules, "pid": os.getpid()}) \
        .to("ticks-where", Produced.with_(Serdes.String(), Serdes.JSON()))
    streams = KafkaStreams(b.build(), {"application.id": "sr-pb", "kspark.topics.dir": str(tmp_path / "topics"),
                                       "state.dir": str(tmp_path / "state")}, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()

    read = ProtobufDeserializer(Tick, {"use.deprecated.format": False})
    out, where = [], []
    for p in range(2):
        t = topics.read("ticks-out", p, 0, topics.endOffset("ticks-out", p))
        out += [(k.decode(), read(v, SerializationContext("ticks-out", MessageField.VALUE)), ts) for k, v, ts in zip(
            t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist())]
        t = topics.read("ticks-where", p, 0, topics.endOffset("ticks-where", p))
        where += [json.loads(v) for v in t.column("value").to_pylist()]
    assert sorted(out, key=lambda r: r[0]) == [("A", tick("A", 70, 60, "KRX"), 10), ("B", tick("B", 90, 120, "NXT"), 20)]
    assert [w["imported"] for w in where] == [False, False]  # the workers never had the module
    assert os.getpid() not in {w["pid"] for w in where}
    assert client.get_subjects().count("ticks-out-value") == 1
