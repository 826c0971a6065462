"""P4's topology with Avro values against JSON values, on Spark local[2] (issue 35's speed item).

``python bench/ab/avro_vs_json.py [--records N] [--reps R] [--work DIR] [--out FILE]`` (default 200K, 3):
needs ``make jvm`` (a Kafka broker and the Apicurio schema registry, both started here on
127.0.0.1 from kspark.testing, their data in ``--work``, emptied first). P4's topology and settings (bench/run.py ``p4``: the NASA
requests keyed by host in a 4-partition topic on the broker, session count with a 30-minute
gap, cache off, exactly_once_v2, ``kspark.max.records.per.trigger`` 200K, ``availableNow``),
except the serdes: P4's input values are null and its counts ``Serdes.Long()``; here each input
value is a request record ``{host, ts, path, bytes}`` and each count a value, both either
``GenericAvroSerde`` (Confluent's wire format through confluent-kafka's serializers and the real
registry: the input written by a plain confluent-kafka ``AvroSerializer``, which registers the
schema; the counts as the Avro schema ``"long"``) or ``Serdes.JSON()``. Every input value is
deserialized (the source deserializes it) and every non-null count serialized.

Per format and repetition (alternating, JSON first), one KafkaStreams application over its own
new input and output topics, timed from ``start()`` to the end of its ``availableNow`` run (as
P4). The outputs are read back ``read_committed`` and decoded (Avro by a plain confluent-kafka
``AvroDeserializer``): both formats must give the same (key, count, timestamp) per partition in
offset order, else the run fails. Also measured in this process, on the same records: each
serde's µs per record to serialize and deserialize a value (best of 3). Prints one JSON line per
run and a summary line (``avro_vs_json`` = best Avro seconds / best JSON seconds).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import inputs  # noqa: E402

REQUEST = {"type": "record", "name": "Request", "namespace": "nasa", "fields": [
    {"name": "host", "type": "string"}, {"name": "ts", "type": "long"}, {"name": "path", "type": "string"},
    {"name": "bytes", "type": "long"}]}
GAP_MS = 30 * 60 * 1000
BATCH_RECORDS = 200_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/kspark-bench-avro"))
    parser.add_argument("--out", type=Path, help="append the JSON lines to this file too")
    args = parser.parse_args()

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from kspark import (Consumed, GenericAvroSerde, KafkaStreams, Materialized, Produced, Serdes, SessionWindows,
                        StreamsBuilder, StreamsConfig, WindowedSerdes)
    from kspark.runtime.partitioner import partitionForKey
    from kspark.spark._session import getOrCreateSession
    from kspark.testing import KafkaBroker, SchemaRegistry
    from kspark.topics import openTopics

    lines = []

    def emit(row):
        print(json.dumps(row), flush=True)
        lines.append(row)

    df = inputs.nasaRequests(args.records)
    n = len(df)
    rows = [{"host": h, "ts": int(t), "path": f"/shuttle/missions/sts-{i % 97}/images/", "bytes": 1000 + i % 7919}
            for i, (h, t) in enumerate(zip(df["host"].tolist(), df["ts"].tolist()))]
    keys = [h.encode() for h in df["host"].tolist()]
    timestamps = df["ts"].tolist()
    del df
    spark = getOrCreateSession(StreamsConfig({"kspark.spark.master": "local[2]", "application.id": "bench"}))
    shutil.rmtree(args.work, ignore_errors=True)  # a new broker log and registry each run
    args.work.mkdir(parents=True)
    started = time.perf_counter()
    with SchemaRegistry(args.work / "registry") as registry, KafkaBroker(args.work / "kafka", heapMb=1024) as broker:
        registryStart = time.perf_counter() - started  # with the broker's, on the loaded machine
        conf = {"schema.registry.url": registry.url}
        client = SchemaRegistryClient({"url": registry.url})
        topics = openTopics({"bootstrap.servers": broker.bootstrapServers})
        serdes = {"json": lambda isKey=False, schema=None: Serdes.JSON(),
                  "avro": lambda isKey=False, schema=REQUEST: GenericAvroSerde(schema, configs=conf, isKey=isKey)}

        # in process: µs per record of each value serde, on the same records
        inProcess = {}
        for fmt in ("json", "avro"):
            serde = serdes[fmt]()
            ser, de = [], []
            for _ in range(3):
                t = time.perf_counter()
                data = [serde.serialize("inproc", v) for v in rows[:50_000]]
                ser.append(time.perf_counter() - t)
                t = time.perf_counter()
                back = [serde.deserialize("inproc", d) for d in data]
                de.append(time.perf_counter() - t)
            assert back == rows[:50_000]
            inProcess[fmt] = {"serialize_us": round(min(ser) / 50_000 * 1e6, 2),
                              "deserialize_us": round(min(de) / 50_000 * 1e6, 2)}

        best, outputs = {}, {}
        for rep in range(args.reps):
            for fmt in ("json", "avro"):
                source, sink = f"ab-avro-requests-{fmt}-{rep}", f"ab-avro-sessions-{fmt}-{rep}"
                for t in (source, sink):
                    topics.createTopic(t, 4)
                if fmt == "avro":  # confluent-kafka's own producer-side serializer registers the schema
                    plain = AvroSerializer(client, json.dumps(REQUEST))
                    ctx = SerializationContext(source, MessageField.VALUE)
                    values = [plain(v, ctx) for v in rows]
                else:
                    values = [Serdes.JSON().serialize(source, v) for v in rows]
                topics.produce(source, zip(keys, values, timestamps), partitioner=partitionForKey)
                del values
                b = StreamsBuilder()
                (b.stream(source, Consumed.with_(Serdes.String(), serdes[fmt]())).groupByKey()
                 .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(GAP_MS))
                 .count(materialized=Materialized.as_("sessions").withCachingDisabled())
                 .toStream().to(sink, Produced.with_(WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String()),
                                                     serdes[fmt](schema=json.dumps("long")))))
                streams = KafkaStreams(b.build(), {
                    "bootstrap.servers": broker.bootstrapServers, "processing.guarantee": "exactly_once_v2",
                    "application.id": f"ab-avro-{fmt}-{rep}", "state.dir": str(args.work / f"state-{fmt}-{rep}"),
                    "kspark.max.records.per.trigger": BATCH_RECORDS, "kspark.progress": "none"}, spark=spark)
                t = time.perf_counter()
                streams.start()
                streams.awaitTermination()
                streams.close()
                seconds = time.perf_counter() - t
                # read back read_committed and decoded: the same counts whatever the format
                decode = (lambda d, c=AvroDeserializer(client), x=SerializationContext(sink, MessageField.VALUE):
                          c(d, x)) if fmt == "avro" else (lambda d: None if d is None else json.loads(d))
                out = []
                for p, end in sorted(topics.endOffsets(sink).items()):
                    for tb in topics.readBatches(sink, p, 0, end, maxRows=200_000):
                        out += [(p, k, decode(v), ts) for k, v, ts in zip(
                            tb["key"].to_pylist(), tb["value"].to_pylist(), tb["timestamp"].to_pylist())]
                outputs.setdefault(fmt, out)
                if out != outputs["json" if "json" in outputs else fmt]:
                    raise SystemExit(f"{fmt} rep {rep}: {len(out)} outputs differ from JSON's {len(outputs['json'])}")
                best[fmt] = min(best.get(fmt, seconds), seconds)
                emit({"benchmark": f"P4 topology, {fmt} values, Kafka -> Spark local[2] -> Kafka, exactly_once_v2",
                      "format": fmt, "rep": rep, "records": n, "seconds": round(seconds, 2),
                      "us_per_record_wall": round(seconds / n * 1e6, 1), "updates_emitted": len(out)})
        emit({"benchmark": "Avro vs JSON values, P4 topology on Spark local[2]", "records": n,
              "json_seconds": round(best["json"], 2), "avro_seconds": round(best["avro"], 2),
              "avro_vs_json": round(best["avro"] / best["json"], 2),
              "avro_extra_us_per_record_wall": round((best["avro"] - best["json"]) / n * 1e6, 1),
              "outputs_equal": True, "in_process_us_per_value": inProcess,
              "registry": "Apicurio Registry 2.4.2.Final (ccompat v7), in-memory",
              "registry_and_broker_start_s": round(registryStart, 1),
              "schema_fetches": registry.requestCount("GET", "/schemas/ids/{id}"),
              "registry_requests": registry.requestCount()})
    spark.stop()
    if args.out:
        with open(args.out, "a") as f:
            for row in lines:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
