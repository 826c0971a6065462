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
- ``P2-java`` (``p2-java``, needs ``make jvm``; issue 34 §3): P2's example on Kafka topics against
  its Java port, backlog throughput (see :func:`p2Java`); ``P2-live`` (``p2-live``): their
  latency at a fixed rate of prices (see :func:`p2Live`).
- ``P4`` (``p4``, needs ``make jvm``): P3's topology end to end on a local Kafka broker,
  kspark on Spark ``local[2]`` against Java Kafka Streams (2 stream threads), both
  exactly_once_v2, same input topic; throughput over a backlog, latency in a rate-limited
  phase (see :func:`p4`); the outputs must be equal (count and digest).
- ``P5`` (``p5``, ``p5-kafka``, ``p5-kafka-continuous``, ``p5-native``, ``p5-java``; issue 32, state
  at scale): a count per key over N distinct keys, loaded first, then steady micro-batches of 100K
  records on Spark ``local[2]``: kspark over local topics and over Kafka (exactly_once_v2; in
  micro-batches, and with ``kspark.trigger`` continuous timed as Kafka Streams is), Spark's own
  ``groupBy("key").count()`` and Kafka Streams 4.3.1 (bench/java/bench/KeyCount.java), each
  system and N in a child process of its own; per-batch seconds, CPU, RSS and store bytes on
  disk (see :func:`p5` and :func:`p5Spark`, bench/README.md round 18).

Flags: ``--records`` (P1 and P1-native, default 1,000,000), ``--p2-records`` (prices, default
300,000), ``--p3-records`` (P3 and Bytewax, default 200,000), ``--nexmark-records`` (default
200,000), ``--only NAME,...`` (subset: p3,p3-java,bytewax,nexmark,dsl20,p1,p1-native,p1-kafka,p2,p2-kafka,p2-java,p2-live,p4;
P5 only when named: p5,p5-kafka,p5-kafka-continuous,p5-native,p5-java), ``--p5-keys``, ``--p5-batches``, ``--p5-batch-records``,
``--p5-load-batch-records``, ``--p5-timeout``, ``--p5-config KEY=VALUE`` (repeatable: a config of kspark's P5 application),
``--p2-live-rate`` (default 2,000 prices/s; a list runs one phase per rate), ``--p2-live-seconds`` (15), ``--p2-trigger``
(``0 seconds``), ``--p4-records`` (default 200,000), ``--p4-trigger``, ``--p4-live-rate``, ``--p4-live-seconds``, ``--scaling`` (adds P1
at 1M, 3M and 10M records on local[2]), ``--cores`` (adds P1 at ``--records`` on local[1] and
local[2]), ``--batch-records`` (records per Spark micro-batch, default 200,000; P1-native reads
as many rows per trigger). See bench/README.md for the run times.
"""

from __future__ import annotations

import argparse
import itertools
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


def _continuousUntilCaughtUp(streams, caughtUp) -> dict:
    """Start a continuous kspark run, wait until ``caughtUp()`` (polled every 20 ms, as Java's
    clock polls) or a stream thread failed, then close it (which raises the failure); returns
    ``{"close_seconds": ...}`` for :func:`_clockToCaughtUp`."""
    streams.start()
    while not caughtUp():
        if streams._streamThreads.error is not None:
            break
        time.sleep(0.02)
    caught = time.time()
    streams.close()
    return {"close_seconds": round(time.time() - caught, 2)}


def _groupCaughtUp(topics, group: str, ends: dict[tuple[str, int], int]):
    """A ``caughtUp()`` for :func:`_continuousUntilCaughtUp` that does what Java's clock does
    (bench/java/bench/Offsets.java ``caughtUp``): one ListConsumerGroupOffsets request per call, with
    ``topics``' (``KafkaTopics``) admin client, against the inputs' end offsets ``ends`` ((topic,
    partition) -> offset) taken before the run. (Before round 26 each poll also listed the topics
    and their end offsets: about 8 requests every 20 ms, 1 CPU-s of the driver in a 25 s run,
    counted as kspark's.)"""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, p in sorted(ends)])]

    def caughtUp() -> bool:
        result = topics._retrying(lambda attemptS: topics._await(
            topics._adminClient().list_consumer_group_offsets(request, request_timeout=topics.timeoutS)[group], attemptS))
        committed = {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}
        return all(end <= 0 or committed.get(tp, -1) >= end for tp, end in ends.items())

    return caughtUp


def _warmInternalTopics(topics) -> None:
    """One consumer-group commit and one transaction on ``topics``' broker (a ``KafkaTopics``),
    so that ``__consumer_offsets`` and ``__transaction_state`` exist before either system runs.
    Whichever ran first on a new broker waited for their creation (about 1 s), and kspark runs
    first. (Before round 26, kspark did.)"""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({**topics.producerConfig, "transactional.id": "bench-warm-up"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.commit_transaction(30)
    consumer = Consumer({**topics.consumerConfig, "group.id": "bench-warm-up"})
    [name] = [t for t in topics._metadata().topics if not t.startswith("__")][:1]
    consumer.commit(offsets=[TopicPartition(name, 0, 0)], asynchronous=False)
    consumer.close()


def _clockToCaughtUp(m: tuple) -> tuple:
    """``measured``'s result for a continuous kspark run whose extra holds ``close_seconds`` (the
    ``close()`` after its committed offsets reached the inputs' ends): its seconds up to that point,
    where Java's clock stops (CPU and RSS still cover the ``close()``)."""
    return (m[0], m[1] - m[4]["close_seconds"], *m[2:])


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


def startJavaLive(mainClass: str, *args: str):
    """Start a bench/java program in ``mode=live``; returns once it prints "RUNNING". The
    function returned stops it (closes its standard input) and fails if it failed."""
    import subprocess

    proc = subprocess.Popen(javaCommand(mainClass, *args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "RUNNING":
        raise SystemExit(f"the Java live run did not start: {proc.stdout.read()[-4000:]}")

    def stop():
        proc.stdin.close()
        if proc.wait(60) != 0:
            raise SystemExit(f"the Java live run failed: {proc.stdout.read()[-4000:]}")
    return stop


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


def p2Java(prices: list[dict], valuations: list[dict], work: Path, spark, broker, trigger: str = "availableNow") -> list[dict]:
    """P2 against Java (issue 34): the flagship example on Kafka topics of ``broker``, kspark on
    Spark ``local[2]`` (as P2-kafka) and its Java port (bench/java/bench/Flagship.java: Kafka
    Streams 4.3.1, 2 stream threads, exactly_once_v2, max.task.idle.ms 5000) on the same input
    topics, one after the other. kspark's clock as P2's (CPU of this process tree without the
    broker); Java's from ``KafkaStreams.start()`` until its committed offsets reach the ends of
    prices and valuations (inside the JVM; CPU of the whole JVM). The broker's CPU during each
    run is ``broker_cpu_seconds``. Both signal topics are read back ``read_committed`` and must
    have the same records (count and digest, per partition in offset order, as P4). Latency:
    :func:`p2Live` (``--only p2-live``). ``trigger`` ``continuous`` (``--p2-java-trigger``): kspark's
    stream threads with ``max.task.idle.ms`` 5000 as the Java port, its clock as Java's: until the
    group's committed offsets reach the ends of prices and valuations, polled every 20 ms, without
    the ``close()`` that follows (``close_seconds``). (Not of the repartition topic: the valuations
    run to 03-31, the prices to 03-20, so each join task holds valuations after its last price,
    which it takes after ``max.task.idle.ms`` on its empty price partition; Java's clock stops
    before that 5 s, so did not kspark's until round 25.)"""
    import valuation_signals as vs

    from kspark import KafkaStreams
    from kspark.topics import openTopics

    work = work / "p2-java"
    topics = openTopics({"bootstrap.servers": broker.bootstrapServers})
    vs.loadTopics(topics, prices, valuations)
    topics.createTopic("signals-java", vs.SIGNAL_PARTITIONS)
    _warmInternalTopics(topics)
    config = {"application.id": "bench-p2-kspark", "state.dir": str(work / "state"),
              "kspark.max.records.per.trigger": BATCH_RECORDS, "bootstrap.servers": broker.bootstrapServers,
              "processing.guarantee": "exactly_once_v2"}
    records = len(prices) + len(valuations)
    if trigger == "continuous":
        config.update({"kspark.trigger": "continuous", "max.task.idle.ms": 5000})

    ends = {(t, p): o for t in ("prices", "valuations") for p, o in topics.endOffsets(t).items()}

    def run():
        streams = KafkaStreams(vs.buildTopology(), config, spark=spark)
        if trigger == "continuous":
            return records, _continuousUntilCaughtUp(streams, _groupCaughtUp(topics, "bench-p2-kspark", ends))
        streams.start()
        streams.awaitTermination()
        streams.close()
        return records, {}

    note(f"P2-java: {len(prices)} prices loaded; kspark run")
    brokerCpu = _cpuOf(broker.pid)
    m = _clockToCaughtUp(measured(run, exclude=(broker.pid,)))
    ksparkBrokerCpu, brokerCpu = _cpuOf(broker.pid) - brokerCpu, _cpuOf(broker.pid)
    note(f"P2-java: kspark {m[1]:.1f} s; Java run")
    load = os.getloadavg()[0]
    [java] = runJava("bench.Flagship", f"bootstrap={broker.bootstrapServers}", "appId=bench-p2-java",
                     f"stateDir={work / 'java-state'}", "signals=signals-java")
    javaBrokerCpu = _cpuOf(broker.pid) - brokerCpu
    ksparkCount, ksparkDigest = _topicDigest(topics, "signals")
    javaCount, javaDigest = _topicDigest(topics, "signals-java")
    checkSameOutput("P2-java", ksparkCount, ksparkDigest, javaCount, javaDigest)
    rows = [_report(f"P2 kspark valuation pipeline on Spark local[2] over Kafka, exactly_once_v2, kspark.trigger {trigger}", (
        *m[:4], {"signals_emitted": ksparkCount, "digest": ksparkDigest, "max_records_per_batch": BATCH_RECORDS,
                 "broker_cpu_seconds": round(ksparkBrokerCpu, 1), **m[4]}), 2)]
    rows.append(javaResult("P2-java Kafka Streams 4.3.1 valuation pipeline (bench/java/bench/Flagship.java), "
                           "2 stream threads, exactly_once_v2", java, load, signals_emitted=javaCount,
                           digest=javaDigest, broker_cpu_seconds=round(javaBrokerCpu, 1)))
    rows[0]["kspark_vs_java"] = round(rows[0]["records_per_s"] / rows[1]["records_per_s"], 2)
    print(json.dumps({"benchmark": "P2 vs Java", "kspark_vs_java_records_per_s": rows[0]["kspark_vs_java"],
                      "outputs_equal": True, "signals_emitted": ksparkCount}), flush=True)
    return rows


KST = timezone(timedelta(hours=9))  # the KRX data's offset


def _isoKst(ms: int) -> str:
    """An epoch ms as the KRX data writes ``snapshot_ts`` (ISO 8601, +09:00), with milliseconds."""
    return datetime.fromtimestamp(ms // 1000, KST).replace(microsecond=ms % 1000 * 1000).isoformat(timespec="milliseconds")


def _signalContent(value: dict) -> str:
    """A signal without its wall-clock fields (``snapshot_ts``, ``timestamp``), as sorted JSON."""
    return json.dumps({k: v for k, v in value.items() if k not in ("snapshot_ts", "timestamp")}, sort_keys=True,
                      ensure_ascii=False)


def p2Live(work: Path, spark, trigger: str, rates: list[int], seconds: float) -> list[dict]:
    """P2-java's latency phase (issue 34 §3): the flagship example live, kspark on Spark
    ``local[2]`` (``kspark.trigger`` = ``trigger``, as P4's latency phase) and its Java port
    (bench/java/bench/Flagship.java ``mode=live``: 2 stream threads, exactly_once_v2,
    ``commit.interval.ms`` 100, ``max.task.idle.ms`` 5000), one after the other, per rate on a
    new broker of its own, each system on its own topics there (Java's suffixed ``-java``).

    Input per rate: ``inputs.krxInputs(rate * seconds)`` (the first prices of the KRX snapshots,
    codes suffixed per copy beyond 101K prices) and their valuations and company master, loaded
    before the application starts. The prices are then produced at ``rate`` per s for
    ``seconds`` (:func:`ratedPhase`) with their ``snapshot_ts`` rewritten to the wall-clock time
    they are produced (ms, +09:00) and the record timestamp the same. The example has no window
    and no time-based logic: event time only orders each task's records, and the dedup store
    is keyed by the payload's ``trade_date`` (kept). With every price later than every valuation,
    each price is joined with its code's last valuation in both systems, which is
    deterministic. A signal's timestamp is its price's (the extractor's), so its latency =
    (time the ``read_committed`` consumer received it) - (wall-clock time its price was
    produced), as P4's. The signals must be, in both systems, the ones of kspark's
    ``TopologyTestDriver`` on the same records (valuations and companies first): the same count
    and the same contents without ``snapshot_ts`` (``signals_digest``).

    Warm-up, the same for both systems: rounds of one price per valuation partition (after the
    repartition), each of a code whose last valuation is the last (with EPS and PER > 0) of that
    partition, close 1 (always a signal), ``trade_date`` ``warmup-<round>``, every 10 s until a
    round's signals all carry those last valuations' dates: the application runs and its
    valuation table is complete. Then 6 s more (``settle``): Kafka Streams idles a task up to
    ``max.task.idle.ms`` once one of its partitions (here the repartitioned valuations) is
    caught up and empty (KIP-695), measured from when it became so; the measured prices come
    after that deadline (a live feed pays it again after each valuation update)."""
    import valuation_signals as vs

    from kspark import KafkaStreams, Serdes
    from kspark.runtime.partitioner import partitionForKey
    from kspark.testing import KafkaBroker
    from kspark.topics import openTopics

    stringSerde, jsonSerde = Serdes.String(), Serdes.JSON()
    rows = {"kspark": {}, "java": {}}
    for rate in rates:
        prices, valuations = inputs.krxInputs(int(rate * seconds))
        reference = vs.driverSignals([{**p, "snapshot_ts": _isoKst(int(time.time() * 1000))} for p in prices],
                                     valuations)
        referenceDigest = outputDigest((None, _signalContent(v).encode(), 0) for v in
                                       sorted(reference, key=_signalContent))
        lastDate = {v["code"]: v["date"] for v in valuations}
        checks = []
        for p in range(vs.PRICE_PARTITIONS):
            seen = set()
            for v in reversed(valuations):
                if partitionForKey(v["code"].encode(), vs.PRICE_PARTITIONS) != p or v["code"] in seen:
                    continue
                seen.add(v["code"])
                if float(v["eps"]) > 0 and float(v["per"]) > 0:
                    checks.append(v["code"])
                    break
        template = prices[0]

        def priceValue(row: dict, topic: str):
            return lambda ts: jsonSerde.serialize(topic, {**row, "snapshot_ts": _isoKst(ts)})

        def warmUp(send, flush, consume, deadline: float) -> None:
            for r in itertools.count(1):
                day = f"warmup-{r}"
                for code in checks:
                    send(code.encode(), priceValue({**template, "code": code, "close": "1", "trade_date": day},
                                                   names["prices"]))
                flush()
                got: dict[str, str] = {}
                roundEnd = time.time() + 10
                while len(got) < len(checks) and time.time() < roundEnd:
                    for m in consume():
                        signal = json.loads(m.value())
                        if signal["trade_date"] == day:
                            got[signal["code"]] = signal["valuation_date"]
                if got == {c: lastDate[c] for c in checks}:
                    return
                if time.time() > deadline:
                    raise SystemExit(f"P2-java latency phase: warm-up signals {got}, expected {checks} with "
                                     f"their last valuations' dates")

        with KafkaBroker(work / f"kafka-p2-live-{rate}") as broker:
            topics = openTopics({"bootstrap.servers": broker.bootstrapServers})
            eos = {"bootstrap.servers": broker.bootstrapServers, "processing.guarantee": "exactly_once_v2"}

            def ksparkLive():
                streams = KafkaStreams(vs.buildTopology(), {
                    **eos, "application.id": f"bench-p2-live-kspark-{rate}",
                    "state.dir": str(work / f"p2-live-{rate}" / "kspark-state"), "kspark.trigger": trigger}, spark=spark)
                streams.start()
                return streams.close

            def javaLive():
                return startJavaLive("bench.Flagship", f"bootstrap={broker.bootstrapServers}",
                                     f"appId=bench-p2-live-java-{rate}", f"stateDir={work / f'p2-live-{rate}' / 'java-state'}",
                                     *(f"{t}={names[t]}" for t in vs.TOPICS), "mode=live")

            for system, startApp in (("kspark", ksparkLive), ("java", javaLive)):
                names = {t: t if system == "kspark" else f"{t}-java" for t in vs.TOPICS}
                for t, n in (("prices", vs.PRICE_PARTITIONS), ("valuations", vs.VALUATION_PARTITIONS),
                             ("companies", 1), ("signals", vs.SIGNAL_PARTITIONS)):
                    topics.createTopic(names[t], n)
                topics.produce(names["valuations"], [
                    (stringSerde.serialize(names["valuations"], k), jsonSerde.serialize(names["valuations"], v), ts)
                    for k, v, ts in map(vs.valuationRecord, valuations)], partitioner=partitionForKey)
                topics.produce(names["companies"], [
                    (stringSerde.serialize(names["companies"], k), jsonSerde.serialize(names["companies"], v), ts)
                    for k, v, ts in vs.companyRecords(valuations)], partitioner=partitionForKey)
                items = [(p["code"].encode(), priceValue(p, names["prices"])) for p in prices]
                load = os.getloadavg()[0]
                figures, received = ratedPhase(
                    f"P2-java latency phase ({system}, {rate} prices/s)", broker.bootstrapServers, names["prices"],
                    vs.PRICE_PARTITIONS, names["signals"], vs.SIGNAL_PARTITIONS, startApp, warmUp, items, rate,
                    seconds, lambda sent: len(reference), settle=6.0)
                digest = outputDigest((None, c.encode(), 0) for c in
                                      sorted(_signalContent(json.loads(v)) for _, _, v in received))
                if digest != referenceDigest:
                    raise SystemExit(f"P2-java latency phase ({system}, {rate} prices/s): the signals differ from "
                                     f"TopologyTestDriver's (digest {digest}, expected {referenceDigest})")
                rows[system][str(rate)] = {**figures, "signals_digest": digest, "load_avg_1m": round(load, 2)}
    out = []
    for system, name in (("kspark", f"P2-live kspark valuation pipeline on Spark local[2] over Kafka, exactly_once_v2, "
                                    f"kspark.trigger {trigger}"),
                         ("java", "P2-live Kafka Streams 4.3.1 valuation pipeline (bench/java/bench/Flagship.java), "
                                  "2 stream threads, exactly_once_v2, commit.interval.ms 100")):
        first = rows[system][str(rates[0])]
        out.append({"benchmark": name, **first, "latency_by_rate": rows[system]})
        print(json.dumps(out[-1]), flush=True)
    return out


def p4(df, work: Path, spark, broker, trigger: str, liveRates: list[int], liveSeconds: float) -> list[dict]:
    """P4: the P3/P1 session count end to end on Kafka, kspark on Spark ``local[2]`` against the
    same topology in Java Kafka Streams (bench/java/bench/Streams.java: 2 stream threads,
    exactly_once_v2, commit.interval.ms 100), on one broker and one input topic, one after the
    other (never both at once on the 2 cores).

    Throughput (backlog): the input topic (4 partitions) is filled first; each system then
    processes all of it. kspark runs it twice, as new applications: micro-batches (its clock from
    ``start()`` to the end of its ``availableNow`` run, query start-up included; CPU and RSS of
    this process tree without the broker), then ``kspark.trigger`` continuous (its clock from
    ``KafkaStreams(...)`` until the group's committed offsets reach the input's end, polled every
    20 ms as Java's, without the ``close()`` that follows: ``close_seconds``). Java's clock runs from ``KafkaStreams.start()`` until its committed offsets reach
    the input's end (inside the JVM; JVM start excluded). The three outputs are read back
    ``read_committed`` and must have the same number of records and the same digest (per
    partition, in offset order), else the run fails.

    Latency (a separate, rate-limited phase per system; backlog timestamps are from 1995): the
    system runs continuously (kspark: ``kspark.trigger`` = ``trigger``) on its own new input
    topic; once 100 warm-up records have come out, ``liveRate`` records/s for ``liveSeconds``
    (each rate of ``liveRates`` in turn, a new application and topic each; the first rate's
    figures are the row's ``latency_*`` fields, every rate's are in ``latency_by_rate``)
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
    outC = f"p4-sessions-kspark-continuous-{n}"
    for t in (source, outK, outJ, outC):
        topics.createTopic(t, 4)
    _warmInternalTopics(topics)
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

    def ksparkContinuousRun():
        app = f"bench-p4-kspark-continuous-{n}"
        streams = KafkaStreams(sessionCountTopology(source, outC, GAP), {
            **eos, "application.id": app, "state.dir": str(work / "kspark-continuous-state"),
            "kspark.trigger": "continuous"}, spark=spark)
        ends = {(source, p): o for p, o in topics.endOffsets(source).items()}
        return n, _continuousUntilCaughtUp(streams, _groupCaughtUp(topics, app, ends))

    note(f"P4: {n} records in {source}; kspark backlog run")
    brokerCpu = _cpuOf(broker.pid)
    m = measured(ksparkRun, exclude=(broker.pid,))
    ksparkBrokerCpu, brokerCpu = _cpuOf(broker.pid) - brokerCpu, _cpuOf(broker.pid)
    note(f"P4: kspark {m[1]:.1f} s; kspark continuous backlog run")
    mc = _clockToCaughtUp(measured(ksparkContinuousRun, exclude=(broker.pid,)))
    continuousBrokerCpu, brokerCpu = _cpuOf(broker.pid) - brokerCpu, _cpuOf(broker.pid)
    note(f"P4: kspark continuous {mc[1]:.1f} s; Java Kafka Streams backlog run")
    load = os.getloadavg()[0]
    [java] = runJava("bench.Streams", f"bootstrap={broker.bootstrapServers}", f"appId=bench-p4-java-{n}",
                     f"input={source}", f"output={outJ}", f"stateDir={work / 'java-state'}", "mode=backlog")
    javaBrokerCpu = _cpuOf(broker.pid) - brokerCpu
    note(f"P4: Java {java['seconds']:.1f} s; reading both outputs")
    ksparkCount, ksparkDigest = _topicDigest(topics, outK)
    javaCount, javaDigest = _topicDigest(topics, outJ)
    checkSameOutput("P4", ksparkCount, ksparkDigest, javaCount, javaDigest)
    continuousCount, continuousDigest = _topicDigest(topics, outC)
    checkSameOutput("P4 (kspark continuous)", continuousCount, continuousDigest, javaCount, javaDigest)

    def ksparkLive(src, out):
        streams = KafkaStreams(sessionCountTopology(src, out, GAP), {
            **eos, "application.id": f"bench-p4-live-kspark-{n}-{src}", "state.dir": str(work / "kspark-live-state"),
            "kspark.trigger": trigger}, spark=spark)
        streams.start()
        return streams.close

    def javaLive(src, out):
        return startJavaLive("bench.Streams", f"bootstrap={broker.bootstrapServers}",
                             f"appId=bench-p4-live-java-{n}-{src}", f"input={src}", f"output={out}",
                             f"stateDir={work / 'java-live-state'}", "mode=live")

    byRate: dict[str, dict] = {"kspark": {}, "java": {}}
    for liveRate in liveRates:
        if len(hosts) < liveRate * liveSeconds:
            raise SystemExit(f"P4: {liveRate} records/s for {liveSeconds} s needs --p4-records >= {liveRate * liveSeconds:.0f}")
        liveHosts = [h.encode() for h in hosts[:max(1, int(liveRate * liveSeconds))]]
        byRate["kspark"][str(liveRate)] = liveLatency("kspark", topics, liveHosts, liveRate, liveSeconds, ksparkLive)
        byRate["java"][str(liveRate)] = liveLatency("java", topics, liveHosts, liveRate, liveSeconds, javaLive)
    ksparkLatency = {**byRate["kspark"][str(liveRates[0])], "latency_by_rate": byRate["kspark"]}
    javaLatency = {**byRate["java"][str(liveRates[0])], "latency_by_rate": byRate["java"]}
    rows = [_report("P4 kspark session count Kafka -> Spark local[2] -> Kafka, exactly_once_v2", (
        *m[:4], {"updates_emitted": ksparkCount, "digest": ksparkDigest, "broker_cpu_seconds": round(ksparkBrokerCpu, 1),
                 "max_records_per_batch": BATCH_RECORDS, "trigger_backlog": "availableNow",
                 "trigger_latency_phase": trigger, **ksparkLatency}), 2)]
    rows.append(javaResult("P4-java Kafka Streams 4.3.1 session count, 2 stream threads, exactly_once_v2, "
                           "commit.interval.ms 100", java, load, updates_emitted=javaCount, digest=javaDigest,
                           broker_cpu_seconds=round(javaBrokerCpu, 1), **javaLatency))
    rows[0]["kspark_vs_java"] = round(rows[0]["records_per_s"] / rows[1]["records_per_s"], 2)
    rows.append(_report("P4 kspark session count Kafka -> Spark local[2] -> Kafka, exactly_once_v2, backlog with "
                        "kspark.trigger continuous", (*mc[:4], {
                            "updates_emitted": continuousCount, "digest": continuousDigest,
                            "broker_cpu_seconds": round(continuousBrokerCpu, 1), **mc[4]}), 2))
    rows[2]["kspark_vs_java"] = round(rows[2]["records_per_s"] / rows[1]["records_per_s"], 2)
    print(json.dumps({"benchmark": "P4 comparison", "kspark_vs_java_records_per_s": rows[0]["kspark_vs_java"],
                      "kspark_continuous_vs_java_records_per_s": rows[2]["kspark_vs_java"],
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
    src, out = f"p4-live-{system}-{len(keys)}-{rate}", f"p4-live-out-{system}-{len(keys)}-{rate}"
    topics.createTopic(src, 4)
    topics.createTopic(out, 4)

    def warmUp(send, flush, consume, deadline: float) -> None:
        for i in range(100):
            send(b"warmup-%d" % i, None)
        flush()
        got = 0
        while got < 100:  # started, tasks assigned, first batch done
            if time.time() > deadline:
                raise SystemExit(f"P4 latency phase ({system}): {got} warm-up outputs in time, expected 100")
            got += len(consume())

    def outputs(sent: list[tuple[bytes, int]]) -> int:
        # a key's records all fall in one session (30 min gap, timestamps never decrease): a
        # record adds the merged session's update, and a tombstone for the old session unless the
        # merged window is the record's own [ts, ts] (Kafka's KStreamSessionWindowAggregate: the
        # key's first record, or all before it at ts)
        firstTs: dict[bytes, int] = {}
        return sum(1 if firstTs.setdefault(key, ts) == ts else 2 for key, ts in sent)

    return ratedPhase(f"P4 latency phase ({system})", topics.servers, src, 4, out, 4, lambda: startApp(src, out),
                      warmUp, [(key, None) for key in keys], rate, seconds, outputs)[0]


def ratedPhase(what: str, servers: str, src: str, srcPartitions: int, out: str, outPartitions: int, startApp,
               warmUp, items: list, rate: int, seconds: float, outputs, settle: float = 0.0) -> tuple[dict, list]:
    """A latency phase (P4's and P2-java's): ``startApp()`` starts the application (returns its
    stop function); ``warmUp(send, flush, consume, deadline)`` sends warm-up records and returns
    once the application has answered them; after ``settle`` s, ``items`` (``(key bytes,
    value)``, value None, bytes or a function of the record timestamp in ms giving the bytes) are
    sent to ``src`` (partition: ``partitionForKey``) at ``rate`` per s, each with timestamp = wall-clock
    now, by an idempotent producer (``linger.ms`` 1); a ``read_committed`` consumer of ``out``
    takes each output record with timestamp >= the phase's start and its latency = (time its
    batch was received) - (its timestamp, that of the input record that caused it). The phase
    ends when ``outputs(sent)`` (``sent``: ``(key, timestamp)`` per item) records have come, and
    fails unless exactly that many come (2 s more are read). Returns the figures (``latency_ms_*``
    over all outputs, ``latency_updates_ms_*`` over those with a value: a tombstone carries the
    timestamp of what it removes) and the output records ``(partition, key, value)`` in order of arrival."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kspark.runtime.partitioner import partitionForKey

    consumer = Consumer({"bootstrap.servers": servers, "group.id": f"bench-latency-{out}",
                         "isolation.level": "read_committed", "enable.auto.commit": False, "fetch.wait.max.ms": 10})
    consumer.assign([TopicPartition(out, p, 0) for p in range(outPartitions)])
    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 1})

    def send(key: bytes, value) -> int:
        ts = int(time.time() * 1000)
        producer.produce(src, value=value(ts) if callable(value) else value, key=key,
                         partition=partitionForKey(key, srcPartitions), timestamp=ts)
        producer.poll(0)
        return ts

    def consume() -> list:
        return [m for m in consumer.consume(10_000, 0.02) if m.error() is None]

    expected: list[int] = []  # the number of outputs, once every record is sent
    received: list = []

    def receive(until, deadline: float, since: int) -> list[float]:
        """Latencies (ms) of output records with timestamp >= ``since`` until ``until(count)``."""
        latencies: list[float] = []
        while not until(len(latencies)):
            if time.time() > deadline:
                raise SystemExit(f"{what}: {len(latencies)} outputs in time, expected {expected or 'not known yet'}")
            messages = consume()
            now = time.time() * 1000
            for msg in messages:
                if msg.timestamp()[1] >= since:
                    latencies.append(now - msg.timestamp()[1])
                    received.append((msg.partition(), msg.key(), msg.value()))
        return latencies

    note(what)
    stop = startApp()
    try:
        warmUp(send, producer.flush, consume, time.time() + 300)
        time.sleep(settle)
        since = int(time.time() * 1000) + 1
        time.sleep(0.002)

        def produceAtRate():
            sent, started = [], time.time()
            for i, (key, value) in enumerate(items):
                delay = started + i / rate - time.time()
                if delay > 0:
                    time.sleep(delay)
                sent.append((key, send(key, value)))
            producer.flush()
            expected.append(outputs(sent))

        sender = threading.Thread(target=produceAtRate, daemon=True)
        sender.start()
        latencies = receive(lambda got: bool(expected) and got >= expected[0], time.time() + seconds + 120, since)
        sender.join()
        extra, drainUntil = 0, time.time() + 2  # nothing more must come
        while time.time() < drainUntil:
            extra += sum(1 for m in consume() if m.timestamp()[1] >= since)
    finally:
        stop()
        consumer.close()
    expected = expected[0]
    if extra or len(latencies) != expected:
        raise SystemExit(f"{what}: {len(latencies) + extra} outputs, expected {expected}")
    q = [round(x) for x in np.percentile(latencies, [50, 95, 100])] if latencies else [None] * 3
    # the same without tombstones: a tombstone carries the timestamp of the window or record it
    # removes (P4: a merged session's end, the key's previous record), so its "latency" includes
    # the time since that record (bench/README.md round 22b)
    updates = [x for x, r in zip(latencies, received[len(received) - len(latencies):]) if r[2] is not None]
    u = [round(x) for x in np.percentile(updates, [50, 95, 100])] if updates else [None] * 3
    return {"latency_ms_p50": q[0], "latency_ms_p95": q[1], "latency_ms_max": q[2],
            "latency_updates_ms_p50": u[0], "latency_updates_ms_p95": u[1], "latency_updates_ms_max": u[2],
            "latency_updates": len(updates),
            "latency_input_records": len(items), "latency_input_rate": rate, "latency_outputs": len(latencies)}, received


# ---------------------------------------------------------------------- P5: state at scale (issue 32)
P5_SYSTEMS = ("p5-native", "p5-java", "p5", "p5-kafka", "p5-kafka-continuous")  # per N in this order: the references first
P5_KSPARK = ("p5", "p5-kafka", "p5-kafka-continuous")
P5_ON_KAFKA = ("p5-kafka", "p5-kafka-continuous", "p5-java")
P5_SEED = 32
P5_TS0 = 1_700_000_000_000  # the first input record's timestamp (ms); record i has P5_TS0 + i
P5_KEY_WIDTH = 9  # keys are b"k%08d"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def p5Input(n: int, batches: int, batchRecords: int) -> tuple[np.ndarray, np.ndarray]:
    """(load, steady) key ids: the load is every id in ``range(n)`` once, in a seeded random order;
    the steady records are ``(1 + batches) * batchRecords`` ids drawn uniformly (seeded) from
    ``range(n)``, the first ``batchRecords`` of them the warm-up batch. Every P5 process draws
    the same ids."""
    rng = np.random.default_rng(P5_SEED)
    return rng.permutation(n).astype(np.int64), rng.integers(0, n, (1 + batches) * batchRecords, dtype=np.int64)


def p5Keys(ids: np.ndarray) -> np.ndarray:
    """``b"k%08d" % id`` of every id as an ``(len, 9)`` uint8 matrix (vectorized)."""
    out = np.empty((len(ids), P5_KEY_WIDTH), np.uint8)
    out[:, 0] = ord("k")
    for d in range(8):
        out[:, 8 - d] = 48 + (ids // 10 ** d) % 10
    return out


def p5KeyArray(ids: np.ndarray, type_=pa.binary()) -> pa.Array:
    """The keys of ``ids`` as an Arrow binary (or string) array, built from the matrix's bytes."""
    offsets = np.arange(0, P5_KEY_WIDTH * (len(ids) + 1), P5_KEY_WIDTH, dtype=np.int32)
    return pa.Array.from_buffers(type_, len(ids), [None, pa.py_buffer(offsets), pa.py_buffer(p5Keys(ids))])


def p5Partitions(n: int) -> np.ndarray:
    """The input partition (of 4) of every key id: Kafka's default partitioner of its bytes."""
    from murmurhash2 import murmurhash2

    keys = p5Keys(np.arange(n, dtype=np.int64)).view(f"S{P5_KEY_WIDTH}").ravel().tolist()
    return np.array([(murmurhash2(k, 0x9747B28C) & 0x7FFFFFFF) % 4 for k in keys], np.int8)


def _fixedWidth(column, width: int) -> np.ndarray:
    """The non-null values of an Arrow binary column whose values are all ``width`` bytes long,
    as an ``(rows, width)`` uint8 matrix."""
    out = []
    for chunk in (column.chunks if isinstance(column, pa.ChunkedArray) else [column]):
        if len(chunk) == 0:
            continue
        if chunk.null_count:
            raise ValueError(f"{chunk.null_count} null values")
        offsetType = np.int64 if pa.types.is_large_binary(chunk.type) else np.int32
        _, offsetsBuf, data = chunk.buffers()
        offsets = np.frombuffer(offsetsBuf, offsetType)[chunk.offset:chunk.offset + len(chunk) + 1]
        if not np.all(np.diff(offsets) == width):
            raise ValueError(f"values not all {width} bytes long")
        out.append(np.frombuffer(data, np.uint8)[offsets[0]:offsets[-1]].reshape(-1, width))
    return np.concatenate(out) if out else np.empty((0, width), np.uint8)


def p5CheckOutput(tables, loadIds: np.ndarray, steadyIds: np.ndarray) -> dict:
    """Check a count output topic (``tables``: its record tables, key ``k%08d``, value a Long) against
    the input: with the record cache off every input record emits one update, so there must be
    as many outputs as inputs; a key's last update (its largest: a count only grows, and a key
    stays in one partition) must be its number of records, for every key; the final counts must
    sum to the number of records."""
    n = len(loadIds)
    truth = np.bincount(loadIds, minlength=n) + np.bincount(steadyIds, minlength=n)
    final = np.zeros(n, np.int64)
    outputs = 0
    for t in tables:
        if t.num_rows == 0:
            continue
        keys = _fixedWidth(t.column("key"), P5_KEY_WIDTH)
        ids = (keys[:, 1:].astype(np.int64) - 48) @ (10 ** np.arange(7, -1, -1, dtype=np.int64))
        values = _fixedWidth(t.column("value"), 8).copy().view(">i8").ravel().astype(np.int64)
        np.maximum.at(final, ids, values)
        outputs += t.num_rows
    wrong = np.nonzero(final != truth)[0]
    return {"records_total": int(truth.sum()), "outputs": outputs, "counts_sum": int(final.sum()),
            "keys_checked": n, "keys_wrong": len(wrong),
            "keys_wrong_sample": [f"k{i:08d}: {final[i]} != {truth[i]}" for i in wrong[:5]],
            "correct": bool(len(wrong) == 0 and outputs == truth.sum() and final.sum() == truth.sum())}


def _diskBytes(dirs: dict[str, list[Path]]) -> dict[str, int]:
    """Bytes on disk (allocated blocks, as ``du``) under each named list of directories and in
    ``total``; a file (inode) counted once in ``total`` even when hard-linked from several. Files
    that vanish while they are walked are skipped."""
    seen: set = set()
    out: dict[str, int] = {}
    total = 0
    for name, paths in dirs.items():
        mine = 0
        for root in paths:
            for top, _, files in os.walk(root):
                for f in files:
                    try:
                        st = os.lstat(os.path.join(top, f))
                    except OSError:
                        continue
                    size = st.st_blocks * 512
                    mine += size
                    if (st.st_dev, st.st_ino) not in seen:
                        seen.add((st.st_dev, st.st_ino))
                        total += size
        out[name] = mine
    out["total"] = total
    return out


_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _treeByKind(root: int, exclude: tuple = ()) -> dict[int, tuple[str, int, float]]:
    """``{pid: (kind, RSS kB, CPU seconds)}`` of ``root`` and its descendants without ``exclude``
    (and theirs); kind ``driver`` (``root``), ``jvm`` (a java process) or ``python`` (the rest:
    Python workers, their daemon and fork server). One read of ``/proc/<pid>/stat`` per process
    (its ``rss`` field is VmRSS in pages): about 10 ms of CPU for 120 processes."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[str, int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
            comm = text[text.find("(") + 1:text.rfind(")")]
            fields = text.rsplit(")", 1)[1].split()
            ppid, cpu, kb = int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK, int(fields[21]) * _PAGE_KB
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
        info[int(entry)] = (comm, kb, cpu)
    out, stack = {}, [root]
    while stack:
        pid = stack.pop()
        if pid in exclude:
            continue
        if pid in info:
            comm, kb, cpu = info[pid]
            out[pid] = ("driver" if pid == root else "jvm" if comm == "java" else "python", kb, cpu)
        stack.extend(children.get(pid, ()))
    return out


class TreeSampler:
    """Samples this process tree (without ``exclude``) every ``interval`` s while the ``with`` block
    runs: RSS per kind (driver, jvm, python) and CPU per process; every ``diskInterval`` s the
    bytes on disk of ``dirs()`` (named lists of directories, re-evaluated at each sample as
    directories appear). :meth:`window` gives a time interval's CPU, peak RSS per kind and the
    disk usage at its end."""

    def __init__(self, dirs, interval: float = 0.5, diskInterval: float = 1.0, exclude: tuple = ()) -> None:
        self.dirs, self.interval, self.diskInterval, self.exclude = dirs, interval, diskInterval, exclude
        self.samples: list[tuple[float, dict[str, int], dict[int, float]]] = []
        self.kinds: dict[int, str] = {}  # pid -> kind, of every process seen
        self.disk: list[tuple[float, dict[str, int]]] = []
        self._stop = threading.Event()

    def _sample(self, disk: bool) -> None:
        now = time.time()
        tree = _treeByKind(os.getpid(), self.exclude)
        kb = {"driver": 0, "jvm": 0, "python": 0, "python_one": 0}  # python_one: the largest Python worker
        for pid, (kind, rss, _) in tree.items():
            kb[kind] += rss
            if kind == "python":
                kb["python_one"] = max(kb["python_one"], rss)
            self.kinds[pid] = kind
        self.samples.append((now, kb, {pid: cpu for pid, (_, _, cpu) in tree.items()}))
        if disk:
            self.disk.append((time.time(), _diskBytes(self.dirs())))

    def _run(self) -> None:
        lastDisk = 0.0
        while not self._stop.wait(self.interval):
            disk = time.time() - lastDisk >= self.diskInterval
            self._sample(disk)
            if disk:
                lastDisk = time.time()

    def __enter__(self) -> "TreeSampler":
        self._sample(True)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(True)

    def window(self, t0: float, t1: float) -> dict:
        """CPU seconds of the tree in ``[t0, t1]`` (per process: its CPU at the first sample at or
        after ``t1`` minus that at the last sample at or before ``t0``, 0 for one started since),
        peak RSS per kind over the samples inside (the nearest one when none is), and the disk
        usage of the first disk sample at or after ``t1`` (else the last one)."""
        times = [s[0] for s in self.samples]
        import bisect

        a = self.samples[max(0, bisect.bisect_right(times, t0) - 1)]
        b = self.samples[min(len(times) - 1, bisect.bisect_left(times, t1))]
        cpu = {"driver": 0.0, "jvm": 0.0, "python": 0.0}
        for pid, c in b[2].items():
            cpu[self.kinds[pid]] += c - a[2].get(pid, 0.0)
        inside = [s for s in self.samples if t0 <= s[0] <= t1] or [b]
        diskTimes = [d[0] for d in self.disk]
        disk = self.disk[min(len(diskTimes) - 1, bisect.bisect_left(diskTimes, t1))][1]
        return {"cpu_seconds": round(sum(cpu.values()), 2), "jvm_cpu_seconds": round(cpu["jvm"], 2),
                "python_workers_cpu_seconds": round(cpu["python"], 2), "driver_cpu_seconds": round(cpu["driver"], 2),
                "jvm_peak_rss_mb": round(max(s[1]["jvm"] for s in inside) / 1024),
                "python_workers_peak_rss_mb": round(max(s[1]["python"] for s in inside) / 1024),
                "python_worker_peak_rss_mb": round(max(s[1]["python_one"] for s in inside) / 1024),
                "driver_peak_rss_mb": round(max(s[1]["driver"] for s in inside) / 1024),
                "store_bytes": disk["total"], "store_bytes_by_dir": {k: v for k, v in disk.items() if k != "total"}}


def _isoSeconds(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def p5Batches(progress: list[dict], sampler: TreeSampler, kspark: bool) -> dict:
    """Per-batch arrays of a run's progress events with input (a Spark ``StreamingQueryProgress``
    as a dict) with input records (:func:`_p5Records`; ``kspark``: a kspark query): batch id, input records, seconds (``durationMs.triggerExecution``, the whole
    batch) and ``addBatch`` seconds, and from the sampler over [the batch's ``timestamp``,
    + ``triggerExecution``]: CPU seconds of the process tree, peak RSS of the JVM and of the Python
    workers, bytes on disk of the state directories at the batch's end (measured at most one
    disk sample, about a second, later: the next batch may have started); plus the state
    operator's rows, memory and commit time, and RocksDB's SST bytes when Spark reports them."""
    out: dict[str, list] = {k: [] for k in (
        "batch_id", "input_rows", "seconds", "add_batch_seconds", "cpu_seconds", "jvm_cpu_seconds",
        "python_workers_cpu_seconds", "driver_cpu_seconds", "jvm_peak_rss_mb",
        "python_workers_peak_rss_mb", "python_worker_peak_rss_mb", "store_bytes", "state_rows_total",
        "state_memory_bytes", "state_commit_ms",
        "rocksdb_sst_bytes")}
    for p in progress:
        rows = _p5Records(p, kspark)
        if not rows:
            continue
        d = p["durationMs"]
        t0 = _isoSeconds(p["timestamp"])
        w = sampler.window(t0, t0 + d["triggerExecution"] / 1000)
        ops = p.get("stateOperators") or [{}]
        out["batch_id"].append(p["batchId"])
        out["input_rows"].append(rows)
        out["seconds"].append(round(d["triggerExecution"] / 1000, 3))
        out["add_batch_seconds"].append(round(d.get("addBatch", 0) / 1000, 3))
        for k in ("cpu_seconds", "jvm_cpu_seconds", "python_workers_cpu_seconds", "driver_cpu_seconds",
                  "jvm_peak_rss_mb", "python_workers_peak_rss_mb", "python_worker_peak_rss_mb", "store_bytes"):
            out[k].append(w[k])
        out["state_rows_total"].append(sum(op.get("numRowsTotal", 0) for op in ops))
        out["state_memory_bytes"].append(sum(op.get("memoryUsedBytes", 0) for op in ops))
        out["state_commit_ms"].append(sum(op.get("commitTimeMs", 0) for op in ops))
        out["rocksdb_sst_bytes"].append(sum((op.get("customMetrics") or {}).get("rocksdbSstFileSize", 0) for op in ops))
        out["store_bytes_by_dir"] = w["store_bytes_by_dir"]  # the last batch's
    return out


def _p5Records(progress: dict, kspark: bool) -> int:
    """Input records of a batch: kspark's sources count a chunk or range row per topic-partition in
    ``numInputRows``, so their records come from the tasks' ``records-consumed-total`` counters
    when reported, else from the source's start and end offsets (as kspark's progress view
    counts them); other sources' ``numInputRows``."""
    from kspark.spark._progress import _recordsRead, batchCounters

    if not kspark:
        return progress.get("numInputRows") or 0
    consumed = sum(int(v) for k, v in batchCounters(progress).items()
                   if k.startswith("records-consumed-total|consumer-fetch-manager-metrics|topic="))
    return consumed or sum(_recordsRead(s.get("startOffset"), s.get("endOffset")) for s in progress.get("sources", ()))


def _progressOf(queries) -> list[dict]:
    """The progress events Spark kept (``recentProgress``) of ``queries``, as dicts."""
    return [json.loads(p.json) for q in queries for p in q.recentProgress]


def p5Summary(out: dict, batchRecords: int) -> None:
    """The steady phase's summary fields (median s/batch, records/s, ...) into ``out``."""
    s = out["steady"]
    median = float(np.median(s["seconds"]))
    out.update({
        "median_s_per_batch": round(median, 3), "median_add_batch_s": round(float(np.median(s["add_batch_seconds"])), 3),
        "records_per_s": round(batchRecords / median),
        "median_cpu_s_per_batch": round(float(np.median(s["cpu_seconds"])), 2),
        "records_per_cpu_s": round(batchRecords / max(float(np.median(s["cpu_seconds"])), 1e-9)),
        "steady_peak_jvm_rss_mb": max(s["jvm_peak_rss_mb"]),
        "steady_peak_python_workers_rss_mb": max(s["python_workers_peak_rss_mb"]),
        "steady_peak_python_worker_rss_mb": max(s["python_worker_peak_rss_mb"]),
        "store_bytes_after": s["store_bytes"][-1]})


def _ksparkStoreDir(config: dict, path: Path) -> bool:
    """Set ``kspark.store.dir`` (the local store directory of issue 32's state backend) in
    ``config`` when this kspark knows the key; whether it did."""
    from kspark.config import StreamsConfig
    from kspark.errors import ConfigException

    try:
        StreamsConfig({**config, "kspark.store.dir": str(path)})
    except ConfigException:
        return False
    config["kspark.store.dir"] = str(path)
    return True


def _sparkLocalState(localDir: Path) -> list[Path]:
    """What Spark keeps under ``spark.local.dir`` besides shuffle blocks (``blockmgr-*``): the
    RocksDB state stores' working copies, under ``spark-<uuid>/``."""
    return [p for p in localDir.glob("*") if not p.name.startswith("blockmgr-")] if localDir.exists() else []


def p5Spark(system: str, n: int, args, work: Path, broker: dict | None) -> dict:
    """One P5 run on Spark (``p5``: kspark over local topics; ``p5-kafka``: kspark over Kafka,
    exactly_once_v2; ``p5-native``: Spark's ``groupBy("key").count()``): the load run (the N keys,
    ``--p5-load-batch-records`` per micro-batch, ``availableNow``), then the steady run on the same
    checkpoint (``availableNow``, ``--p5-batch-records`` per batch: one warm-up batch, the
    first after the restart, then ``--p5-batches`` batches). Returns the JSON line (with
    ``error`` and what was measured until then if a run fails)."""
    from kspark.config import StreamsConfig
    from kspark.spark._session import getOrCreateSession

    batchRecords, loadBatch, batches = args.p5_batch_records, args.p5_load_batch_records, args.p5_batches
    out: dict = {"benchmark": {"p5": "P5 kspark count, local topics", "p5-kafka": "P5 kspark count, Kafka topics, exactly_once_v2",
                               "p5-kafka-continuous": "P5 kspark count, Kafka topics, exactly_once_v2, kspark.trigger continuous",
                               "p5-native": "P5-native Spark groupBy(key).count(), update mode"}[system]
                 + f", {n:,} keys, Spark local[2]", "system": system, "keys": n, "batch_records": batchRecords,
                 "steady_batches": batches, "load_batch_records": loadBatch, "tasks": 4,
                 "load_avg_1m": round(os.getloadavg()[0], 2)}
    phase = "input"
    localDir = work / "spark-local"
    started = time.time()
    try:
        loadIds, steadyIds = p5Input(n, batches, batchRecords)
        parts = p5Partitions(n)
        out["input_digest"] = _idsDigest(loadIds, steadyIds)
        spark = getOrCreateSession(StreamsConfig({"kspark.spark.master": "local[2]", "application.id": "bench",
                                                  "spark.local.dir": str(localDir)}))
        out["spark_driver_memory"] = spark.sparkContext.getConf().get("spark.driver.memory", "1g (default)")
        out["state_store_provider"] = spark.conf.get("spark.sql.streaming.stateStore.providerClass")
        out["rocksdb_changelog_checkpointing"] = spark.conf.get(
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "false")
        steadySplit = np.split(steadyIds, 1 + batches)
        if system == "p5-native":
            return _p5Native(spark, n, loadIds, steadySplit, out, work, localDir, args, started)
        from kspark import KafkaStreams
        from kspark.topics import LocalTopics, openTopics

        ts = np.arange(P5_TS0, P5_TS0 + n + len(steadyIds), dtype=np.int64)
        continuous = system == "p5-kafka-continuous"
        appId = f"bench-p5-{'kafka' if broker else 'local'}{'-continuous' if continuous else ''}-{n}"
        config = {"application.id": appId, "state.dir": str(work / "state"), "statestore.cache.max.bytes": 0}
        extra = dict(item.split("=", 1) for item in args.p5_config)
        config.update(extra)
        if extra:
            out["config"] = extra
        out["kspark_store_dir"] = _ksparkStoreDir(config, work / "store")
        if broker is not None:
            config.update({"bootstrap.servers": broker["bootstrap"], "processing.guarantee": "exactly_once_v2"})
            topics = openTopics(config)
            source, sink = f"p5-events-{n}{'-continuous' if continuous else ''}", f"p5-counts-{n}{'-continuous' if continuous else ''}"
            brokerData = Path(broker["logDir"]) / "data"
        else:
            config["kspark.topics.dir"] = str(work / "topics")
            topics = LocalTopics(work / "topics")
            source, sink = "events", "counts"
        topics.createTopic(source, 4)
        topics.createTopic(sink, 4)

        def write(ids: np.ndarray, stamps: np.ndarray) -> None:
            if broker is not None:
                topics.produce(source, zip(p5Keys(ids).view(f"S{P5_KEY_WIDTH}").ravel().tolist(), itertools.repeat(b"1"),
                                           stamps.tolist()), partitioner=lambda key, _: int(parts[int(key[1:])]))
                return
            of = parts[ids]
            for p in range(4):
                idx = np.nonzero(of == p)[0]
                topics.append(source, p, pa.table({
                    "timestamp": pa.array(stamps[idx], pa.int64()), "key": p5KeyArray(ids[idx]),
                    "value": pa.array(np.full(len(idx), b"1", "S1"), pa.binary()), "headers": pa.nulls(len(idx), pa.binary())}))

        def dirs() -> dict[str, list[Path]]:
            d = {"checkpoint": [work / "state" / appId], "spark_local_state": _sparkLocalState(localDir)}
            if out["kspark_store_dir"]:
                d["store_dir"] = [work / "store"]
            if broker is not None:
                d["changelog_topics"] = list(brokerData.glob(f"{appId}-*changelog-*"))
            else:
                d["changelog_topics"] = list((work / "topics").glob("*changelog*"))
                # the tasks' store snapshots (kspark.state._snapshots), hard links into store_dir
                # where they are its files: counted once in total
                d["store_snapshots"] = [work / "topics" / "~stores"]
            return d

        note(f"P5 {system} {n:,} keys: writing the load")
        write(loadIds, ts[:n])
        exclude = (broker["pid"],) if broker else ()
        with TreeSampler(dirs, exclude=exclude) as sampler:
            if continuous:
                phase = "continuous"
                _p5Continuous(lambda: KafkaStreams(p5Topology(source, sink), {**config, "kspark.trigger": "continuous"},
                                                   spark=spark),
                              topics, source, appId, parts, steadyIds, ts[n:], batchRecords, sampler, broker, out)
            def run(name: str, maxRecords: int) -> None:
                nonlocal phase
                phase = name
                streams = KafkaStreams(p5Topology(source, sink), {**config, "kspark.max.records.per.trigger": maxRecords},
                                       spark=spark)
                t0 = time.time()
                try:
                    streams.start()
                    streams.awaitTermination()
                finally:
                    seconds = time.time() - t0
                    try:
                        progress = _progressOf(streams.queries())
                    except Exception:  # noqa: BLE001 - a dead JVM: nothing more to learn
                        progress = []
                    out[f"{name}_run_seconds"] = round(seconds, 2)
                    out[name] = p5Batches(progress, sampler, True)
                    streams.close()

            if not continuous:
                note(f"P5 {system} {n:,} keys: load run")
                run("load", loadBatch)
                write(steadyIds, ts[n:])
                brokerCpu = _cpuOf(broker["pid"]) if broker else 0.0
                note(f"P5 {system} {n:,} keys: steady run")
                run("steady", batchRecords)
                if broker:
                    out["steady_broker_cpu_seconds"] = round(_cpuOf(broker["pid"]) - brokerCpu, 1)
        if not continuous:
            _p5SplitWarmup(out, batches, batchRecords)
        phase = "check"
        note(f"P5 {system} {n:,} keys: checking the output")
        if broker is not None:
            tables = (t for p, end in sorted(topics.endOffsets(sink).items())
                      for t in topics.readBatches(sink, p, 0, end, maxRows=500_000))
        else:
            tables = (topics.read(sink, p, 0, end) for p, end in sorted(topics.endOffsets(sink).items()))
        out.update(p5CheckOutput(tables, loadIds, steadyIds))
        out["final_store_bytes_by_dir"] = _diskBytes(dirs())
    except BaseException as e:  # noqa: BLE001 - reported as the run's JSON line
        out.update({"error": _errorText(e), "failed_in": phase})
    out["process_seconds"] = round(time.time() - started, 1)
    return out


P5_RESTART_RECORDS = 10_000
"""Records each of P5-kafka-continuous's restart phases processes (the last of the steady ids)."""


def _p5Continuous(newStreams, topics, source: str, appId: str, parts: np.ndarray, steadyIds: np.ndarray,
                  stamps: np.ndarray, batchRecords: int, sampler: TreeSampler, broker: dict, out: dict) -> None:
    """P5's phases for ``p5-kafka-continuous``: one ``kspark.trigger`` continuous run of
    ``newStreams()`` timed as :func:`p5Java` times Kafka Streams. The load (already in ``source``)
    runs from ``start()`` until the group's committed offsets reach the input's end; then the
    warm-up batch's records, then the steady batches' records but the last
    2 x :data:`P5_RESTART_RECORDS`, each phase's records written in ONE Kafka transaction: the
    run's ``read_committed`` consumers see none of them until it commits (Kafka Streams is paused
    while its records are written), and the phase's clock runs from the commit until the
    committed offsets reach the new end, as Java's from ``resume()``. Then two restarts, each a
    new run after ``close()``, timed from ``start()`` until it has processed its records (written
    in one transaction right after ``start()``): ``restart_checkpoint`` takes in the stores the
    clean close kept (restoring the changelogs from their checkpoints), ``restart_whole`` finds
    the checkpoints deleted and restores every store whole from its changelog. Per phase:
    seconds, records, CPU-s and peak RSS of this process tree (the broker excluded:
    ``broker_cpu_seconds``); a restart's ``restored_records`` and its threads' ``startup_seconds``
    (restore included) from their summaries."""
    from confluent_kafka import Producer

    def clock(name: str, records: int, t0: float, caughtUp) -> None:
        brokerCpu = _cpuOf(broker["pid"])
        while not caughtUp():
            if streams._streamThreads.error is not None:
                raise RuntimeError(f"a stream thread failed in phase {name}: {streams._streamThreads.error}")
            time.sleep(0.02)
        t1 = time.time()
        w = sampler.window(t0, t1)
        out[name] = {"records": records, "seconds": round(t1 - t0, 2), **w,
                     "broker_cpu_seconds": round(_cpuOf(broker["pid"]) - brokerCpu, 1)}
        note(f"P5 p5-kafka-continuous {name}: {records:,} records in {t1 - t0:.1f} s")

    ends = topics.endOffsets(source)  # the load's, written before the run
    caughtUp = _groupCaughtUp(topics, appId, {(source, p): e for p, e in ends.items()})
    producer = Producer({**topics.producerConfig, "transactional.id": f"{appId}-bench-input", "linger.ms": "20",
                         "transaction.timeout.ms": "300000", "message.timeout.ms": "300000"})
    producer.init_transactions(30)

    def write(lo: int, hi: int) -> None:
        """Write the steady ids ``lo:hi`` in one transaction; the ends it makes: each partition's
        records and its commit marker (read back instead, the last stable offset can lag the
        commit's return for a moment)."""
        nonlocal ends
        ids = steadyIds[lo:hi]
        keys = p5Keys(ids).view(f"S{P5_KEY_WIDTH}").ravel().tolist()
        producer.begin_transaction()
        for key, partition, stamp in zip(keys, parts[ids].tolist(), stamps[lo:hi].tolist()):
            while True:
                try:
                    producer.produce(source, b"1", key, partition=partition, timestamp=stamp)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.commit_transaction(60)
        written = np.bincount(parts[ids], minlength=len(ends))
        ends = {p: e + int(written[p]) + 1 if written[p] else e for p, e in ends.items()}

    def close(streams, phase: str) -> None:
        closing = time.time()
        streams.close()
        out["close_seconds"] = round(time.time() - closing, 2)
        if phase.startswith("restart") and phase in out:  # what its threads restored at their start
            summaries = streams._streamThreads.summaries
            out[phase].update({"restored_records": sum(s["restoredRecords"] for s in summaries),
                               "startup_seconds": max(s["startupSeconds"] for s in summaries)})

    restartAt = len(steadyIds) - 2 * P5_RESTART_RECORDS
    streams, phase = newStreams(), "load"
    t0 = time.time()
    streams.start()
    try:
        clock("load", len(parts), t0, caughtUp)
        for name, lo, hi in (("warmup", 0, batchRecords), ("steady", batchRecords, restartAt)):
            write(lo, hi)
            t0 = time.time()
            clock(name, hi - lo, t0, _groupCaughtUp(topics, appId, {(source, p): e for p, e in ends.items()}))
            if topics.endOffsets(source) != ends:
                raise RuntimeError(f"{source}'s ends after {name}: {topics.endOffsets(source)}, expected {ends}")
        for name, lo in (("restart_checkpoint", restartAt), ("restart_whole", restartAt + P5_RESTART_RECORDS)):
            close(streams, phase)
            if name == "restart_whole":  # the clean close's checkpoints deleted: restored whole
                for checkpoint in Path(streams._storeDir()).glob("stream-threads/*/.checkpoint"):
                    checkpoint.unlink()
            streams, phase = newStreams(), name
            t0 = time.time()
            streams.start()
            write(lo, lo + P5_RESTART_RECORDS)
            clock(name, P5_RESTART_RECORDS, t0, _groupCaughtUp(topics, appId, {(source, p): e for p, e in ends.items()}))
    finally:
        close(streams, phase)
    s = out["steady"]
    out.update({"records_per_s": round(s["records"] / s["seconds"]),
                "s_per_batch_equivalent": round(s["seconds"] * batchRecords / s["records"], 3),
                "cpu_s_per_batch_equivalent": round(s["cpu_seconds"] * batchRecords / s["records"], 2),
                "records_per_cpu_s": round(s["records"] / max(s["cpu_seconds"], 1e-9)),
                "steady_peak_jvm_rss_mb": s["jvm_peak_rss_mb"], "steady_peak_python_workers_rss_mb": s["python_workers_peak_rss_mb"],
                "steady_peak_python_worker_rss_mb": s["python_worker_peak_rss_mb"], "store_bytes_after": s["store_bytes"]})


def _p5SplitWarmup(out: dict, batches: int, batchRecords: int) -> None:
    """Move the steady run's first batch (the first after the restart) to ``warmup``; summarize."""
    s = out["steady"]
    out["warmup"] = {k: v[:1] if isinstance(v, list) else v for k, v in s.items()}
    out["steady"] = {k: v[1:] if isinstance(v, list) else v for k, v in s.items()}
    if out["steady"]["input_rows"] != [batchRecords] * batches or out["warmup"]["input_rows"] != [batchRecords]:
        raise RuntimeError(f"steady batches of {s['input_rows']} records, expected {1 + batches} of {batchRecords}")
    p5Summary(out, batchRecords)


def _errorText(e: BaseException) -> str:
    """An exception as text: its first and last 2,000 characters (Spark's errors put the cause
    first and the query's plan last)."""
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= 4000 else f"{text[:2000]} [...] {text[-2000:]}"


def _logErrors(text: str) -> list[str]:
    """The first distinct error lines of a P5 child's log (an OutOfMemoryError in a JVM thread is
    logged there, not in the exception the query fails with)."""
    import re

    found: list[str] = []
    for line in text.splitlines():
        if re.search(r"^Exception in thread|OutOfMemoryError|^\S*(Error|Exception)(: |$)|Caused by: ", line) and line not in found:
            found.append(line[:500])
            if len(found) == 8:
                break
    return found


def _idsDigest(loadIds: np.ndarray, steadyIds: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(loadIds.tobytes() + steadyIds.tobytes()).hexdigest()[:16]


def p5Topology(source: str, sink: str):
    """Issue 32's topology: ``stream(source).groupByKey().count(Materialized.as_("counts"))``, String
    keys and values, the counts written to ``sink`` as Longs."""
    from kspark import Consumed, Materialized, Produced, Serdes, StreamsBuilder

    b = StreamsBuilder()
    (b.stream(source, Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .count(Materialized.as_("counts")).toStream().to(sink, Produced.with_(Serdes.String(), Serdes.Long())))
    return b.build()


def _p5Native(spark, n: int, loadIds, steadySplit, out: dict, work: Path, localDir: Path, args, started: float) -> dict:
    """P5-native: Parquet files (key string, value string), one per micro-batch
    (``maxFilesPerTrigger`` 1): the load's files, then, after the load run, the warm-up's and
    the steady batches' files in the same directory; ``groupBy("key").count()``, update mode,
    noop sink, ``spark.sql.shuffle.partitions`` 4 (kspark's 4 tasks), the RocksDB provider.
    Checked through Spark's state reader (``format("statestore")``): N rows whose counts sum
    to the records, and 1,000 sampled keys' counts."""
    from pyspark.sql import functions as F

    batchRecords, loadBatch = args.p5_batch_records, args.p5_load_batch_records
    src, checkpoint = work / "native-input", work / "native-checkpoint"
    src.mkdir(parents=True)
    files = [0]

    def write(ids: np.ndarray) -> None:
        pq.write_table(pa.table({"key": p5KeyArray(ids, pa.string()), "value": pa.array(np.full(len(ids), "1"))}),
                       src / f"part-{files[0]:05d}.parquet")
        files[0] += 1
        time.sleep(0.01)  # distinct modification times: the file source takes the oldest first

    def dirs() -> dict[str, list[Path]]:
        return {"checkpoint": [checkpoint], "spark_local_state": _sparkLocalState(localDir)}

    spark.conf.set("spark.sql.shuffle.partitions", "4")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    phase = "input"
    try:
        note(f"P5 p5-native {n:,} keys: writing the load")
        for i in range(0, n, loadBatch):
            write(loadIds[i:i + loadBatch])
        with TreeSampler(dirs) as sampler:
            for phase in ("load", "steady"):
                if phase == "steady":
                    for ids in steadySplit:
                        write(ids)
                note(f"P5 p5-native {n:,} keys: {phase} run")
                t0 = time.time()
                q = (spark.readStream.schema("key string, value string").option("maxFilesPerTrigger", 1).parquet(str(src))
                     .groupBy("key").count().writeStream.format("noop").outputMode("update")
                     .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
                try:
                    q.awaitTermination()
                finally:
                    out[f"{phase}_run_seconds"] = round(time.time() - t0, 2)
                    try:
                        out[phase] = p5Batches(_progressOf([q]), sampler, False)
                    except Exception:  # noqa: BLE001 - a dead JVM
                        pass
        _p5SplitWarmup(out, args.p5_batches, batchRecords)
        phase = "check"
        state = spark.read.format("statestore").load(str(checkpoint))
        row = state.agg(F.count("*").alias("keys"), F.sum("value.count").alias("total")).collect()[0]
        sample = np.random.default_rng(P5_SEED + 1).choice(n, min(n, 1000), replace=False)
        truth = np.bincount(loadIds, minlength=n) + np.bincount(np.concatenate(steadySplit), minlength=n)
        got = {r["k"]: r["c"] for r in state.where(F.col("key.key").isin([f"k{i:08d}" for i in sample.tolist()]))
               .select(F.col("key.key").alias("k"), F.col("value.count").alias("c")).collect()}
        wrong = [f"k{i:08d}" for i in sample.tolist() if got.get(f"k{i:08d}") != truth[i]]
        out.update({"records_total": int(truth.sum()), "state_keys": row["keys"], "counts_sum": int(row["total"]),
                    "keys_checked": len(sample), "keys_wrong": len(wrong), "keys_wrong_sample": wrong[:5],
                    "correct": bool(not wrong and row["keys"] == n and row["total"] == truth.sum())})
        out["final_store_bytes_by_dir"] = _diskBytes(dirs())
    except BaseException as e:  # noqa: BLE001 - reported as the run's JSON line
        out.update({"error": _errorText(e), "failed_in": phase})
    out["process_seconds"] = round(time.time() - started, 1)
    return out


def p5Java(n: int, args, work: Path, broker: dict) -> dict:
    """P5-java: Kafka Streams 4.3.1 (bench/java/bench/KeyCount.java: the same topology, RocksDB,
    cache off, exactly_once_v2, commit.interval.ms 100, 2 stream threads) on the same broker,
    with the same records in a topic of its own (``p5-events-<N>-java``: kspark's load and
    steady runs need the steady records to arrive after the load). Phases: the load is produced
    and processed (the clock from ``KafkaStreams.start()``); paused, the warm-up batch's records
    are produced and processed; paused, the steady batches' records are produced, then the
    clock runs from ``resume()`` until the committed offsets reach the end (JVM start and
    producing excluded; CPU of the JVM, peak RSS reset per phase, see KeyCount.java). Bytes on
    disk of its state directory and changelog topic after each phase."""
    import subprocess

    from kspark.topics import openTopics

    batchRecords, batches = args.p5_batch_records, args.p5_batches
    out: dict = {"benchmark": f"P5-java Kafka Streams 4.3.1 count, {n:,} keys, RocksDB, exactly_once_v2, "
                              "commit.interval.ms 100, 2 stream threads", "system": "p5-java", "keys": n,
                 "batch_records": batchRecords, "steady_batches": batches, "load_avg_1m": round(os.getloadavg()[0], 2)}
    phase, started, proc = "input", time.time(), None
    try:
        loadIds, steadyIds = p5Input(n, batches, batchRecords)
        parts = p5Partitions(n)
        out["input_digest"] = _idsDigest(loadIds, steadyIds)
        ts = np.arange(P5_TS0, P5_TS0 + n + len(steadyIds), dtype=np.int64)
        topics = openTopics({"bootstrap.servers": broker["bootstrap"]})
        appId, source, sink = f"bench-p5-java-{n}", f"p5-events-{n}-java", f"p5-counts-{n}-java"
        topics.createTopic(source, 4)
        topics.createTopic(sink, 4)
        brokerData = Path(broker["logDir"]) / "data"

        def write(ids, stamps) -> None:
            topics.produce(source, zip(p5Keys(ids).view(f"S{P5_KEY_WIDTH}").ravel().tolist(), itertools.repeat(b"1"),
                                       stamps.tolist()), partitioner=lambda key, _: int(parts[int(key[1:])]))

        def dirs() -> dict[str, list[Path]]:
            return {"state_dir": [work / "java-state"], "changelog_topics": list(brokerData.glob(f"{appId}-*changelog-*"))}

        note(f"P5 p5-java {n:,} keys: producing the load")
        write(loadIds, ts[:n])
        proc = subprocess.Popen(javaCommand("bench.KeyCount", f"bootstrap={broker['bootstrap']}", f"appId={appId}",
                                            f"input={source}", f"output={sink}", f"stateDir={work / 'java-state'}"),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def phaseLine() -> dict:
            while True:
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"KeyCount exited ({proc.wait()}) in phase {phase}")
                if line.startswith("STREAMS FAILED"):
                    raise RuntimeError("KeyCount: " + line + proc.stdout.read()[-4000:])
                if line.startswith("{"):
                    j = json.loads(line)
                    disk = _diskBytes(dirs())
                    j.update({"store_bytes": disk["total"], "store_bytes_by_dir": {k: v for k, v in disk.items() if k != "total"}})
                    return j

        phase = "load"
        note(f"P5 p5-java {n:,} keys: load")
        out["load"] = phaseLine()
        for phase, ids, stamps in (("warmup", steadyIds[:batchRecords], ts[n:n + batchRecords]),
                                   ("steady", steadyIds[batchRecords:], ts[n + batchRecords:])):
            write(ids, stamps)
            brokerCpu = _cpuOf(broker["pid"])
            note(f"P5 p5-java {n:,} keys: {phase}")
            proc.stdin.write("GO\n")
            proc.stdin.flush()
            out[phase] = phaseLine()
            out[phase]["broker_cpu_seconds"] = round(_cpuOf(broker["pid"]) - brokerCpu, 1)
        proc.stdin.write("STOP\n")
        proc.stdin.close()
        if proc.wait(120) != 0:
            raise RuntimeError(f"KeyCount exited with {proc.returncode}")
        s = out["steady"]
        out.update({"records_per_s": round(s["records"] / s["seconds"]),
                    "s_per_batch_equivalent": round(s["seconds"] * batchRecords / s["records"], 3),
                    "records_per_cpu_s": round(s["records"] / max(s["cpu_seconds"], 1e-9)),
                    "steady_peak_rss_mb": s["peak_rss_mb"], "store_bytes_after": s["store_bytes"]})
        phase = "check"
        note(f"P5 p5-java {n:,} keys: checking the output")
        out.update(p5CheckOutput((t for p, end in sorted(topics.endOffsets(sink).items())
                                  for t in topics.readBatches(sink, p, 0, end, maxRows=500_000)), loadIds, steadyIds))
    except BaseException as e:  # noqa: BLE001 - reported as the run's JSON line
        out.update({"error": _errorText(e), "failed_in": phase})
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
    out["process_seconds"] = round(time.time() - started, 1)
    return out


def p5Child(args) -> int:
    """One (system, N) of P5 in this process (``--p5-child``, started by :func:`p5`): one JSON line."""
    broker = None
    if args.p5_broker:
        bootstrap, pid, logDir = args.p5_broker.split(",", 2)
        broker = {"bootstrap": bootstrap, "pid": int(pid), "logDir": logDir}
    [n] = args.p5_keys
    if args.p5_child == "p5-java":
        out = p5Java(n, args, args.work, broker)
    else:
        out = p5Spark(args.p5_child, n, args, args.work, broker if args.p5_child in P5_ON_KAFKA else None)
    print(json.dumps(out), flush=True)
    return 0


def _killTree(pid: int) -> None:
    """SIGKILL ``pid`` and every process below it (a P5 child this run started, its JVMs and workers)."""
    import signal

    for p in sorted(_tree(pid), key=lambda p: p != pid):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def p5(args, only: set) -> list[dict]:
    """P5 (issue 32, state at scale): for each N of ``--p5-keys``, each system in its own process
    (``run.py --p5-child``, one after the other, never two at once), so that a run that fails
    (an OutOfMemoryError in Spark's JVM) or hangs (killed after ``--p5-timeout`` s, with its
    whole process tree) becomes a JSON line with the error and the rest of the run goes on;
    each system starts with a fresh JVM and SparkSession, made with the same settings. The
    Kafka broker (for ``p5-kafka`` and ``p5-java``) is this process's, shared. After each N's
    runs, kspark's lines get the comparisons with that N's native and Java lines and a
    ``P5 comparison`` line follows."""
    import subprocess

    systems = [s for s in P5_SYSTEMS if s in only]
    rows: list[dict] = []
    broker = None
    if set(P5_ON_KAFKA) & set(systems):
        from kspark.testing import KafkaBroker

        broker = KafkaBroker(args.work / "kafka-p5", heapMb=1024).start()
    try:
        for n in args.p5_keys:
            byName: dict[str, dict] = {}
            for system in systems:
                work = args.work / f"p5-{system}-{n}"
                cmd = [sys.executable, str(Path(__file__).resolve()), "--p5-child", system, "--p5-keys", str(n),
                       "--p5-batches", str(args.p5_batches), "--p5-batch-records", str(args.p5_batch_records),
                       "--p5-load-batch-records", str(args.p5_load_batch_records), "--work", str(work)]
                for item in args.p5_config:
                    cmd += ["--p5-config", item]
                if broker is not None and system in P5_ON_KAFKA:
                    cmd += ["--p5-broker", f"{broker.bootstrapServers},{broker.pid},{broker.logDir}"]
                log = args.work / f"p5-{system}-{n}.log"
                note(f"P5 {system} {n:,} keys: child process (log {log})")
                started = time.time()
                with open(log, "w") as err:
                    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
                    lines: list[str] = []
                    reader = threading.Thread(target=lambda: lines.extend(child.stdout), daemon=True)
                    reader.start()
                    try:
                        child.wait(args.p5_timeout)
                        timedOut = False
                    except subprocess.TimeoutExpired:
                        _killTree(child.pid)
                        child.wait()
                        timedOut = True
                    reader.join(10)
                results = [json.loads(line) for line in lines if line.startswith("{")]
                if results:
                    row = results[-1]
                else:
                    row = {"benchmark": f"P5 {system}, {n:,} keys", "system": system, "keys": n,
                           "error": (f"timed out after {args.p5_timeout} s and killed" if timedOut
                                     else f"the child process exited with {child.returncode} without a result")}
                if "error" in row:
                    text = log.read_text(errors="replace")
                    row["log_errors"], row["log_tail"] = _logErrors(text), text[-3000:]
                row["child_wall_seconds"] = round(time.time() - started, 1)
                byName[system] = row
                if system not in P5_KSPARK:
                    print(json.dumps(row), flush=True)
                    rows.append(row)
            native, java = byName.get("p5-native", {}), byName.get("p5-java", {})
            comparison = {"benchmark": "P5 comparison", "keys": n}
            for system in P5_KSPARK:
                row = byName.get(system)
                if row is None:
                    continue
                if "median_s_per_batch" in row and "median_s_per_batch" in native:
                    row["vs_native_s_per_batch"] = round(row["median_s_per_batch"] / native["median_s_per_batch"], 2)
                    comparison[f"{system}_vs_native_s_per_batch"] = row["vs_native_s_per_batch"]
                if "records_per_s" in row and "records_per_s" in java:
                    row["vs_java_records_per_s"] = round(row["records_per_s"] / java["records_per_s"], 2)
                    comparison[f"{system}_vs_java_records_per_s"] = row["vs_java_records_per_s"]
                print(json.dumps(row), flush=True)
                rows.append(row)
            for system, row in byName.items():
                comparison[f"{system}_s_per_batch"] = row.get("median_s_per_batch", row.get("s_per_batch_equivalent"))
                comparison[f"{system}_records_per_s"] = row.get("records_per_s")
                comparison[f"{system}_correct"] = row.get("correct", False)
                if "error" in row:
                    comparison[f"{system}_error"] = row["error"][:300]
            print(json.dumps(comparison), flush=True)
    finally:
        if broker is not None:
            broker.close()
    return rows


def _count(text: str) -> int:
    """``100000``, ``100K``, ``4M`` -> an int."""
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


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
    parser.add_argument("--p2-live-rate", default="2000",
                        help="prices/s of P2-java's latency phase (--only p2-live); a comma-separated list runs one phase per rate")
    parser.add_argument("--p2-live-seconds", type=float, default=15, help="length of P2-java's latency phase (s)")
    parser.add_argument("--p2-java-trigger", default="availableNow",
                        help="kspark.trigger of P2-java's backlog run: availableNow or continuous (round 23)")
    parser.add_argument("--p2-trigger", default="continuous",
                        help="kspark.trigger of P2-java's latency phase (round 23: continuous; \"0 seconds\": micro-batches)")
    parser.add_argument("--p4-records", type=int, default=200_000, help="P4 input records (Kafka, both systems)")
    parser.add_argument("--p4-trigger", default="continuous",
                        help="kspark.trigger of P4's latency phase (its backlog phase runs availableNow; round 23: "
                             "continuous; \"0 seconds\": micro-batches)")
    parser.add_argument("--p4-live-rate", default="2000",
                        help="records/s of P4's latency phase; a comma-separated list runs one phase per rate")
    parser.add_argument("--p4-live-seconds", type=float, default=15, help="length of P4's latency phase (s)")
    parser.add_argument("--scaling", action="store_true", help="add P1 at 1M, 3M, 10M records (local[2])")
    parser.add_argument("--cores", action="store_true", help="add P1 at --records on local[1] and local[2]")
    parser.add_argument("--batch-records", type=int, default=BATCH_RECORDS,
                        help="records per micro-batch on Spark (P1 and P2: kspark.max.records.per.trigger; "
                             "P1-native: rows per input file, one file per trigger)")
    parser.add_argument("--p5-keys", default="100000,1000000,10000000",
                        help="P5: distinct keys N, comma-separated (100K, 4M also accepted); each N a run of every P5 system")
    parser.add_argument("--p5-batches", type=int, default=5, help="P5: steady micro-batches measured (after one warm-up batch)")
    parser.add_argument("--p5-batch-records", type=int, default=100_000, help="P5: records per steady micro-batch")
    parser.add_argument("--p5-load-batch-records", type=int, default=1_000_000,
                        help="P5: records per micro-batch of the load run (the N keys, each once)")
    parser.add_argument("--p5-timeout", type=float, default=1800,
                        help="P5: seconds one system at one N may take before its process tree is killed")
    parser.add_argument("--p5-config", action="append", default=[], metavar="KEY=VALUE",
                        help="P5: a config of kspark's application (repeatable), e.g. kspark.store.prefill=false for an A/B")
    parser.add_argument("--p5-child", help=argparse.SUPPRESS)  # run.py's own P5 child processes
    parser.add_argument("--p5-broker", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, default=Path("work/bench"))
    args = parser.parse_args(argv)
    BATCH_RECORDS = args.batch_records
    only = {x.strip() for x in args.only.split(",")}
    args.p5_keys = [_count(x) for x in args.p5_keys.split(",") if x.strip()]
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    import logging

    logging.getLogger("kspark").setLevel(logging.ERROR)  # dropped-record warnings would flood stderr
    if args.p5_child:
        return p5Child(args)
    if only & set(P5_SYSTEMS):
        p5(args, only)

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
    sparkRuns = only & {"p1", "p1-native", "p1-kafka", "p2", "p2-kafka", "p2-java", "p2-live", "p4"} or args.scaling or args.cores
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
                   [int(r) for r in str(args.p4_live_rate).split(",")], args.p4_live_seconds)
        if only & {"p2", "p2-kafka", "p2-java"}:
            prices, valuations = inputs.krxInputs(args.p2_records)
            if "p2" in only:
                p2(prices, valuations, args.work, spark, 2)
            if "p2-kafka" in only:  # the same input and example, topics on a Kafka broker (make jvm)
                from kspark.testing import KafkaBroker

                with KafkaBroker(args.work / "kafka-p2") as broker:
                    p2(prices, valuations, args.work, spark, 2, broker=broker)
            if "p2-java" in only:  # issue 34: kspark against the flagship's Java port, same broker and input
                from kspark.testing import KafkaBroker

                with KafkaBroker(args.work / "kafka-p2-java") as broker:
                    p2Java(prices, valuations, args.work, spark, broker, args.p2_java_trigger)
        if "p2-live" in only:  # issue 34: P2-java's latency phase (brokers of its own)
            p2Live(args.work, spark, args.p2_trigger, [int(r) for r in str(args.p2_live_rate).split(",")],
                   args.p2_live_seconds)
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
