"""The cost of a batch's pending writes over a long run (bench/README.md round 24): one task
database (``kspark.state._rocksdb.TaskStateDB``) through ``--batches`` batches of what a host
does per batch, ``writePending`` of ``--keys`` changed keys then ``reconcile`` (the next batch
knows its predecessor committed), timed per window of ``--batches / 5`` batches; and the same
writes applied at once (``TaskStateDB.write``, the continuous host's commit, ``applyNow`` in the results).

``PYTHONPATH=src python bench/ab/pending_reconcile.py [--batches 5000] [--keys 1]`` with the
kspark to measure on ``sys.path``; one JSON line per window (``ms_per_batch``, ``mode``)."""

import argparse
import json
import tempfile
import time

from kspark.state._rocksdb import TaskStateDB


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=5000)
    parser.add_argument("--keys", type=int, default=1, help="keys changed per batch")
    args = parser.parse_args()
    window = max(1, args.batches // 5)
    for mode in ("pending", "applyNow"):
        db = TaskStateDB(tempfile.mkdtemp(prefix="kspark-pending-"), 64 << 20)
        db.markApplied("c", None)
        last = time.perf_counter()
        for i in range(args.batches):
            writes = [(b"s\x00k%d" % (i * args.keys + j), b"x" * 50) for j in range(args.keys)]
            if mode == "pending":
                db.writePending(writes, f"v{i}", i)
                db.reconcile("c", f"v{i}")
            else:
                db.write(writes)
            if (i + 1) % window == 0:
                now = time.perf_counter()
                print(json.dumps({"benchmark": "pending writes per batch", "mode": mode, "keys": args.keys,
                                  "batches": i + 1, "ms_per_batch": round((now - last) / window * 1000, 3)}),
                      flush=True)
                last = now
        db.close()


if __name__ == "__main__":
    main()
