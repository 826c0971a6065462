"""The Spark host's continuous execution (``kspark.trigger`` ``"continuous"``, Kafka only): kspark's
tasks run inside long-running Spark tasks, each one a Kafka Streams ``StreamThread``.

The micro-batch host pays Spark's fixed cost of planning, scheduling and committing a micro-batch
for every output (P4's live p50 1.7-2.6 s, bench/README.md rounds 19-21). Here the driver starts
ONE Spark job, ``sc.parallelize(range(n), n).mapPartitionsWithIndex(streamThread)``, which runs
until the application closes (bench/README.md round 22b measured the shape; round 23 this module):

- ``n`` stream threads = ``min(kspark tasks, Spark's default parallelism)``: every thread holds a
  core for the life of the run, so all of them must fit at once. Thread ``i`` owns the kspark tasks
  ``k`` with ``k % n == i`` of the list of every sub-topology's tasks (a fixed assignment: Kafka's
  assignor's result for one instance, never rebalanced).
- Each thread has a ``read_committed`` consumer ``assign()``-ed to its tasks' source and
  repartition partitions from the offsets the group ``application.id`` committed (it never joins
  the group: the driver is its member, :class:`kspark.topics._kafka.GroupMember`), kspark's own
  ``StreamTask`` per task (the engine TopologyTestDriver and the micro-batch host run) with its
  persistent stores in a local RocksDB restored from their changelog topics before it initializes
  (Kafka Streams' restoration: whole, in a new directory, unless the task's last run on this
  machine stopped cleanly and left a checkpoint of its changelogs' offsets, from which it restores
  on in the directory it kept; a crash leaves none, as Kafka Streams trusts local state under
  exactly-once only after a clean close), the partition times seeded from the
  committed offsets' metadata, and one transactional producer (``transactional.id``
  ``<application.id>-kspark-stream-thread-<i>``: stable per thread, so a retried or restarted
  thread's ``init_transactions`` fences the previous one and aborts its open transaction, as
  Kafka Streams' exactly-once v2 producer per stream thread does).
- The poll loop (Python's cyclic garbage collector paused, run whole every 60 s:
  :class:`PausedCollector`): records are processed as they arrive and their outputs produced
  into the open transaction; wall-clock punctuators are checked every iteration; every
  ``commit.interval.ms`` (Kafka Streams' default under exactly-once: 100 ms) in which a position moved or an output was
  produced, each task commits (its record caches flush), its stores' changes go to their
  changelogs in the transaction, the positions (each partition's first record not processed
  yet, else the consumer's position) are sent to the transaction with their partition times in Kafka Streams'
  metadata format, and the transaction commits. The stores' changes are applied to the local
  stores when the commit starts, not held as pending until it ends (the micro-batch host's way):
  a failed commit ends the attempt, and the next one restores a new directory. A task reading
  several partitions waits, as Kafka's does, while a partition without buffered records has
  records known upstream (the consumer's cached high watermark beyond its
  position; records of an open transaction count until it commits).

After a crash (a thread's Python worker killed, a failed attempt), Spark runs the thread again up
to ``spark.task.maxFailures`` times (``local[n, f]`` on a local master); the new attempt restores
its tasks from the changelogs and resumes at the committed offsets: outputs stay exactly once.
A restarted task is Kafka Streams' restarted task: its processors are initialized again (their
punctuation schedules re-registered, DSL processors' observed stream time reset to the task's),
where the micro-batch host carries those in its checkpoint. So a late record just after a restart
is judged as Kafka Streams would judge it after a restart.

Global stores (``GlobalKTable``, ``addGlobalStore``): each task keeps its copy, as on the
micro-batch host; at a thread's start the copies are restored to the global topics' ends (Kafka's
global thread bootstraps its stores before the stream threads start), then the thread's consumer
reads the global partitions on from there and gives each record to every task of the thread that
has the store, applied in timestamp order with the task's records. A task neither waits for
records known on a global partition nor idles (``max.task.idle.ms``) on an empty one, as Kafka's
tasks never wait for a global topic (the micro-batch host's tasks do: they read the global
topics by batch).

Not in this mode (refused at start, naming the reason): local topics; ``at_least_once``; a logged
store without a persistent form (its contents would be lost at a restart).

Metrics (``KafkaStreams.metrics()`` and its Prometheus endpoint, as on the micro-batch host): at
each commit every task's metrics row (counters, e2e latency summaries, store calls, its
``process-latency`` and ``punctuate-latency`` over the commit interval and the commit's
``commit-latency``) is merged into the thread's totals and into the current second's row. At
most once a second the thread rewrites a file in the driver's control directory with its totals,
its last :data:`_INTERVALS_KEPT` seconds' rows and its partitions' ``records-lag`` (librdkafka's
statistics). The driver reads the files every second (:meth:`StreamThreads.pollMetrics`) and
feeds each second's row once to its windowed rates and latencies. A thread on another machine
writes no file here: its counters reach the driver with its summary when the run stops, without
rates or lags. The same rows feed the run's progress view and summary
(:class:`kspark.spark._progress.ContinuousView`).
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import signal
import statistics
import tempfile
import threading
import time
import uuid
from collections import deque

from ..errors import StreamsException

log = logging.getLogger("kspark")

CONTINUOUS = "continuous"
EXACTLY_ONCE_COMMIT_INTERVAL_MS = 100
"""Kafka Streams' ``commit.interval.ms`` default under exactly-once (``StreamsConfig``)."""
_STOP_GRACE_S = 30.0
_INTERVALS_KEPT = 60
"""The seconds of metrics rows a stream thread's metrics file keeps for the driver's poll."""
_CHECKPOINT = ".checkpoint"
"""A task's checkpoint file after a clean close (:meth:`_StreamThread.close`)."""


def threadOfTasks(plans: list[dict], threads: int) -> dict[tuple[int, int], int]:
    """(plan index, partition) of every kspark task -> its stream thread, ``k % threads`` over the
    tasks listed sub-topology by sub-topology (upstream first), partition by partition."""
    tasks = [(i, p) for i, plan in enumerate(plans) for p in range(plan["numTasks"])]
    return {task: k % threads for k, task in enumerate(tasks)}


def refusal(config, plans: list[dict]) -> str | None:
    """Why ``plans`` cannot run continuously under ``config``, or None."""
    from ..state._persistent import _PERSISTENT, _PERSISTENT_CLASSES

    if not config.usesKafka():
        return ("it runs on Kafka only (bootstrap.servers is not set: local topics have no consumer group nor "
                "transactions for its commits)")
    if config.processingGuarantee() != "exactly_once_v2":
        return (f"it commits with Kafka transactions only (processing.guarantee={config.processingGuarantee()}; "
                "set exactly_once_v2)")
    for plan in plans:
        for name, topic in plan["changelogs"].items():
            if topic is None:
                continue
            store = plan["storeBuilders"][name].build(config.defaultKeySerde(), config.defaultValueSerde())
            if type(store) not in _PERSISTENT_CLASSES and type(store) not in _PERSISTENT:
                return (f"store {name} ({type(store).__name__}) has no persistent form: a restarted task could not "
                        f"restore it from its changelog {topic}")
    return None


class PausedCollector:
    """Python's cyclic garbage collector paused for a stream thread's poll loop, or for each
    micro-batch of a Python worker (a context manager, entered again for each), and run whole by
    :meth:`maybeCollect` at most ``intervalS`` apart (counted from its creation or its last
    collection), or sooner once ``maxPending`` tracked objects were created on balance since it
    last ran.

    Left automatic, it ran about 4,000 young and 35 whole collections in the 34 s of a P2
    stream thread (2M prices). Each whole one walked every record held in the task queues (tens
    of thousands per task) and the stores' entries, and all of them freed 798 objects: 3.5 s of
    the thread's 24 CPU-s (bench/README.md, round 25). Garbage without reference cycles is freed
    at once by reference counting either way; cycles wait for the next whole collection.

    A whole collection walks the stores' working sets too (a ``ValueAndTimestamp`` per cached
    entry, never untracked): 0.3-0.7 s for 400-480K objects in bench P5 at 1M keys, 6-8 % of a
    thread's time at one every 10 s. P5's steady phase there (3 alternating pairs) ran at a median
    of 47.1K records/s with one every 10 s, 56.9K with one every 60 s (the default since
    bench/README.md round 27).
    """

    def __init__(self, intervalS: float = 60.0, maxPending: int = 1_000_000) -> None:
        self.intervalS, self.maxPending = intervalS, maxPending
        self.collections = 0
        self._wasEnabled = False
        self._last = time.monotonic()

    def __enter__(self) -> "PausedCollector":
        self._wasEnabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc) -> None:
        if self._wasEnabled:
            gc.enable()

    def maybeCollect(self) -> bool:
        """Collect whole if it is time (see the class docstring); return whether it did."""
        if time.monotonic() - self._last < self.intervalS and gc.get_count()[0] <= self.maxPending:
            return False
        gc.collect()
        self.collections += 1
        self._last = time.monotonic()
        return True


class StreamThreads:
    """The driver side of a continuous run: its one Spark job, in a background thread.

    Parameters
    ----------
    spark : SparkSession
    plans : list of dict
        ``KafkaStreams._plan()``'s plans, with ``backend`` (the topics' data source options) and
        ``storeDir`` set.
    threads : int
        Stream threads (Spark tasks of the job).
    commitIntervalMs : int
        ``commit.interval.ms``.
    initialOffsets : dict of str to int
        ``"<topic>/<partition>"`` -> where a partition without a committed offset starts (the
        reset policy's position, resolved once on the driver, so a restarted thread starts there
        too).
    hostMetrics : HostMetrics
        The run's windowed metrics, fed by :meth:`pollMetrics` (every second while the threads
        run, and at each call).
    view : ContinuousView, optional
        The run's progress view, fed with the metrics.
    """

    def __init__(self, spark, plans: list[dict], threads: int, commitIntervalMs: int,
                 initialOffsets: dict[str, int], hostMetrics, view=None) -> None:
        self.spark, self.plans, self.threads = spark, plans, threads
        self.commitIntervalMs = commitIntervalMs
        self.initialOffsets = initialOffsets
        self.runId = f"continuous-{uuid.uuid4().hex}"
        self.control = tempfile.mkdtemp(prefix="kspark-stream-threads-")
        self.summaries: list[dict] = []
        self.error: BaseException | None = None
        self.hostMetrics, self.view = hostMetrics, view
        self._reports: dict[str, dict] = {}  # metrics file -> its last content read
        self._fed: dict[str, int] = {}  # metrics file -> the last interval fed
        self._pollLock = threading.Lock()
        self._group = f"kspark-stream-threads-{plans[0]['applicationId']}-{uuid.uuid4().hex[:8]}"
        self._thread: threading.Thread | None = None
        self._stopping = False

    def start(self) -> None:
        spark, plans, threads = self.spark, self.plans, self.threads
        spec = {"threads": threads, "control": self.control, "commitIntervalMs": self.commitIntervalMs,
                "initialOffsets": self.initialOffsets}

        def job() -> None:
            try:
                sc = spark.sparkContext
                sc.setJobGroup(self._group, "kspark stream threads (kspark.trigger continuous)", interruptOnCancel=True)
                self.summaries = sc.parallelize(range(threads), threads).mapPartitionsWithIndex(
                    lambda i, _: streamThread(i, plans, spec)).collect()
            except BaseException as e:  # noqa: BLE001 - reported by KafkaStreams.awaitTermination
                self.error = e

        self._thread = threading.Thread(target=job, name="kspark-stream-threads", daemon=True)
        self._thread.start()
        threading.Thread(target=self._pollEverySecond, name="kspark-stream-threads-metrics", daemon=True).start()

    def _pollEverySecond(self) -> None:
        """Feed the threads' metrics to ``hostMetrics`` while they run (rates between scrapes)."""
        while self.alive():
            self._thread.join(1.0)
            try:
                _, lags = self.pollMetrics()
                if self.view is not None:
                    self.view.tick(lags)
            except Exception:  # noqa: BLE001 - metrics must not end the run; the next poll retries
                log.debug("the stream threads' metrics could not be read", exc_info=True)

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def join(self, timeout: float | None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def stop(self) -> None:
        """Ask every thread to commit and stop (a file in the control directory, which a thread on
        this machine sees); after ``commit.interval.ms`` + 30 s, cancel the job (threads on other
        machines: an open transaction is then aborted by the next run's ``init_transactions``)."""
        if self._stopping:
            self.join(None)
            return
        self._stopping = True
        open(os.path.join(self.control, "stop"), "w").close()
        self.join(self.commitIntervalMs / 1000 + _STOP_GRACE_S)
        if self.alive():
            log.warning("kspark's stream threads did not stop within %.0f s; cancelling their Spark job",
                        self.commitIntervalMs / 1000 + _STOP_GRACE_S)
            self.spark.sparkContext.cancelJobGroup(self._group)
            self.join(60)

    def pollMetrics(self) -> tuple[dict[str, float], dict[int, dict[tuple[str, int], int]]]:
        """Read the metrics files each attempt of each thread writes in the control directory (at
        most once a second, and when it stops): feed every interval not fed yet to
        ``hostMetrics`` (its windowed rates and latencies, by sub-topology: a sub-topology's
        thread-id, as on the micro-batch host), and return the counters so far (every row of
        every commit merged, with each sub-topology's ``commit-total``) and the input
        partitions' ``records-lag`` by sub-topology. Threads on other machines write no file
        here: their counters come with their summaries once stopped, without rates or lags."""
        import json

        from ..runtime.metrics import mergeEncoded

        with self._pollLock:
            names = sorted(n for n in os.listdir(self.control) if n.startswith("metrics-") and n.endswith(".json")) \
                if os.path.isdir(self.control) else []
            for name in names:
                try:
                    with open(os.path.join(self.control, name)) as f:
                        self._reports[name] = json.load(f)
                except (OSError, ValueError):  # replaced right now: the last one read stands
                    continue
            reports = list(self._reports.items()) or [
                (f"summary-{i}", {**summary, "intervals": [], "lags": []}) for i, summary in enumerate(self.summaries)]
            total: dict[str, float] = {}
            lags: dict[int, dict[tuple[str, int], int]] = {}
            for name, report in reports:
                mergeEncoded(total, report["counters"])
                for sub in report["subtopologies"]:
                    key = self.hostMetrics.commitCounter(sub)
                    total[key] = total.get(key, 0) + report["commits"]
                for seq, commits, rows in report["intervals"]:
                    if seq <= self._fed.get(name, -1):
                        continue
                    self._fed[name] = seq
                    for sub, row in rows.items():
                        self.hostMetrics.addBatch(int(sub), f"{self.runId}/{name}", seq,
                                                  {**row, self.hostMetrics.commitCounter(int(sub)): commits})
                        if self.view is not None:
                            self.view.onInterval(int(sub), commits, row)
                for sub, topic, partition, lag in report["lags"]:
                    lags.setdefault(sub, {})[(topic, partition)] = lag
            return total, lags

    def cleanup(self) -> None:
        shutil.rmtree(self.control, ignore_errors=True)


# ---------------------------------------------------------------------- executor side
def streamThread(index: int, plans: list[dict], spec: dict):
    """Stream thread ``index``: runs its kspark tasks until ``<control>/stop`` exists (see the module
    docstring); yields one summary dict (its tasks, restored records, commits, counters)."""
    from pyspark import TaskContext

    from ._quiet import followDriverLogLevel

    followDriverLogLevel(plans[0].get("logLevel"))
    context = TaskContext.get()
    attempt = context.attemptNumber() if context is not None else 0
    with open(os.path.join(spec["control"], f"pid-{index}-{attempt}"), "w") as f:  # tests kill it by this
        f.write(str(os.getpid()))
    thread = _StreamThread(index, plans, spec, attempt)
    clean = False
    try:
        thread.run()
        clean = True
    finally:
        thread.close(clean)
    yield thread.summary()


class _StreamThread:
    """One stream thread's tasks, consumer and producer (executor side)."""

    def __init__(self, index: int, plans: list[dict], spec: dict, attempt: int = 0) -> None:
        from confluent_kafka import Consumer, TopicPartition

        from ..topics._kafka import _metadataOf, decodeStreamsMetadata, _librdkafkaLog
        from ._datasource import openTopicsFromOptions
        from ..runtime.global_state import GlobalStoreReprocessor, globalQueueKey, globalStoreSources
        from ..state._restore import restoreGlobalStores, restoreStores
        from ._task_processor import TaskStatefulProcessor, _seedPartitionTimes

        self.index, self.plans, self.spec, self.attempt = index, plans, spec, attempt
        self.started, self.cpuStarted = time.time(), time.process_time()
        self._metricsWritten, self._metricsDirty = 0.0, True
        self._stats: str | None = None  # librdkafka's last statistics (JSON) of the consumer: records-lag
        plan0 = plans[0]
        self.appId = plan0["applicationId"]
        self.commitS = spec["commitIntervalMs"] / 1000
        self.topics = openTopicsFromOptions(plan0["backend"])
        self.consumer = None
        self.producer = None
        self.tasks: dict[str, object] = {}  # task id -> StreamTask
        self.stores: dict[str, object] = {}  # task id -> PersistentTaskState or None
        self.taskOf: dict[tuple[str, int], str] = {}  # source (topic, partition) -> task id
        self.partitionOf: dict[str, int] = {}  # task id -> its partition
        self.storeDirs: dict[str, str] = {}  # task id -> its store directory's name under <root>/<task id>
        self.restoredRecords = 0
        self.commits = 0
        self.processed = 0
        self.counters: dict[str, float] = {}  # every commit's metrics rows merged (the -total counters)
        # the rows of the commits since the last metrics file, merged per sub-topology, and the
        # last intervals written (the driver feeds each once to its windowed rates and latencies)
        self.pendingRows: dict[int, dict[str, float]] = {}
        self.pendingCommits = 0
        self.intervals: deque[list] = deque(maxlen=_INTERVALS_KEPT)  # [seq, commits, {sub-topology: row}]
        self.lags: list[list] = []  # [sub-topology, topic, partition, records-lag]
        self.consumed: dict[tuple[int, str], int] = {}  # (sub-topology, topic) -> records since the last commit
        self.busyNs: dict[str, int] = {}  # task id -> ns processing and punctuating since its last commit
        self.punctuateNs: dict[str, int] = {}  # task id -> its punctuateNanos at its last commit
        self.commitMs: deque[float] = deque(maxlen=10_000)  # the last commits' durations (summary)
        self.root = os.path.join(plan0["storeDir"] or os.path.join(tempfile.gettempdir(), "kspark-stores", self.appId),
                                 "stream-threads")
        owner = threadOfTasks(plans, spec["threads"])
        owned = [(i, p) for (i, p), t in owner.items() if t == index]
        streamSources = {i: [t for t in plan["sources"] if t not in plan["globalSources"]] for i, plan in enumerate(plans)}
        globalTopics = sorted({t for i, _ in owned for t in plans[i]["globalSources"]})

        self.consumer = Consumer({**self.topics.consumerConfig, "group.id": self.appId,
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "enable.partition.eof": False, "logger": _librdkafkaLog,
                                  "statistics.interval.ms": 1000, "stats_cb": self._onStats})
        self.errors: list = []
        # the producer first: its init_transactions aborts the open transaction of this thread's
        # previous attempt, whose offsets would hold the committed offsets' fetch until it ends
        self._producer()
        wanted = [TopicPartition(t, p) for i, p in owned for t in streamSources[i]]
        committed = {(tp.topic, tp.partition): tp for tp in self._committed(wanted)}
        # the global topics: every task's copy of a global store is restored to the topics' ends as
        # of now, then the thread reads on from there (Kafka's global thread bootstraps its stores
        # to the end before the stream threads start)
        globalRanges = {globalQueueKey(t, p): [self.topics.beginningOffsets(t)[p], end]
                        for t in globalTopics for p, end in sorted(self.topics.endOffsets(t).items())}
        self.globalTasks: dict[str, list[str]] = {}  # global queue key -> the tasks that read it
        checkpointId = f"stream-thread-{uuid.uuid4().hex}"  # never the database's: every attempt restores
        now = int(time.time() * 1000)

        for i, p in owned:
            plan = plans[i]
            taskId = f"{plan['subtopology'].id}_{p}"
            # the directory a clean close kept, else a new one
            taskRoot = os.path.join(self.root, taskId)
            clean = self._takeCheckpoint(taskRoot, p)
            if clean is None:  # earlier attempts' directories of this task are removed
                shutil.rmtree(taskRoot, ignore_errors=True)
            self.storeDirs[taskId] = clean["dir"] if clean is not None else uuid.uuid4().hex[:8]
            task = TaskStatefulProcessor({**plan, "storeDir": os.path.join(taskRoot, self.storeDirs[taskId])})._newTask(
                taskId, p, compactionTrigger=None)  # a database kept open: RocksDB's default
            state = task.persistentState
            if state is not None:
                try:
                    reused = False
                    if clean is not None:  # else (False) the database was wiped for a whole restore
                        reused = state.open(clean["checkpointId"], None)
                    elif state.open(checkpointId, None):
                        raise StreamsException(f"task [{taskId}]: a new store directory held a store")
                    if reused and task.globalStores:  # restored whole below, as at every start
                        state.wipeStores(task.globalStores)
                    self.restoredRecords += restoreStores(state, self.topics, p, checkpointId, 1 << 62,
                                                          localTopics=False, taskId=taskId,
                                                          startOffsets=clean["offsets"] if reused else None)
                    if task.globalStores:
                        sources = globalStoreSources(plan["subtopology"])
                        reprocess = {name: GlobalStoreReprocessor(task, name, *sources[name])
                                     for name in task.globalStores if sources[name][1].reprocessOnRestore}
                        self.restoredRecords += restoreGlobalStores(state, self.topics, task.globalStores, globalRanges,
                                                                    taskId, reprocess=reprocess)
                    state.restored(checkpointId, None)
                except BaseException:
                    state.close()
                    raise
            times = {}
            for t in streamSources[i]:
                tp = committed[(t, p)]
                decoded = decodeStreamsMetadata(_metadataOf(tp)) if tp.offset >= 0 else None
                if decoded is not None and decoded[0] >= 0:
                    times[f"{t}/{p}"] = decoded[0]
                self.taskOf[(t, p)] = taskId
            _seedPartitionTimes(task, p, times)
            for key, queue in task.queueOf.items():
                if queue.isGlobal:  # caught up: the thread reads the global partitions on from their ends
                    queue.lag = 0
                    self.globalTasks.setdefault(key, []).append(taskId)
            # read live, as Kafka's global thread reads them: a task never idles on them (T-14)
            task.partitionGroup.idleOnGlobal = False
            task.wallClockTime = now
            task.initialize()
            self.tasks[taskId], self.stores[taskId], self.partitionOf[taskId] = task, state, p
            self.busyNs[taskId], self.punctuateNs[taskId] = 0, task.punctuateNanos
        self.checkpointId = checkpointId
        self.restoredAt = time.time()
        self.waiting: set[str] = set()  # tasks holding records not processed yet
        # the offsets committed (-1001: none yet), to notice a position moved past a marker
        self.committedOffsets: dict[tuple[str, int], int] = {key: tp.offset for key, tp in committed.items()}
        self.inTransaction = False
        # no committed offset: the reset policy's position, resolved once on the driver
        initial = spec["initialOffsets"]
        self.assignedAt = {(t, p): tp.offset if tp.offset >= 0 else initial[f"{t}/{p}"] for (t, p), tp in committed.items()}
        # the topics' metadata first: a consumer whose only request so far was the committed
        # offsets' fetched its first records 0.94 s after assign(), against 0.01 s after a metadata
        # request (librdkafka 2.16, one local broker)
        self.consumer.list_topics(timeout=self.topics.timeoutS)
        self.consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in self.assignedAt.items()]
                             + [TopicPartition(key.rpartition("@")[0], int(key.rpartition("@")[2]), end)
                                for key, (_, end) in globalRanges.items()])
        # tasks reading several partitions (global ones included): their queues' lags are needed
        self.multiInput = {taskId for taskId, task in self.tasks.items() if len(task.queueOf) > 1}

    def _committed(self, partitions: list) -> list:
        """The group's committed offsets of ``partitions``. A read_committed consumer's fetch waits
        while a transaction that sent offsets for them is open (a thread of an earlier run with
        more threads, not fenced by this one): retried until ``transaction.timeout.ms`` has passed,
        as the broker then aborts it, as Kafka Streams retries until ``task.timeout.ms``."""
        from confluent_kafka import KafkaError, KafkaException

        deadline = time.monotonic() + int(self.topics.producerConfig.get("transaction.timeout.ms", 60000)) / 1000 + 30
        while True:
            try:
                return self.consumer.committed(partitions, timeout=self.topics.timeoutS)
            except KafkaException as e:
                inner = e.args[0] if e.args else None
                if not (isinstance(inner, KafkaError) and inner.code() == KafkaError._TIMED_OUT) \
                        or time.monotonic() > deadline:
                    raise
                log.info("stream thread %d: the committed offsets are not stable yet (an open transaction); retrying",
                         self.index)

    def _producer(self) -> None:
        from confluent_kafka import KafkaException, Producer

        from ..topics._kafka import FAILED_DELIVERIES_ONLY, _deliveryErrors, _librdkafkaLog, _sinkError, initTransactions

        conf = dict(self.topics.producerConfig)
        timeout = conf.get("transaction.timeout.ms", "60000")
        if int(conf.get("delivery.timeout.ms", timeout)) > int(timeout):
            conf["delivery.timeout.ms"] = timeout
        transactionalId = f"{self.appId}-kspark-stream-thread-{self.index}"
        self.producer = Producer({**FAILED_DELIVERIES_ONLY, **conf, "transactional.id": transactionalId,
                                  "logger": _librdkafkaLog})
        try:
            initTransactions(self.producer, self.topics.timeoutS)  # fences an earlier attempt, aborts its transaction
        except KafkaException as e:
            raise _sinkError(transactionalId, e) from None
        self.transactionalId = transactionalId
        self.delivered = _deliveryErrors(self.errors)

    def run(self) -> None:
        with PausedCollector() as collector:
            self._loop(collector)

    def _loop(self, collector: "PausedCollector") -> None:
        from confluent_kafka import KafkaError

        from ..runtime.record_queue import RawRecord, _tupleNew

        stopFile = os.path.join(self.spec["control"], "stop")
        lastCommit = time.monotonic()
        while not os.path.exists(stopFile):
            wait = max(0.001, min(0.05, lastCommit + self.commitS - time.monotonic()))
            # what the fetch queue holds now: librdkafka's batch consume waits for all 10,000 (or
            # the timeout) once it holds fewer, so it waits only while the queue is empty, for one
            messages = self.consumer.consume(10_000, 0)
            if not messages:
                messages = self.consumer.consume(1, wait)
                if messages:
                    messages += self.consumer.consume(9_999, 0)
            now = int(time.time() * 1000)
            if messages:
                byPartition: dict[tuple[str, int], list] = {}
                for m in messages:
                    error = m.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            continue
                        raise StreamsException(f"Stream thread {self.index}: consuming {m.topic()}-{m.partition()} "
                                               f"failed: {error}")
                    headers = m.headers()
                    byPartition.setdefault((m.topic(), m.partition()), []).append(_tupleNew(RawRecord, (
                        m.offset(), m.timestamp()[1], m.key(), m.value(), () if headers is None else tuple(headers),
                        None)))
                fed = set()
                consumed = self.consumed
                for (t, p), records in byPartition.items():
                    taskId = self.taskOf.get((t, p))
                    if taskId is None:  # a global partition: to every task that has its queue
                        key = f"{t}@{p}"
                        for sub in {self.subtopologyOf(taskId) for taskId in self.globalTasks[key]}:
                            consumed[(sub, t)] = consumed.get((sub, t), 0) + len(records)
                        for taskId in self.globalTasks[key]:
                            self.tasks[taskId].addRecords(key, records, lag=0)
                            fed.add(taskId)
                        continue
                    self.tasks[taskId].addRecords(t, records, lag=0)
                    self.processed += len(records)
                    key = (self.subtopologyOf(taskId), t)
                    consumed[key] = consumed.get(key, 0) + len(records)
                    fed.add(taskId)
                self.waiting |= fed
            # the tasks given records, and those still holding some (a task reading several
            # partitions waits for data known upstream, or for max.task.idle.ms)
            for taskId in list(self.waiting):
                task = self.tasks[taskId]
                if taskId in self.multiInput:
                    self._setLags(taskId)
                started = time.perf_counter_ns()
                task.processAll(now)
                self.busyNs[taskId] += time.perf_counter_ns() - started
                # Kafka's record-e2e-latency: a source's records at the poll's wall-clock time,
                # a terminal node's once processed
                task.metrics.recordLatencies(now, int(time.time() * 1000))
                if not any(q.size() for q in task.queueOf.values()):
                    self.waiting.discard(taskId)
            for taskId, task in self.tasks.items():
                started = time.perf_counter_ns()
                task.maybePunctuateSystemTime(now)
                self.busyNs[taskId] += time.perf_counter_ns() - started
                self._produce(task.drainProducedChunks())
            self.producer.poll(0)
            if time.monotonic() - lastCommit >= self.commitS:
                offsets = self._offsetsToCommit()
                if offsets or self.inTransaction:
                    self.commit(offsets)
                else:  # idle: the last commit's metrics, if not written yet, and the lags
                    self._writeMetrics(force=False)
                collector.maybeCollect()
                lastCommit = time.monotonic()
        self.commit(self._offsetsToCommit())
        self._writeMetrics(force=True)

    def _offsetsToCommit(self) -> list:
        """The positions to commit (``TopicPartition``s with Kafka Streams' partition-time metadata)
        of the partitions that moved since the last commit: the first record a task has not
        processed yet, or, for a partition whose records are all processed, the consumer's
        position (past a transaction's commit marker that came after its last record, so the
        group shows the partition caught up, as Kafka Streams commits it)."""
        from confluent_kafka import TopicPartition

        from ..topics._kafka import encodeStreamsMetadata

        keys = sorted(self.committedOffsets)
        consumed = self.consumer.position([TopicPartition(t, p) for t, p in keys])
        offsets = []
        for (t, p), tp in zip(keys, consumed):
            queue = self.tasks[self.taskOf[(t, p)]].queueOf[t]
            position = queue.appliedPosition() if queue.size() else tp.offset
            if position >= 0 and position > self.committedOffsets[(t, p)]:
                offsets.append(TopicPartition(t, p, position, encodeStreamsMetadata(queue.partitionTime, {})))
        return offsets

    def _setLags(self, taskId: str) -> None:
        """Each empty queue's lag: the consumer's cached high watermark beyond its position
        (None before the partition's first fetch: Kafka's "waiting to fetch data")."""
        from confluent_kafka import TopicPartition

        task = self.tasks[taskId]
        partition = self.partitionOf[taskId]
        for topic, queue in task.queueOf.items():
            if "@" in topic or queue.size():
                continue
            tp = TopicPartition(topic, partition)
            _, high = self.consumer.get_watermark_offsets(tp, cached=True)
            position = self.consumer.position([tp])[0].offset
            if position < 0:  # nothing consumed from it yet: it reads from where it was assigned
                position = self.assignedAt[(topic, partition)]
            queue.lag = None if high < 0 or position < 0 else max(0, high - position)

    def _produce(self, produced: list) -> None:
        from ..topics._kafka import _produceRecords

        if produced:
            self._beginTransaction()
            _produceRecords(self.producer, produced, self.delivered)

    def _beginTransaction(self) -> None:
        if not self.inTransaction:
            self.producer.begin_transaction()
            self.inTransaction = True

    def commit(self, offsets: list) -> None:
        """Kafka Streams' commit of this thread's tasks (see the module docstring), with
        ``offsets`` (:meth:`_offsetsToCommit`)."""
        from confluent_kafka import KafkaException

        from ..runtime.metrics import addSample, mergeEncoded
        from ..topics._kafka import _TIMEOUT_S, _bounded, _fenced, _produceChangelog, _sinkError, sendOffsetsToTransaction
        from ._task_processor import _addTimings

        started = time.perf_counter()
        for task in self.tasks.values():
            task.commit()  # the record caches flush
            flushed = int(time.time() * 1000)  # what they flushed reached the terminal nodes now
            task.metrics.recordLatencies(flushed, flushed)
            self._produce(task.drainProducedChunks())
            state = self.stores[task.taskId]
            if state is not None:  # applied now: a failed commit ends this attempt, whose directory is dropped
                records = state.flush("", self.commits, task.partitionGroup.streamTime, self.checkpointId, applyNow=True)
                if records:  # the stores' changes, after the task's output
                    self._beginTransaction()
                    _produceChangelog(self.producer, records, self.partitionOf[task.taskId], self.delivered)
        if not self.inTransaction and not offsets:
            return
        try:
            self._beginTransaction()
            if offsets:
                metadata = self.consumer.consumer_group_metadata()
                _bounded(lambda: sendOffsetsToTransaction(self.producer, offsets, metadata, _TIMEOUT_S),
                         _TIMEOUT_S * 1.2, "send_offsets_to_transaction")
            _bounded(lambda: self.producer.commit_transaction(_TIMEOUT_S * 4), _TIMEOUT_S * 4.8, "commit_transaction")
        except KafkaException as e:
            if _fenced(e):
                raise _sinkError(self.transactionalId, f"ProducerFencedException: There is a newer producer with the "
                                                       f"same transactionalId which fences the current one. ({e})") from None
            raise _sinkError(self.transactionalId, e) from None
        if self.errors:
            raise _sinkError(self.transactionalId, self.errors[0])
        self.inTransaction = False
        self.committedOffsets.update(((tp.topic, tp.partition), tp.offset) for tp in offsets)
        self.commits += 1
        took = time.perf_counter() - started
        self.commitMs.append(took * 1000)
        # each task's metrics row of the commit interval: its counters and e2e latencies, its
        # process and punctuate latencies, and this commit's latency (Kafka's thread-level sensor)
        for taskId, task in self.tasks.items():
            row = task.metrics.encoded()
            task.metrics.clear()
            _addTimings(row, taskId, self.busyNs[taskId] / 1e9, task.punctuateNanos - self.punctuateNs[taskId])
            self.busyNs[taskId], self.punctuateNs[taskId] = 0, task.punctuateNanos
            addSample(row, "commit-latency", taskId, round(took * 1e9))
            mergeEncoded(self.counters, row)
            mergeEncoded(self.pendingRows.setdefault(self.subtopologyOf(taskId), {}), row)
        for (sub, topic), n in self.consumed.items():  # Kafka consumer's records-consumed-total, per topic
            consumed = {f"records-consumed-total|consumer-fetch-manager-metrics|topic={topic}": n}
            mergeEncoded(self.counters, consumed)
            mergeEncoded(self.pendingRows.setdefault(sub, {}), consumed)
        self.consumed = {}
        self.pendingCommits += 1
        self._metricsDirty = True
        self._writeMetrics(force=False)

    @staticmethod
    def subtopologyOf(taskId: str) -> int:
        return int(taskId.split("_", 1)[0])

    def _onStats(self, stats: str) -> None:
        """librdkafka's statistics of the consumer (``statistics.interval.ms``), served by its
        ``consume`` calls: kept as they are, read by :meth:`_recordsLags`."""
        self._stats = stats

    def _recordsLags(self) -> list[list]:
        """The consumer's ``records-lag`` of each of its tasks' partitions, as Kafka's consumer
        computes it under ``read_committed``: the partition's last stable offset (librdkafka's
        statistics, ``ls_offset``) less the consumer's position (past any commit marker), or
        where the partition was assigned before its first record; a partition not fetched yet has none."""
        import json

        from confluent_kafka import TopicPartition

        if self._stats is None:
            return self.lags
        try:
            topics = json.loads(self._stats).get("topics", {})
        except ValueError:
            return self.lags
        stable = {}
        for (topic, partition) in self.taskOf:
            lso = topics.get(topic, {}).get("partitions", {}).get(str(partition), {}).get("ls_offset", -1)
            if lso >= 0:
                stable[(topic, partition)] = lso
        if not stable:
            return []
        keys = sorted(stable)
        positions = self.consumer.position([TopicPartition(t, p) for t, p in keys])
        lags = []
        for (topic, partition), tp in zip(keys, positions):
            position = tp.offset if tp.offset >= 0 else self.assignedAt[(topic, partition)]
            lags.append([self.subtopologyOf(self.taskOf[(topic, partition)]), topic, partition,
                         max(0, stable[(topic, partition)] - position)])
        return lags

    def _writeMetrics(self, force: bool) -> None:
        """This attempt's metrics to ``<control>/metrics-<thread>-<attempt>.json`` (the driver's
        ``StreamThreads.pollMetrics`` reads them while the run goes on), at most once a second
        unless ``force``, when a commit changed them or a lag moved: the merged rows of every
        commit (``counters``), the commits' count, the last :data:`_INTERVALS_KEPT` seconds'
        rows (``intervals``: sequence number, commits, rows by sub-topology) and the lags."""
        import json

        now = time.monotonic()
        if not force and now - self._metricsWritten < 1:
            return
        lags = self._recordsLags()
        if not self._metricsDirty and lags == self.lags:
            return
        self._metricsWritten, self._metricsDirty, self.lags = now, False, lags
        if self.pendingCommits:
            self.intervals.append([self.commits, self.pendingCommits, self.pendingRows])
            self.pendingRows, self.pendingCommits = {}, 0
        path = os.path.join(self.spec["control"], f"metrics-{self.index}-{self.attempt}.json")
        try:
            with open(path + ".tmp", "w") as f:
                json.dump({"counters": self.counters, "commits": self.commits, "subtopologies": self.subtopologies(),
                           "intervals": list(self.intervals), "lags": lags}, f)
            os.replace(path + ".tmp", path)
        except OSError:  # the control directory is the driver's: not on this machine
            pass

    def subtopologies(self) -> list[int]:
        return sorted({self.subtopologyOf(taskId) for taskId in self.tasks})

    def _takeCheckpoint(self, taskRoot: str, partition: int) -> dict | None:
        """The checkpoint a clean close left in ``taskRoot`` (:meth:`close`), removed as it is
        read, as Kafka Streams deletes a task's ``.checkpoint`` file under exactly-once when it
        takes the task's local state in (a crash from here on leaves none: the next attempt
        restores whole). None without one, or when its store directory is gone or an offset is
        outside its changelog partition's offsets (a changelog deleted or truncated since)."""
        import json

        path = os.path.join(taskRoot, _CHECKPOINT)
        try:
            with open(path) as f:
                checkpoint = json.load(f)
            os.remove(path)
            directory, offsets = str(checkpoint["dir"]), dict(checkpoint["offsets"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not directory or not os.path.isdir(os.path.join(taskRoot, directory)):
            return None
        for topic, offset in offsets.items():
            if self.topics.partitionsFor(topic) is None or not (
                    self.topics.beginningOffsets(topic)[partition] <= offset <= self.topics.endOffsets(topic)[partition]):
                log.info("%s: the checkpoint of %s is outside its changelog %s-%d; restoring it whole", taskRoot,
                         offset, topic, partition)
                return None
        return checkpoint

    def close(self, clean: bool = False) -> None:
        """Close the consumer and the stores. ``clean`` (the thread stopped after its last
        commit): each task's store directory stays, with a checkpoint of its changelogs' end
        offsets, which the next run's thread on this machine takes in and restores on from (Kafka
        Streams' ``.checkpoint`` at a clean close under exactly-once); else the directories are
        removed (the stores are in their changelogs: the next attempt restores them whole)."""
        import json

        if self.consumer is not None:
            self.consumer.close()
        kept = set()
        for taskId, state in self.stores.items():
            if state is None:
                continue
            try:
                offsets = {topic: self.topics.endOffsets(topic)[self.partitionOf[taskId]]
                           for topic in state.logged.values() if topic is not None} if clean else None
            except Exception:  # noqa: BLE001 - the next attempt restores whole
                log.warning("task [%s]: its changelogs' end offsets could not be read; the next run restores its "
                            "stores whole", taskId, exc_info=True)
                offsets = None
            state.close()  # its writes on disk before the checkpoint says so
            if offsets is not None:
                path = os.path.join(self.root, taskId, _CHECKPOINT)
                with open(path + ".tmp", "w") as f:
                    json.dump({"dir": self.storeDirs[taskId], "checkpointId": self.checkpointId, "offsets": offsets}, f)
                os.replace(path + ".tmp", path)
                kept.add(taskId)
        for taskId in self.tasks:
            if taskId not in kept:
                shutil.rmtree(os.path.join(self.root, taskId), ignore_errors=True)

    def summary(self) -> dict:
        return {"thread": self.index, "tasks": sorted(self.tasks), "restoredRecords": self.restoredRecords,
                "startupSeconds": round(self.restoredAt - self.started, 2),
                "seconds": round(time.time() - self.started, 1), "processed": self.processed,
                "cpuSeconds": round(time.process_time() - self.cpuStarted, 2),
                "commits": self.commits, "counters": self.counters, "subtopologies": self.subtopologies(),
                "commitMsP50": round(statistics.median(self.commitMs), 1) if self.commitMs else None,
                "commitMsP95": round(statistics.quantiles(self.commitMs, n=20)[-1], 1) if len(self.commitMs) > 1 else None}


def killStreamThread(control: str, index: int, attempt: int = 0) -> int:
    """SIGKILL the Python worker running attempt ``attempt`` of stream thread ``index`` (tests);
    returns its pid."""
    with open(os.path.join(control, f"pid-{index}-{attempt}")) as f:
        pid = int(f.read())
    os.kill(pid, signal.SIGKILL)
    return pid
