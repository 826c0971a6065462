"""One P5 task (issue 32's uncached count, one partition) in process over a persistent RocksDB
store holding ``--keys`` keys, fed as a continuous-mode stream thread feeds it
(``kspark.spark._stream_threads``): ``RawRecord`` chunks of ``--chunk`` records with keys drawn
uniformly from the loaded ones, ``processAll`` per chunk, and every ``--commit-every`` chunks a
commit: the task's, then the store's flush applied at once (``PersistentTaskState.flush``, as the
stream threads' commits do), the output and changelog records drained; Python's collector paused as
the stream threads pause it (``PausedCollector``). Prints CPU µs (the process,
RocksDB's background threads included) and wall µs per record of each repetition, the CPU µs per
record of the tasks' calls alone (``addRecords``, ``processAll``, the commit and the flush, on the
calling thread: without the background threads' compactions and the digest, which vary from run
to run more than most changes), and a digest of
the output and changelog records (each commit's changelog records sorted by key), to compare two versions of kspark on the same input.

The load writes the keys' counts (1) as a restore would (``restoreRecords``, 100K per write), so
it does not run through the task. Two stores of one process share RocksDB's memory bound as a
worker's tasks do with ``--tasks 2`` (their chunks alternate).

``p5_stream_thread_task.py [--keys 2500000] [--records 600000] [--chunk 1500] [--commit-every 1]
[--tasks 2] [--reps 3] [--memory-bytes 134217728]`` with the kspark to measure on ``sys.path``
(``PYTHONPATH=<checkout>/src``). No Spark or Kafka needed."""

import argparse
import gc
import hashlib
import random
import shutil
import struct
import tempfile
import time

from kspark import Consumed, Materialized, Produced, Serdes, StreamsBuilder
from kspark.config import StreamsConfig
from kspark.runtime.record_queue import RawRecord
from kspark.runtime.stream_task import StreamTask
from kspark.spark._stream_threads import PausedCollector
from kspark.state._changelog import ChangelogRecord
from kspark.state._persistent import PersistentTaskState, makePersistent

APP = "bench-p5"


def task(partition: int, storeDir: str, keys: list[bytes], memoryBytes: int, cacheEntries: int,
         compactionTrigger: int | None = None) -> StreamTask:
    """Task ``0_<partition>`` of P5's topology (``bench/run.py``'s ``p5Topology``) with its store
    persistent in ``storeDir`` and holding a count of 1 for each of ``keys``; ``compactionTrigger``
    as the host gives it (``PersistentTaskState``; None: RocksDB's default, as a stream thread's)."""
    b = StreamsBuilder()
    (b.stream("events", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .count(Materialized.as_("counts")).toStream().to("counts-out", Produced.with_(Serdes.String(), Serdes.Long())))
    topology = b.build()
    sub = topology.subtopologies()[0]
    t = StreamTask(f"0_{partition}", sub, topology.storeBuilders(),
                   StreamsConfig({"application.id": APP, "statestore.cache.max.bytes": 0}), partition,
                   lambda name: name if name in ("events", "counts-out") else f"{APP}-{name}", lambda _: 4)
    persistent = {n: s for n, s in t.stores.items() if makePersistent(s)}
    trigger = {} if compactionTrigger is None else {"compactionTrigger": compactionTrigger}  # (older kspark: none)
    t.persistentState = PersistentTaskState(persistent, {n: f"{APP}-{n}-changelog" for n in persistent},
                                            storeDir, memoryBytes, cacheEntries, **trigger)
    if t.persistentState.open("bench", None):
        raise SystemExit(f"{storeDir} already held stores")
    one = struct.pack(">q", 1)
    for start in range(0, len(keys), 100_000):
        t.persistentState.restoreRecords("counts", [ChangelogRecord(k, one, 0) for k in keys[start:start + 100_000]])
    t.persistentState.restored("bench", None)
    t.initialize()
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=2_500_000, help="keys per task")
    parser.add_argument("--records", type=int, default=600_000, help="steady records per task")
    parser.add_argument("--chunk", type=int, default=1500)
    parser.add_argument("--commit-every", type=int, default=1)
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--memory-bytes", type=int, default=128 << 20)
    parser.add_argument("--cache-entries", type=int, default=100_000, help="kspark.store.cache.max.entries")
    args = parser.parse_args()
    results = []
    for rep in range(args.reps):
        rng = random.Random(rep)
        dirs, tasks, ids = [], [], []
        for p in range(args.tasks):
            mine = [b"k%08d" % (i * args.tasks + p) for i in range(args.keys)]
            rng.shuffle(mine)
            dirs.append(tempfile.mkdtemp(prefix="kspark-p5-task-"))
            tasks.append(task(p, dirs[-1], mine, args.memory_bytes, args.cache_entries))
            ids.append(mine)
        queues = [[RawRecord(o, 1_000 + o, k, b"1", (), None) for o, k in enumerate(rng.choices(mine, k=args.records))]
                  for mine in ids]
        digest, n, now = hashlib.sha256(), 0, 0
        gc.collect()
        collector = PausedCollector().__enter__()  # as a stream thread's poll loop runs
        wall, cpu, taskCpu = time.perf_counter(), time.process_time(), 0.0
        for i, start in enumerate(range(0, args.records, args.chunk)):
            collector.maybeCollect()
            now += 10
            for t, queued in zip(tasks, queues):
                started = time.thread_time()
                t.addRecords("events", queued[start:start + args.chunk], lag=0)
                n += t.processAll(now)
                if i % args.commit_every == args.commit_every - 1 or start + args.chunk >= args.records:
                    t.commit()
                    changelog = t.persistentState.flush("", i, t.partitionGroup.streamTime, "bench", applyNow=True)
                    taskCpu += time.thread_time() - started
                    for r in t.drainProduced():
                        digest.update(b"%d %d %s %s|" % (r.partition, r.timestamp, r.key, r.value))
                    # a flush logs each key once, in the order of a set: sorted here
                    for _, key, value, timestamp, _ in sorted(changelog, key=lambda r: r[1]):
                        digest.update(b"%d %s %s|" % (timestamp, key, value))
                else:
                    taskCpu += time.thread_time() - started
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        collector.__exit__()
        results.append((1e6 * cpu / n, 1e6 * wall / n, 1e6 * taskCpu / n))
        for t, d in zip(tasks, dirs):
            t.persistentState.close()
            shutil.rmtree(d, ignore_errors=True)
        del tasks, queues
        gc.collect()
    print(f"{args.tasks} tasks x {args.keys:,} keys, {n:,} records: CPU us per record "
          f"{[round(c, 2) for c, _, _ in results]}, wall {[round(w, 2) for _, w, _ in results]}, the tasks' calls "
          f"(thread CPU) {[round(c, 2) for _, _, c in results]}, digest {digest.hexdigest()[:12]}")


if __name__ == "__main__":
    main()
