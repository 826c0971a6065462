"""One P2 task in process, as the Spark host runs it (``StreamTask.processAll`` then ``commit``
over the task's input as ``RawRecordColumns``), on the local topics a P2 run left in
``work/bench/p2/topics``: µs per record, and a digest of the output to compare two versions.

``p2_task.py [--subtopology 1] [--partition 0] [--reps 3]`` with the kspark on ``sys.path``
(``PYTHONPATH=<other>/src`` for the version to compare); ``--floor`` times instead a loop over
the same prices with nothing of kspark: orjson, the example's extractor and joiners, two dict
reads and copies per price (what no host can do without)."""

import argparse
import gc
import hashlib
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import valuation_signals as vs  # noqa: E402

from kspark.config import StreamsConfig  # noqa: E402
from kspark.runtime.stream_task import StreamTask  # noqa: E402
from kspark.spark._task_processor import _rawColumns  # noqa: E402
from kspark.topics import LocalTopics  # noqa: E402
from kspark.topology._topology import Subtopology  # noqa: E402

APP = "bench-p2"


def task(topics: LocalTopics, subtopology: int, partition: int) -> StreamTask:
    topology = vs.buildTopology()
    sub = [s for s in topology.subtopologies() if ("prices" in s.sourceTopics) == (subtopology == 1)][0]
    globalSubs = topology.globalSubtopologies()
    stores = sub.stores + [n for g in globalSubs for n in g.stores]
    merged = Subtopology(sub.id, sub.nodes + [n for g in globalSubs for n in g.nodes], stores)
    external = ("prices", "valuations", "companies", "signals")
    t = StreamTask(f"{subtopology}_{partition}", merged,
                   {n: b for n, b in topology.storeBuilders().items() if n in stores},
                   StreamsConfig({"application.id": APP}), partition,
                   lambda name: name if name in external else f"{APP}-{name}", topics.partitionsFor)
    t.initialize()
    for name in t.queueOf:
        topic, _, globalPartition = name.partition("@")
        p = int(globalPartition) if globalPartition else partition
        table = topics.read(topic, p, 0, topics.endOffset(topic, p))
        t.addRecordColumns(name, _rawColumns([table], t.queueOf[name].extractsMetadataTimestamp()), lag=0)
    return t


def floor(topics: LocalTopics, partition: int) -> None:
    prices = topics.read("prices", partition, 0, topics.endOffset("prices", partition))
    repartitioned = f"{APP}-valuations-by-code-repartition"
    valuations = topics.read(repartitioned, partition, 0, topics.endOffset(repartitioned, partition))
    table = dict(zip(valuations.column("key").to_pylist(), map(orjson.loads, valuations.column("value").to_pylist())))
    companies = topics.read("companies", 0, 0, topics.endOffset("companies", 0))
    master = {k.decode(): orjson.loads(v) for k, v in zip(companies.column("key").to_pylist(),
                                                          companies.column("value").to_pylist())}
    cheaper, extractor = vs.cheaperThan(vs.DEFAULT_THRESHOLD), vs.SnapshotTimestampExtractor()

    class Value:  # what the extractor reads: record.value()
        __slots__ = ("v",)

        def __init__(self, v):
            self.v = v

        def value(self):
            return self.v

    keys, values = prices.column("key").to_pylist(), prices.column("value").to_pylist()
    started, candidates = time.perf_counter(), 0
    for k, v in zip(keys, values):
        key, price = k.decode(), orjson.loads(v)
        extractor.extract(Value(price), -1)
        valuation = table.get(k)
        if valuation is None:
            continue
        joined = vs.realtimeValuation(price, valuation.copy())
        company = master.get(joined["code"])
        if company is not None:
            candidates += cheaper(key, vs.withCompany(joined, company.copy()))
    seconds = time.perf_counter() - started
    print(f"floor: {len(keys)} prices, {seconds / len(keys) * 1e6:.2f} us per price, {candidates} candidates")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--topics", default=str(ROOT / "work" / "bench" / "p2" / "topics"))
    parser.add_argument("--subtopology", type=int, default=1, choices=(0, 1))
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--floor", action="store_true")
    args = parser.parse_args()
    topics = LocalTopics(args.topics)
    if topics.partitionsFor("prices") is None:
        sys.exit(f"no P2 topics in {args.topics}: run bench/run.py --only p2 first (it leaves them there)")
    if args.floor:
        floor(topics, args.partition)
        return
    perRecord, cpuPerRecord = [], []
    for _ in range(args.reps):
        t = task(topics, args.subtopology, args.partition)
        n = sum(q.size() for q in t.queueOf.values())
        started, cpuStarted = time.perf_counter(), time.process_time()
        t.processAll(0)
        t.commit()
        perRecord.append((time.perf_counter() - started) / n * 1e6)
        cpuPerRecord.append((time.process_time() - cpuStarted) / n * 1e6)
        out = t.drainProduced()
        digest = hashlib.sha256(repr([(r.topic, r.partition, r.timestamp, r.key, r.value) for r in out]).encode())
        del t
        gc.collect()
    print(f"task {args.subtopology}_{args.partition}: {n} records, us per record {[round(x, 2) for x in perRecord]} "
          f"(CPU {[round(x, 2) for x in cpuPerRecord]}), "
          f"{len(out)} produced, digest {digest.hexdigest()[:12]}")


if __name__ == "__main__":
    main()
