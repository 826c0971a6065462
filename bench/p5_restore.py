"""P5's restore time (issue 32): one task's count store restored from its changelog into an
empty local store, as a task does that starts on an executor without its store (first run on
a machine, a moved task, a lost worker).

The changelog is a local topic partition holding ``--keys`` records, one per key, as a compacted
Kafka changelog holds them at P5's scale (P5's keys ``k%08d``, 8-byte Long counts, each record
tagged with its batch's ``kspark.checkpoint`` header): P5 at N keys has 4 tasks of N/4 keys
each, restored in parallel, two at a time on ``local[2]``. Prints one JSON line: seconds, records
per second, CPU-s and peak RSS of this process, store bytes on disk.

    flock /tmp/kspark-heavy.lock .venv/bin/python bench/p5_restore.py --keys 2500000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import P5_TS0, p5KeyArray  # noqa: E402

from kspark import Materialized, StreamsBuilder  # noqa: E402
from kspark.runtime.stream_task import encodeHeaders  # noqa: E402
from kspark.state._persistent import CHANGELOG_HEADER, PersistentTaskState, makePersistent  # noqa: E402
from kspark.state._restore import restoreStores  # noqa: E402
from kspark.topics import LocalTopics  # noqa: E402

CHECKPOINT = "p5-restore"


def countStore():
    """P5's ``counts`` store as its topology builds it (timestamped key-value, String keys)."""
    b = StreamsBuilder()
    b.stream("events").groupByKey().count(Materialized.as_("counts"))
    builder = b.build().storeBuilders()["counts"]
    return builder.build()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2_500_000, help="keys in the task's store (P5's N / 4)")
    parser.add_argument("--chunk", type=int, default=500_000, help="records per appended changelog chunk")
    parser.add_argument("--memory-bytes", type=int, default=128 << 20, help="kspark.store.memory.bytes")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="p5-restore-"))
    try:
        topics = LocalTopics(work / "topics")
        topic = "p5-counts-changelog"
        topics.createTopic(topic, 1)
        header = encodeHeaders(((CHANGELOG_HEADER, f"{CHECKPOINT}:0".encode()),))
        written = time.perf_counter()
        for lo in range(0, args.keys, args.chunk):
            ids = np.arange(lo, min(lo + args.chunk, args.keys), dtype=np.int64)
            values = np.frombuffer(b"".join(struct.pack(">q", 1 + i % 7) for i in ids.tolist()), "S8")
            topics.append(topic, 0, pa.table({
                "timestamp": pa.array(P5_TS0 + ids, pa.int64()), "key": p5KeyArray(ids),
                "value": pa.array(values.tolist(), pa.binary()), "headers": pa.array([header] * len(ids), pa.binary())}))
        written = time.perf_counter() - written

        store = countStore()
        assert makePersistent(store)
        state = PersistentTaskState({"counts": store}, {"counts": topic}, str(work / "stores" / "0_0"),
                                    args.memory_bytes, 100_000)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        assert state.open(CHECKPOINT, None) is False
        applied = restoreStores(state, topics, 0, CHECKPOINT, 1, localTopics=True, taskId="0_0")
        state.restored(CHECKPOINT, "v1")
        state.close()
        seconds, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        # read back: a sample of keys, with their counts
        state.open(CHECKPOINT, "v1")
        sample = np.random.default_rng(32).integers(0, args.keys, 1000)
        wrong = sum(store.get(f"k{i:08d}") != (1 + i % 7, P5_TS0 + i) for i in sample.tolist())
        state.close()
        storeBytes = sum(f.stat().st_size for f in (work / "stores").rglob("*") if f.is_file())
        print(json.dumps({
            "benchmark": "P5 restore: one task's count store from its changelog into an empty local store",
            "keys": args.keys, "records_applied": applied, "seconds": round(seconds, 2),
            "records_per_s": round(applied / seconds), "cpu_seconds": round(cpu, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "store_bytes": storeBytes, "changelog_write_seconds": round(written, 2),
            "sampled_keys_wrong": int(wrong), "memory_bytes": args.memory_bytes, "cpus": os.cpu_count()}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
