"""kspark benchmarks: one JSON object per benchmark on stdout (records, seconds, records/s,
records/s per core, peak RSS) with the comparison system measured in the same run.

- P1: session-window count (30 min gap, updates emitted, Kafka Streams semantics) on Spark
  ``local[2]`` over the NASA HTTP log replicated with shifted hosts and times;
  P1-native: Spark's own ``groupBy(session_window(...), host).count()`` on the same records.
- P3: the same session count in process through ``TopologyTestDriver`` (record at a time).

Usage: ``python bench/run.py [--records 1000000] [--p3-records 200000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "nasa_http_19950801.tsv"
GAP = timedelta(minutes=30)
CORES = 2


def replicated(n: int) -> pd.DataFrame:
    """The NASA log (one day, 2,365 hosts) replicated to ``n`` records, in time order.

    Copy ``i`` suffixes every host with ``#<i % 50>`` and shifts times by ``i // 50`` days, so a
    day holds up to 50 interleaved copies (≈118K live hosts) and later copies start new days.
    The result is sorted by time (stable), as a real log with more hosts would be; without the
    sort, copies would follow each other and every later copy of a day would be late data.
    """
    base = pd.read_csv(DATA, sep="\t", usecols=["host", "time"])
    copies = -(-n // len(base))
    hosts = base["host"].to_numpy(dtype=object)
    times = base["time"].to_numpy(dtype=np.int64)
    frames = []
    for i in range(copies):
        frames.append(pd.DataFrame({"host": hosts + f"#{i % 50}", "ts": (times + 86_400 * (i // 50)) * 1000}))
    df = pd.concat(frames, ignore_index=True)
    return df.sort_values("ts", kind="stable", ignore_index=True).head(n)


def peakRssMb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def result(name: str, records: int, seconds: float, **extra) -> dict:
    out = {"benchmark": name, "records": records, "seconds": round(seconds, 2),
           "records_per_s": round(records / seconds), "records_per_s_per_core": round(records / seconds / CORES),
           "peak_driver_rss_mb": round(peakRssMb()), **extra}
    print(json.dumps(out), flush=True)
    return out


def topology():
    from kspark import Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, WindowedSerdes

    b = StreamsBuilder()
    (b.stream("requests").groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(GAP))
     .count(materialized=Materialized.as_("sessions").withCachingDisabled())
     .toStream().to("sessions", Produced.with_(WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String()), Serdes.Long())))
    return b.build()


def p1(df: pd.DataFrame, work: Path, spark) -> dict:
    from kspark import KafkaStreams
    from kspark.runtime.partitioner import partitionForKey
    from kspark.topics import LocalTopics

    topics = LocalTopics(work / "topics")
    topics.createTopic("requests", 4)
    topics.createTopic("sessions", 4)
    keys = [h.encode() for h in df["host"]]
    parts = np.array([partitionForKey(k, 4) for k in keys])
    for p in range(4):
        idx = np.nonzero(parts == p)[0]
        topics.append("requests", p, pa.table({
            "timestamp": pa.array(df["ts"].to_numpy()[idx], pa.int64()),
            "key": pa.array([keys[i] for i in idx], pa.binary()),
            "value": pa.nulls(len(idx), pa.binary()), "headers": pa.nulls(len(idx), pa.binary())}))
    streams = KafkaStreams(topology(), {
        "application.id": "bench-p1", "kspark.topics.dir": str(work / "topics"), "state.dir": str(work / "state"),
        "kspark.max.records.per.trigger": 200_000}, spark=spark)
    started = time.time()
    streams.start()
    streams.awaitTermination()
    seconds = time.time() - started
    streams.close()
    emitted = sum(topics.endOffsets("sessions").values())
    return result("P1 kspark session count on Spark local[2]", len(df), seconds, updates_emitted=emitted)


def p1Native(df: pd.DataFrame, work: Path, spark) -> dict:
    from pyspark.sql import functions as F

    src = work / "native-input"
    src.mkdir(parents=True)
    size = -(-len(df) // 10)
    for i, chunk in enumerate(df.iloc[j:j + size] for j in range(0, len(df), size)):
        pq.write_table(pa.table({"host": chunk["host"].to_numpy(), "ts": pa.array(chunk["ts"].to_numpy() * 1000, pa.timestamp("us", tz="UTC"))}),
                       src / f"part-{i:03d}.parquet")
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    stream = (spark.readStream.schema("host string, ts timestamp").option("maxFilesPerTrigger", 2).parquet(str(src))
              .withWatermark("ts", "30 minutes").groupBy(F.session_window("ts", "30 minutes"), "host").count())
    started = time.time()
    q = (stream.writeStream.format("noop").outputMode("append").option("checkpointLocation", str(work / "native-ck"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    seconds = time.time() - started
    return result("P1-native Spark groupBy(session_window).count() append", len(df), seconds,
                  note="not Kafka Streams semantics: append only, global watermark")


def p3(df: pd.DataFrame) -> dict:
    from kspark.testing import TopologyTestDriver

    rows = list(zip(df["host"].tolist(), df["ts"].tolist()))
    started = time.time()
    with TopologyTestDriver(topology()) as d:
        i = d.createInputTopic("requests")
        for host, ts in rows:
            i.pipeInput(host, None, ts)
        emitted = d.createOutputTopic("sessions").getQueueSize()
    seconds = time.time() - started
    return result("P3 kspark session count in TopologyTestDriver", len(rows), seconds, updates_emitted=emitted)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--p3-records", type=int, default=200_000)
    parser.add_argument("--work", type=Path, default=Path("work/bench"))
    args = parser.parse_args(argv)
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)

    p3(replicated(args.p3_records))
    from kspark.config import StreamsConfig
    from kspark.spark._session import getOrCreateSession

    spark = getOrCreateSession(StreamsConfig({"kspark.spark.master": f"local[{CORES}]", "application.id": "bench"}))
    df = replicated(args.records)
    p1Native(df, args.work, spark)
    p1(df, args.work, spark)
    spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
