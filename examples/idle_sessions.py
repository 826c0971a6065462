"""Closing idle sessions with punctuators, on the NASA HTTP log, on Spark (continuous mode).

The number-one pain point users of Quix Streams, Faust and Bytewax report: a session window
only closes when a later record arrives, so the last sessions of a quiet key, or of a stream
that stopped, never come out. Kafka Streams' answer is a processor with punctuators:

- ``process`` extends a host's open session, or closes it and opens a new one when the request
  comes more than 30 minutes after the session's last one;
- a STREAM_TIME punctuator (every minute of event time) closes sessions that stream time has
  left more than 30 minutes behind;
- a WALL_CLOCK_TIME punctuator (every second) closes sessions that received nothing for
  ``--idle-seconds`` of real time: when the input goes quiet, the tail still comes out.

Every closed session is written to ``sessions`` with ``closedBy`` saying which path closed it.
The total is checked against a direct pandas computation over the same file.

Run: ``python examples/idle_sessions.py``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from kspark import ContextualProcessor, PunctuationType, Record, Serdes, StreamsBuilder, Stores

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "nasa_http_19950801.tsv"
GAP_MS = 30 * 60 * 1000
STORE = "open-sessions"


class IdleSessionCloser(ContextualProcessor):
    """Per-host sessions in a KeyValueStore, closed by a gap, by stream time or by the wall clock."""

    def __init__(self, idleMs: int) -> None:
        self.idleMs = idleMs

    def init(self, context):
        super().init(context)
        self.store = context.getStateStore(STORE)
        context.schedule(60_000, PunctuationType.STREAM_TIME, self.closeBehindStreamTime)
        context.schedule(1_000, PunctuationType.WALL_CLOCK_TIME, self.closeIdle)

    def process(self, record):
        host, ts = record.key(), record.timestamp()
        session = self.store.get(host)
        if session is not None and ts - session["end"] > GAP_MS:
            self.close(host, session, "gap")
            session = None
        if session is None:
            session = {"start": ts, "end": ts, "requests": 0}
        session = {**session, "end": max(session["end"], ts), "requests": session["requests"] + 1,
                   "seenAt": self.context().currentSystemTimeMs()}
        self.store.put(host, session)

    def closeBehindStreamTime(self, streamTime: int) -> None:
        expired = [kv for kv in self.store.all() if kv.value["end"] < streamTime - GAP_MS]
        for kv in expired:
            self.close(kv.key, kv.value, "stream-time")

    def closeIdle(self, wallClockTime: int) -> None:
        idle = [kv for kv in self.store.all() if kv.value["seenAt"] <= wallClockTime - self.idleMs]
        for kv in idle:
            self.close(kv.key, kv.value, "wall-clock")

    def close(self, host: str, session: dict, closedBy: str) -> None:
        self.store.delete(host)
        value = {"start": session["start"], "end": session["end"], "requests": session["requests"], "closedBy": closedBy}
        self.context().forward(Record(host, value, session["end"]))


def buildTopology(idleMs: int = 5_000):
    builder = StreamsBuilder()
    builder.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE), Serdes.String(), Serdes.JSON()))
    builder.stream("requests").process(lambda: IdleSessionCloser(idleMs), STORE).to("sessions")
    return builder.build()


def readRequests(limit: int | None = None):
    import pandas as pd

    df = pd.read_csv(DATA, sep="\t", usecols=["host", "time", "method", "url", "response"])
    return df.head(limit) if limit else df


def expectedSessionCount(df) -> int:
    gaps = df.sort_values(["host", "time"], kind="stable").groupby("host")["time"].diff()
    return int((gaps.isna() | (gaps * 1000 > GAP_MS)).sum())


def loadTopics(topics, df, partitions: int = 4) -> None:
    from kspark.runtime.partitioner import partitionForKey

    key, value = Serdes.String(), Serdes.JSON()
    topics.createTopic("requests", partitions)
    topics.createTopic("sessions", partitions)
    rows = df.to_dict("records")
    topics.produce("requests", [(key.serialize("requests", r["host"]), value.serialize("requests", r), int(r["time"]) * 1000)
                                for r in rows], partitioner=partitionForKey)


def readSessions(topics) -> list[dict]:
    out = []
    for p in range(topics.partitionsFor("sessions")):
        t = topics.read("sessions", p, 0, topics.endOffset("sessions", p))
        out += [{"host": k.decode(), **Serdes.JSON().deserialize("sessions", v)}
                for k, v in zip(t.column("key").to_pylist(), t.column("value").to_pylist())]
    return out


def run(work: Path, df, idleMs: int, trigger: str = "1 second", timeoutS: float = 300, spark=None):
    """Load ``df``, run the topology continuously until every session is closed; return (sessions, seconds)."""
    from kspark import KafkaStreams
    from kspark.topics import LocalTopics

    shutil.rmtree(work, ignore_errors=True)
    topics = LocalTopics(work / "topics")
    loadTopics(topics, df)
    expected = expectedSessionCount(df)
    streams = KafkaStreams(buildTopology(idleMs), {
        "application.id": "idle-sessions", "kspark.topics.dir": str(work / "topics"),
        "state.dir": str(work / "state"), "kspark.trigger": trigger,
        "kspark.spark.master": "local[2]",
    }, spark=spark)
    started = time.time()
    streams.start()
    deadline = started + timeoutS
    while sum(topics.endOffsets("sessions").values()) < expected and time.time() < deadline:
        time.sleep(0.5)
    seconds = time.time() - started
    streams.close()
    return readSessions(topics), expected, seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("work/idle-sessions"))
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
    df = readRequests(args.limit)
    sessions, expected, seconds = run(args.work, df, int(args.idle_seconds * 1000))
    by = {}
    for s in sessions:
        by[s["closedBy"]] = by.get(s["closedBy"], 0) + 1
    print(f"{len(df):,} requests of {df['host'].nunique():,} hosts -> {len(sessions):,} sessions "
          f"(pandas says {expected:,}) in {seconds:.1f} s on Spark")
    print("closed by:", ", ".join(f"{k} {v:,}" for k, v in sorted(by.items())))
    lengths = sorted(s["requests"] for s in sessions)
    if lengths:
        print(f"requests per session: median {lengths[len(lengths) // 2]}, max {lengths[-1]}")
    return 0 if len(sessions) == expected else 1


if __name__ == "__main__":
    sys.exit(main())
