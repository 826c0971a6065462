"""A/B: a stream joined with a large GlobalKTable on Spark, global stores kept in the task checkpoint
value (main before this change: one pickled copy per task, rewritten every micro-batch) against the
task's local RocksDB (this change), in one run.

``python bench/ab/global_table.py --trees main=/tmp/src-main,branch=src --keys 100000,1000000``
runs, for each N and then each tree, a child process (``--child``, ``PYTHONPATH=<tree>``) on a
fresh SparkSession (kspark's ``getOrCreateSession``, ``local[2]``) and prints one JSON line per
child; ``--out FILE`` appends them to FILE too; ``--lock FILE`` runs each child under
``flock FILE`` (the machine's heavy-work lock, held per child); ``--timeout`` counts the wait
for the lock too.

The child: local topics ``companies`` (2 partitions: N keys ``c%08d``, String values of 24
characters), ``orders`` (2 partitions, so 2 tasks, each with its copy of the global store) and
``out``. Topology: ``orders.join(globalTable("companies"), (k, v) -> v, (o, c) -> c).to("out")``,
String serdes. Run 1 (``availableNow``): the N companies and a first 100K orders in one micro-batch
(``load``). Run 2 on the same state: ``--batches`` + 1 micro-batches of ``--batch-records`` orders
(``kspark.max.records.per.trigger``) with 1,000 company updates each (global topics are read whole
in every batch); the first (``warmup``: query start, state load) is reported apart. Per batch:
Spark's ``triggerExecution`` seconds; from ``KSPARK_TASK_TIMINGS`` per task call: checkpoint value
bytes, and the seconds opening the store, pickling the checkpoint and writing it to Spark's state.
The output's record count is checked (every order joins).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

UPDATES = 1_000  # company updates per steady batch


def child(args) -> dict:
    from kspark import KafkaStreams, Serdes, StreamsBuilder, StreamsConfig
    from kspark.runtime.partitioner import partitionForKey
    from kspark.spark._session import getOrCreateSession
    from kspark.topics import LocalTopics

    n, batch, batches = args.keys, args.batch_records, args.batches
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    timings = os.path.join(work, "timings.jsonl")
    os.environ["KSPARK_TASK_TIMINGS"] = timings  # before the session: the Python workers inherit it
    spark = getOrCreateSession(StreamsConfig({"kspark.spark.master": "local[2]", "application.id": "ab-global"}))
    topics = LocalTopics(os.path.join(work, "topics"))
    for name in ("companies", "orders", "out"):
        topics.createTopic(name, 2)
    s = Serdes.String()
    key = lambda i: f"c{i:08d}".encode()  # noqa: E731
    ts = [1_700_000_000_000]

    def stamp():
        ts[0] += 1
        return ts[0]

    topics.produce("companies", [(key(i), f"company-{i:016d}".encode(), stamp()) for i in range(n)],
                   partitioner=partitionForKey)

    def orders(start: int, count: int):
        topics.produce("orders", [(f"o{i}".encode(), key((i * 7919) % n), stamp()) for i in range(start, start + count)],
                       partitioner=partitionForKey)

    orders(0, batch)

    def topology():
        b = StreamsBuilder()
        table = b.globalTable("companies")
        b.stream("orders").join(table, lambda k, v: v, lambda o, c: c).to("out")
        return b.build()

    props = {"application.id": "ab-global", "kspark.topics.dir": os.path.join(work, "topics"),
             "state.dir": os.path.join(work, "state"), "default.key.serde": s, "default.value.serde": s,
             "kspark.max.records.per.trigger": batch}

    def run():
        streams = KafkaStreams(topology(), props, spark=spark)
        started = time.time()
        streams.start()
        streams.awaitTermination()
        progress = [json.loads(p.json) for p in streams.queries()[0].recentProgress]
        streams.close()
        return time.time() - started, progress

    loadSeconds, loadProgress = run()
    for i in range(batches + 1):
        orders(batch * (i + 1), batch)
        topics.produce("companies", [(key((j * 104_729 + i) % n), f"company-{j:016d}-u{i}".encode(), stamp())
                                     for j in range(UPDATES)], partitioner=partitionForKey)
    steadySeconds, progress = run()
    calls = [json.loads(line) for line in open(timings)]
    out = sum(topics.endOffset("out", p) for p in range(2))
    expectedOut = batch * (batches + 2)
    batchRows = [p for p in progress if p["numInputRows"] > 0]
    perBatch = [round(p["durationMs"]["triggerExecution"] / 1000, 3) for p in batchRows]

    def callsOf(batchIndex: int) -> list[dict]:
        """Task calls of the n-th batch of run 2 (2 tasks per batch, in order of start)."""
        steady = sorted(calls[len(calls) - 2 * len(batchRows):], key=lambda c: c["startedAt"])
        return steady[2 * batchIndex:2 * batchIndex + 2]

    def summary(rows):
        return {k: round(max(r[k] for r in rows), 4) for k in ("stateBytes", "storeOpenSeconds", "pickleSeconds",
                                                               "stateWriteSeconds", "processSeconds")}

    load = [c for c in calls[:len(calls) - 2 * len(batchRows)]]
    return {
        "keys": n, "batch_records": batch, "updates_per_batch": UPDATES, "tasks": 2,
        "load_seconds": round(loadSeconds, 2), "load_batch_seconds": [round(p["durationMs"]["triggerExecution"] / 1000, 3)
                                                                    for p in loadProgress if p["numInputRows"] > 0],
        "load_tasks": summary(load) if load else None,
        "warmup_seconds": perBatch[0] if perBatch else None,
        "steady_seconds": perBatch[1:],
        "steady_mean_seconds": round(sum(perBatch[1:]) / max(1, len(perBatch) - 1), 3),
        "steady_tasks_max": summary([c for b in range(1, len(batchRows)) for c in callsOf(b)]),
        "run2_seconds": round(steadySeconds, 2),
        "output_records": out, "output_ok": out == expectedOut,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--trees", default="")
    parser.add_argument("--keys", default="100000,1000000")
    parser.add_argument("--batch-records", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=1200)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "kspark-ab-global"))
    parser.add_argument("--out")
    parser.add_argument("--lock", help="run each child under flock on this file")
    args = parser.parse_args()
    if args.child:
        args.keys = int(args.keys)
        print(json.dumps(child(args)), flush=True)
        return
    trees = dict(t.split("=", 1) for t in args.trees.split(","))
    for n in (int(k) for k in args.keys.split(",")):
        for tree, path in trees.items():
            env = {**os.environ, "PYTHONPATH": os.path.abspath(path)}
            cmd = [sys.executable, __file__, "--child", "--keys", str(n), "--batch-records", str(args.batch_records),
                   "--batches", str(args.batches), "--work", f"{args.work}-{tree}"]
            if args.lock:  # each child holds the machine's heavy-work lock for its own run only
                cmd = ["flock", args.lock] + cmd
            started = time.time()
            # its own process group: a timed-out child is killed with its JVM and Python workers
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            try:
                stdout, stderr = proc.communicate(timeout=args.timeout)
                lines = [line for line in stdout.splitlines() if line.startswith("{")]
                result = json.loads(lines[-1]) if lines else {"error": stderr[-3000:]}
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.communicate()
                result = {"error": f"timed out after {args.timeout} s"}
            result = {"tree": tree, "keys": n, "wall_seconds": round(time.time() - started, 1), **result}
            line = json.dumps(result)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(line + "\n")
            shutil.rmtree(f"{args.work}-{tree}", ignore_errors=True)


if __name__ == "__main__":
    main()
