"""P5's tasks (issue 32's uncached count) in process, called as the Spark host's micro-batches
call them (``kspark.spark._task_processor``): per batch and task, the task's database opened at
the committed version (``PersistentTaskState.open``: the previous batch's pending writes applied),
``--batch`` records with keys drawn uniformly from the task's loaded keys processed, the task
committed, its changes flushed as pending under a new version, the database closed. All tasks
share one process, and so RocksDB's memory bound, as a Python worker's tasks do.

Prints, over the steady batches (the first ``--warmup`` left out), the medians per task call of
open, process, flush and close (wall ms), and the process's CPU ms per call: its RocksDB
background threads (flushes, compactions) included, which the wall times of the calls do not show;
then the mean CPU of the calls' own thread (open to close, the records' building included).
Then each task's database size on disk (MB).

``p5_microbatch_task.py [--keys 2500000] [--tasks 4] [--batches 16] [--warmup 4] [--batch 25000]
[--memory-bytes 402653184]`` with the kspark to measure on ``sys.path`` (``PYTHONPATH=<checkout>/src``).
No Spark or Kafka needed."""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from p5_stream_thread_task import task  # noqa: E402

from kspark.runtime.record_queue import RawRecord  # noqa: E402
from kspark.spark import _task_processor  # noqa: E402
from kspark.spark._stream_threads import PausedCollector  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=2_500_000, help="keys per task")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--batches", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=4, help="batches left out of the figures")
    parser.add_argument("--batch", type=int, default=25_000, help="records per task and batch")
    parser.add_argument("--memory-bytes", type=int, default=384 << 20)
    args = parser.parse_args()
    rng = random.Random(0)
    tasks, ids, dirs = [], [], []
    for p in range(args.tasks):
        mine = [b"k%08d" % (i * args.tasks + p) for i in range(args.keys)]
        rng.shuffle(mine)
        dirs.append(tempfile.mkdtemp(prefix="kspark-p5-mb-"))
        # the micro-batch host's compaction trigger (none before round 37)
        tasks.append(task(p, dirs[-1], mine, args.memory_bytes, 100_000,
                          getattr(_task_processor, "MICRO_BATCH_COMPACTION_TRIGGER", None)))
        ids.append(mine)
        tasks[-1].persistentState.close()
    versions: list = [None] * args.tasks  # the load marked the stores applied at version None
    calls, offset, now = [], 0, 0
    collector = PausedCollector().__enter__()  # as _task_processor's calls run
    for b in range(args.batches):
        if b == args.warmup:
            cpu = time.process_time()
        collector.maybeCollect()
        now += 1000
        for i, t in enumerate(tasks):
            stores = t.persistentState
            threadCpu = time.thread_time()
            opening = time.perf_counter()
            if not stores.open("bench", versions[i]):
                raise SystemExit(f"task {i}'s database is not at the committed version")
            opened = time.perf_counter()
            t.addRecords("events", [RawRecord(offset + o, now, k, b"1", (), None)
                                    for o, k in enumerate(rng.choices(ids[i], k=args.batch))], lag=0)
            offset += args.batch
            started = time.perf_counter()
            t.processAll(now)
            t.commit()
            processed = time.perf_counter()
            versions[i] = uuid.uuid4().hex
            stores.flush(versions[i], b, t.partitionGroup.streamTime, "bench")
            t.drainProduced()
            flushed = time.perf_counter()
            stores.close()
            closed = time.perf_counter()
            threadCpu = time.thread_time() - threadCpu
            if b >= args.warmup:
                calls.append((opened - opening, processed - started, flushed - processed, closed - flushed, threadCpu))
    cpu = time.process_time() - cpu
    collector.__exit__()

    def ms(i: int) -> float:
        return round(statistics.median(c[i] for c in calls) * 1000, 1)

    print(f"{args.tasks} tasks x {args.keys:,} keys, {args.batch:,} records per call, {len(calls)} steady calls: "
          f"open {ms(0)} ms, process {ms(1)} ms, flush {ms(2)} ms, close {ms(3)} ms (medians), "
          f"process CPU {round(cpu / len(calls) * 1000, 1)} ms per call, of which the calls' own thread "
          f"{round(sum(c[4] for c in calls) / len(calls) * 1000, 1)} ms (mean; the rest: RocksDB's background threads)")
    print("store MB on disk", [int(subprocess.check_output(["du", "-sm", d]).split()[0]) for d in dirs])
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
