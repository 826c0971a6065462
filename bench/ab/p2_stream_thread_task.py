"""One P2 join task (sub-topology 1, one partition) in process, fed as a continuous-mode stream
thread feeds it (``kspark.spark._stream_threads``): the company master first (the global store
restored, its queue then empty, ``idleOnGlobal`` False), the repartitioned valuations, then the
prices in consume-sized chunks as ``RawRecord`` lists, ``processAll`` per chunk, a commit (the
record caches, then the persistent stores' flush applied at once) every 10 chunks. Prints CPU µs
per record and a digest of the output to compare two versions.

``p2_stream_thread_task.py [--prices 600000] [--partition 0] [--chunk 3000] [--reps 3]
[--in-memory]`` with the kspark to measure on ``sys.path`` (``PYTHONPATH=<checkout>/src``). The
input is built from ``../shared/data`` (bench/inputs.py), no Spark or Kafka needed."""

import argparse
import gc
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "bench"))
import inputs  # noqa: E402
import valuation_signals as vs  # noqa: E402

from kspark.config import StreamsConfig  # noqa: E402
from kspark.runtime.partitioner import partitionForKey  # noqa: E402
from kspark.runtime.record_queue import RawRecord  # noqa: E402
from kspark.runtime.stream_task import StreamTask  # noqa: E402
from kspark.serialization import Serdes  # noqa: E402
from kspark.topology._topology import Subtopology  # noqa: E402

APP = "bench-p2"
REPARTITION = f"{APP}-valuations-by-code-repartition"


def records(nPrices: int, partition: int):
    """(key bytes, value bytes, timestamp) of the partition's prices and repartitioned valuations,
    and of the company master, as P2's topics hold them."""
    prices, valuations = inputs.krxInputs(nPrices)
    key, json = Serdes.String(), Serdes.JSON()
    ingestion = 1_790_000_000_000  # a price's record timestamp (its event time is in the payload)
    mine = lambda rows: [r for r in rows if partitionForKey(r[0], vs.PRICE_PARTITIONS) == partition]  # noqa: E731
    return (mine([(key.serialize("prices", r["code"]), json.serialize("prices", r), ingestion) for r in prices]),
            mine([(key.serialize(REPARTITION, k), json.serialize(REPARTITION, v), ts)
                  for k, v, ts in map(vs.valuationRecord, valuations)]),
            [(key.serialize("companies", k), json.serialize("companies", v), ts)
             for k, v, ts in vs.companyRecords(valuations)])


def raw(rows) -> list:
    return [RawRecord(offset, ts, k, v, (), None) for offset, (k, v, ts) in enumerate(rows)]


def task(partition: int, storeDir: str | None) -> StreamTask:
    topology = vs.buildTopology()
    sub = [s for s in topology.subtopologies() if "prices" in s.sourceTopics][0]
    globalSubs = topology.globalSubtopologies()
    stores = sub.stores + [n for g in globalSubs for n in g.stores]
    merged = Subtopology(sub.id, sub.nodes + [n for g in globalSubs for n in g.nodes], stores)
    external = ("prices", "valuations", "companies", "signals")
    partitions = {"prices": 5, "signals": 5, "companies": 1, REPARTITION: 5}
    t = StreamTask(f"1_{partition}", merged, {n: b for n, b in topology.storeBuilders().items() if n in stores},
                   StreamsConfig({"application.id": APP, "max.task.idle.ms": 5000}), partition,
                   lambda name: name if name in external else f"{APP}-{name}", partitions.get)
    t.partitionGroup.idleOnGlobal = False  # as the stream threads read global partitions
    t.persistentState = None
    if storeDir is not None:  # the stream threads' stores: RocksDB, flushed at once at each commit
        from kspark.state._persistent import PersistentTaskState, makePersistent

        persistent = {n: s for n, s in t.stores.items() if makePersistent(s)}
        t.persistentState = PersistentTaskState(persistent, {n: f"{APP}-{n}-changelog" for n in persistent},
                                                storeDir, 64 << 20, 100_000)
        if t.persistentState.open("bench", None):
            raise SystemExit(f"{storeDir} already held stores")
        t.persistentState.restored("bench", None)
    t.initialize()
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prices", type=int, default=600_000)
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=3000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--in-memory", action="store_true", help="in-memory stores (TopologyTestDriver's)")
    args = parser.parse_args()
    prices, valuations, companies = records(args.prices, args.partition)
    cpu = []
    for _ in range(args.reps):
        storeDir = None if args.in_memory else tempfile.mkdtemp(prefix="kspark-p2-task-")
        t = task(args.partition, storeDir)
        names = {name.partition("@")[0]: name for name in t.queueOf}
        for q in t.queueOf.values():
            q.lag = 0
        t.addRecords(names["companies"], raw(companies), lag=0)
        t.processAll(0)  # the empty partitions' idle time starts
        t.processAll(10_000)  # past max.task.idle.ms: the global store filled, its queue empty
        t.commit()
        out = t.drainProduced()
        t.addRecords(REPARTITION, raw(valuations), lag=0)
        queued = raw(prices)
        now, n = 20_000, 0
        started = time.process_time()
        for i, start in enumerate(range(0, len(queued), args.chunk)):
            t.addRecords("prices", queued[start:start + args.chunk], lag=0)
            now += 10_000
            n += t.processAll(now)
            if i % 10 == 9:
                t.commit()
                if t.persistentState is not None:
                    t.persistentState.flush("", i, t.partitionGroup.streamTime, "bench", applyNow=True)
        t.commit()
        cpu.append((time.process_time() - started) / n * 1e6)
        out = [r for r in out + t.drainProduced() if r.topic == "signals"]
        digest = hashlib.sha256(repr([(r.partition, r.timestamp, r.key, r.value) for r in out]).encode()).hexdigest()
        if t.persistentState is not None:
            t.persistentState.close()
            shutil.rmtree(storeDir, ignore_errors=True)
        del t
        gc.collect()
    print(f"task 1_{args.partition}: {n} records ({len(prices)} prices), CPU us per record "
          f"{[round(x, 2) for x in cpu]}, {len(out)} signals, digest {digest[:12]}")


if __name__ == "__main__":
    main()
