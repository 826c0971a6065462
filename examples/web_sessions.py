"""Web sessions per host with a 30-minute inactivity gap, on the NASA and Apache access logs.

``groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(30 min, grace)).count()``
with ``EmitStrategy.onWindowClose()``: one final count per session, no intermediate updates.
The NASA log (1 Aug 1995) is in time order; the Apache log has up to 59 s of disorder inside
each minute, which a 1-minute grace absorbs. Prints the number of sessions, their length
distribution and the top hosts, and draws the length histogram as a PNG.

Run: ``python examples/web_sessions.py`` (add ``--spark`` to run on Spark instead of the driver).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from kspark import (
    EmitStrategy, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, WindowedSerdes,
)

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
GAP = timedelta(minutes=30)
APACHE = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\]')


def buildTopology(grace: timedelta):
    builder = StreamsBuilder()
    (builder.stream("requests")
     .groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP, grace))
     .emitStrategy(EmitStrategy.onWindowClose())
     # keep sessions 2 h in the store (the default is gap + grace): readable after they are emitted
     .count(materialized=Materialized.as_("sessions").withRetention(timedelta(hours=2)))
     .toStream()
     .to("sessions", Produced.with_(WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String()), Serdes.Long())))
    return builder.build()


def nasaRequests() -> list[tuple[str, int]]:
    import pandas as pd

    df = pd.read_csv(DATA / "nasa_http_19950801.tsv", sep="\t", usecols=["host", "time"])
    return list(zip(df["host"], df["time"] * 1000))


def apacheRequests() -> list[tuple[str, int]]:
    out = []
    with open(DATA / "elastic_examples_apache_logs.log", encoding="utf-8", errors="replace") as f:
        for line in f:
            m = APACHE.match(line)
            if m:
                ts = datetime.strptime(m.group(2), "%d/%b/%Y:%H:%M:%S %z")
                out.append((m.group(1), int(ts.timestamp() * 1000)))
    return out


def flush(requests: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """A closing record just past the last session's close time, so every session is emitted."""
    last = max(ts for _, ts in requests)
    return requests + [("__end_of_log__", last + int(GAP.total_seconds() * 1000) + 60_000 + 1)]


def onDriver(requests, grace):
    from kspark.testing import TopologyTestDriver

    with TopologyTestDriver(buildTopology(grace)) as d:
        i = d.createInputTopic("requests")
        for host, ts in flush(requests):
            i.pipeInput(host, None, ts)
        return [(r.key(), r.value()) for r in d.createOutputTopic(
            "sessions", WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String()), Serdes.Long()).readRecordsToList()]


def onSpark(requests, grace, work: Path, spark=None):
    from kspark import KafkaStreams
    from kspark.runtime.partitioner import partitionForKey
    from kspark.topics import LocalTopics

    shutil.rmtree(work, ignore_errors=True)
    topics = LocalTopics(work / "topics")
    topics.createTopic("requests", 1)  # one task: the closing record closes every host's sessions
    topics.createTopic("sessions", 1)
    topics.produce("requests", [(h.encode(), None, ts) for h, ts in flush(requests)], partitioner=partitionForKey)
    streams = KafkaStreams(buildTopology(grace), {
        "application.id": "web-sessions", "kspark.topics.dir": str(work / "topics"),
        "state.dir": str(work / "state"), "kspark.spark.master": "local[2]",
    }, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    serde = WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String())
    t = topics.read("sessions", 0, 0, topics.endOffset("sessions", 0))
    return [(serde.deserialize("s", k), Serdes.Long().deserialize("s", v)) for k, v in
            zip(t.column("key").to_pylist(), t.column("value").to_pylist())]


def report(name: str, sessions, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sessions = [(k, n) for k, n in sessions if k.key() != "__end_of_log__"]
    lengths = sorted(n for _, n in sessions)
    minutes = [(k.window().end() - k.window().start()) / 60_000 for k, _ in sessions]
    top = Counter()
    for k, n in sessions:
        top[k.key()] += n
    print(f"{name}: {len(sessions):,} sessions of {len(top):,} hosts; requests per session median "
          f"{lengths[len(lengths) // 2]}, p90 {lengths[int(len(lengths) * 0.9)]}, max {lengths[-1]}; "
          f"session duration median {sorted(minutes)[len(minutes) // 2]:.1f} min")
    print("  top hosts:", ", ".join(f"{h} ({n})" for h, n in top.most_common(5)))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.hist(lengths, bins=range(1, min(lengths[-1], 60) + 2), color="#4878a8")
    ax.set_xlabel("requests per session (30-minute inactivity gap)")
    ax.set_ylabel("sessions")
    ax.set_title(f"{name}: {len(sessions):,} sessions")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    print(f"  histogram: {png}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spark", action="store_true", help="run on Spark (local[2]) instead of TopologyTestDriver")
    parser.add_argument("--work", type=Path, default=Path("work/web-sessions"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    for name, requests, grace in [("NASA 1995-08-01", nasaRequests(), timedelta(0)),
                                  ("Apache log (1 min grace)", apacheRequests(), timedelta(minutes=1))]:
        sessions = onSpark(requests, grace, args.work / name.split()[0]) if args.spark else onDriver(requests, grace)
        report(name, sessions, args.work / f"{name.split()[0].lower()}-session-lengths.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
