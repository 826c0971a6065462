"""Event time, arrival time and lateness on the USGS earthquake feed.

The feed is replayed in ``updated`` order (when USGS last revised an event: its arrival), keyed
by network (``net``, the region that reported it), into a 3-partition topic whose record
timestamp is that arrival time. Daily counts per network are computed in event-time windows
(``TimeWindows`` of one day), with the event time taken from the payload's origin ``time`` by
a custom extractor, for several grace periods: reviewed events arrive days late, so the grace
period decides how many are counted and how many are dropped as late.

A second topic replays the same feed as an old producer would, with every 50th record lacking
a timestamp (-1), to show the invalid-timestamp policies: ``FailOnInvalidTimestamp`` (the
default) stops, ``LogAndSkipOnInvalidTimestamp`` drops and counts, and
``UsePartitionTimeOnInvalidTimestamp`` substitutes the partition time.

Every number is computed twice, by TopologyTestDriver (one driver per input partition, i.e.
per Kafka task) and by Spark, and printed side by side.

Run: ``python examples/earthquake_lateness.py``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

from kspark import (
    Consumed, LogAndSkipOnInvalidTimestamp, Materialized, Produced, Serdes, StreamsBuilder, StreamsException,
    TimestampExtractor, TimeWindows, UsePartitionTimeOnInvalidTimestamp, WindowedSerdes,
)

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "usgs_earthquakes_2024-04-05_2024-05-05.csv"
DAY = timedelta(days=1)
GRACES = {"0": timedelta(0), "1h": timedelta(hours=1), "1d": timedelta(days=1), "7d": timedelta(days=7)}
PARTITIONS = 3
LEGACY_EVERY = 50


def epochMs(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


class OriginTimeExtractor(TimestampExtractor):
    """Event time = the earthquake's origin ``time`` in the payload (ms)."""

    def extract(self, record, partitionTime):
        return epochMs(record.value()["time"])


def dailyCounts(stream, label: str, grace: timedelta) -> None:
    (stream.groupByKey()
     .windowedBy(TimeWindows.ofSizeAndGrace(DAY, grace))
     .count(named=f"count-{label}", materialized=Materialized.as_(f"daily-{label}"))
     .toStream()
     .to(f"counts-{label}", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), DAY), Serdes.Long())))


def graceTopology():
    """Event-time daily counts per network, one branch per grace period."""
    builder = StreamsBuilder()
    quakes = builder.stream("quakes", Consumed.withTimestampExtractor(OriginTimeExtractor()))
    for label, grace in GRACES.items():
        dailyCounts(quakes, f"grace-{label}", grace)
    return builder.build()


def policyTopology(extractor):
    """Arrival-time daily counts of the legacy feed under one invalid-timestamp policy."""
    builder = StreamsBuilder()
    legacy = builder.stream("quakes-legacy", Consumed.withTimestampExtractor(extractor) if extractor else None)
    dailyCounts(legacy, "arrival", timedelta(0))
    return builder.build()


SINKS = [f"counts-grace-{label}" for label in GRACES] + ["counts-arrival"]


def readFeed(limit: int | None = None) -> list[dict]:
    import pandas as pd

    df = pd.read_csv(DATA, encoding="utf-8-sig", usecols=["time", "updated", "net", "mag", "status", "id"])
    df = df.sort_values("updated", kind="stable")
    rows = [{k: (None if pd.isna(v) else v) for k, v in r.items()} for r in df.to_dict("records")]
    return rows[:limit] if limit else rows


def loadTopics(topics, rows: list[dict]) -> None:
    from kspark.runtime.partitioner import partitionForKey

    key, value = Serdes.String(), Serdes.JSON()
    for name in ["quakes", "quakes-legacy"] + SINKS:
        topics.createTopic(name, PARTITIONS)
    records = [(key.serialize("q", r["net"]), value.serialize("q", r), epochMs(r["updated"])) for r in rows]
    topics.produce("quakes", records, partitioner=partitionForKey)
    legacy = [(k, v, -1 if i % LEGACY_EVERY == LEGACY_EVERY - 1 else ts) for i, (k, v, ts) in enumerate(records)]
    topics.produce("quakes-legacy", legacy, partitioner=partitionForKey)


# ---------------------------------------------------------------------- the two hosts
def runOnDrivers(topology, topics, source: str, config=None):
    """One TopologyTestDriver per input partition (a Kafka task each); returns (outputs, dropped)."""
    from kspark.testing import TopologyTestDriver

    outputs = {sink: [] for sink in SINKS}
    dropped = 0
    for p in range(PARTITIONS):
        t = topics.read(source, p, 0, topics.endOffset(source, p))
        with TopologyTestDriver(topology, config) as d:
            i = d.createInputTopic(source, Serdes.ByteArray(), Serdes.ByteArray())
            for k, v, ts in zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist()):
                d._pipeRecord(source, k, v, ts, ())  # raw bytes and metadata timestamp as stored, -1 included
            for sink in SINKS:
                outputs[sink] += [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic(sink).readRecordsToList()]
            dropped += sum(v for m, v in d.metrics().items() if m.name == "dropped-records-total" and m.group == "stream-task-metrics")
    return {s: sorted(o, key=repr) for s, o in outputs.items()}, int(dropped)


def runOnSpark(topology, topics, work: Path, appId: str, config=None, spark=None):
    from kspark import KafkaStreams

    streams = KafkaStreams(topology, {
        "application.id": appId, "kspark.topics.dir": str(topics.root), "state.dir": str(work / "state"),
        "kspark.spark.master": "local[2]",
        # every update, as the driver (which commits after each record) shows them; with Kafka's
        # default 10 MB record cache a micro-batch would forward only each window's last update
        "statestore.cache.max.bytes": 0, **(config or {}),
    }, spark=spark)
    before = {sink: topics.endOffsets(sink) for sink in SINKS}  # read back only what this run writes
    streams.start()
    try:
        streams.awaitTermination()
    finally:
        streams.close()
    serde = WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), DAY)
    outputs = {}
    for sink in SINKS:
        rows = []
        for p in range(PARTITIONS):
            t = topics.read(sink, p, before[sink][p], topics.endOffset(sink, p))
            rows += [(serde.deserialize(sink, k), Serdes.Long().deserialize(sink, v), ts) for k, v, ts in
                     zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist())]
        outputs[sink] = sorted(rows, key=repr)
    dropped = sum(v for m, v in streams.metrics().items() if m.name == "dropped-records-total" and m.group == "stream-task-metrics")
    return outputs, int(dropped)


def kept(outputs, sink) -> int:
    """Records counted = sum over windows of their final count."""
    final = {}
    for key, count, _ in outputs[sink]:
        final[key] = max(final.get(key, 0), count)
    return sum(final.values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("work/earthquake-lateness"))
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
    import logging

    from kspark.topics import LocalTopics

    logging.getLogger("kspark").setLevel(logging.ERROR)  # the table below counts the skipped records
    shutil.rmtree(args.work, ignore_errors=True)
    topics = LocalTopics(args.work / "topics")
    rows = readFeed(args.limit)
    loadTopics(topics, rows)
    print(f"{len(rows):,} events replayed in arrival (`updated`) order into {PARTITIONS} partitions keyed by network")

    started = time.time()
    driverOut, _ = runOnDrivers(graceTopology(), topics, "quakes")
    sparkOut, _ = runOnSpark(graceTopology(), topics, args.work, "quake-grace")
    print("\nevent time = origin `time`, daily windows per network")
    print(f"{'grace':>6} | {'kept (driver)':>13} {'dropped':>8} | {'kept (Spark)':>12} {'dropped':>8}")
    for label in GRACES:
        sink = f"counts-grace-{label}"
        dk, sk = kept(driverOut, sink), kept(sparkOut, sink)
        print(f"{label:>6} | {dk:>13,} {len(rows) - dk:>8,} | {sk:>12,} {len(rows) - sk:>8,}")
    same = driverOut == sparkOut

    print(f"\nlegacy feed: every {LEGACY_EVERY}th record has timestamp -1; event time = arrival (metadata)")
    print(f"{'policy':<36} | {'driver':<28} | Spark")
    policies = [("FailOnInvalidTimestamp (default)", None),
                ("LogAndSkipOnInvalidTimestamp", LogAndSkipOnInvalidTimestamp()),
                ("UsePartitionTimeOnInvalidTimestamp", UsePartitionTimeOnInvalidTimestamp())]
    for i, (name, extractor) in enumerate(policies):
        results = []
        for host in ("driver", "spark"):
            try:
                if host == "driver":
                    out, dropped = runOnDrivers(policyTopology(extractor), topics, "quakes-legacy")
                else:
                    out, dropped = runOnSpark(policyTopology(extractor), topics, args.work, f"quake-policy-{i}")
                results.append(f"kept {kept(out, 'counts-arrival'):,}, dropped {dropped:,}")
            except StreamsException as e:
                where = re.search(r"topic = (\S+), partition = (\d+), offset = (\d+), timestamp = (-?\d+)", str(e))
                results.append("fails at {}-{} offset {} (timestamp {})".format(*where.groups()) if where else f"fails: {e}")
        print(f"{name:<36} | {results[0]:<28} | {results[1]}")
    print(f"\ndriver and Spark gave identical windowed counts: {same} ({time.time() - started:.0f} s)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
