"""Per-record cost of GenericAvroSerde against Serdes.JSON on Spark local[2] (issue 35's speed item).

``python bench/ab/avro_vs_json.py [N]`` (default 200K): N price records in local topics (2
partitions), ``stream -> filter (half pass) -> to`` with Avro values (confluent-kafka's
serializers, a four-field record) or JSON values, two runs each on one SparkSession; prints each
run's wall time (KafkaStreams.start() to the end of awaitTermination) and the best of each. The
registry is tests/_registry_stub.py's HTTP stand-in (each Python worker fetches the schema once),
so this measures the serdes, not a registry.
"""
import json, os, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from _registry_stub import RegistryStub
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from kspark import Consumed, GenericAvroSerde, KafkaStreams, Produced, Serdes, StreamsBuilder, StreamsConfig
from kspark.runtime.partitioner import partitionForKey
from kspark.spark._session import getOrCreateSession
from kspark.topics import LocalTopics

PRICE = {"type": "record", "name": "Price", "namespace": "krx", "fields": [
    {"name": "code", "type": "string"}, {"name": "date", "type": "string"}, {"name": "close", "type": "double"},
    {"name": "volume", "type": "long"}]}
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
spark = getOrCreateSession(StreamsConfig({"kspark.spark.master": "local[2]", "application.id": "b"}))
with RegistryStub() as registry:
    conf = {"schema.registry.url": registry.url}
    plain = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(PRICE))
    ctx = SerializationContext("prices", MessageField.VALUE)
    rows = [(f"c{i % 997}", {"code": f"c{i % 997}", "date": "2024-01-02", "close": float(i), "volume": i}, 1000 + i) for i in range(N)]
    results = {}
    for rep in range(2):
        for fmt in ("json", "avro"):
            d = f"/tmp/kspark-bench-avro/w-{fmt}-{rep}"
            os.system(f"rm -rf {d}")
            topics = LocalTopics(d + "/topics")
            topics.createTopic("prices", 2); topics.createTopic("out", 2)
            ser = (lambda v: plain(v, ctx)) if fmt == "avro" else (lambda v: Serdes.JSON().serialize("prices", v))
            topics.produce("prices", [(k.encode(), ser(v), ts) for k, v, ts in rows], partitioner=partitionForKey)
            serde = GenericAvroSerde(PRICE, configs=conf, isKey=False) if fmt == "avro" else Serdes.JSON()
            b = StreamsBuilder()
            b.stream("prices", Consumed.with_(Serdes.String(), serde)).filter(lambda k, v: v["volume"] % 2 == 0) \
                .to("out", Produced.with_(Serdes.String(), serde))
            s = KafkaStreams(b.build(), {"application.id": f"b-{fmt}-{rep}", "kspark.topics.dir": d + "/topics",
                                         "state.dir": d + "/state", "kspark.progress": "none"}, spark=spark)
            t = time.perf_counter(); s.start(); s.awaitTermination(); s.close(); el = time.perf_counter() - t
            out = sum(topics.endOffset("out", p) for p in range(2))
            results.setdefault(fmt, []).append(el)
            print(fmt, rep, f"{el:.2f} s", out, "out", flush=True)
    print({k: min(v) for k, v in results.items()}, "fetches", len([r for r in registry.requests if r[0] == "GET"]),
          "registrations", len([r for r in registry.requests if r[0] == "POST"]))
spark.stop()
