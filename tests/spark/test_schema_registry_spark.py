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
