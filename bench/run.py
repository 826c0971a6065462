"""kspark benchmarks: one JSON object per benchmark on stdout.

Fields: ``benchmark``, ``records`` (input records), ``seconds`` (wall, query start to end, incl.
Spark's per-query startup; input generation and SparkSession creation excluded),
``records_per_s``, ``cores`` (Spark: the local[N] master; in process: 1),
``records_per_s_per_core``, ``peak_rss_mb`` (Spark: peak summed RSS of this process and all its
descendants — the Spark JVM and the Python workers — sampled every second during the
benchmark; in process: this process's peak RSS so far), ``cpu_seconds`` (CPU used by that
process tree, or by this process, during the benchmark) and
``records_per_cpu_s`` (less sensitive than wall time to other work on a shared machine),
``load_avg_1m`` at the start, and per-benchmark extras.

Benchmarks (comparison systems run in the same process, on the same input):

- ``P3``: session count (30 min gap, no grace, every update emitted) through
  ``TopologyTestDriver``, record at a time, over the NASA log replicated (inputs.py).
- ``P3-list`` (with ``p3``): the same records and topology piped with one ``pipeRecordList``, which a
  fused task processes at once (same output as record at a time).
- ``P3-tumbling`` (with ``p3``): the same through a 30 min tumbling-window count (no target).
- ``P3-java`` (``p3-java``, needs ``make jvm``): the P3 topology and records in Kafka Streams
  4.3.1's own ``TopologyTestDriver`` (bench/java), record at a time, default RocksDB session
  store and in-memory store; must give P3's output (count and digest).
- ``P3-bytewax``: Bytewax 0.21 ``count_window`` with a 30 min ``SessionWindower`` on the same
  records (emits final counts only; needs ``pip install -e ".[bench]"``).
- ``Q11``/``Q3`` (Nexmark shapes, in process): session count of bids per bidder (10 s gap);
  auctions joined with a KTable of persons from OR/ID/CA (KStream-KTable join).
- ``P1``: the P3 topology on Spark ``local[2]`` (Kafka Streams semantics, updates emitted);
  ``P1-native``: Spark's ``groupBy(session_window(ts, "30 minutes"), host).count()``, append
  mode, on the same records.
- ``P2``: the valuation-signal pipeline of examples/valuation_signals.py on Spark (repartition +
  KStream-KTable join + dedup store, and the example's GlobalKTable join with the company
  master when it has one) over KRX snapshots replicated with shifted codes; records = all input
  topics' records.
- ``P4`` (``p4``, needs ``make jvm``): P3's topology end to end on a local Kafka broker,
  kspark on Spark ``local[2]`` against Java Kafka Streams (2 stream threads), both
  exactly_once_v2, same input topic; throughput over a backlog, latency in a rate-limited
  phase (see :func:`p4`); the outputs must be equal (count and digest).

Flags: ``--records`` (P1 and P1-native, default 1,000,000), ``--p2-records`` (prices, default
300,000), ``--p3-records`` (P3 and Bytewax, default 200,000), ``--nexmark-records`` (default
200,000), ``--only NAME,...`` (subset: p3,p3-java,bytewax,nexmark,dsl20,p1,p1-native,p1-kafka,p2,p2-kafka,p4),
``--p4-records`` (default 200,000), ``--p4-trigger``, ``--p4-live-rate``, ``--p4-live-seconds``, ``--scaling`` (adds P1
at 1M, 3M and 10M records on local[2]), ``--cores`` (adds P1 at ``--records`` on local[1] and
local[2]), ``--batch-records`` (records per Spark micro-batch, default 200,000; P1-native reads
as many rows per trigger). See bench/README.md for the run times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
os.environ.setdefault("KSPARK_PROGRESS", "none")  # stdout stays one JSON object per benchmark

import inputs  # noqa: E402

GAP = timedelta(minutes=30)
BATCH_RECORDS = 200_000  # records per micro-batch of P1, P1-native and P2 (--batch-records)
BYTEWAX_BATCH = 10_000  # items per source batch: Bytewax checks every live session key once per batch


# ---------------------------------------------------------------------- measuring
_TICK = os.sysconf("SC_CLK_TCK")


def _tree(root: int, exclude: tuple = ()) -> dict[int, tuple[int, float]]:
    """``{pid: (VmRSS kB, CPU seconds so far)}`` of ``root`` and all its descendants, from /proc,
    without the processes in ``exclude`` and their descendants."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/status") as f:
                kb = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        info[int(entry)] = (kb, (int(fields[11]) + int(fields[12])) / _TICK)  # utime + stime
    out, stack = {}, [root]
    while stack:
        pid = stack.pop()
        if pid in exclude:
            continue
        if pid in info:
            out[pid] = info[pid]
        stack.extend(children.get(pid, ()))
    return out


class PeakRss:
    """Samples the process tree every ``interval`` s while the ``with`` block runs: peak summed
    RSS, and CPU seconds used (per process: last sample minus its value at the start; a
    process that exits loses at most its last ``interval``).

    With ``tree=False`` (in-process benchmarks) nothing is sampled, since a sampling thread
    would take the GIL from the benchmark: CPU is this process's, and the peak RSS is the
    process's lifetime peak (``ru_maxrss``)."""

    def __init__(self, interval: float = 1.0, tree: bool = True, exclude: tuple = ()) -> None:
        self.interval, self.peakKb, self.peakChildrenKb, self.tree = interval, 0, 0, tree
        self.exclude = exclude  # pids left out with their descendants (a Kafka broker this process started)
        self._stop = threading.Event()
        self._cpuStart: dict[int, float] = {}
        self._cpuLast: dict[int, float] = {}

    def _sample(self) -> None:
        tree = _tree(os.getpid(), self.exclude)
        self.peakKb = max(self.peakKb, sum(kb for kb, _ in tree.values()))
        me = os.getpid()
        self.peakChildrenKb = max(self.peakChildrenKb, sum(kb for pid, (kb, _) in tree.items() if pid != me))
        for pid, (_, cpu) in tree.items():
            self._cpuLast[pid] = cpu

    def cpuSeconds(self) -> float:
        return sum(cpu - self._cpuStart.get(pid, 0.0) for pid, cpu in self._cpuLast.items())

    def __enter__(self) -> "PeakRss":
        if not self.tree:
            self._cpu0 = time.process_time()
            return self
        self._cpuStart = {pid: cpu for pid, (_, cpu) in _tree(os.getpid(), self.exclude).items()}
        self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __exit__(self, *exc) -> None:
        if not self.tree:
            self._cpuLast = {0: time.process_time() - self._cpu0}
            self.peakKb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            return
        self._stop.set()
        self._thread.join()
        self._sample()


def result(name: str, records: int, seconds: float, cores: int, rss: PeakRss, load: float, **extra) -> dict:
    out = {"benchmark": name, "records": records, "seconds": round(seconds, 2),
           "records_per_s": round(records / seconds), "cores": cores,
           "records_per_s_per_core": round(records / seconds / cores),
           "peak_rss_mb": round(rss.peakKb / 1024),
           **({"spark_rss_mb": round(rss.peakChildrenKb / 1024)} if rss.tree else {}),
           "cpu_seconds": round(rss.cpuSeconds(), 1),
           "records_per_cpu_s": round(records / max(rss.cpuSeconds(), 1e-9)), "load_avg_1m": round(load, 2), **extra}
    print(json.dumps(out), flush=True)
    return out


def measured(fn, tree: bool = True, exclude: tuple = ()):
    """Run ``fn()`` -> (records, extra dict) under the RSS sampler (``exclude``: pids left out with
    their descendants); returns (records, seconds, rss, load, extra)."""
    load = os.getloadavg()[0]
    with PeakRss(tree=tree, exclude=exclude) as rss:
        started = time.time()
        records, extra = fn()
        seconds = time.time() - started
    return records, seconds, rss, load, extra


def javaResult(name: str, j: dict, load: float, **extra) -> dict:
    """A Java program's JSON (records, seconds, cpu_seconds, peak_rss_mb: measured inside its JVM)
    as a benchmark line."""
    out = {"benchmark": name, "records": j["records"], "seconds": round(j["seconds"], 2),
           "records_per_s": round(j["records"] / j["seconds"]), "cores": 1 if "TopologyTestDriver" in name else 2,
           "peak_rss_mb": j["peak_rss_mb"], "cpu_seconds": round(j["cpu_seconds"], 1),
           "records_per_cpu_s": round(j["records"] / max(j["cpu_seconds"], 1e-9)), "load_avg_1m": round(load, 2),
           **extra}
    out["records_per_s_per_core"] = round(out["records_per_s"] / out["cores"])
    print(json.dumps(out), flush=True)
    return out


# ---------------------------------------------------------------------- Java comparisons
JAVA_SOURCES = Path(__file__).resolve().parent / "java"
JAVA_CLASSES = Path.home() / ".cache" / "kspark" / "bench"  # compiled classes, outside git


def javaCommand(mainClass: str, *args: str) -> list[str]:
    """The command running ``mainClass`` of bench/java (compiled once per source version against
    the jars of ``make jvm``)."""
    from kspark.testing._jvm import compileJava, javaExecutable

    return [javaExecutable(), "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp", compileJava(JAVA_SOURCES, JAVA_CLASSES), mainClass, *args]


def runJava(mainClass: str, *args: str) -> list[dict]:
    """Run a bench/java program to its end; its JSON lines (a failure raises with its output)."""
    import subprocess

    done = subprocess.run(javaCommand(mainClass, *args), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{mainClass} failed ({done.returncode}):\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def outputDigest(records) -> str:
    """SHA-256 over ``(key bytes, value bytes, timestamp)`` records in order, as bench/java's
    ``SessionCount.Digest``: per record the key's length (4 bytes big endian, -1 for null) and
    bytes, the value's likewise, the timestamp (8 bytes big endian)."""
    import hashlib
    import struct

    sha = hashlib.sha256()
    for key, value, ts in records:
        sha.update(struct.pack(">i", -1 if key is None else len(key)) + (key or b"")
                   + struct.pack(">i", -1 if value is None else len(value)) + (value or b"") + struct.pack(">q", ts))
    return sha.hexdigest()


def checkSameOutput(what: str, ksparkCount: int, ksparkDigest: str, javaCount: int, javaDigest: str) -> None:
    """Fail the run unless kspark and Kafka Streams wrote the same records (count, then digest)."""
    if ksparkCount != javaCount or ksparkDigest != javaDigest:
        raise SystemExit(f"{what}: kspark wrote {ksparkCount} records (digest {ksparkDigest}), Kafka Streams "
                         f"{javaCount} (digest {javaDigest}): the outputs differ")


# ---------------------------------------------------------------------- topologies
def sessionCountTopology(source: str, sink: str, gap: timedelta):
    from kspark import Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, WindowedSerdes

    b = StreamsBuilder()
    (b.stream(source).groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(gap))
     .count(materialized=Materialized.as_("sessions").withCachingDisabled())
     .toStream().to(sink, Produced.with_(WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String()), Serdes.Long())))
    return b.build()


def tumblingCountTopology(source: str, sink: str, size: timedelta):
    """Tumbling-window count per key, cache off: every update emitted (the time-window fused loop)."""
    from kspark import Materialized, Produced, Serdes, StreamsBuilder, TimeWindows, WindowedSerdes

    b = StreamsBuilder()
    (b.stream(source).groupByKey()
     .windowedBy(TimeWindows.ofSizeWithNoGrace(size))
     .count(materialized=Materialized.as_("windows").withCachingDisabled())
     .toStream().to(sink, Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), int(size / timedelta(
         milliseconds=1))), Serdes.Long())))
    return b.build()


def q3Topology():
    """Nexmark Q3 shape: auctions (keyed by seller id, str) joined with persons (by id) from OR/ID/CA."""
    from kspark import Consumed, Produced, Serdes, StreamsBuilder

    b = StreamsBuilder()
    persons = (b.stream("persons", Consumed.with_(Serdes.String(), Serdes.JSON()))
               .filter(lambda k, p: p["state"] in ("OR", "ID", "CA")).toTable())
    (b.stream("auctions", Consumed.with_(Serdes.String(), Serdes.JSON()))
     .filter(lambda k, a: a["category"] == 10)
     .join(persons, lambda a, p: {"name": p["name"], "state": p["state"], "auction": a["id"]})
     .to("q3", Produced.with_(Serdes.String(), Serdes.JSON())))
    return b.build()


# ---------------------------------------------------------------------- in-process benchmarks
def p3(df) -> dict:
    """P3; its output's digest (``outputDigest``, computed after the clock stopped) goes into the JSON."""
    outputs: list = []
    m = measured(_pipedOneByOne(df, sessionCountTopology("requests", "sessions", GAP), "sessions", outputs), tree=False)
    digest = outputDigest((r.key(), r.value(), r.timestamp()) for r in outputs[0].readRecordsToList())
    m[4]["digest"] = digest
    return _report("P3 kspark session count, TopologyTestDriver (record at a time)", m, 1)


def p3Java(df, work: Path, kspark: dict) -> list[dict]:
    """P3 in Kafka Streams 4.3.1's own ``TopologyTestDriver`` (bench/java/bench/Ttd.java), record at
    a time, on P3's records (written to a file first: the JVM's start and its reading of the file
    are outside its clock). Two JVMs: the topology as written (the default RocksDB session store)
    and with ``Stores.inMemorySessionStore``; each times two passes with a new driver each, the
    first (JIT cold, as in a test suite's first test) reported, the second as
    ``second_pass_records_per_s``. Fails unless Java's output has as many records as ``kspark``'s
    (P3's JSON) and the same digest."""
    path = work / "p3-records.tsv"
    with path.open("w") as f:
        f.writelines(f"{h}\t{t}\n" for h, t in zip(df["host"].tolist(), df["ts"].tolist()))
    out = []
    for store in ("rocksdb", "memory"):
        load = os.getloadavg()[0]
        first, second = runJava("bench.Ttd", str(path), "2", store)
        checkSameOutput(f"P3 Java TTD ({store})", kspark["updates_emitted"], kspark["digest"],
                        first["outputs"], first["digest"])
        label = "default RocksDB session store" if store == "rocksdb" else "Stores.inMemorySessionStore"
        out.append(javaResult(
            f"P3-java Kafka Streams 4.3.1 TopologyTestDriver (record at a time), {label}", first, load,
            updates_emitted=first["outputs"], digest=first["digest"],
            second_pass_records_per_s=round(second["records"] / second["seconds"]),
            kspark_vs_java=round(kspark["records_per_s"] / (first["records"] / first["seconds"]), 2)))
    return out


def p3List(df) -> dict:
    """P3's records and topology piped as one ``pipeRecordList``: TTD-1 on a fused task processes the
    queued records at once (the session-count runs), same output as piping them one by one."""
    return _report("P3-list kspark session count, TopologyTestDriver pipeRecordList (every update emitted)",
                   measured(_pipedAsList(df, sessionCountTopology("requests", "sessions", GAP), "sessions"),
                            tree=False), 1)


def _pipedAsList(df, topology, sink: str):
    """``run()`` piping the (host, ts) records into ``topology``'s driver with one ``pipeRecordList``
    (the ``TestRecord`` list is built inside the timed run)."""
    from kspark.testing import TestRecord, TopologyTestDriver

    rows = list(zip(df["host"].tolist(), df["ts"].tolist()))

    def run():
        with TopologyTestDriver(topology) as d:
            d.createInputTopic("requests").pipeRecordList([TestRecord(host, None, ts) for host, ts in rows])
            return len(rows), {"updates_emitted": d.createOutputTopic(sink).getQueueSize()}

    return run


def p3Tumbling(df) -> dict:
    """P3's records and driver, 30 min tumbling windows instead of sessions (not a target; the
    other windowed aggregation with a fused loop)."""
    return _report("P3-tumbling kspark tumbling-window count, TopologyTestDriver (record at a time)",
                   measured(_pipedOneByOne(df, tumblingCountTopology("requests", "windows", GAP), "windows"),
                            tree=False), 1)


def _pipedOneByOne(df, topology, sink: str, outputs: list | None = None):
    """``run()`` piping the (host, ts) records one by one into ``topology``'s driver; appends to
    ``outputs`` the sink's output topic with byte deserializers (read after the clock stops)."""
    from kspark import Serdes
    from kspark.testing import TopologyTestDriver

    rows = list(zip(df["host"].tolist(), df["ts"].tolist()))

    def run():
        with TopologyTestDriver(topology) as d:
            i = d.createInputTopic("requests")
            for host, ts in rows:
                i.pipeInput(host, None, ts)
            if outputs is not None:
                outputs.append(d.createOutputTopic(sink, Serdes.ByteArray(), Serdes.ByteArray()))
            return len(rows), {"updates_emitted": d.createOutputTopic(sink).getQueueSize()}

    return run


def p3Bytewax(df) -> dict | None:
    try:
        import bytewax  # noqa: F401
        import bytewax.operators as op
        from bytewax.dataflow import Dataflow
        from bytewax.operators.windowing import EventClock, SessionWindower, count_window
        from bytewax.testing import TestingSink, TestingSource, run_main
    except ImportError as e:
        print(json.dumps({"benchmark": "P3-bytewax", "skipped": f"bytewax not installed ({e}); pip install -e '.[bench]'"}), flush=True)
        return None
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    rows = [(host, epoch + timedelta(milliseconds=ts)) for host, ts in zip(df["host"].tolist(), df["ts"].tolist())]

    def run():
        out: list = []
        flow = Dataflow("p3-bytewax")
        stream = op.input("in", flow, TestingSource(rows, batch_size=BYTEWAX_BATCH))
        clock = EventClock(lambda r: r[1], wait_for_system_duration=timedelta(0))
        counts = count_window("count", stream, clock, SessionWindower(gap=GAP), lambda r: r[0])
        op.output("out", counts.down, TestingSink(out))
        run_main(flow)
        return len(rows), {"sessions_emitted": len(out), "version": _version("bytewax"), "source_batch_size": BYTEWAX_BATCH}

    return _report("P3-bytewax Bytewax 0.21 count_window(SessionWindower), final counts only", measured(run, tree=False), 1)


def nexmarkQ11(events) -> dict:
    from kspark import Serdes
    from kspark.testing import TopologyTestDriver

    bids = events["bids"]

    def run():
        with TopologyTestDriver(sessionCountTopology("bids", "q11", timedelta(seconds=10))) as d:
            i = d.createInputTopic("bids", Serdes.String(), Serdes.String())
            for auction, bidder, price, ts in bids:
                i.pipeInput(str(bidder), None, ts)
            return len(bids), {"updates_emitted": d.createOutputTopic("q11").getQueueSize()}

    return _report("Q11 Nexmark-shape session count of bids per bidder (10 s gap), TopologyTestDriver", measured(run, tree=False), 1)


def nexmarkQ3(events) -> dict:
    from kspark import Serdes
    from kspark.testing import TopologyTestDriver

    merged = sorted([("persons", str(p[0]), {"id": p[0], "name": p[1], "state": p[2]}, p[3]) for p in events["persons"]]
                    + [("auctions", str(a[1]), {"id": a[0], "seller": a[1], "category": a[2]}, a[3]) for a in events["auctions"]],
                    key=lambda r: r[3])

    def run():
        with TopologyTestDriver(q3Topology()) as d:
            topics = {t: d.createInputTopic(t, Serdes.String(), Serdes.JSON()) for t in ("persons", "auctions")}
            for topic, key, value, ts in merged:
                topics[topic].pipeInput(key, value, ts)
            return len(merged), {"joined_emitted": d.createOutputTopic("q3", Serdes.String(), Serdes.JSON()).getQueueSize()}

    return _report("Q3 Nexmark-shape auctions x persons KStream-KTable join, TopologyTestDriver", measured(run, tree=False), 1)


def _nexmarkDriverRun(name: str, topology, inputs, sink: str):
    """``inputs``: (topic, key, value, ts) merged by time, piped one by one (String serdes)."""
    from kspark import Serdes
    from kspark.testing import TopologyTestDriver

    def run():
        config = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String(),
                  "statestore.cache.max.bytes": 0}
        with TopologyTestDriver(topology, config) as d:
            topics = {t: d.createInputTopic(t) for t in {r[0] for r in inputs}}
            for topic, key, value, ts in inputs:
                topics[topic].pipeInput(key, value, ts)
            return len(inputs), {"updates_emitted": d.createOutputTopic(sink).getQueueSize()}

    return _report(name, measured(run, tree=False), 1)


def _bidsAndAuctions(events) -> list:
    """Bids and auctions keyed by auction id (str), value a short str, merged by time."""
    return sorted([("bids", str(a), str(price), ts) for a, _, price, ts in events["bids"]]
                  + [("auctions", str(a), str(seller), ts) for a, seller, _, ts in events["auctions"]], key=lambda r: r[3])


def streamJoinBench(events) -> dict:
    """Issue 20: bids leftJoin auctions by auction id within 1 s (grace 100 ms): the two window
    stores and the outer-join store, record at a time."""
    from kspark import JoinWindows, StreamsBuilder

    b = StreamsBuilder()
    (b.stream("bids").leftJoin(b.stream("auctions"), lambda bid, seller: f"{bid}:{seller}",
                               JoinWindows.ofTimeDifferenceAndGrace(timedelta(seconds=1), timedelta(milliseconds=100)))
     .to("joined"))
    return _nexmarkDriverRun("SSJ Nexmark bids leftJoin auctions (1 s window), KStream-KStream join, TopologyTestDriver",
                             b.build(), _bidsAndAuctions(events), "joined")


def slidingBench(events) -> dict:
    """Issue 20: bids per auction in 10 s sliding windows (every update emitted), record at a time."""
    from kspark import Materialized, Serdes, SlidingWindows, StreamsBuilder

    b = StreamsBuilder()
    (b.stream("bids").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(timedelta(seconds=10)))
     .count(Materialized.with_(Serdes.String(), Serdes.Long())).toStream().mapValues(str).to("counts"))
    bids = [r for r in _bidsAndAuctions(events) if r[0] == "bids"]
    return _nexmarkDriverRun("SLW Nexmark bids per auction in 10 s sliding windows, TopologyTestDriver", b.build(),
                             bids, "counts")


def cogroupBench(events) -> dict:
    """Issue 20: bids and auctions cogrouped per auction id into one 10 s tumbling-window aggregate."""
    from kspark import Materialized, Serdes, StreamsBuilder, TimeWindows

    b = StreamsBuilder()
    (b.stream("bids").groupByKey().cogroup(lambda k, v, agg: agg + 1)
     .cogroup(b.stream("auctions").groupByKey(), lambda k, v, agg: agg + 1000)
     .windowedBy(TimeWindows.ofSizeWithNoGrace(timedelta(seconds=10)))
     .aggregate(lambda: 0, Materialized.with_(Serdes.String(), Serdes.Long())).toStream().mapValues(str).to("activity"))
    return _nexmarkDriverRun("COG Nexmark bids+auctions cogrouped per auction, 10 s windows, TopologyTestDriver",
                             b.build(), _bidsAndAuctions(events), "activity")


def fkJoinBench(events) -> dict:
    """Issue 20: each bidder's latest bid (a KTable keyed by bidder, value ``auction|price``)
    foreign-key joined with the auctions table on the auction id: subscriptions, responses and
    the hash check, a changed foreign key (the bidder moved to another auction) unsubscribing the
    old one, record at a time."""
    from kspark import StreamsBuilder

    b = StreamsBuilder()
    (b.table("latest-bids").join(b.table("auctions"), lambda bid: bid.split("|")[0], lambda bid, seller: f"{bid}|{seller}")
     .toStream().to("bid-sellers"))
    inputs = sorted([("latest-bids", str(bidder), f"{a}|{price}", ts) for a, bidder, price, ts in events["bids"]]
                    + [("auctions", str(a), str(seller), ts) for a, seller, _, ts in events["auctions"]],
                    key=lambda r: r[3])
    return _nexmarkDriverRun("FK Nexmark bidders' latest bid FK-joined with auctions, KTable-KTable foreign-key join, "
                             "TopologyTestDriver", b.build(), inputs, "bid-sellers")


def versionedJoinBench(events) -> dict:
    """Issue 20: bids joined with the auctions table as of each bid's time (a versioned store,
    1 min history) with a 100 ms grace buffer (``Joined.withGracePeriod``), record at a time."""
    from kspark import Joined, Materialized, Stores, StreamsBuilder

    b = StreamsBuilder()
    auctions = b.table("auctions", Materialized.as_(Stores.persistentVersionedKeyValueStore("auctions-v", timedelta(minutes=1))))
    (b.stream("bids").join(auctions, lambda bid, seller: f"{bid}:{seller}",
                           Joined.as_("vj").withGracePeriod(timedelta(milliseconds=100)))
     .to("bid-sellers"))
    return _nexmarkDriverRun("VJ Nexmark bids join versioned auctions as of the bid's time, 100 ms grace, "
                             "TopologyTestDriver", b.build(), _bidsAndAuctions(events), "bid-sellers")


# ---------------------------------------------------------------------- Spark benchmarks
def p1(df, work: Path, spark, cores: int, label: str = "", broker=None) -> dict:
    """P1: kspark's session count on Spark over local topics, or over Kafka topics of ``broker``
    (exactly_once_v2: one transaction per task and micro-batch)."""
    from kspark import KafkaStreams
    from kspark.runtime.partitioner import partitionForKey
    from kspark.topics import LocalTopics, openTopics

    backend = "kafka" if broker is not None else "local"
    work = work / f"p1-{len(df)}-{cores}{label.strip(' ()')}-{backend}"  # --scaling and --cores both run 1M on local[2]
    config = {"application.id": f"bench-p1-{backend}-{len(df)}-{cores}", "state.dir": str(work / "state"),
              "kspark.max.records.per.trigger": BATCH_RECORDS}
    if broker is not None:
        config.update({"bootstrap.servers": broker.bootstrapServers, "processing.guarantee": "exactly_once_v2"})
        topics = openTopics(config)
        source, sink = f"requests-{len(df)}", f"sessions-{len(df)}"
    else:
        config["kspark.topics.dir"] = str(work / "topics")
        topics = LocalTopics(work / "topics")
        source, sink = "requests", "sessions"
    topics.createTopic(source, 4)
    topics.createTopic(sink, 4)
    keys = [h.encode() for h in df["host"]]
    ts = df["ts"].to_numpy()
    if broker is not None:
        topics.produce(source, zip(keys, [None] * len(keys), ts.tolist()), partitioner=partitionForKey)
    else:
        parts = np.array([partitionForKey(k, 4) for k in keys])
        for p in range(4):
            idx = np.nonzero(parts == p)[0]
            topics.append(source, p, pa.table({
                "timestamp": pa.array(ts[idx], pa.int64()),
                "key": pa.array([keys[i] for i in idx], pa.binary()),
                "value": pa.nulls(len(idx), pa.binary()), "headers": pa.nulls(len(idx), pa.binary())}))
        del parts, idx
    n = len(df)
    del keys, ts  # the input is in the topics now; only the caller's df stays in this process

    def run():
        streams = KafkaStreams(sessionCountTopology(source, sink, GAP), config, spark=spark)
        streams.start()
        streams.awaitTermination()
        streams.close()
        return n, {"tasks": 4, "max_records_per_batch": BATCH_RECORDS}

    m = measured(run)
    # counted after the clock stopped (Kafka's end offsets include transaction markers)
    m[4]["updates_emitted"] = sum(topics.read(sink, p, 0, end).num_rows for p, end in topics.endOffsets(sink).items())
    on = " over Kafka topics (local broker, exactly_once_v2)" if broker else ""
    return _report(f"P1 kspark session count on Spark local[{cores}]{on}{label}", m, cores)


def p1Native(df, work: Path, spark, cores: int) -> dict:
    from pyspark.sql import functions as F

    src = work / "native-input"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    files = max(1, -(-len(df) // BATCH_RECORDS))  # as many rows per micro-batch as P1
    size = -(-len(df) // files)
    for i, j in enumerate(range(0, len(df), size)):
        chunk = df.iloc[j:j + size]
        pq.write_table(pa.table({"host": chunk["host"].to_numpy(), "ts": pa.array(chunk["ts"].to_numpy() * 1000, pa.timestamp("us", tz="UTC"))}),
                       src / f"part-{i:04d}.parquet")
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    checkpoint = work / f"native-ck-{len(df)}-{cores}"

    def run():
        stream = (spark.readStream.schema("host string, ts timestamp").option("maxFilesPerTrigger", 1).parquet(str(src))
                  .withWatermark("ts", "30 minutes").groupBy(F.session_window("ts", "30 minutes"), "host").count())
        q = (stream.writeStream.format("noop").outputMode("append").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
        q.awaitTermination()
        return len(df), {"max_records_per_batch": size, "note": "not Kafka Streams semantics: append only (final counts), global watermark"}

    return _report(f"P1-native Spark groupBy(session_window).count() append, local[{cores}]", measured(run), cores)


def p2(prices: list[dict], valuations: list[dict], work: Path, spark, cores: int, broker=None) -> dict:
    """P2: the flagship example on Spark over local topics, or over Kafka topics of ``broker``
    (exactly_once_v2, as P4)."""
    import valuation_signals as vs

    from kspark import KafkaStreams
    from kspark.topics import LocalTopics, openTopics

    work = work / ("p2-kafka" if broker is not None else "p2")
    config = {"application.id": "bench-p2", "state.dir": str(work / "state"), "kspark.max.records.per.trigger": BATCH_RECORDS}
    if broker is not None:
        config.update({"bootstrap.servers": broker.bootstrapServers, "processing.guarantee": "exactly_once_v2"})
        topics = openTopics(config)
    else:
        config["kspark.topics.dir"] = str(work / "topics")
        topics = LocalTopics(work / "topics")
    vs.loadTopics(topics, prices, valuations)

    def run():
        streams = KafkaStreams(vs.buildTopology(), config, spark=spark)
        streams.start()
        streams.awaitTermination()
        streams.close()
        inputTopics = [t for t in ("prices", "valuations", "companies") if topics.partitionsFor(t)]
        counts = {t: sum(topics.endOffsets(t).values()) for t in inputTopics}
        return sum(counts.values()), {
            **counts,
            "signals_emitted": sum(topics.endOffsets("signals").values()), "max_records_per_batch": BATCH_RECORDS,
            "note": "two queries (valuations repartition, then join + dedup); JSON serde, ISO timestamp extractor"}

    m = measured(run)
    if broker is not None:  # Kafka's end offsets include transaction markers: count the records
        m[4]["signals_emitted"] = sum(topics.read("signals", p, 0, end).num_rows for p, end in topics.endOffsets("signals").items())
    on = " over Kafka topics (local broker, exactly_once_v2)" if broker else ""
    return _report(f"P2 kspark valuation pipeline (repartition + KStream-KTable join + dedup) on Spark local[{cores}]{on}", m, cores)


def p4(df, work: Path, spark, broker, trigger: str, liveRate: int, liveSeconds: float) -> list[dict]:
    """P4: the P3/P1 session count end to end on Kafka, kspark on Spark ``local[2]`` against the
    same topology in Java Kafka Streams (bench/java/bench/Streams.java: 2 stream threads,
    exactly_once_v2, commit.interval.ms 100), on one broker and one input topic, one after the
    other (never both at once on the 2 cores).

    Throughput (backlog): the input topic (4 partitions) is filled first; each system then
    processes all of it. kspark's clock runs from ``start()`` to the end of its ``availableNow``
    run (query start-up included; CPU and RSS of this process tree without the broker); Java's
    from ``KafkaStreams.start()`` until its committed offsets reach the input's end (inside the
    JVM; JVM start excluded). Both outputs are read back ``read_committed`` and must have the same
    number of records and the same digest (per partition, in offset order), else the run fails.

    Latency (a separate, rate-limited phase per system; backlog timestamps are from 1995): the
    system runs continuously (kspark: ``kspark.trigger`` = ``trigger``) on its own new input
    topic; once 100 warm-up records have come out, ``liveRate`` records/s for ``liveSeconds``
    are produced with timestamp = wall-clock now, and a ``read_committed`` consumer takes the
    latency of each output record as (the time its batch was received) - (its timestamp, which
    is that of the input record that caused it). Both phases see the same keys; the number of
    outputs is known in advance (every record after a key's first adds an update and a
    tombstone) and must be reached."""
    from kspark import KafkaStreams
    from kspark.runtime.partitioner import partitionForKey
    from kspark.topics import openTopics

    n = len(df)
    topics = openTopics({"bootstrap.servers": broker.bootstrapServers})
    source, outK, outJ = f"p4-requests-{n}", f"p4-sessions-kspark-{n}", f"p4-sessions-java-{n}"
    for t in (source, outK, outJ):
        topics.createTopic(t, 4)
    hosts = df["host"].tolist()
    topics.produce(source, zip((h.encode() for h in hosts), [None] * n, df["ts"].tolist()), partitioner=partitionForKey)
    work = work / f"p4-{n}"
    eos = {"bootstrap.servers": broker.bootstrapServers, "processing.guarantee": "exactly_once_v2"}

    def ksparkRun():
        streams = KafkaStreams(sessionCountTopology(source, outK, GAP), {
            **eos, "application.id": f"bench-p4-kspark-{n}", "state.dir": str(work / "kspark-state"),
            "kspark.max.records.per.trigger": BATCH_RECORDS}, spark=spark)
        streams.start()
        streams.awaitTermination()
        streams.close()
        return n, {}

    note(f"P4: {n} records in {source}; kspark backlog run")
    brokerCpu = _cpuOf(broker.pid)
    m = measured(ksparkRun, exclude=(broker.pid,))
    ksparkBrokerCpu, brokerCpu = _cpuOf(broker.pid) - brokerCpu, _cpuOf(broker.pid)
    note(f"P4: kspark {m[1]:.1f} s; Java Kafka Streams backlog run")
    load = os.getloadavg()[0]
    [java] = runJava("bench.Streams", f"bootstrap={broker.bootstrapServers}", f"appId=bench-p4-java-{n}",
                     f"input={source}", f"output={outJ}", f"stateDir={work / 'java-state'}", "mode=backlog")
    javaBrokerCpu = _cpuOf(broker.pid) - brokerCpu
    note(f"P4: Java {java['seconds']:.1f} s; reading both outputs")
    ksparkCount, ksparkDigest = _topicDigest(topics, outK)
    javaCount, javaDigest = _topicDigest(topics, outJ)
    checkSameOutput("P4", ksparkCount, ksparkDigest, javaCount, javaDigest)

    liveHosts = [h.encode() for h in hosts[:max(1, int(liveRate * liveSeconds))]]

    def ksparkLive(src, out):
        streams = KafkaStreams(sessionCountTopology(src, out, GAP), {
            **eos, "application.id": f"bench-p4-live-kspark-{n}", "state.dir": str(work / "kspark-live-state"),
            "kspark.trigger": trigger}, spark=spark)
        streams.start()
        return streams.close

    def javaLive(src, out):
        import subprocess

        proc = subprocess.Popen(javaCommand("bench.Streams", f"bootstrap={broker.bootstrapServers}",
                                            f"appId=bench-p4-live-java-{n}", f"input={src}", f"output={out}",
                                            f"stateDir={work / 'java-live-state'}", "mode=live"),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if proc.stdout.readline().strip() != "RUNNING":
            raise SystemExit(f"the Java live run did not start: {proc.stdout.read()[-4000:]}")

        def stop():
            proc.stdin.close()
            if proc.wait(60) != 0:
                raise SystemExit(f"the Java live run failed: {proc.stdout.read()[-4000:]}")
        return stop

    ksparkLatency = liveLatency("kspark", topics, liveHosts, liveRate, liveSeconds, ksparkLive)
    javaLatency = liveLatency("java", topics, liveHosts, liveRate, liveSeconds, javaLive)
    rows = [_report("P4 kspark session count Kafka -> Spark local[2] -> Kafka, exactly_once_v2", (
        *m[:4], {"updates_emitted": ksparkCount, "digest": ksparkDigest, "broker_cpu_seconds": round(ksparkBrokerCpu, 1),
                 "max_records_per_batch": BATCH_RECORDS, "trigger_backlog": "availableNow",
                 "trigger_latency_phase": trigger, **ksparkLatency}), 2)]
    rows.append(javaResult("P4-java Kafka Streams 4.3.1 session count, 2 stream threads, exactly_once_v2, "
                           "commit.interval.ms 100", java, load, updates_emitted=javaCount, digest=javaDigest,
                           broker_cpu_seconds=round(javaBrokerCpu, 1), **javaLatency))
    rows[0]["kspark_vs_java"] = round(rows[0]["records_per_s"] / rows[1]["records_per_s"], 2)
    print(json.dumps({"benchmark": "P4 comparison", "kspark_vs_java_records_per_s": rows[0]["kspark_vs_java"],
                      "outputs_equal": True, "updates_emitted": ksparkCount}), flush=True)
    return rows


def note(text: str) -> None:
    """Progress on stderr (stdout stays one JSON object per benchmark)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def _cpuOf(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and its descendants."""
    return sum(cpu for _, cpu in _tree(pid).values())


def _topicDigest(topics, name: str) -> tuple[int, str]:
    """(records, ``outputDigest``) of a topic read ``read_committed``, partition by partition."""
    count = 0

    def rows():
        nonlocal count
        for p, end in sorted(topics.endOffsets(name).items()):
            for t in topics.readBatches(name, p, 0, end, maxRows=200_000):
                count += t.num_rows
                yield from zip(t["key"].to_pylist(), t["value"].to_pylist(), t["timestamp"].to_pylist())

    digest = outputDigest(rows())
    return count, digest


def liveLatency(system: str, topics, keys: list[bytes], rate: int, seconds: float, startApp) -> dict:
    """The latency phase of :func:`p4` for one system: ``startApp(source, sink)`` starts it and
    returns its stop function."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kspark.runtime.partitioner import partitionForKey

    src, out = f"p4-live-{system}-{len(keys)}", f"p4-live-out-{system}-{len(keys)}"
    topics.createTopic(src, 4)
    topics.createTopic(out, 4)
    consumer = Consumer({"bootstrap.servers": topics.servers, "group.id": f"bench-latency-{system}",
                         "isolation.level": "read_committed", "enable.auto.commit": False, "fetch.wait.max.ms": 10})
    consumer.assign([TopicPartition(out, p, 0) for p in range(4)])
    producer = Producer({"bootstrap.servers": topics.servers, "enable.idempotence": True, "linger.ms": 1})

    def send(key: bytes) -> int:
        ts = int(time.time() * 1000)
        producer.produce(src, value=None, key=key, partition=partitionForKey(key, 4), timestamp=ts)
        producer.poll(0)
        return ts

    def receive(until, deadline: float, since: int = 0) -> list[float]:
        """Latencies (ms) of output records with timestamp >= ``since`` until ``until(count)``."""
        latencies: list[float] = []
        while not until(len(latencies)):
            if time.time() > deadline:
                raise SystemExit(f"P4 latency phase ({system}): {len(latencies)} outputs in time, expected "
                                 f"{expected or 'not known yet'}")
            messages = consumer.consume(10_000, 0.02)
            now = time.time() * 1000
            for msg in messages:
                if msg.error() is None and msg.timestamp()[1] >= since:
                    latencies.append(now - msg.timestamp()[1])
        return latencies

    expected: list[int] = []  # the number of outputs, once every record is sent
    note(f"P4 latency phase: {system}")
    stop = startApp(src, out)
    try:
        for i in range(100):
            send(b"warmup-%d" % i)
        producer.flush()
        receive(lambda got: got >= 100, time.time() + 300)  # started, tasks assigned, first batch done
        since = int(time.time() * 1000) + 1
        time.sleep(0.002)

        def produceAtRate():
            firstTs: dict[bytes, int] = {}
            outputs, started = 0, time.time()
            for i, key in enumerate(keys):
                delay = started + i / rate - time.time()
                if delay > 0:
                    time.sleep(delay)
                ts = send(key)
                # a key's records all fall in one session (30 min gap, timestamps never decrease):
                # a record adds the merged session's update, and a tombstone for the old session
                # unless the merged window is the record's own [ts, ts] (Kafka's
                # KStreamSessionWindowAggregate: the key's first record, or all before it at ts)
                outputs += 1 if firstTs.setdefault(key, ts) == ts else 2
            producer.flush()
            expected.append(outputs)

        sender = threading.Thread(target=produceAtRate, daemon=True)
        sender.start()
        latencies = receive(lambda got: bool(expected) and got >= expected[0], time.time() + seconds + 120, since)
        sender.join()
        extra, drainUntil = 0, time.time() + 2  # nothing more must come
        while time.time() < drainUntil:
            extra += sum(1 for m in consumer.consume(10_000, 0.1) if m.error() is None and m.timestamp()[1] >= since)
    finally:
        stop()
        consumer.close()
    expected = expected[0]
    if extra or len(latencies) != expected:
        raise SystemExit(f"P4 latency phase ({system}): {len(latencies) + extra} outputs, expected {expected}")
    q = np.percentile(latencies, [50, 95, 100])
    return {"latency_ms_p50": round(q[0]), "latency_ms_p95": round(q[1]), "latency_ms_max": round(q[2]),
            "latency_input_records": len(keys), "latency_input_rate": rate, "latency_outputs": len(latencies)}


# ---------------------------------------------------------------------- driver
def _report(name: str, m: tuple, cores: int) -> dict:
    records, seconds, rss, load, extra = m
    return result(name, records, seconds, cores, rss, load, **extra)


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def session(cores: int):
    from kspark.config import StreamsConfig
    from kspark.spark._session import getOrCreateSession

    return getOrCreateSession(StreamsConfig({"kspark.spark.master": f"local[{cores}]", "application.id": "bench"}))


def main(argv=None) -> int:
    global BATCH_RECORDS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="P1 and P1-native input records")
    parser.add_argument("--p2-records", type=int, default=300_000, help="P2 price records (valuations added)")
    parser.add_argument("--p3-records", type=int, default=200_000, help="P3 and Bytewax input records")
    parser.add_argument("--nexmark-records", type=int, default=200_000, help="Nexmark events (Q11 uses the bids)")
    parser.add_argument("--only", default="p3,p3-java,bytewax,nexmark,dsl20,p1-native,p1,p1-kafka,p2,p2-kafka,p4",
                        help="comma-separated subset")
    parser.add_argument("--p4-records", type=int, default=200_000, help="P4 input records (Kafka, both systems)")
    parser.add_argument("--p4-trigger", default="100 milliseconds",
                        help="kspark.trigger of P4's latency phase (its backlog phase runs availableNow)")
    parser.add_argument("--p4-live-rate", type=int, default=2_000, help="records/s of P4's latency phase")
    parser.add_argument("--p4-live-seconds", type=float, default=15, help="length of P4's latency phase (s)")
    parser.add_argument("--scaling", action="store_true", help="add P1 at 1M, 3M, 10M records (local[2])")
    parser.add_argument("--cores", action="store_true", help="add P1 at --records on local[1] and local[2]")
    parser.add_argument("--batch-records", type=int, default=BATCH_RECORDS,
                        help="records per micro-batch on Spark (P1 and P2: kspark.max.records.per.trigger; "
                             "P1-native: rows per input file, one file per trigger)")
    parser.add_argument("--work", type=Path, default=Path("work/bench"))
    args = parser.parse_args(argv)
    BATCH_RECORDS = args.batch_records
    only = {x.strip() for x in args.only.split(",")}
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    import logging

    logging.getLogger("kspark").setLevel(logging.ERROR)  # dropped-record warnings would flood stderr

    if only & {"p3", "p3-java", "bytewax"}:
        df = inputs.nasaRequests(args.p3_records)
        if only & {"p3", "p3-java"}:
            ksparkP3 = p3(df)
            if "p3-java" in only:
                p3Java(df, args.work, ksparkP3)
        if "p3" in only:
            p3List(df)
            p3Tumbling(df)
        if "bytewax" in only:
            p3Bytewax(df)
    if only & {"nexmark", "dsl20"}:
        events = inputs.nexmark(args.nexmark_records)
        if "nexmark" in only:
            nexmarkQ11(events)
            nexmarkQ3(events)
        if "dsl20" in only:
            streamJoinBench(events)
            slidingBench(events)
            cogroupBench(events)
            fkJoinBench(events)
            versionedJoinBench(events)
    sparkRuns = only & {"p1", "p1-native", "p1-kafka", "p2", "p2-kafka", "p4"} or args.scaling or args.cores
    if sparkRuns:
        spark = session(2)
        if only & {"p1", "p1-native", "p1-kafka"}:
            df = inputs.nasaRequests(args.records)
            if "p1-native" in only:
                p1Native(df, args.work, spark, 2)
            if "p1" in only:
                p1(df, args.work, spark, 2)
            if "p1-kafka" in only:  # the same input and topology, topics on a Kafka broker (make jvm)
                from kspark.testing import KafkaBroker

                with KafkaBroker(args.work / "kafka") as broker:
                    p1(df, args.work, spark, 2, broker=broker)
        if "p4" in only:
            from kspark.testing import KafkaBroker

            with KafkaBroker(args.work / "kafka-p4", heapMb=1024) as broker:
                p4(inputs.nasaRequests(args.p4_records), args.work, spark, broker, args.p4_trigger,
                   args.p4_live_rate, args.p4_live_seconds)
        if only & {"p2", "p2-kafka"}:
            prices, valuations = inputs.krxInputs(args.p2_records)
            if "p2" in only:
                p2(prices, valuations, args.work, spark, 2)
            if "p2-kafka" in only:  # the same input and example, topics on a Kafka broker (make jvm)
                from kspark.testing import KafkaBroker

                with KafkaBroker(args.work / "kafka-p2") as broker:
                    p2(prices, valuations, args.work, spark, 2, broker=broker)
        if args.scaling:
            for n in (1_000_000, 3_000_000, 10_000_000):
                p1(inputs.nasaRequests(n), args.work, spark, 2, " (scaling)")
        if args.cores:
            df = inputs.nasaRequests(args.records)
            p1(df, args.work, spark, 2, " (cores)")
            spark.stop()
            spark = session(1)
            p1(df, args.work, spark, 1, " (cores)")
        spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
