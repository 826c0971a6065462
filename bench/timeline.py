"""Where a live micro-batch's time goes (issue 34 §1): P4's live phase for kspark alone, with
every step of every batch timed.

``python bench/timeline.py [--rate 2000] [--seconds 15] [--trigger "100 milliseconds"]
[--conf spark.key=value ...] [--kspark key=value ...] [--json out.json]``

Runs P4's latency phase (``run.liveLatency``: P4's session-count topology on a fresh
``kspark.testing.KafkaBroker``, ``exactly_once_v2``, ``--rate`` records/s for ``--seconds`` with
timestamp = now, latency read by a ``read_committed`` consumer) with

- ``KSPARK_TIMELINE`` (:mod:`kspark.spark._timeline`): the Python source's planning on the
  driver (``latestOffset``, ``partitions``), each read task, each kspark task's steps (state
  version read, input decoded, stores opened, processed, stores flushed, checkpoint pickled and
  written, output built), each sink task's transaction steps, the sink's commit on the driver;
- Spark's event log (``spark.eventLog.enabled``): each job's and stage's submission and
  completion, each Spark task's launch and finish;
- the queries' progress events (``durationMs``: latestOffset, walCommit, queryPlanning,
  getBatch, addBatch, commitOffsets, triggerExecution).

Prints one JSON object: the latencies (p50/p95/max), per step the median over the batches with
input (ms from the batch's trigger), the batches' median period, and the timeline of the median
batch; ``--json`` also writes it to a file.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--trigger", default=None, help="kspark.trigger (default: kspark's live default)")
    parser.add_argument("--conf", action="append", default=[], help="spark.key=value for the session")
    parser.add_argument("--kspark", action="append", default=[], help="key=value for the application's config")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--label", default="")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="kspark-timeline-"))
    for old in ("kafka", "state", "eventlog"):  # a run starts from nothing
        shutil.rmtree(work / old, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    timeline = work / "timeline.jsonl"
    timeline.unlink(missing_ok=True)
    os.environ["KSPARK_TIMELINE"] = str(timeline)  # before kspark and its workers start
    os.environ.setdefault("KSPARK_PROGRESS", "none")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import run  # noqa: E402  (bench/run.py: P4's topology and latency phase)

    from kspark import KafkaStreams, StreamsConfig
    from kspark.spark._session import getOrCreateSession
    from kspark.testing import KafkaBroker

    events = work / "eventlog"
    events.mkdir(exist_ok=True)
    confs = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(events), "spark.eventLog.compress": "false",
             "spark.eventLog.rolling.enabled": "false",
             "spark.sql.streaming.numRecentProgressUpdates": "10000"}
    confs.update(dict(kv.split("=", 1) for kv in args.conf))
    if confs.get("spark.sql.streaming.stateStore.coordinatorReportSnapshotUploadLag") == "false":
        # Spark refuses the one without the other (its default forceSnapshotUploadOnLag is true)
        confs.setdefault("spark.sql.streaming.stateStore.forceSnapshotUploadOnLag", "false")
    spark = getOrCreateSession(StreamsConfig({"kspark.spark.master": "local[2]", "application.id": "timeline", **confs}))
    extra = dict(kv.split("=", 1) for kv in args.kspark)
    if args.trigger is not None:  # digits: int ms
        extra["kspark.trigger"] = int(args.trigger) if args.trigger.isdigit() else args.trigger
    keys = [h.encode() for h in run.inputs.nasaRequests(max(1, int(args.rate * args.seconds)))["host"].tolist()]
    apps: list = []
    cpu: list[float] = []  # CPU-s of this process tree without the broker: at start, at stop
    wall: list[float] = []
    with KafkaBroker(work / "kafka", heapMb=1024) as broker:
        from kspark.topics import openTopics

        topics = openTopics({"bootstrap.servers": broker.bootstrapServers})

        def startApp(src, out):
            streams = KafkaStreams(run.sessionCountTopology(src, out, run.GAP), {
                "bootstrap.servers": broker.bootstrapServers, "processing.guarantee": "exactly_once_v2",
                "application.id": "timeline-live", "state.dir": str(work / "state"),
                "kspark.trigger": "100 milliseconds", **extra}, spark=spark)
            streams.start()
            apps.append(streams)
            cpu.append(cpuByKind(broker.pid))

            def stop():
                cpu.append(cpuByKind(broker.pid))
                wall.append(time.time())
                streams.close()
            wall.append(time.time())
            return stop

        live = run.liveLatency("kspark", topics, keys, args.rate, args.seconds, startApp)
        progress = [json.loads(p.json) for q in apps[0].queries() for p in q.recentProgress] if apps[0].queries() else []
    spark.stop()
    (work / "progress.json").write_text(json.dumps(progress))
    result = {"benchmark": "timeline", "label": args.label, "rate": args.rate, "seconds": args.seconds,
              "trigger": extra.get("kspark.trigger", "100 milliseconds"), "confs": confs, "kspark": extra, **live,
              "cpu_seconds": {k: round(cpu[1].get(k, 0) - cpu[0].get(k, 0), 1) for k in cpu[1]},
              "wall_seconds": round(wall[1] - wall[0], 1),
              "batches": len(progress), "load_avg_1m": os.getloadavg()[0],
              **analyse(progress, timeline, events)}
    text = json.dumps(result)
    print(text, flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(text + "\n")
    return 0


def cpuByKind(broker: int) -> dict[str, float]:
    """CPU seconds so far of this process tree without the broker: ``driver`` (this process:
    the driver's Python, the benchmark's producer and consumer), ``jvm`` (Spark's), ``python``
    (Python workers, daemons, fork server) and ``total``."""
    import run

    out = {"driver": 0.0, "jvm": 0.0, "python": 0.0}
    for kind, _, seconds in run._treeByKind(os.getpid(), exclude=(broker,)).values():
        out[kind] = out.get(kind, 0.0) + seconds
    out["total"] = sum(out.values())
    return out


def _epoch(iso: str) -> float:
    return datetime.strptime(iso.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def analyse(progress: list[dict], timeline: Path, events: Path) -> dict:
    """Per batch with input rows: each step's time (ms) from the batch's trigger (its progress
    ``timestamp``); medians over those batches, and the median batch's own timeline."""
    marks = [json.loads(line) for line in open(timeline)] if timeline.exists() else []
    logs = sorted(p for p in glob.glob(str(events / "**"), recursive=True) if os.path.isfile(p) and not p.endswith(".crc"))
    spark = [json.loads(line) for line in open(logs[-1])] if logs else []
    stageBatch: dict[int, int] = {}
    jobs: dict[int, dict] = {}
    for e in spark:
        kind = e["Event"]
        if kind == "SparkListenerJobStart":
            batch = (e.get("Properties") or {}).get("streaming.sql.batchId")
            if batch is not None:
                jobs[e["Job ID"]] = {"batch": int(batch), "start": e["Submission Time"] / 1000}
                for s in e["Stage IDs"]:
                    stageBatch[s] = int(batch)
        elif kind == "SparkListenerJobEnd" and e["Job ID"] in jobs:
            jobs[e["Job ID"]]["end"] = e["Completion Time"] / 1000
    stages: dict[int, dict] = {}
    for e in spark:
        if e["Event"] == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            stages[info["Stage ID"]] = {"name": info["Stage Name"], "submitted": info.get("Submission Time", 0) / 1000,
                                        "completed": info.get("Completion Time", 0) / 1000, "tasks": []}
    for e in spark:
        if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in stages:
            info = e["Task Info"]
            stages[e["Stage ID"]]["tasks"].append((info["Launch Time"] / 1000, info["Finish Time"] / 1000))
    byBatch: dict[int, list[dict]] = {}
    for m in marks:
        if m.get("batch") is not None:
            byBatch.setdefault(int(m["batch"]), []).append(m)
    driverMarks = sorted((m for m in marks if m["event"].startswith(("source.latestOffset", "source.partitions",
                                                                       "source.commit", "sink.commit",
                                                                       "source.reportLatestOffset", "sink.streamWriter"))),
                         key=lambda m: m["t"])
    rows = []
    periods = []
    ordered = sorted((p for p in progress if p.get("numInputRows", 0) > 0), key=lambda p: p["batchId"])
    starts = {p["batchId"]: _epoch(p["timestamp"]) for p in progress}
    for p in ordered:
        b, t0 = p["batchId"], starts[p["batchId"]]
        nxt = starts.get(b + 1)
        if nxt is not None:
            periods.append((nxt - t0) * 1000)
        d = p["durationMs"]
        row = {"batch": b, "rows": p["numInputRows"], "durationMs": d}
        # Spark's state store (the sum over the batch's Spark tasks): commit, and its parts
        for op in p.get("stateOperators", ())[:1]:
            row["state.commitTimeMs"] = op.get("commitTimeMs")
            metrics = op.get("customMetrics", {})
            for name in ("rocksdbChangeLogWriterCommitLatencyMs", "rocksdbCommitCheckpointLatency",
                         "rocksdbCommitFlushLatency", "rocksdbLoadLatencyMs"):
                if name in metrics:
                    row["state." + name] = metrics[name]
        ms = lambda t: round((t - t0) * 1000)  # noqa: E731
        end = t0 + d["triggerExecution"] / 1000
        lo = [m for m in driverMarks if t0 - 0.001 <= m["t"] <= end + 0.001]
        for name in ("source.latestOffset.start", "source.latestOffset.end", "source.reportLatestOffset",
                     "source.partitions", "source.commit", "sink.streamWriter", "sink.commit"):
            hits = [m["t"] for m in lo if m["event"] == name]
            if hits:
                row[name] = ms(hits[0])
        batchStages = sorted(s for s, bb in stageBatch.items() if bb == b and s in stages)
        for i, s in enumerate(batchStages):
            st = stages[s]
            row[f"stage{i}.submitted"] = ms(st["submitted"])
            if st["tasks"]:
                row[f"stage{i}.firstTaskLaunch"] = ms(min(a for a, _ in st["tasks"]))
                row[f"stage{i}.lastTaskLaunch"] = ms(max(a for a, _ in st["tasks"]))
            row[f"stage{i}.completed"] = ms(st["completed"])
            row[f"stage{i}.tasks"] = len(st["tasks"])
        ms_ = byBatch.get(b, [])
        reads = [m["t"] for m in ms_ if m["event"] == "source.read"]
        if reads:
            row["source.read.first"], row["source.read.last"] = ms(min(reads)), ms(max(reads))
        tasks = [m for m in ms_ if m["event"] == "task"]
        for step in ("start", "versionRead", "stateRead", "inputRead", "storesOpened", "processed", "storesFlushed",
                     "pickled", "stateWritten", "outputBuilt"):
            vals = [m[step] for m in tasks if step in m]
            if vals:
                row[f"task.{step}.first"], row[f"task.{step}.last"] = ms(min(vals)), ms(max(vals))
        for step in ("write", "prepared", "input", "producer", "checked", "offsetsSent", "produced", "committed"):
            vals = [m["t"] for m in ms_ if m["event"] == "sink." + step]
            if vals:
                row[f"sink.{step}.first"], row[f"sink.{step}.last"] = ms(min(vals)), ms(max(vals))
        row["end"] = ms(end)
        rows.append(row)
    steady = rows[2:] if len(rows) > 4 else rows  # the first batches pay the query's start
    medians = {}
    for key in sorted({k for r in steady for k in r if k not in ("batch", "durationMs")}):
        vals = [r[key] for r in steady if key in r]
        if vals and all(isinstance(v, (int, float)) for v in vals):
            medians[key] = statistics.median(vals)
    duration = {}
    for key in sorted({k for r in steady for k in r["durationMs"]}):
        duration[key] = statistics.median(r["durationMs"].get(key, 0) for r in steady)
    median = sorted(steady, key=lambda r: r["end"])[len(steady) // 2] if steady else None
    state = {k.split(".", 1)[1]: medians.pop(k) for k in [k for k in medians if k.startswith("state.")]}
    return {"batches_with_input": len(rows), "median_period_ms": statistics.median(periods) if periods else None,
            "median_durationMs": duration, "median_state_ms": state,
            "median_step_ms": dict(sorted(medians.items(), key=lambda kv: kv[1])),
            "median_batch": median}


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
