"""Seed 004 with two streams: KOSPI price ticks joined with the volume-leader feed within a time
window (a KStream-KStream join), on real KRX data, the same records from TopologyTestDriver and
Spark.

Topic ``prices`` holds every KOSPI snapshot (733 stocks, 10 trading days, keyed by stock code,
event time from ``snapshot_ts``). Topic ``volume-leaders`` is a second feed, as a ranking service
would publish it: two minutes after each snapshot, the 30 stocks with the largest traded value
(``amount``) of the day so far, keyed by code. A leader's falling price is the signal: each price
tick is joined with that code's leader record published within five minutes of it
(``JoinWindows.ofTimeDifferenceAndGrace(5 min, 1 min)``), kept if the stock is down at least
``--drop`` percent on the day, and counted per stock per trading day. The join keeps each
side in a window store for 11 minutes; both topics are keyed by code, so they are co-partitioned
(5 partitions each) and no repartition topic is needed.

The job runs on Spark and on one TopologyTestDriver per partition (a Kafka task each, fed in the
order the task reads its two partitions: smallest timestamp first), and prints the falling
leaders per day and whether both hosts agree.

Run: ``python examples/volume_leaders.py`` (about a minute, most of it Spark's start).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from kspark import (Consumed, JoinWindows, Materialized, Produced, Serdes, StreamJoined, StreamsBuilder, TimeWindows,
                    WindowedSerdes)

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "krx_kospi_intraday_snapshots_2026-03-09_20.csv.gz"
PARTITIONS, LEADERS, PUBLISH_DELAY = 5, 30, timedelta(minutes=2)
DAY = 86_400_000  # daily windows (UTC days: each holds one KST trading day, 09:00-15:30 KST)
SINK = "falling-leaders"


def epochMs(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


def readFeeds(days: int | None = None) -> tuple[list, list]:
    """(prices, leaders) as (code, value dict, timestamp ms), each in timestamp order; ``days``:
    only the first trading days."""
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if days is not None:
        keep = sorted({r["trade_date"] for r in rows})[:days]
        rows = [r for r in rows if r["trade_date"] in keep]
    prices = [(r["code"], {"name": r["name"], "change_pct": float(r["change_pct"]), "amount": int(r["amount"])},
               epochMs(r["snapshot_ts"])) for r in rows]
    bySnapshot: dict[int, list] = {}
    for code, value, ts in prices:
        bySnapshot.setdefault(ts, []).append((value["amount"], code))
    delay = PUBLISH_DELAY // timedelta(milliseconds=1)
    leaders = [(code, {"rank": rank}, ts + delay) for ts in sorted(bySnapshot)
               for rank, (_, code) in enumerate(sorted(bySnapshot[ts], reverse=True)[:LEADERS], 1)]
    return prices, leaders


def topology(drop: float):
    """prices JOIN volume-leaders within 5 min -> falls of at least ``drop`` % -> count per code and KST day."""
    b = StreamsBuilder()
    json = Consumed.with_(Serdes.String(), Serdes.JSON())
    prices, leaders = b.stream("prices", json), b.stream("volume-leaders", json)
    (prices.join(leaders, lambda price, leader: {**price, "rank": leader["rank"]},
                 JoinWindows.ofTimeDifferenceAndGrace(timedelta(minutes=5), timedelta(minutes=1)),
                 StreamJoined.with_(Serdes.String(), Serdes.JSON(), Serdes.JSON()).withName("price-leader"))
     .filter(lambda code, tick: tick["change_pct"] <= -drop)
     .groupByKey()
     .windowedBy(TimeWindows.ofSizeAndGrace(timedelta(days=1), timedelta(hours=1)))
     .count(Materialized.with_(Serdes.String(), Serdes.Long()))
     .toStream().to(SINK, Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), DAY), Serdes.Long())))
    return b.build()


def loadTopics(topics, prices: list, leaders: list) -> None:
    from kspark.runtime.partitioner import partitionForKey

    key, value = Serdes.String(), Serdes.JSON()
    for name, rows in (("prices", prices), ("volume-leaders", leaders)):
        topics.createTopic(name, PARTITIONS)
        topics.produce(name, [(key.serialize(name, k), value.serialize(name, v), ts) for k, v, ts in rows],
                       partitioner=partitionForKey)
    topics.createTopic(SINK, PARTITIONS)


def processingOrder(prices: list, leaders: list):
    """A task's order over its two partitions: the record with the smaller timestamp first (prices
    on ties: each feed is in timestamp order and a leader is published after its snapshot)."""
    i = j = 0
    while i < len(prices) or j < len(leaders):
        if j == len(leaders) or (i < len(prices) and prices[i][2] <= leaders[j][2]):
            yield "prices", prices[i]
            i += 1
        else:
            yield "volume-leaders", leaders[j]
            j += 1


def runOnDrivers(prices: list, leaders: list, drop: float) -> dict:
    """One TopologyTestDriver per partition; the last count per (code, day)."""
    from kspark.runtime.partitioner import partitionForKey
    from kspark.testing import TopologyTestDriver

    part = lambda rows, p: [r for r in rows if partitionForKey(r[0].encode(), PARTITIONS) == p]  # noqa: E731
    counts = {}
    for p in range(PARTITIONS):
        with TopologyTestDriver(topology(drop), {"statestore.cache.max.bytes": 0}) as d:
            inputs = {t: d.createInputTopic(t) for t in ("prices", "volume-leaders")}
            for topic, (code, value, ts) in processingOrder(part(prices, p), part(leaders, p)):
                inputs[topic].pipeInput(code, value, ts)
            for r in d.createOutputTopic(SINK).readRecordsToList():
                counts[(r.key().key(), r.key().window().start())] = r.value()
    return counts


def runOnSpark(topics, work: Path, drop: float, spark=None) -> dict:
    from kspark import KafkaStreams

    streams = KafkaStreams(topology(drop), {
        "application.id": "volume-leaders", "kspark.topics.dir": str(topics.root), "state.dir": str(work / "state"),
        "kspark.spark.master": "local[2]", "statestore.cache.max.bytes": 0}, spark=spark)
    streams.start()
    try:
        streams.awaitTermination()
    finally:
        streams.close()
    serde, counts = WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), DAY), {}
    for p in range(PARTITIONS):
        t = topics.read(SINK, p, 0, topics.endOffset(SINK, p))
        for k, v in zip(t.column("key").to_pylist(), t.column("value").to_pylist()):
            w = serde.deserialize(SINK, k)
            counts[(w.key(), w.window().start())] = Serdes.Long().deserialize(SINK, v)
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("work/volume-leaders"))
    parser.add_argument("--drop", type=float, default=3.0, help="percent fall on the day that makes a signal")
    args = parser.parse_args(argv)
    import logging

    from kspark.topics import LocalTopics

    logging.getLogger("kspark").setLevel(logging.ERROR)
    shutil.rmtree(args.work, ignore_errors=True)
    topics = LocalTopics(args.work / "topics")
    prices, leaders = readFeeds()
    loadTopics(topics, prices, leaders)
    print(f"{len(prices):,} price ticks and {len(leaders):,} volume-leader records in {PARTITIONS} partitions each")

    started = time.time()
    driver = runOnDrivers(prices, leaders, args.drop)
    spark = runOnSpark(topics, args.work, args.drop)
    names = {code: value["name"] for code, value, _ in prices}
    print(f"\nvolume leaders down at least {args.drop:g} % (ticks joined with a leader record within 5 min)")
    byDay: dict[int, list] = {}
    for (code, start), n in spark.items():
        byDay.setdefault(start, []).append((n, code))
    for start in sorted(byDay):
        day = datetime.fromtimestamp(start / 1000, timezone.utc).date()  # KOSPI trades 00:00-06:30 UTC: one KST day
        top = ", ".join(f"{names[c]} {n}" for n, c in sorted(byDay[start], reverse=True)[:5])
        print(f"{day}  {len(byDay[start]):>3} stocks, {sum(n for n, _ in byDay[start]):>4} ticks  {top}")
    same = driver == spark
    print(f"\ndriver and Spark gave identical counts: {same} ({len(spark)} (stock, day) windows, "
          f"{time.time() - started:.0f} s)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
