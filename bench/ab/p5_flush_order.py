"""The order of a key-value store's flush (bench/README.md round 38), in one process: one task
database (kspark's RocksDB options) loaded with ``--keys`` P5 keys, then ``--batches`` pairs of
flush-sized writes of ``--dirty`` distinct random keys' count values, one pair member taking the
keys in the dirty set's hash order (the flush before round 38), the other in key order
(``sorted(dirty)``, as ``PersistentKeyValueStore._flush`` now does), alternating which goes first.
Prints the thread CPU µs per key from the dirty set to the written batch (the sort, the batch's
build and RocksDB's write), for each order.

``PYTHONPATH=src .venv/bin/python bench/ab/p5_flush_order.py [--seed 1] [--keys 2500000]
[--dirty 2500] [--batches 1000]``. No Spark or Kafka needed."""

import argparse
import random
import shutil
import struct
import tempfile
import time

from kspark.state._rocksdb import TaskStateDB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keys", type=int, default=2_500_000, help="keys in the task's store (P5's 10M / 4)")
    parser.add_argument("--dirty", type=int, default=2500, help="distinct keys per flush (a stream thread's commit)")
    parser.add_argument("--batches", type=int, default=1000)
    parser.add_argument("--memory-bytes", type=int, default=402653184)
    args = parser.parse_args()
    path = tempfile.mkdtemp(prefix="p5-flush-order-")
    db = TaskStateDB(path, args.memory_bytes)
    try:
        prefix = b"\x00\x01counts\x00"
        keys = [b"k%08d" % i for i in range(args.keys)]
        for i in range(0, args.keys, 100_000):
            db.write([(prefix + k, struct.pack(">qq", 0, 1)) for k in keys[i:i + 100_000]])
        db.db.flush()
        time.sleep(3)  # the load's compactions
        rng = random.Random(args.seed)
        cpu = {"hash order": 0.0, "key order": 0.0}
        for batch in range(args.batches):
            for order in (("hash order", "key order") if batch % 2 else ("key order", "hash order")):
                dirty = set(rng.sample(keys, args.dirty))
                value = struct.pack(">qq", batch, 2)
                started = time.thread_time()
                db.write([(prefix + kb, value) for kb in (sorted(dirty) if order == "key order" else dirty)])
                cpu[order] += time.thread_time() - started
        perKey = {order: round(s / args.batches / args.dirty * 1e6, 3) for order, s in cpu.items()}
        print(f"seed {args.seed}, {args.keys:,} keys, {args.batches} x {args.dirty} dirty keys per order: "
              f"thread CPU us per key {perKey}")
    finally:
        db.close()
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
