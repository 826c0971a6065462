"""The valuation-signal feed of seed 004, on real KRX data, run by kspark on Spark.

Live KOSPI price snapshots (topic ``prices``, 5 partitions, keyed by stock code, event time
from the payload's ``snapshot_ts``) are joined with the daily valuation table (topic
``valuations``, 1 partition, timestamped at publication, ~18:45 KST after the close) after
repartitioning the valuations to 5 partitions. Processing each task in timestamp order makes
every price see the valuation in force: the previous trading day's. The real-time PER
(close / EPS) is compared with that day's PER; a signal is emitted when it is at least
``--threshold`` below it, at most once per company per trading day (a KeyValueStore in a
processor: the seed's dedup).

The company master (topic ``companies``: code -> name, sector, 1 partition) is the seed's
other fix, a GlobalKTable: every task holds all of it, the price joins it by a key mapper
(``price -> code``) without any co-partitioning, and kspark applies master updates in
timestamp order with the prices of each task, so a price never misses an update older than it
(the seed's 0.06 s race). Each master record is timestamped at the code's first publication in
the valuation file. The run ends with a report of signals per sector per trading day.

Default threshold 0.05: with EPS unchanged overnight, a 5 % lower PER is a 5 % fall from the
previous close, a move that separates a real re-rating from ordinary intraday noise (a
typical KOSPI stock moves 1-3 % a day) while still firing on days like the 2026-03-09
sell-off.

With ``--avro`` the four topics hold Avro records in Confluent's wire format, their schemas
(:data:`AVRO_SCHEMAS`) registered in a schema registry: the job is the same, only its value
serdes are ``GenericAvroSerde`` instead of ``Serdes.JSON()``.

Run: ``python examples/valuation_signals.py`` (see README.md).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import shutil
import sys
import time
from datetime import datetime
from pathlib import Path

from kspark import (
    Consumed, ContextualProcessor, Materialized, Produced, Repartitioned, Serdes, StreamsBuilder, Stores,
    TimestampExtractor, TopologyException,
)

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
PRICES_CSV = DATA / "krx_kospi_intraday_snapshots_2026-03-09_20.csv.gz"
VALUATIONS_CSV = DATA / "kospi_valuation_daily_2026-03.csv"
SIGNAL_STORE = "signal-company-state-store"
COMPANY_STORE = "company-master"
PRICE_PARTITIONS, VALUATION_PARTITIONS, SIGNAL_PARTITIONS = 5, 1, 5
DEFAULT_THRESHOLD = 0.05
TOPICS = ("prices", "valuations", "companies", "signals")


def _record(name: str, fields: dict[str, object]) -> dict:
    return {"type": "record", "name": name, "namespace": "krx",
            "fields": [{"name": n, "type": t} for n, t in fields.items()]}


PRICE_COLUMNS = ("snapshot_ts", "trade_date", "code", "name", "market", "close", "open", "high", "low", "volume",
                 "amount", "marcap", "shares", "change", "change_pct")
AVRO_SCHEMAS = {  # the value schemas of --avro: prices and valuations as their CSV rows (strings)
    "prices": _record("Price", dict.fromkeys(PRICE_COLUMNS, "string")),
    "valuations": _record("Valuation", dict.fromkeys(("date", "code", "name", "sector", "per", "pbr", "eps", "bps"),
                                                     "string")),
    "companies": _record("Company", dict.fromkeys(("code", "name", "sector"), "string")),
    "signals": _record("Signal", {
        "code": "string", "name": "string", "trade_date": "string", "snapshot_ts": "string", "close": "double",
        "valuation_date": "string", "per_prev": "double", "pbr_prev": "double", "per_now": "double",
        "pbr_now": ["null", "double"], "sector": "string", "per_drop_pct": "double"}),
}


def jsonSerdes() -> dict:
    """The value serde of each topic: JSON (the default run)."""
    return dict.fromkeys(TOPICS, Serdes.JSON())


def avroSerdes(registryUrl: str) -> dict:
    """The value serde of each topic with ``--avro``: ``GenericAvroSerde`` with the topic's schema
    (:data:`AVRO_SCHEMAS`), configured with ``schema.registry.url`` as in Kafka Streams."""
    from kspark import GenericAvroSerde

    return {t: GenericAvroSerde(AVRO_SCHEMAS[t], configs={"schema.registry.url": registryUrl}, isKey=False)
            for t in TOPICS}


def epochMs(iso: str, _parsed: dict = {}) -> int:  # noqa: B006 - memo: a snapshot's prices share its timestamp
    ms = _parsed.get(iso)
    if ms is None:
        if len(_parsed) > 4096:
            _parsed.clear()
        ms = _parsed[iso] = int(datetime.fromisoformat(iso).timestamp() * 1000)
    return ms


class SnapshotTimestampExtractor(TimestampExtractor):
    """Event time of a price = its ``snapshot_ts`` (ISO 8601 with offset), in ms."""

    def extract(self, record, partitionTime):
        return epochMs(record.value()["snapshot_ts"])


def realtimeValuation(price: dict, valuation: dict) -> dict:
    """Joiner: the price with the valuation in force and the real-time PER/PBR."""
    close, eps, bps = float(price["close"]), float(valuation["eps"]), float(valuation["bps"])
    return {
        "code": price["code"], "name": price["name"], "trade_date": price["trade_date"],
        "snapshot_ts": price["snapshot_ts"], "close": close,
        "valuation_date": valuation["date"],
        "per_prev": float(valuation["per"]), "pbr_prev": float(valuation["pbr"]),
        "per_now": round(close / eps, 4) if eps > 0 else None,
        "pbr_now": round(close / bps, 4) if bps > 0 else None,
    }


def withCompany(v: dict, company: dict) -> dict:
    """Joiner with the company master: the listed name and the sector."""
    return {**v, "name": company["name"], "sector": company["sector"]}


def cheaperThan(threshold: float):
    def predicate(code: str, v: dict) -> bool:
        return v["per_now"] is not None and v["per_prev"] > 0 and v["per_now"] <= v["per_prev"] * (1 - threshold)

    return predicate


class SignalOncePerDay(ContextualProcessor):
    """Forwards the first candidate of a company on a trading day; the store remembers the day."""

    def init(self, context):
        super().init(context)
        self.store = context.getStateStore(SIGNAL_STORE)

    def process(self, record):
        day = record.value()["trade_date"]
        if self.store.get(record.key()) == day:
            return
        self.store.put(record.key(), day)
        v = record.value()
        self.context().forward(record.withValue({**v, "per_drop_pct": round(100 * (1 - v["per_now"] / v["per_prev"]), 2)}))


def buildTopology(threshold: float = DEFAULT_THRESHOLD, repartition: bool = True, serdes: dict | None = None):
    """The job's topology; ``repartition=False`` is seed 004's first, wrong, attempt. ``serdes``:
    the value serde of each topic (:func:`jsonSerdes` if None, or :func:`avroSerdes`)."""
    serdes = serdes or jsonSerdes()
    builder = StreamsBuilder()
    builder.addStateStore(
        Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(SIGNAL_STORE), Serdes.String(), Serdes.String())
    )
    valuations = builder.stream("valuations", Consumed.with_(Serdes.String(), serdes["valuations"]))
    if repartition:
        valuations = valuations.repartition(
            Repartitioned.as_("valuations-by-code").withNumberOfPartitions(PRICE_PARTITIONS)
        )
    table = valuations.toTable(materialized=Materialized.as_("valuations-in-force"))
    companies = builder.globalTable("companies", Consumed.with_(Serdes.String(), serdes["companies"]),
                                    Materialized.as_(COMPANY_STORE))
    (
        builder.stream(
            "prices",
            Consumed.with_(Serdes.String(), serdes["prices"]).withTimestampExtractor(SnapshotTimestampExtractor()),
        )
        .join(table, realtimeValuation, joined="join-valuation")
        .join(companies, lambda code, v: v["code"], withCompany, named="join-company-master")
        .filter(cheaperThan(threshold), named="per-below-threshold")
        .process(SignalOncePerDay, SIGNAL_STORE, named="once-per-company-per-day")
        .to("signals", Produced.with_(Serdes.String(), serdes["signals"]))
    )
    return builder.build()


# ---------------------------------------------------------------------- input data
def readPrices(limit: int | None = None) -> list[dict]:
    with gzip.open(PRICES_CSV, "rt", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return rows[:limit] if limit else rows


def readValuations() -> list[dict]:
    with open(VALUATIONS_CSV, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return sorted(rows, key=lambda r: r["source_commit_time"])


def companyRecords(valuations: list[dict]) -> list[tuple[str, dict, int]]:
    """The company master: latest name and sector per code, timestamped at the code's first
    publication (``valuations`` sorted by publication time)."""
    first, latest = {}, {}
    for row in valuations:
        first.setdefault(row["code"], epochMs(row["source_commit_time"]))
        latest[row["code"]] = {"code": row["code"], "name": row["name"], "sector": row["sector"]}
    return sorted(((code, latest[code], ts) for code, ts in first.items()), key=lambda r: (r[2], r[0]))


def valuationRecord(row: dict) -> tuple[str, dict, int]:
    value = {k: row[k] for k in ("date", "code", "name", "sector", "per", "pbr", "eps", "bps")}
    return row["code"], value, epochMs(row["source_commit_time"])


def loadTopics(topics, prices: list[dict], valuations: list[dict], serdes: dict | None = None) -> None:
    """Produce the inputs, as the seed's producers do: prices keyed by code into 5 partitions,
    valuations into 1 partition with their publication time as record timestamp, the company
    master into 1 partition; values with ``serdes`` (:func:`jsonSerdes` if None)."""
    from kspark.runtime.partitioner import partitionForKey

    serdes = serdes or jsonSerdes()
    key = Serdes.String()
    topics.createTopic("prices", PRICE_PARTITIONS)
    topics.createTopic("valuations", VALUATION_PARTITIONS)
    topics.createTopic("signals", SIGNAL_PARTITIONS)
    topics.createTopic("companies", 1)
    ingestion = int(time.time() * 1000)  # record timestamp = when loaded; event time is in the payload
    topics.produce("prices", [(key.serialize("prices", r["code"]), serdes["prices"].serialize("prices", r), ingestion)
                              for r in prices], partitioner=partitionForKey)
    topics.produce("valuations", [(key.serialize("valuations", k), serdes["valuations"].serialize("valuations", v), ts)
                                  for k, v, ts in map(valuationRecord, valuations)], partitioner=partitionForKey)
    topics.produce("companies", [(key.serialize("companies", k), serdes["companies"].serialize("companies", v), ts)
                                 for k, v, ts in companyRecords(valuations)], partitioner=partitionForKey)


def avroReader(registryUrl: str):
    """A plain Avro consumer's value deserializer (confluent-kafka's ``AvroDeserializer``, not
    kspark's serde) for the signals: bytes -> dict, with the writer's schema from the registry."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registryUrl}))
    ctx = SerializationContext("signals", MessageField.VALUE)
    return lambda data: deserializer(data, ctx)


def readSignals(topics, readValue=json.loads) -> list[dict]:
    """The signals (read_committed on Kafka), each value decoded by ``readValue`` (JSON, or
    :func:`avroReader`) with its record timestamp, in (timestamp, code) order."""
    out = []
    for p in range(topics.partitionsFor("signals")):
        table = topics.read("signals", p, 0, topics.endOffset("signals", p))
        for ts, value in zip(table.column("timestamp").to_pylist(), table.column("value").to_pylist()):
            out.append({**readValue(value), "timestamp": ts})
    return sorted(out, key=lambda s: (s["timestamp"], s["code"]))


def driverSignals(prices: list[dict], valuations: list[dict]) -> list[dict]:
    """The signals of ``TopologyTestDriver`` when every record arrives in timestamp order (on
    equal timestamps the company master first), as :func:`readSignals` lists them: the reference
    a Spark run must equal."""
    return driverRun(prices, valuations)[0]


def driverRun(prices: list[dict], valuations: list[dict]) -> tuple[list[dict], list[list]]:
    """:func:`driverSignals` and the dedup store after them (``SIGNAL_STORE``: ``[key, value]``
    pairs in key order)."""
    from kspark.testing import TopologyTestDriver

    events = [(ts, "companies", k, v) for k, v, ts in companyRecords(valuations)]
    events += [(epochMs(p["snapshot_ts"]), "prices", p["code"], p) for p in prices]
    events += [(ts, "valuations", k, v) for k, v, ts in map(valuationRecord, valuations)]
    events.sort(key=lambda e: e[0])
    with TopologyTestDriver(buildTopology()) as d:
        inputs = {t: d.createInputTopic(t) for t in ("prices", "valuations", "companies")}
        for ts, topic, key, value in events:
            inputs[topic].pipeInput(key, value, ts)
        records = d.createOutputTopic("signals").readRecordsToList()
        store = sorted([kv.key, kv.value] for kv in d.getKeyValueStore(SIGNAL_STORE).all())
    signals = sorted(({**r.value(), "timestamp": r.timestamp()} for r in records), key=lambda s: (s["timestamp"], s["code"]))
    return signals, store


# ---------------------------------------------------------------------- run
def config(args) -> dict:
    props = {
        "application.id": "valuation-signals",
        "kspark.topics.dir": str(args.work / "topics"),
        "state.dir": str(args.work / "state"),
        "kspark.spark.master": args.master,
        "spark.sql.shuffle.partitions": "5",
    }
    if args.bootstrap_servers:  # every topic, the repartition topic included, is on that Kafka cluster
        props.update({"bootstrap.servers": args.bootstrap_servers, "processing.guarantee": "exactly_once_v2"})
        del props["kspark.topics.dir"]
    if args.max_records_per_trigger:
        props["kspark.max.records.per.trigger"] = args.max_records_per_trigger
    return props


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("work/valuation-signals"), help="topics and state (reset)")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    parser.add_argument("--limit", type=int, default=None, help="only the first N price rows")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--max-records-per-trigger", type=int, default=None)
    parser.add_argument("--picture", type=Path, default=None,
                        help="after the run, draw the topology with its counters (.png/.svg need Graphviz's dot)")
    parser.add_argument("--kafka", action="store_true",
                        help="start a Kafka broker on 127.0.0.1 (jars from `make jvm`) and run on its topics")
    parser.add_argument("--bootstrap-servers", default=None,
                        help="run on the topics of this Kafka cluster (the four topics must not exist yet)")
    parser.add_argument("--avro", action="store_true",
                        help="Avro values with registered schemas (GenericAvroSerde); starts a schema registry on "
                             "127.0.0.1 (Apicurio, from `make jvm`) unless --schema-registry-url is given")
    parser.add_argument("--schema-registry-url", default=None, help="the schema registry of --avro")
    args = parser.parse_args(argv)
    args.work = args.work.resolve()  # executors resolve a relative path against their own directory

    from kspark.topics import openTopics

    started = time.time()
    shutil.rmtree(args.work, ignore_errors=True)
    broker = registry = None
    try:
        if args.kafka and not args.bootstrap_servers:
            from kspark.testing import KafkaBroker

            broker = KafkaBroker(args.work / "kafka").start()
            args.bootstrap_servers = broker.bootstrapServers
            print(f"Kafka broker (KRaft) up on {broker.bootstrapServers} in {time.time() - started:.1f} s, "
                  f"{broker.rssMb():.0f} MB resident")
        if args.avro and not args.schema_registry_url:
            from kspark.testing import SchemaRegistry

            registryStart = time.time()
            registry = SchemaRegistry(args.work / "registry").start()
            args.schema_registry_url = registry.url
            print(f"schema registry (Apicurio, in memory) up on {registry.url} in {time.time() - registryStart:.1f} s, "
                  f"{registry.rssMb():.0f} MB resident")
        return run(args, openTopics(config(args)), started)
    finally:
        for server in (registry, broker):
            if server is not None:
                server.stop()


def run(args, topics, started: float) -> int:
    from kspark import KafkaStreams

    serdes = avroSerdes(args.schema_registry_url) if args.avro else jsonSerdes()
    prices, valuations = readPrices(args.limit), readValuations()
    loadTopics(topics, prices, valuations, serdes)
    print(f"loaded {len(prices):,} price snapshots into 'prices' ({PRICE_PARTITIONS} partitions), "
          f"{len(valuations):,} daily valuations into 'valuations' ({VALUATION_PARTITIONS} partition) and "
          f"{topics.endOffset('companies', 0):,} companies into 'companies' (global table)"
          + (", as Avro (subjects prices-value, valuations-value, companies-value)" if args.avro else ""))

    try:  # seed 004's bug: joining without co-partitioning must not start
        KafkaStreams(buildTopology(args.threshold, repartition=False, serdes=serdes), config(args)).start()
        print("ERROR: the topology without repartition was accepted")
        return 1
    except TopologyException as e:
        print(f"without repartition(): rejected before any record is processed:\n  {e}")

    topology = buildTopology(args.threshold, serdes=serdes)
    print(topology.describe())
    streams = KafkaStreams(topology, config(args))
    runStart = time.time()
    streams.start()
    streams.awaitTermination()
    runSeconds = time.time() - runStart
    streams.close()  # kspark prints its summary: records per topic, drops by reason, wall time
    # on Kafka, read back as a read_committed consumer: only what committed transactions wrote
    signals = readSignals(topics, avroReader(args.schema_registry_url) if args.avro else json.loads)
    printSummary(topics, streams.metrics(), signals, len(prices) + len(valuations), runSeconds)
    if args.picture:
        print(f"wrote {topology.describe().render(args.picture, streams.metrics())}")
    print(f"total wall time {time.time() - started:.1f} s")
    return 0


def nodeCount(metrics, node: str) -> int:
    return int(sum(v for m, v in metrics.items() if m.name == "process-total" and m.tag("processor-node-id") == node))


def printSummary(topics, metrics, signals, inputRecords: int, runSeconds: float) -> None:
    import pandas as pd

    prices = sum(topics.endOffsets("prices").values())
    joined = nodeCount(metrics, "per-below-threshold")
    candidates = nodeCount(metrics, "once-per-company-per-day")
    dropped = sum(int(v) for m, v in metrics.items() if m.group == "kspark-dropped-records")
    print("== valuation signals ==")
    print(f"prices joined with a valuation  {joined:>9,}")
    print(f"PER below threshold (candidates){candidates:>9,}")
    print(f"signals emitted to 'signals'    {len(signals):>9,}")
    print("prices that gave no signal, and why (not dropped records: the job's logic):")
    print(f"  no valuation in force for the code (inner join)  {prices - joined - dropped:>7,}")
    print(f"  already signalled that company that day (dedup)  {candidates - len(signals):>7,}")
    print(f"Spark run: {runSeconds:.1f} s, {inputRecords / runSeconds:,.0f} input records/s (incl. startup)")
    if signals:
        cols = ["trade_date", "snapshot_ts", "code", "name", "close", "per_prev", "per_now", "per_drop_pct"]
        print("first signals:")
        print(pd.DataFrame(signals)[cols].head(15).to_string(index=False))
    days = {}
    for s in signals:
        days.setdefault((s["code"], s["trade_date"]), 0)
        days[(s["code"], s["trade_date"])] += 1
    print(f"companies with more than one signal on a day: {sum(1 for n in days.values() if n > 1)}")
    if signals:
        print("signals per sector per trading day (sector from the company master, a GlobalKTable):")
        print(sectorReport(signals).to_string())


def sectorReport(signals: list[dict]):
    """Signals per sector (rows, most signals first) per trading day (columns), with totals."""
    import pandas as pd

    frame = pd.DataFrame(signals)
    table = pd.crosstab(frame["sector"], frame["trade_date"], margins=True, margins_name="total")
    body = table.drop(index="total").sort_values("total", ascending=False, kind="stable")
    return pd.concat([body, table.loc[["total"]]])


if __name__ == "__main__":
    sys.exit(main())
