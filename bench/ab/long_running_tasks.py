"""Issue 34 §1, an experiment: kspark's tasks inside long-running Spark tasks (bench/README.md round 22b).

The driver starts ONE Spark job, ``sc.parallelize(range(k), k).mapPartitionsWithIndex(loop)`` on
``local[2]`` (k = 2), in a background thread. Spark task ``i`` owns the kspark tasks of the P4
topology's partitions ``p`` with ``p % k == i`` (all their sub-topologies: P4 has one), as a
Kafka Streams stream thread owns its tasks, and runs a StreamThread-like loop until a stop file
appears:

- a confluent-kafka consumer, ``assign()``-ed to its tasks' input partitions, from the offsets the
  ``application.id`` group committed (``read_committed``; it never joins the group);
- kspark's own ``StreamTask`` per kspark task (the engine TopologyTestDriver and the Spark host
  run), built as the Spark host builds it (``TaskStatefulProcessor._newTask``): its persistent
  stores in a local RocksDB, restored at start from their changelog topics (``read_committed``:
  exactly the committed changes; a new directory per task attempt, so a retried attempt always
  restores), partition times seeded from the committed offsets' metadata (Kafka Streams' form);
- one transactional producer per Spark task (``transactional.id`` = ``<application.id>-lrt-<i>``,
  stable per Spark partition: a retried attempt's ``init_transactions`` fences the previous
  attempt and aborts its open transaction; Kafka Streams' EOS v2 has one producer per stream
  thread likewise). Outputs are produced as they are processed, inside the open transaction;
- every ``commit.interval.ms`` (100 ms, Kafka Streams' exactly-once default) with anything
  processed: each task's ``commit()``, its stores' changes flushed (changelog records produced
  into the same transaction), ``send_offsets_to_transaction`` (the processed positions, each
  with its partition time in Kafka Streams' metadata format) to the group ``application.id``,
  ``commit_transaction``, then the stores' pending changes applied locally.

The measurement is P4's live phase (``bench/run.py``'s ``liveLatency``/``ratedPhase``: a rate-
limited producer, wall-clock timestamps, a ``read_committed`` consumer of the output), for this
shape (``lrt``), kspark's micro-batch host (``kspark``, P4's ``kspark.trigger`` 0) and Kafka
Streams (``java``), each on its own topics of one broker, one after another. After every phase
the output topic is checked against the expected outputs: the phase's input topic read back
(``read_committed``) and piped partition by partition (a task each, as on Kafka) through
TopologyTestDriver; both sides' records ordered stably by key (a key's records come from one
task, in order), then count and ``outputDigest`` compared.

``--kill-after S``: S seconds after an ``lrt`` phase's warm-up, SIGKILL the Python worker of
long-running task 0 (Spark retries it: ``local[2,4]``); the phase's outputs must still equal the
expected ones.

Usage (under the lock)::

    flock /tmp/kspark-heavy.lock env PYTHONPATH=src .venv/bin/python bench/ab/long_running_tasks.py \
        --backlog 500000 --rates 2000,200,20000 --systems lrt,kspark,java --kill-after 5 --label run2 \
        --out bench/results/round22b-live.jsonl

``--backlog N`` first runs each of ``--backlog-systems`` (lrt,kspark,java) over a filled topic of N
P4 records (see :func:`backlog`). One JSON line per phase (stdout and ``--out``).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
os.environ.setdefault("KSPARK_PROGRESS", "none")

import run  # noqa: E402  (bench/run.py: P4's workload and measurement)
import inputs  # noqa: E402

COMMIT_INTERVAL_MS = 100  # Kafka Streams' commit.interval.ms under exactly_once_v2


# ---------------------------------------------------------------------- executor side
def taskLoop(index: int, plan: dict, servers: str, numTasks: int, owners: int, control: str,
             commitMs: int, storeRoot: str):
    """The loop of long-running Spark task ``index`` (of ``owners``): runs kspark tasks
    ``p % owners == index`` until ``<control>/stop`` exists; yields one summary dict."""
    import numpy as np
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
    from pyspark import TaskContext

    from kspark.runtime.record_queue import RawRecord
    from kspark.spark._datasource import openTopicsFromOptions
    from kspark.spark._task_processor import (TaskStatefulProcessor, _changelogColumns, _producedParts,
                                              _seedPartitionTimes)
    from kspark.state._restore import restoreStores
    from kspark.topics._kafka import (_metadataOf, _produceTable, decodeStreamsMetadata, encodeStreamsMetadata,
                                      sendOffsetsToTransaction)

    started = time.time()
    context = TaskContext.get()
    attempt = context.attemptNumber() if context is not None else 0
    with open(os.path.join(control, f"pid-{index}-{attempt}"), "w") as f:
        f.write(str(os.getpid()))
    appId = plan["applicationId"]
    sub = plan["subtopology"]
    sources = [t for t in plan["sources"] if t not in plan["globalSources"]]
    owned = [p for p in range(numTasks) if p % owners == index]
    runDir = os.path.join(storeRoot, f"{index}-{attempt}-{uuid.uuid4().hex[:8]}")  # a fresh one per attempt
    processor = TaskStatefulProcessor({**plan, "storeDir": runDir})
    checkpointId = f"lrt-{uuid.uuid4().hex}"  # never the database's: every attempt restores from the changelogs
    topics = openTopicsFromOptions(plan["backend"])

    consumer = Consumer({"bootstrap.servers": servers, "group.id": appId, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", "enable.partition.eof": False})
    wanted = [TopicPartition(t, p) for t in sources for p in owned]
    committed = {(tp.topic, tp.partition): tp for tp in consumer.committed(wanted, timeout=30)}

    tasks, stores = {}, {}
    restoredRecords = 0
    now = int(time.time() * 1000)
    for p in owned:
        taskId = f"{sub.id}_{p}"
        task = processor._newTask(taskId, p)
        state = task.persistentState
        if state is not None:
            if state.open(checkpointId, None):
                raise AssertionError("a new task directory held a store")
            restoredRecords += restoreStores(state, topics, p, checkpointId, 1 << 62, localTopics=False, taskId=taskId)
            state.restored(checkpointId, None)
        times = {}
        for t in sources:
            decoded = decodeStreamsMetadata(_metadataOf(committed[(t, p)])) if committed[(t, p)].offset >= 0 else None
            if decoded is not None and decoded[0] >= 0:
                times[f"{t}/{p}"] = decoded[0]
        _seedPartitionTimes(task, p, times)
        task.wallClockTime = now
        task.initialize()
        tasks[p], stores[p] = task, state
    restoredAt = time.time()

    producer = Producer({"bootstrap.servers": servers, "transactional.id": f"{appId}-lrt-{index}", "linger.ms": 5,
                         "transaction.timeout.ms": 60000})
    producer.init_transactions(30)  # fences an earlier attempt of this Spark task, aborts its transaction
    consumer.assign([TopicPartition(t, p, tp.offset if tp.offset >= 0 else -2)  # -2: OFFSET_BEGINNING
                     for (t, p), tp in committed.items()])
    errors: list = []

    def delivered(err, msg) -> None:
        if err is not None:
            errors.append(err)

    inTransaction = False
    positions: dict[tuple[str, int], int] = {}  # processed, not committed yet: next offset
    lastCommit = time.monotonic()
    commits, processed, batchId = 0, 0, 0
    commitMsList: list[float] = []
    stopFile = os.path.join(control, "stop")

    def produce(produced) -> None:
        nonlocal inTransaction
        if not produced:
            return
        if not inTransaction:
            producer.begin_transaction()
            inTransaction = True
        for topic, partition, table in _producedParts(produced):
            _produceTable(producer, topic, partition, table, delivered)

    def commit() -> None:
        nonlocal inTransaction, positions, commits, batchId, lastCommit
        t0 = time.perf_counter()
        version = uuid.uuid4().hex
        for p, task in tasks.items():
            task.commit()  # record caches flush
            if stores[p] is not None:
                task.produced.extend(_changelogColumns(
                    stores[p].flush(version, batchId, task.partitionGroup.streamTime, checkpointId), p))
            produce(task.drainProducedChunks())
        if not inTransaction:
            producer.begin_transaction()
            inTransaction = True
        offsets = [TopicPartition(t, p, o, encodeStreamsMetadata(tasks[p].queueOf[t].partitionTime, {}))
                   for (t, p), o in sorted(positions.items())]
        sendOffsetsToTransaction(producer, offsets, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(60)
        if errors:
            raise RuntimeError(f"lrt task {index}: a record was not delivered: {errors[0]}")
        inTransaction = False
        for state in stores.values():
            if state is not None:
                state.db.reconcile(checkpointId, version)  # the committed batch's pending writes applied
        positions = {}
        commits += 1
        batchId += 1
        lastCommit = time.monotonic()
        commitMsList.append((time.perf_counter() - t0) * 1000)

    try:
        while not os.path.exists(stopFile):
            wait = max(0.001, min(0.05, lastCommit + commitMs / 1000 - time.monotonic()))
            messages = consumer.consume(10_000, wait)
            if messages:
                now = int(time.time() * 1000)
                byPartition: dict[tuple[str, int], list] = {}
                for m in messages:
                    if m.error() is not None:
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            continue
                        raise RuntimeError(f"lrt task {index}: consumer error {m.error()}")
                    byPartition.setdefault((m.topic(), m.partition()), []).append(
                        RawRecord(m.offset(), m.timestamp()[1], m.key(), m.value(), tuple(m.headers() or ())))
                for (t, p), records in byPartition.items():
                    task = tasks[p]
                    task.addRecords(t, records, lag=0)
                    task.processAll(now)
                    positions[(t, p)] = records[-1].offset + 1
                    processed += len(records)
                for task in tasks.values():
                    task.maybePunctuateSystemTime(now)
                    produce(task.drainProducedChunks())
                producer.poll(0)
            if positions and time.monotonic() - lastCommit >= commitMs / 1000:
                commit()
        if positions or inTransaction:
            commit()
    finally:
        consumer.close()
        for state in stores.values():
            if state is not None:
                state.close()
    q = np.percentile(commitMsList, [50, 95]).round(1).tolist() if commitMsList else [None, None]
    yield {"index": index, "attempt": attempt, "tasks": owned, "restoredRecords": restoredRecords,
           "startupSeconds": round(restoredAt - started, 2), "seconds": round(time.time() - started, 1),
           "processed": processed, "commits": commits, "commitMsP50": q[0], "commitMsP95": q[1]}


# ---------------------------------------------------------------------- driver side
class LongRunningApp:
    """The ``lrt`` application of one phase: its Spark job in a background thread."""

    def __init__(self, spark, servers: str, src: str, out: str, appId: str, work: Path, killAfter: float | None):
        from kspark import KafkaStreams
        from kspark.spark._datasource import topicsOptions

        self.spark, self.work = spark, work
        streams = KafkaStreams(run.sessionCountTopology(src, out, run.GAP), {
            "bootstrap.servers": servers, "processing.guarantee": "exactly_once_v2", "application.id": appId,
            "state.dir": str(work / "lrt-state")})
        plans = streams._plan()
        streams._createInternalTopics(plans)
        if len(plans) != 1:
            raise SystemExit("the experiment runs one sub-topology (P4's)")
        self.plan = {**plans[0], "backend": topicsOptions(streams._topics), "storeDir": None}
        self.control = tempfile.mkdtemp(prefix="lrt-", dir=work)
        self.owners = min(self.plan["numTasks"], int(spark.sparkContext.defaultParallelism))
        self.summaries: list = []
        self.error: BaseException | None = None
        self.killAfter = killAfter
        self.killed: dict = {}
        plan, numTasks, owners, control = self.plan, self.plan["numTasks"], self.owners, self.control
        storeRoot = str(work / "lrt-stores" / appId)

        def job():
            try:
                rdd = spark.sparkContext.parallelize(range(owners), owners)
                self.summaries = rdd.mapPartitionsWithIndex(
                    lambda i, _: taskLoop(i, plan, servers, numTasks, owners, control, COMMIT_INTERVAL_MS,
                                          storeRoot)).collect()
            except BaseException as e:  # noqa: BLE001 - reported by stop()
                self.error = e

        spark.sparkContext.setJobGroup(f"lrt-{appId}", "long-running kspark tasks", interruptOnCancel=True)
        self.thread = threading.Thread(target=job, daemon=True)
        self.thread.start()

    def warmedUp(self) -> None:
        """Called once the warm-up records came out: schedules the kill, if any."""
        if self.killAfter is None:
            return

        def kill():
            path = os.path.join(self.control, "pid-0-0")
            pid = int(open(path).read())
            os.kill(pid, signal.SIGKILL)
            self.killed = {"pid": pid, "at": time.time()}
            run.note(f"lrt: killed long-running task 0 (Python worker {pid})")

        threading.Timer(self.killAfter, kill).start()

    def stop(self) -> None:
        Path(self.control, "stop").touch()
        self.thread.join(120)
        if self.thread.is_alive():
            self.spark.sparkContext.cancelAllJobs()
            raise SystemExit("lrt: the long-running tasks did not stop within 120 s")
        if self.error is not None:
            raise SystemExit(f"lrt: the Spark job failed: {self.error}")


class ContinuousApp:
    """kspark's own continuous mode (``kspark.trigger`` ``continuous``, round 23) in a phase: its
    kill clock, as :class:`LongRunningApp`'s (stream thread 0's Python worker)."""

    def __init__(self, streams, killAfter: float | None):
        self.streams, self.killAfter, self.killed = streams, killAfter, {}

    @property
    def summaries(self) -> list:
        return self.streams._streamThreads.summaries

    def warmedUp(self) -> None:
        if self.killAfter is None:
            return

        def kill():
            from kspark.spark._stream_threads import killStreamThread

            pid = killStreamThread(self.streams._streamThreads.control, 0)
            self.killed = {"pid": pid, "at": time.time()}
            run.note(f"continuous: killed stream thread 0 (Python worker {pid})")

        threading.Timer(self.killAfter, kill).start()


def expectedCheck(topics, src: str, out: str) -> dict:
    """The output topic against the expected outputs (see the module docstring)."""
    from kspark import Serdes
    from kspark.testing import TopologyTestDriver

    expected = []
    for p, end in sorted(topics.endOffsets(src).items()):
        with TopologyTestDriver(run.sessionCountTopology(src, out, run.GAP)) as d:
            i = d.createInputTopic(src, Serdes.ByteArray(), Serdes.ByteArray())
            for t in topics.readBatches(src, p, 0, end, maxRows=200_000):
                for key, ts in zip(t["key"].to_pylist(), t["timestamp"].to_pylist()):
                    i.pipeInput(key, None, ts)
            expected += [(r.key(), r.value(), r.timestamp())
                         for r in d.createOutputTopic(out, Serdes.ByteArray(), Serdes.ByteArray()).readRecordsToList()]
    actual = []
    for p, end in sorted(topics.endOffsets(out).items()):
        for t in topics.readBatches(out, p, 0, end, maxRows=200_000):
            actual += zip(t["key"].to_pylist(), t["value"].to_pylist(), t["timestamp"].to_pylist())
    byKey = lambda r: r[0] or b""  # noqa: E731 - stable: a key's records keep their order
    e, a = run.outputDigest(sorted(expected, key=byKey)), run.outputDigest(sorted(actual, key=byKey))
    return {"outputs": len(actual), "outputs_expected": len(expected), "digest": a, "digest_expected": e,
            "outputs_exact": len(actual) == len(expected) and a == e}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="2000,200,20000")
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--systems", default="lrt,kspark,java", help="of lrt, kspark (micro-batch, trigger 0), "
                        "continuous (kspark.trigger continuous), java")
    parser.add_argument("--kill-after", type=float, default=None,
                        help="an extra lrt phase at the first rate, killing long-running task 0 this many s after warm-up")
    parser.add_argument("--backlog", type=int, default=0,
                        help="first, backlog runs over this many P4 records (records/s until all committed)")
    parser.add_argument("--backlog-systems", default="lrt,kspark,java")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label", default="")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "kspark-lrt")
    args = parser.parse_args(argv)
    from kspark.config import StreamsConfig
    from kspark.spark._session import getOrCreateSession
    from kspark.testing import KafkaBroker
    from kspark.topics import openTopics

    rates = [int(r) for r in args.rates.split(",")]
    systems = args.systems.split(",")
    need = int(max(rates) * args.seconds)
    hosts = [h.encode() for h in inputs.nasaRequests(need)["host"].tolist()]
    # local[2, 4]: 2 cores, a failed task tried up to 4 times (local mode's default is 1)
    spark = getOrCreateSession(StreamsConfig({"kspark.spark.master": "local[2,4]", "application.id": "bench"}))
    import shutil
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    runId = uuid.uuid4().hex[:6]
    with KafkaBroker(args.work / "kafka", heapMb=1024) as broker:
        topics = openTopics({"bootstrap.servers": broker.bootstrapServers})
        eos = {"bootstrap.servers": broker.bootstrapServers, "processing.guarantee": "exactly_once_v2"}
        for system in (args.backlog_systems.split(",") if args.backlog else []):
            row = {"label": args.label, **backlog(system, spark, broker, topics, args.backlog, args.work, runId)}
            print(json.dumps(row), flush=True)
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
        phases = [(rate, system, None) for rate in rates for system in systems]
        if args.kill_after is not None:
            phases += [(rates[0], s, args.kill_after) for s in ("lrt", "continuous") if s in systems]
        for rate, system, killAfter in phases:
            keys = hosts[:int(rate * args.seconds)]
            name = system if killAfter is None else f"{system}kill"
            apps: list = []

            def startApp(src, out, system=system, killAfter=killAfter):
                appId = f"lrt-bench-{runId}-{src}"
                if system == "lrt":
                    app = LongRunningApp(spark, broker.bootstrapServers, src, out, appId, args.work, killAfter)
                    apps.append(app)
                    return app.stop
                if system in ("kspark", "continuous"):
                    from kspark import KafkaStreams
                    streams = KafkaStreams(run.sessionCountTopology(src, out, run.GAP), {
                        **eos, "application.id": appId, "state.dir": str(args.work / "kspark-live-state"),
                        "kspark.trigger": "0 seconds" if system == "kspark" else "continuous"}, spark=spark)
                    streams.start()
                    if system == "continuous":
                        apps.append(ContinuousApp(streams, killAfter))
                    return streams.close
                return run.startJavaLive("bench.Streams", f"bootstrap={broker.bootstrapServers}", f"appId={appId}",
                                         f"input={src}", f"output={out}", f"stateDir={args.work / 'java-live-state'}",
                                         "mode=live")

            def tracked(src, out):
                stop = startApp(src, out)
                if apps:  # the kill clock starts once the warm-up answered: ratedPhase's warm-up follows
                    threading.Thread(target=_afterWarmUp, args=(topics, out, apps[0]), daemon=True).start()
                return stop

            load = os.getloadavg()[0]
            error = None
            try:
                figures = run.liveLatency(name, topics, keys, rate, args.seconds, tracked)
            except SystemExit as e:
                figures, error = {}, str(e)
            src, out = f"p4-live-{name}-{len(keys)}-{rate}", f"p4-live-out-{name}-{len(keys)}-{rate}"
            check = expectedCheck(topics, src, out)
            row = {"label": args.label, "system": name, "rate": rate, "seconds": args.seconds,
                   "load_avg_1m": round(load, 2), **figures, **check,
                   "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            if error:
                row["error"] = error
            if apps:
                row["tasks"] = apps[0].summaries
                if apps[0].killed:
                    row["killed_pid"] = apps[0].killed["pid"]
                if isinstance(apps[0], ContinuousApp):
                    row["threads"] = [{k: v for k, v in t.items() if k != "counters"} for t in apps[0].summaries]
            print(json.dumps(row), flush=True)
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    return 0


def backlog(system: str, spark, broker, topics, n: int, work: Path, runId: str) -> dict:
    """``system`` over a backlog of ``n`` P4 records (the NASA log's timestamps; one input topic per
    run, filled first). lrt: seconds from the job's start until the group's committed offsets reach
    the input's end, CPU-s of this process tree without the broker; kspark: P4's backlog run
    (``availableNow``, ``--batch-records`` 1,000,000 as round 21); java: bench/java's ``mode=backlog``
    (its own clock and CPU, JVM start excluded)."""
    from kspark import KafkaStreams
    from kspark.runtime.partitioner import partitionForKey

    df = inputs.nasaRequests(n)
    src, out = f"p4-backlog-{system}-{n}", f"p4-backlog-out-{system}-{n}"
    topics.createTopic(src, 4)
    topics.createTopic(out, 4)
    topics.produce(src, zip((h.encode() for h in df["host"].tolist()), [None] * n, df["ts"].tolist()),
                   partitioner=partitionForKey)
    ends = topics.endOffsets(src)
    appId = f"lrt-bench-{runId}-{src}"
    run.note(f"{system} backlog: {n} records")
    load = os.getloadavg()[0]
    cpu0 = run._cpuOf(os.getpid()) - run._cpuOf(broker.pid)
    t0 = time.time()
    extra: dict = {}
    if system == "lrt":
        app = LongRunningApp(spark, broker.bootstrapServers, src, out, appId, work, None)
        _awaitCommitted(topics, appId, src, ends, t0, lambda: app.error, app.stop, "lrt")
        seconds = time.time() - t0
        cpu = run._cpuOf(os.getpid()) - run._cpuOf(broker.pid) - cpu0
        app.stop()
        extra["tasks"] = app.summaries
    elif system == "continuous":
        streams = KafkaStreams(run.sessionCountTopology(src, out, run.GAP), {
            "bootstrap.servers": broker.bootstrapServers, "processing.guarantee": "exactly_once_v2",
            "application.id": appId, "state.dir": str(work / "continuous-state"), "kspark.trigger": "continuous"},
            spark=spark)
        streams.start()
        _awaitCommitted(topics, appId, src, ends, t0, lambda: streams._streamThreads.error, streams.close, "continuous")
        seconds = time.time() - t0
        cpu = run._cpuOf(os.getpid()) - run._cpuOf(broker.pid) - cpu0
        streams.close()
        extra["threads"] = [{k: v for k, v in t.items() if k != "counters"} for t in streams._streamThreads.summaries]
    elif system == "kspark":
        streams = KafkaStreams(run.sessionCountTopology(src, out, run.GAP), {
            "bootstrap.servers": broker.bootstrapServers, "processing.guarantee": "exactly_once_v2",
            "application.id": appId, "state.dir": str(work / "kspark-state"),
            "kspark.max.records.per.trigger": 1_000_000}, spark=spark)
        streams.start()
        streams.awaitTermination()
        streams.close()
        seconds = time.time() - t0
        cpu = run._cpuOf(os.getpid()) - run._cpuOf(broker.pid) - cpu0
    else:
        [j] = run.runJava("bench.Streams", f"bootstrap={broker.bootstrapServers}", f"appId={appId}",
                          f"input={src}", f"output={out}", f"stateDir={work / 'java-state'}", "mode=backlog")
        seconds, cpu = j["seconds"], j["cpu_seconds"]
    check = expectedCheck(topics, src, out)
    return {"system": f"{system}-backlog", "records": n, "seconds": round(seconds, 2),
            "records_per_s": round(n / seconds), "cpu_seconds": round(cpu, 1), "load_avg_1m": round(load, 2),
            **check, **extra, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _awaitCommitted(topics, appId: str, src: str, ends: dict, t0: float, error, stop, what: str) -> None:
    """Wait until group ``appId`` committed ``src``'s ``ends``; ``stop()`` and fail after 600 s from
    ``t0`` or once ``error()`` is set."""
    while True:
        done = topics.committedOffsets(appId, src)
        if all(done.get(p, (0,))[0] >= e for p, e in ends.items()):
            return
        if time.time() - t0 > 600 or error() is not None:
            stop()
            raise SystemExit(f"{what} backlog: not done in 600 s")
        time.sleep(0.1)


def _afterWarmUp(topics, out: str, app: LongRunningApp) -> None:
    """Start ``app``'s kill clock once its output topic holds the 100 warm-up outputs."""
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            if sum(topics.endOffsets(out).values()) >= 100:
                break
        except Exception:  # noqa: BLE001 - topic not there yet
            pass
        time.sleep(0.2)
    app.warmedUp()


if __name__ == "__main__":
    sys.exit(main())
