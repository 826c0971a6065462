"""Driver side of the Spark host: ``KafkaStreams`` starts one Structured Streaming query per
sub-topology (Kafka's sub-topologies are connected through topics, and so are these queries)."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import uuid
from collections import defaultdict
from typing import Any, Mapping

from ..config import StreamsConfig, resetPolicy
from ..errors import ConfigException, MissingSourceTopicException, StreamsException
from ..runtime.metrics import MetricName
from ..state._persistent import changelogConfigOf, changelogTopic
from ..topics import LocalTopics, openTopics
from ..topology import Subtopology, Topology, resolvePartitionCounts
from ..topology._topology import SourceNodeSpec
from ._placement import balancedTaskKeys
from ._statedir import StateDir, StateDirLock
from ._stream_threads import CONTINUOUS, EXACTLY_ONCE_COMMIT_INTERVAL_MS, StreamThreads, refusal

__all__ = ["KafkaStreams"]

log = logging.getLogger("kspark.spark")


SPARK_REPORT = "\n\nSpark's report: "
"""Separates a failed query's cause from Spark's whole report in the message of
:func:`queryFailure` (``kspark run`` prints what precedes it, all of it with ``-v``)."""


def queryFailure(exception: BaseException) -> StreamsException:
    """A ``StreamsException`` for a failed query: the Python exception that failed it first
    (``"CorruptRecordException: Segment file ... of prices-1 (offsets ...) fails ..."``,
    :func:`~kspark.spark._quiet.failureHeadline`), then Spark's report with its traces."""
    from .._secrets import redact
    from ._quiet import failureHeadline

    text = redact(str(exception))
    headline = failureHeadline(text)
    return StreamsException(text if headline is None else headline + SPARK_REPORT + text)


class KafkaStreams:
    """Runs a topology on Spark Structured Streaming (Kafka ``KafkaStreams``).

    Each sub-topology becomes one streaming query: the ``kspark-topics`` source reads its input
    topics; rows are grouped by kspark task (one task per input partition number, as in Kafka
    Streams) into ``transformWithStateInPandas``, where the same ``StreamTask`` as in
    ``TopologyTestDriver`` processes them in Kafka's order; its stores live in a RocksDB on the
    executor's disk (``kspark.store.dir``) with a changelog topic each, its stream time and
    not-yet-processed records in Spark's checkpointed state under ``state.dir/<application.id>/``
    (``kspark.spark._task_processor``); the sink appends the produced records to the output
    topics exactly once per micro-batch (on local topics, each task stages its records as
    segment files itself and the sink's commit appends them; on Kafka, the sink's tasks produce
    them in one transaction per task and batch).

    ``state.dir`` may be a path or a Hadoop filesystem URI (``file:``, ``hdfs://``,
    ``s3a://``...): kspark reads and writes it through Spark's filesystem API on the driver
    (:mod:`kspark.spark._statedir`), as Spark does its checkpoints; relative paths are resolved
    on the driver. On a cluster, only ``state.dir`` (and, with local topics,
    ``kspark.topics.dir``) must be shared between the machines. A running instance holds a lock
    in it, so a second instance with the same ``application.id`` and ``state.dir`` is refused.

    Parameters
    ----------
    topology : Topology
    config : mapping or StreamsConfig
        Needs ``application.id``. ``kspark.topics.dir`` is the root of the local topics,
        ``state.dir`` the checkpoint root, ``kspark.spark.master`` the Spark master (default
        ``local[*]``), ``kspark.trigger`` ``"availableNow"`` (run until caught up, default) or a
        processing-time interval such as ``"1 second"`` (run continuously; ``0``: the next
        micro-batch as soon as one ends, the lowest latency of micro-batches) or ``"continuous"``
        (Kafka, ``exactly_once_v2``: no micro-batches, long-running stream threads committing every
        ``commit.interval.ms``, default 100; :mod:`kspark.spark._stream_threads`),
        ``kspark.max.records.per.trigger`` the micro-batch size limit; ``spark.*`` keys go to
        the SparkSession.

    Raises
    ------
    ConfigException
        If ``application.id`` is missing or a key is unknown.
    ValueError
        If there are no Kafka topics and ``kspark.topics.dir`` is a URI other than ``file:``.

    Notes
    -----
    Differences from Kafka Streams: a task's records are processed per micro-batch, so output
    appears when the batch commits (latency = trigger interval + batch time). Stream-time
    punctuators are checked after every record, as in ``TopologyTestDriver``; wall-clock
    punctuators once per task and micro-batch, after its records. In continuous mode a
    micro-batch runs every trigger interval (at least every 100 ms under a shorter trigger)
    even without new records, so a wall-clock punctuator fires within one trigger interval
    (plus batch time) of its due time; under
    ``availableNow`` they fire only in the batches the run has. ``max.task.idle.ms`` uses each
    input partition's lag as known when the batch was planned: a task waits (keeping records in
    its state) while a partition with known lag has no data in the batch.

    Global stores (``GlobalKTable``, ``addGlobalStore``): every task of every sub-topology
    reads all partitions of the global topics (each global row goes to every task; a global
    topic is read to its end in every micro-batch, outside ``kspark.max.records.per.trigger``,
    so stream records never wait for a global backlog to trickle in) and keeps
    its own copy of the store in its local RocksDB, with its own stores; global records are
    applied in timestamp order with the task's stream records (``kspark.runtime.global_state``),
    not restored to the log end first as Kafka's global thread does. The global topic is the
    store's changelog, as in Kafka: the task checkpoint keeps each global partition's position,
    and a task without its local copy restores it from the topic up to there (a
    ``GlobalKTable``'s store from the records as they are, an ``addGlobalStore`` store through
    its processor, as Kafka 4.3 restores them).
    """

    CREATED, RUNNING, NOT_RUNNING, ERROR = "CREATED", "RUNNING", "NOT_RUNNING", "ERROR"

    def __init__(self, topology: Topology, config: Mapping[str, Any] | StreamsConfig, spark=None) -> None:
        self._config = config if isinstance(config, StreamsConfig) else StreamsConfig(config)
        self._appId = self._config.get(StreamsConfig.APPLICATION_ID_CONFIG)
        if not self._appId:
            raise ConfigException('Missing required configuration "application.id" which has no default value.')
        self._topology = topology
        self._topics = openTopics(self._config)  # Kafka when bootstrap.servers is set, else local topics
        self._stateDirectory: StateDir | None = None
        self._lock: StateDirLock | None = None
        self._spark = spark
        self._queries: list = []
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._state = self.CREATED
        self._stop = threading.Event()
        self._listener = None
        self._progress = None  # the run's RunProgress (input lags for metrics())
        self._plans: list[dict] = []
        self._streamThreads = None  # kspark.trigger continuous: the run's StreamThreads
        self._streamThreadsStopped = False
        self._view = None  # continuous: the run's ContinuousView
        self._streamThreadLags: dict[int, dict[tuple[str, int], int]] = {}  # records-lag when they stopped
        from ._metrics import HostMetrics

        self._hostMetrics = HostMetrics(self._config.get("client.id") or self._appId,
                                        self._config.get("metrics.sample.window.ms"),
                                        self._config.get("metrics.num.samples"))
        self._exporter = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Validate the topology against the topics, then start the queries (non-blocking).

        Raises
        ------
        TopologyException
            If co-partitioned topics differ in partition count (``"Invalid topology: Topics not
            co-partitioned: [{...}]"``, rules J-6, RP-5) — raised before Spark starts.
        StreamsException
            If ``kspark.trigger`` is ``"continuous"`` and the application cannot run so (local
            topics, ``at_least_once``, a logged store without a persistent form,
            ``spark.speculation``), naming the reason.
            If a source, sink or dead-letter topic does not exist, if another instance with the
            same ``application.id`` runs on this ``state.dir`` (its lock) or is a member of its
            consumer group (a Kafka Streams instance included), if ``state.dir`` holds the
            checkpoint of a different topology, if a topic's partition count changed since the
            checkpoint was written, or if a new checkpoint cannot take over the state of the
            application that committed the group's offsets (a Kafka Streams application moving
            to kspark: a store's changelog topic is missing or in a layout kspark cannot read,
            or an internal topic belongs to no store or sub-topology; ``kspark.spark._takeover``).
            On Kafka also with Kafka's ``TopicAuthorizationException`` text if the principal's
            ACLs do not let it read a source or write a sink topic, and
            ``SaslAuthenticationException``'s if the cluster refused its credentials.
        """
        if self._state != self.CREATED:
            raise StreamsException(f"KafkaStreams cannot be started from state {self._state}")
        plans = self._plans = self._plan()
        from ._progress import ContinuousView, ProgressListener, RunProgress, progressMode

        trigger = self._config.get(StreamsConfig.TRIGGER_CONFIG)
        continuous = trigger == CONTINUOUS
        if continuous:
            why = refusal(self._config, plans)
            if why is not None:
                raise StreamsException(f"kspark.trigger=continuous cannot run {self._appId}: {why}.")
        self._joinGroup(plans)  # Kafka: refused while another instance is a member of application.id
        try:
            stateDir = self._stateDir()  # starts Spark
            self._lock = StateDirLock(stateDir, onLost=self._lockLost)
            self._lock.acquire()
        except BaseException:
            self._leaveGroup()
            raise
        try:
            if continuous:  # no Spark checkpoints: every sub-topology starts from the group's offsets
                from ._takeover import checkTakeover

                checkTakeover(self._topics, self._config, self._topology, plans,
                              {plan["subtopology"].id for plan in plans})
                self._createInternalTopics(plans)
                self._startExporter()
                self._view = ContinuousView(RunProgress(self._appId, plans, continuous=True), progressMode(self._config))
                self._startStreamThreads(plans)
                self._state = self.RUNNING
                return
            self._place(plans)
            self._checkCheckpoints(plans)
            if self._config.usesKafka():  # before the missing internal topics are created
                self._wipeStaleCheckpoints(plans)
                from ._takeover import checkTakeover

                checkTakeover(self._topics, self._config, self._topology, plans, self._newCheckpoints(plans))
            self._createInternalTopics(plans)
            self._startExporter()
            self._progress = RunProgress(self._appId, plans)
            self._listener = ProgressListener(self._progress, progressMode(self._config), onBatch=self._addBatchCounters)
            try:
                self._session().streams.addListener(self._listener)
            except BaseException:  # end the live view without a summary
                self._listener.finish(printSummary=False)
                self._listener = None
                raise
        except BaseException:
            if self._view is not None:
                self._view.finish(printSummary=False)
                self._view = None
            self._closeExporter()
            self._lock.release()
            self._lock = None
            self._leaveGroup()
            raise
        self._state = self.RUNNING
        if trigger == "availableNow":
            self._thread = threading.Thread(target=self._runUntilCaughtUp, args=(plans,), daemon=True)
            self._thread.start()
        else:
            try:
                for plan in plans:
                    self._queries.append(self._startQuery(plan, {"processingTime": trigger}))
            except BaseException:
                self._state = self.ERROR
                raise

    def awaitTermination(self, timeout: float | None = None) -> bool:
        """Wait until the run is caught up (``availableNow``) or stopped; re-raise a failure.

        Returns whether it terminated within ``timeout`` seconds.
        """
        if self._streamThreads is not None:
            self._streamThreads.join(timeout)
            done = not self._streamThreads.alive()
            if done and self._streamThreads.error is not None and self._error is None:
                self._error, self._state = queryFailure(self._streamThreads.error), self.ERROR
        elif self._thread is not None:
            self._thread.join(timeout)
            done = not self._thread.is_alive()
        else:
            from pyspark.errors import StreamingQueryException

            try:
                done = all(q.awaitTermination(timeout) if timeout is not None else q.awaitTermination() or True
                           for q in self._queries)
            except StreamingQueryException as e:
                self._error, self._state = queryFailure(e), self.ERROR
        if self._error is not None:
            raise StreamsException(f"The streams application {self._appId} failed: {self._error}") from self._error
        return done

    def close(self) -> None:
        """Stop all queries; state and topics stay, so a new ``KafkaStreams`` resumes where this stopped."""
        from ._quiet import stoppingQueries

        self._stop.set()
        if self._streamThreads is not None:
            self._stopStreamThreads()
        stopped: set[int] = set()
        with stoppingQueries():  # the batch a stop interrupts is aborted: no ERROR lines for that
            while True:  # availableNow: a query the run thread is starting right now is stopped too
                for q in list(self._queries):
                    if id(q) not in stopped:
                        stopped.add(id(q))
                        try:
                            q.stop()
                        except Exception:  # noqa: BLE001 - a query that already failed cannot stop
                            log.warning("query %s did not stop cleanly", q.name)
                if self._thread is None:
                    break
                self._thread.join(0.5)
                if not self._thread.is_alive():
                    break
        if self._listener is not None:
            self._listener.close(self._queries)  # the live view stops, the run's summary is printed
            self._session().streams.removeListener(self._listener)
            self._listener = None
        self._closeExporter()
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        self._leaveGroup()
        if self._state == self.RUNNING:
            self._state = self.NOT_RUNNING

    def _startStreamThreads(self, plans: list[dict]) -> None:
        """``kspark.trigger`` ``continuous``: start the long-running Spark job of the stream threads
        (:mod:`kspark.spark._stream_threads`)."""
        from ._datasource import TopicsStreamReader, topicsOptions

        spark = self._session()
        if str(spark.conf.get("spark.speculation", "false")).lower() == "true":
            raise StreamsException("kspark.trigger=continuous cannot run with spark.speculation=true: a speculative copy "
                                   "of a stream thread would fence the thread it copies, and be fenced by it in turn.")
        _pyFilesForDriverSideWorkers(spark)
        _pickleUserModulesByValue()
        backend = topicsOptions(self._topics)
        storeDir = self._storeDir()
        reset = resetPolicy(self._config.clientConfigs("consumer").get("auto.offset.reset", "earliest"))
        initial: dict[str, int] = {}  # where a partition without a committed offset starts: its reset policy's
        for plan in plans:
            reader = TopicsStreamReader({**backend, "topics": ",".join(plan["sources"]), "autoOffsetReset": reset,
                                         "offsetResetPolicies": json.dumps(plan["offsetResetPolicies"]),
                                         "groupId": self._appId})
            committed = reader._committed()
            for topic in plan["sources"]:
                beginnings, ends = self._topics.beginningOffsets(topic), self._topics.endOffsets(topic)
                initial.update({f"{topic}/{p}": reader._resetPosition(
                    topic, p, beginnings[p], ends[p], f"Undefined offset with no committed offset of group {self._appId}")
                    for p in beginnings if (topic, p) not in committed})
        plans = [{**plan, "backend": backend, "storeDir": storeDir} for plan in plans]
        tasks = sum(plan["numTasks"] for plan in plans)
        threads = max(1, min(tasks, int(spark.sparkContext.defaultParallelism)))
        interval = (self._config.get(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG)
                    if StreamsConfig.COMMIT_INTERVAL_MS_CONFIG in self._config.originals()
                    else EXACTLY_ONCE_COMMIT_INTERVAL_MS)
        self._streamThreads = StreamThreads(spark, plans, threads, int(interval), initial, self._hostMetrics, self._view)
        self._streamThreads.start()

    def _stopStreamThreads(self) -> None:
        """Stop the stream threads (each commits first); their counters go to ``metrics()``."""
        from ._metrics import persisted

        threads = self._streamThreads
        threads.stop()
        counters, self._streamThreadLags = threads.pollMetrics()
        threads.cleanup()
        if self._view is not None:  # the live view ends, the run's summary is printed
            self._view.tick(self._streamThreadLags)
            self._view.finish()
            self._view = None
        self._streamThreadsStopped = True
        # the run's counters, kept in state.dir as a micro-batch's are (its first sub-topology's file)
        self._stateDir().addBatchCounters(self._plans[0]["subtopology"].id, threads.runId, 0, persisted(counters))
        if threads.error is not None and self._error is None:
            self._error, self._state = queryFailure(threads.error), self.ERROR

    def _joinGroup(self, plans: list[dict]) -> None:
        """On Kafka, join the consumer group ``application.id`` as a member (Kafka Streams'
        instances are its members), refused while it has another live member
        (:class:`kspark.topics._kafka.GroupMember`)."""
        if not self._config.usesKafka():
            return
        from ..topics._kafka import GroupMember

        base = self._config.get("client.id") or f"{self._appId}-{uuid.uuid4()}"
        sources = sorted({t for plan in plans for t in plan["sources"] if t not in plan["globalSources"]})
        member = GroupMember(self._topics, self._appId, f"{base}-kspark-driver-{uuid.uuid4().hex[:8]}", sources)
        member.join()
        self._member = member

    def _leaveGroup(self) -> None:
        member, self._member = getattr(self, "_member", None), None
        if member is not None:
            member.close()

    def _lockLost(self, owner) -> None:
        """The state.dir lock was taken over (this instance stalled past its staleness): stop."""
        self._error = StreamsException(f"The state.dir lock of {self._appId} was taken over by another instance")
        self._state = self.ERROR
        if self._streamThreads is not None:
            threading.Thread(target=self._streamThreads.stop, daemon=True).start()
        for q in list(self._queries):
            try:
                q.stop()
            except Exception:  # noqa: BLE001 - stopping is all that is left to do
                pass

    def state(self) -> str:
        return self._state

    def queries(self) -> list:
        """The running ``StreamingQuery`` objects (one per sub-topology)."""
        return list(self._queries)

    # ------------------------------------------------------------------ metrics
    def metrics(self) -> dict[MetricName, float]:
        """Kafka Streams' metrics by ``MetricName`` (Kafka ``KafkaStreams#metrics``), with Kafka's
        groups, names and tags (``kspark.spark._metrics`` lists them: a sub-topology's query is a
        stream thread, ``thread-id`` ``<client.id or application.id>-StreamThread-<n + 1>``, its
        micro-batch a commit).

        The ``-total`` counters are summed over every committed micro-batch of every
        sub-topology, this run and earlier ones from the same ``state.dir`` (e.g.
        ``dropped-records-total``); rates (per second) and latencies (``-avg``/``-min``/``-max``;
        NaN without events) are this run's, over ``metrics.num.samples`` windows of
        ``metrics.sample.window.ms``; ``records-lag`` is each input partition's lag after the
        last micro-batch. kspark's own: ``dropped-records-total`` per node and ``reason``
        (group ``kspark-dropped-records``). With ``metrics.recording.level`` ``DEBUG`` only (Kafka's
        level for them; nothing is counted at the default ``INFO``): the stores'
        ``stream-state-metrics`` (``<op>-rate``, ``<op>-latency-avg``/``-max`` in ns; tags
        ``thread-id``, ``task-id``, ``<store type>-state-id``), this run's, for the operations
        called in it (``kspark.runtime.store_metrics``).

        A batch's counters reach ``state.dir`` with its progress event, after it committed (a run
        killed between the two loses that batch's counters, not its records); this call waits
        for the events of the batches the queries have reported."""
        if self._listener is not None:
            self._listener.waitForQueries(list(self._queries))
        return self._currentMetrics()

    def _currentMetrics(self) -> dict[MetricName, float]:
        totals: defaultdict[MetricName, float] = defaultdict(float)
        for name, value in self._stateDir().counters().items():
            totals[MetricName.decode(name)] += value
        lags = self._streamThreadLags
        if self._streamThreads is not None and not self._streamThreadsStopped:  # continuous: the threads' so far
            from ._metrics import persisted

            counters, lags = self._streamThreads.pollMetrics()
            for name, value in persisted(counters).items():
                totals[MetricName.decode(name)] += value
        if self._progress is not None:
            with self._progress._lock:
                lags = {s.subtopology: dict(s.lags) for s in self._progress.queries.values()}
        return self._hostMetrics.present(dict(totals), lags)

    def _addBatchCounters(self, subtopology: int, checkpointId: str, batchId: int, counters: dict) -> None:
        from ._metrics import persisted

        counters = {**counters, self._hostMetrics.commitCounter(subtopology): 1}  # a micro-batch is a commit
        self._stateDir().addBatchCounters(subtopology, checkpointId, batchId, persisted(counters))
        self._hostMetrics.addBatch(subtopology, checkpointId, batchId, counters)

    def _startExporter(self) -> None:
        """Serve ``metrics()`` for Prometheus on ``kspark.metrics.prometheus.port`` (if set)."""
        port = self._config.get(StreamsConfig.METRICS_PROMETHEUS_PORT_CONFIG)
        if port is None:
            return
        from ._metrics import PrometheusExporter

        try:
            self._exporter = PrometheusExporter(self._currentMetrics, port)
        except OSError as e:
            raise StreamsException(f"The Prometheus endpoint of {self._appId} cannot listen on port {port} "
                                   f"({StreamsConfig.METRICS_PROMETHEUS_PORT_CONFIG}): {e}") from e

    def _closeExporter(self) -> None:
        exporter, self._exporter = self._exporter, None
        if exporter is not None:
            exporter.close()

    def prometheusPort(self) -> int | None:
        """The port of the Prometheus endpoint while the application runs (kspark's addition:
        ``kspark.metrics.prometheus.port``, ``0`` picks a free one), else None."""
        return None if self._exporter is None else self._exporter.port

    def _stateDir(self) -> StateDir:
        """``state.dir/<application.id>`` (starts Spark: it is read through Spark's filesystem API)."""
        if self._stateDirectory is None:
            self._stateDirectory = StateDir(self._session(), self._config.get(StreamsConfig.STATE_DIR_CONFIG), self._appId)
        return self._stateDirectory

    def checkpointedStore(self, storeName: str):
        """The contents of store ``storeName`` over all tasks, as of the last committed micro-batch,
        as a read-only store of its kind (key-value, window or session reads): read from the
        tasks' local stores (a task's store that is not on this machine, e.g. on a cluster's
        executor, is restored from its changelog into a temporary directory first; a global
        store: one task's copy, else restored from the global topic); a store kept in the
        checkpoint value (a kind without a persistent form) from Spark's checkpoint (its
        ``statestore`` reader).

        For inspection after or between runs; values of KTable stores are ``ValueAndTimestamp``.
        While the application runs, ``store()`` gives Kafka's read-only views.

        Raises
        ------
        ValueError
            If no sub-topology of the topology has a store of that name.
        """
        from ._interactive import lastCommittedBatch, persistentStoreView, readCheckpointedStore, subtopologyOf

        sub = subtopologyOf(self._topology, storeName)
        if sub is None:
            raise ValueError(f"The topology has no store named {storeName}")
        view = persistentStoreView(self, storeName, restoreMissing=True)
        if view is not None:
            return view
        builder = self._topology.storeBuilders()[storeName]
        store = builder.build(self._config.defaultKeySerde(), self._config.defaultValueSerde())
        stateDir = self._stateDir()
        checkpoint = f"subtopology-{sub.id}"
        return readCheckpointedStore(self._session(), store, stateDir.path(checkpoint), lastCommittedBatch(stateDir, checkpoint))

    def store(self, storeQueryParameters):
        """A read-only view of a store while the application runs (Kafka ``KafkaStreams#store``).

        ``store(StoreQueryParameters.fromNameAndType("counts", QueryableStoreTypes.keyValueStore()))``
        returns a ``ReadOnlyKeyValueStore`` (``windowStore()``: ``ReadOnlyWindowStore``,
        ``sessionStore()``: ``ReadOnlySessionStore``; the ``timestamped...`` types keep
        ``ValueAndTimestamp`` values) over all tasks, or one task with ``withPartition(p)``.

        Every read sees the store as of the last micro-batch its sub-topology committed: when a
        newer batch has committed since the handle's previous read, the handle reads the tasks'
        state again from the checkpoint (Spark's state data source: one batch job, about a second
        locally), without stopping the queries. So a view lags processing by at most one
        micro-batch in progress (trigger interval + batch duration); records read but not yet
        processed by a task (waiting for another partition, ``max.task.idle.ms``) are not in it.
        Unlike Kafka's, the view covers every task, not only those of this process.

        Parameters
        ----------
        storeQueryParameters : StoreQueryParameters

        Returns
        -------
        ReadOnlyKeyValueStore, ReadOnlyWindowStore or ReadOnlySessionStore

        Raises
        ------
        UnknownStateStoreException
            If the topology has no store of that name ("Cannot get state store <name> because no
            such store is registered in the topology.").
        InvalidStateStoreException
            If the application is not running ("KafkaStreams is not running. State is <state>.";
            Kafka raises ``IllegalStateException``; ``checkpointedStore`` reads a stopped one), or
            the store is not of the queried type.
        """
        from ..errors import InvalidStateStoreException, UnknownStateStoreException
        from ._interactive import CheckpointStoreProvider

        name = storeQueryParameters.storeName()
        if name not in self._topology.storeBuilders():
            raise UnknownStateStoreException(
                f"Cannot get state store {name} because no such store is registered in the topology.")
        if self._state != self.RUNNING:
            raise InvalidStateStoreException(f"KafkaStreams is not running. State is {self._state}.")
        queryableType = storeQueryParameters.queryableStoreType()
        store = self._topology.storeBuilders()[name].build(self._config.defaultKeySerde(), self._config.defaultValueSerde())
        if not queryableType.accepts(store):
            raise InvalidStateStoreException(
                f"Cannot get state store {name} because the queryable store type [{queryableType!r}] does not accept "
                f"the actual store type [{type(store).__name__}].")
        return queryableType.create(CheckpointStoreProvider(self, name, storeQueryParameters.partition()))

    # ------------------------------------------------------------------ planning
    def _plan(self) -> list[dict]:
        topology = self._topology
        internal = topology.internalTopics()
        physical = {t: Topology.decorate(self._appId, t, t in internal) for t in _allTopics(topology)}
        external = {t: self._topics.partitionsFor(t) for t in physical if t not in internal}
        counts = resolvePartitionCounts(topology, external)
        missingSinks = sorted(
            t for s in topology.subtopologies() for t in s.sinkTopics if t not in internal and not external.get(t)
        )
        if missingSinks:
            raise StreamsException(f"Sink topics do not exist: {missingSinks}. Create them before starting.")
        dlq = self._config.get(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG)
        if dlq is not None:
            if self._topics.partitionsFor(dlq) is None:
                raise StreamsException(f"The dead-letter topic {dlq} (errors.dead.letter.queue.topic.name) does not exist.")
            counts[dlq] = self._topics.partitionsFor(dlq)
            physical[dlq] = dlq
        self._externalCounts = {t: n for t, n in counts.items() if t not in internal}
        missingGlobal = sorted(t for t in topology.globalTopics() if not external.get(t))
        if missingGlobal:
            raise MissingSourceTopicException(missingGlobal)
        if self._config.usesKafka():  # ACLs: fail before the first batch, not at its first write
            sinks = {t for s in topology.subtopologies() for t in s.sinkTopics if t not in internal}
            self._topics.checkAuthorized(
                reads=sorted({t for s in topology.subtopologies() for t in s.sourceTopics if t not in internal}
                             | set(topology.globalTopics())),
                writes=sorted(sinks | ({dlq} if dlq is not None else set())))
        globalSubs = topology.globalSubtopologies()
        globalTopics = [physical[t] for t in topology.globalTopics()]
        builders = topology.storeBuilders()
        # a worker's cached task (spark._task_processor._LIVE_TASKS) serves only the run that built
        # it: the next run may bring another topology (an added store) over the same committed state
        runId = uuid.uuid4().hex
        plans = []
        for sub in _upstreamFirst(topology.subtopologies()):
            numTasks = max(counts[t] for t in sub.sourceTopics)
            shuffle = numTasks  # until _place: Spark tasks per batch (shuffle partitions)
            keys = balancedTaskKeys(numTasks, shuffle)
            stores = sub.stores + [n for g in globalSubs for n in g.stores]
            plans.append({
                # the sub-topology's own stores -> their changelog topic (None: logging disabled)
                "changelogs": {n: changelogTopic(self._appId, n) if _loggingEnabled(builders[n]) else None
                               for n in sub.stores},
                "numTasks": numTasks,
                "storeMemoryBytes": self._config.get(StreamsConfig.STORE_MEMORY_BYTES_CONFIG),
                "storeCacheEntries": self._config.get(StreamsConfig.STORE_CACHE_MAX_ENTRIES_CONFIG),
                "storePrefill": self._config.get(StreamsConfig.STORE_PREFILL_CONFIG),
                "applicationId": self._appId,
                "runId": runId,
                # every task runs the global stores' nodes too (kspark.runtime.global_state)
                "subtopology": Subtopology(sub.id, sub.nodes + [n for g in globalSubs for n in g.nodes], stores),
                "storeBuilders": {n: b for n, b in topology.storeBuilders().items() if n in stores},
                "config": self._config,
                "taskOfKey": {k: t for t, k in enumerate(keys)},
                "topicName": physical,
                "partitionCounts": {physical[t]: n for t, n in counts.items()},
                "sources": [physical[t] for t in sub.sourceTopics] + globalTopics,
                "globalSources": globalTopics,
                # Consumed.withOffsetResetPolicy / addSource(AutoOffsetReset, ...): per source topic
                "offsetResetPolicies": {physical.get(t, t): n.offsetReset.policy() for n in sub.nodes
                                        if isinstance(n, SourceNodeSpec) and n.offsetReset is not None for t in n.topics},
                "shufflePartitions": shuffle,
                "logLevel": logging.getLogger("kspark").getEffectiveLevel(),  # executors follow the driver
            })
        return plans

    def _storeDir(self) -> str | None:
        """``kspark.store.dir``, else ``<state.dir>/<application.id>/stores`` with a local master
        and a local ``state.dir``; None: each executor's temporary directory (resolved there)."""
        configured = self._config.get(StreamsConfig.STORE_DIR_CONFIG)
        if configured:
            return os.path.abspath(os.fspath(configured))
        from ..topics._local import localPath

        master = self._session().sparkContext.master
        try:
            stateDir = localPath(self._config.get(StreamsConfig.STATE_DIR_CONFIG))
        except ValueError:  # a Hadoop filesystem URI
            return None
        return os.path.join(stateDir, self._appId, "stores") if master.startswith("local") else None

    def _createInternalTopics(self, plans: list[dict]) -> None:
        """Create the missing repartition and changelog topics; refuse existing ones with another
        partition count."""
        internal = self._topology.internalTopics()
        counts = plans[0]["partitionCounts"] if plans else {}
        wanted = []  # (topic, partitions, store or None), repartition topics first
        for topic, physical in plans[0]["topicName"].items() if plans else ():
            if topic in internal:
                wanted.append((physical, counts[physical], None))
        for plan in plans:
            wanted += [(topic, plan["numTasks"], store) for store, topic in plan["changelogs"].items() if topic]
        for topic, n, store in wanted:
            existing = self._topics.partitionsFor(topic)
            if existing is None:
                if store is None:
                    self._createInternalTopic(topic, n)
                else:
                    self._createChangelogTopic(topic, n, store)
            elif existing != n:
                sources = ", ".join(f"{t}={c}" for t, c in sorted(self._externalCounts.items())
                                    if any(t in sub.sourceTopics for sub in self._topology.subtopologies()))
                what = f"Internal topic {topic}" if store is None else f"Changelog topic {topic} of store {store}"
                raise StreamsException(
                    f"{what} has {existing} partitions but the topology needs {n} (from its source "
                    f"topics' partition counts: {sources}); partition counts cannot change for an existing "
                    "application. Restore the source topics' partition counts or reset the application.")

    def _createInternalTopic(self, name: str, numPartitions: int) -> None:
        """Create a repartition topic as Kafka's ``InternalTopicManager`` does: the configured
        ``replication.factor``, Kafka Streams' repartition topic configs and any ``topic.*`` keys."""
        if isinstance(self._topics, LocalTopics):
            self._topics.createTopic(name, numPartitions, ifNotExists=True)
            return
        config = {"cleanup.policy": "delete", "segment.bytes": "52428800", "retention.ms": "-1",
                  "message.timestamp.type": "CreateTime", **self._config.topicConfigs()}
        self._topics.createTopic(name, numPartitions, ifNotExists=True, config=config,
                                 replicationFactor=int(self._config.get(StreamsConfig.REPLICATION_FACTOR_CONFIG)))

    def _createChangelogTopic(self, name: str, numPartitions: int, store: str) -> None:
        """Create a store's changelog topic as Kafka's ``InternalTopicManager`` does: Kafka
        Streams' changelog configs for the store's kind (``cleanup.policy=compact``; windowed
        stores ``compact,delete`` with ``retention.ms`` = the store's retention +
        ``windowstore.changelog.additional.retention.ms``...), the ``topic.*`` keys and
        ``replication.factor``."""
        if isinstance(self._topics, LocalTopics):
            self._topics.createTopic(name, numPartitions, ifNotExists=True)
            return
        built = self._topology.storeBuilders()[store].build(self._config.defaultKeySerde(), self._config.defaultValueSerde())
        config = changelogConfigOf(built, self._config.topicConfigs(),
                                   int(self._config.get("windowstore.changelog.additional.retention.ms")))
        self._topics.createTopic(name, numPartitions, ifNotExists=True, config=config,
                                 replicationFactor=int(self._config.get(StreamsConfig.REPLICATION_FACTOR_CONFIG)))

    def _place(self, plans: list[dict]) -> list[dict]:
        """Set each plan's Spark tasks per micro-batch (``shufflePartitions``, the state's
        partitions, fixed for the life of a checkpoint) and the task keys that spread the kspark
        tasks over them (``taskOfKey``, :func:`balancedTaskKeys`).

        A new checkpoint gets ``min(kspark tasks, Spark's default parallelism)``: on ``local[2]``
        a batch's four kspark tasks run as two Spark tasks of two kspark tasks each, in one wave,
        rather than four Spark tasks in two waves, each with its Python workers' start, state
        store commit and Kafka transaction (bench/README.md, round 19). An existing checkpoint
        keeps the count its fingerprint records, or one Spark task per kspark task (what kspark
        used before recording it)."""
        stateDir = self._stateDir()
        cores = max(1, int(self._session().sparkContext.defaultParallelism))
        for plan in plans:
            checkpoint = f"subtopology-{plan['subtopology'].id}"
            saved = stateDir.readJson(f"{checkpoint}/{self._FINGERPRINT}")
            numTasks = plan["numTasks"]
            if saved is not None and "shufflePartitions" in saved:
                shuffle = int(saved["shufflePartitions"])
            elif saved is not None or stateDir.exists(f"{checkpoint}/offsets"):
                shuffle = numTasks
            else:
                shuffle = min(numTasks, cores)
            plan["shufflePartitions"] = shuffle
            plan["taskOfKey"] = {k: t for t, k in enumerate(balancedTaskKeys(numTasks, shuffle))}
        return plans

    _FINGERPRINT = "kspark-topology.json"
    _LEGACY_METADATA = "kspark-application.json"  # what kspark kept before fingerprints (state.dir/<app>/)

    def _checkCheckpoints(self, plans: list[dict]) -> None:
        """Refuse a checkpoint whose sub-topology no longer matches, or topics whose partition
        counts changed since it was written (a task's state belongs to one partition of one
        sub-topology); then record the topology next to every checkpoint
        (``subtopology-<n>/kspark-topology.json``: where Spark keeps the checkpoint, so that the
        two go together).

        The topology may evolve within Kafka Streams' rules: a sub-topology keeps its id and its
        source topics, and its stores keep their names, kinds and serdes. Adding a processor with
        a new store, or removing one, keeps the other stores; a store whose kind or serdes changed
        is refused, naming it. (A checkpoint written before kspark recorded stores must match the
        whole ``describe()`` text.)"""
        stateDir = self._stateDir()
        description = str(self._topology.describe())
        legacy = stateDir.readJson(self._LEGACY_METADATA)
        signatures = self._storeSignatures()
        subs = {s.id: s for s in self._topology.subtopologies()}
        fingerprints = {}
        for plan in plans:
            sub = subs[plan["subtopology"].id]
            checkpoint = f"subtopology-{sub.id}"
            saved = stateDir.readJson(f"{checkpoint}/{self._FINGERPRINT}")
            sources = sorted(plan["topicName"][t] for t in sub.sourceTopics)
            stores = {n: signatures[n] for n in plan["changelogs"]}
            fingerprint = {"topology": description, "partitions": self._externalCounts, "sources": sources,
                           "stores": stores, "shufflePartitions": plan["shufflePartitions"]}
            if saved is None:
                fingerprints[checkpoint] = fingerprint
                if not (stateDir.exists(f"{checkpoint}/offsets") or stateDir.exists(f"{checkpoint}/metadata")):
                    continue  # a new checkpoint
                saved = legacy
                if saved is None:
                    raise StreamsException(
                        f"The checkpoint {stateDir.path(checkpoint)} has no {self._FINGERPRINT}: kspark cannot tell which "
                        f"topology wrote it, so its state cannot be reused. Use a new application.id or delete "
                        f"{stateDir.uri}.")
            if saved["topology"] != description or saved.get("stores", stores) != stores:
                self._checkEvolution(saved, description, sources, stores, stateDir.uri)
                fingerprints[checkpoint] = fingerprint
            for topic, n in sorted(self._externalCounts.items()):
                before = saved["partitions"].get(topic)
                if before is not None and before != n:
                    raise StreamsException(
                        f"Topic {topic} has {n} partitions, but had {before} when the checkpoint "
                        f"{stateDir.path(checkpoint)} was written; tasks and their state are per partition, so the "
                        "application cannot resume. Restore the partition count or reset the application."
                    )
        for checkpoint, fingerprint in fingerprints.items():
            stateDir.write(f"{checkpoint}/{self._FINGERPRINT}", json.dumps(fingerprint, indent=1).encode())

    def _checkEvolution(self, saved: dict, description: str, sources: list[str], stores: dict, uri: str) -> None:
        """Raise unless a sub-topology's checkpoint (``saved``) can resume with this topology."""
        def refuse(reason: str) -> StreamsException:
            topologies = (f"\nCheckpointed topology:\n{saved['topology']}\nThis topology:\n{description}"
                          if saved["topology"] != description else "")
            return StreamsException(
                f"state.dir {uri} holds the checkpoint of a different topology for application.id {self._appId}: "
                f"{reason}; its state cannot be reused. Use a new application.id or delete that directory.{topologies}")

        if "stores" not in saved:
            raise refuse("the checkpoint predates topology evolution (it records no stores)")
        if saved["sources"] != sources:
            raise refuse(f"its sub-topology read {saved['sources']}, this one reads {sources}")
        for name, signature in stores.items():
            before = saved["stores"].get(name)
            if before is not None and before != signature:
                changed = ", ".join(f"{k} {before.get(k)} -> {signature.get(k)}" for k in signature
                                    if before.get(k) != signature.get(k))
                raise refuse(f"store {name} changed ({changed})")
        added, removed = sorted(set(stores) - set(saved["stores"])), sorted(set(saved["stores"]) - set(stores))
        log.info("The topology of %s changed since its checkpoint: stores added %s, removed %s; the other stores "
                 "resume", self._appId, added or "none", removed or "none")

    def _storeSignatures(self) -> dict[str, dict]:
        """Each store's kind and serdes, as a checkpoint records them (a changed one is refused)."""
        def serdeName(serde) -> str:
            inner = getattr(serde, "inner", None)
            name = f"{type(serde).__module__}.{type(serde).__qualname__}"
            return f"{name}<{serdeName(inner)}>" if inner is not None and inner is not serde else name

        signatures = {}
        for name, builder in self._topology.storeBuilders().items():
            store = builder.build(self._config.defaultKeySerde(), self._config.defaultValueSerde())
            signature = {"kind": type(store).__qualname__}
            for attribute in ("_keySerde", "_valueSerde"):
                if getattr(store, attribute, None) is not None:
                    signature[attribute.strip("_")] = serdeName(getattr(store, attribute))
            signatures[name] = signature
        return signatures

    def _wipeStaleCheckpoints(self, plans: list[dict]) -> None:
        """Start again, from the changelog topics, the checkpoints that another application moved
        past: a consumer group offset committed beyond the checkpoint's position by someone else
        (a Kafka Streams application that took the application over and processed more, or
        kspark on another ``state.dir``). The checkpoint's stores are then behind their
        changelogs and its positions behind the group's: resuming it would process those records
        again on stale stores.

        Kafka Streams restores a store whose local state is behind its changelog (its
        ``.checkpoint`` offsets) from the changelog, and under exactly-once wipes local state it
        cannot trust and restores it whole (``TaskCorruptedException``). kspark does the latter:
        the checkpoint (its positions, stores and batches; its topology fingerprint stays) is
        deleted, so it starts as a new checkpoint does, from the group's committed offsets and
        partition times with its stores restored from the changelogs, after the same checks
        (``kspark.spark._takeover``). A warning names the sub-topology, its stores and the
        partition. A group offset ahead by a batch this checkpoint committed to Kafka but not
        yet to Spark (a crash in between: the committed metadata names this checkpoint and a
        later batch) is not stale: that batch is replayed as before."""
        from ..topics._kafka import decodeStreamsMetadata

        stateDir = self._stateDir()
        for plan in plans:
            checkpoint = f"subtopology-{plan['subtopology'].id}"
            batches = [int(n) for n in stateDir.list(f"{checkpoint}/commits") if n.isdigit()]
            if not batches:
                continue
            last = max(batches)
            text = (stateDir.read(f"{checkpoint}/offsets/{last}") or b"").decode()
            queryId = (stateDir.readJson(f"{checkpoint}/metadata") or {}).get("id")
            positions: dict[tuple[str, int], int] = {}
            for line in text.splitlines()[2:]:
                for key, offset in json.loads(line).items() if line.startswith("{") else ():
                    topic, _, partition = key.rpartition("/")
                    if partition.isdigit() and isinstance(offset, int):
                        positions[(topic, int(partition))] = offset
            stale = None
            for topic in sorted({t for t, _ in positions}):
                for p, (offset, metadata) in sorted(self._topics.committedOffsets(self._appId, topic).items()):
                    position = positions.get((topic, p))
                    if position is None or offset <= position:
                        continue
                    decoded = decodeStreamsMetadata(metadata)
                    batch = decoded[1].get(f"kspark1:{queryId}") if decoded else None
                    if batch is None or batch <= last:
                        stale = (topic, p, position, offset)
                        break
                if stale:
                    break
            if stale is None:
                continue
            topic, p, position, offset = stale
            log.warning(
                "The checkpoint %s (sub-topology %d, stores %s) is behind consumer group %s: it read %s-%d up to "
                "offset %d, and another application (Kafka Streams, or kspark on another state.dir) committed offset "
                "%d after it. Its state is stale; as Kafka Streams does with local state it cannot use, it is wiped "
                "and the stores are restored from their changelog topics, resuming at the group's offsets.",
                stateDir.path(checkpoint), plan["subtopology"].id, ", ".join(sorted(plan["changelogs"])) or "none",
                self._appId, topic, p, position, offset)
            for name in stateDir.list(checkpoint):
                if name != self._FINGERPRINT:
                    stateDir.delete(f"{checkpoint}/{name}")

    def _newCheckpoints(self, plans: list[dict]) -> set[int]:
        """The sub-topologies whose checkpoint has no committed micro-batch yet."""
        stateDir = self._stateDir()
        return {plan["subtopology"].id for plan in plans
                if not any(n.isdigit() for n in stateDir.list(f"subtopology-{plan['subtopology'].id}/commits"))}

    _INITIAL_OFFSETS = "kspark-initial-offsets.json"

    def _initialOffsets(self, checkpoint: str, sourceOptions: dict) -> dict | None:
        """Where the checkpoint ``checkpoint`` starts reading, computed once and kept next to it
        (``subtopology-<n>/kspark-initial-offsets.json``), or None once it has committed a batch.

        Spark asks a source for its initial offsets while the checkpoint has no committed batch,
        so again after a crash in its first batch. Asked anew, the source could answer other
        positions: the crashed batch's Kafka transactions may have committed the group's
        offsets for some partitions, or ``latest`` has moved on. The replayed first batch would
        then skip records whose updates its stores need (a count started again at 1). Spark's
        own Kafka source keeps its initial offsets in the checkpoint for the same reason
        (``KafkaSourceInitialOffsetWriter``). Until the first batch is planned nothing can have
        moved, so they are computed again then (a changed ``auto.offset.reset`` counts)."""
        from ._datasource import TopicsStreamReader

        stateDir = self._stateDir()

        def logged(log: str) -> bool:
            return any(name.isdigit() for name in stateDir.list(f"{checkpoint}/{log}"))

        if logged("commits"):
            return None
        if not logged("offsets"):
            # A process killed while Spark wrote the first batch's offsets leaves the write's
            # temporary file (".0.<uuid>.tmp"). Spark's log never reads it, so the checkpoint is
            # still new, but Spark refuses to start a new query on a log directory that is not
            # empty (spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart): without this,
            # the application could not be restarted at all.
            for log in ("offsets", "commits"):
                for name in stateDir.list(f"{checkpoint}/{log}"):
                    if name.startswith(".") and name.endswith(".tmp"):
                        stateDir.delete(f"{checkpoint}/{log}/{name}")
                        stateDir.delete(f"{checkpoint}/{log}/.{name}.crc")
        path = f"{checkpoint}/{self._INITIAL_OFFSETS}"
        saved = stateDir.readJson(path)
        if saved is not None and logged("offsets"):
            return saved
        offsets = TopicsStreamReader(sourceOptions).initialOffset()
        stateDir.write(f"{checkpoint}/{self._INITIAL_PARTITION_TIMES}", json.dumps(
            self._committedPartitionTimes(sourceOptions, offsets)).encode())
        stateDir.write(path, json.dumps(offsets).encode())
        return offsets

    _INITIAL_PARTITION_TIMES = "kspark-initial-partition-times.json"

    def _committedPartitionTimes(self, sourceOptions: dict, offsets: dict) -> dict[str, int]:
        """``"<topic>/<partition>"`` -> the partition time in the offset metadata the consumer
        group committed where a new checkpoint starts (Kafka Streams' ``TopicPartitionMetadata``,
        as a Kafka Streams application or kspark commits it), for the partitions that start at
        their committed offset: the task's partition and stream times start there, as a Kafka
        Streams task's do (``StreamTask.initializeTaskTimeAndProcessorMetadata``)."""
        if not self._config.usesKafka():
            return {}
        from ..topics._kafka import decodeStreamsMetadata

        times = {}
        unlimited = set(filter(None, sourceOptions.get("unlimitedTopics", "").split(",")))
        for topic in sourceOptions["topics"].split(","):
            if topic in unlimited:  # global topics: no committed offsets, no task time
                continue
            for p, (offset, metadata) in self._topics.committedOffsets(self._appId, topic).items():
                decoded = decodeStreamsMetadata(metadata)
                if decoded is not None and decoded[0] >= 0 and offsets.get(f"{topic}/{p}") == offset:
                    times[f"{topic}/{p}"] = decoded[0]
        return times

    def _runUntilCaughtUp(self, plans: list[dict]) -> None:
        """Run each sub-topology's query to the end of its inputs, upstream first. Where a
        sub-topology reads a topic that it or a later one writes (a foreign-key join's
        subscription and response topics feed each other), the passes repeat until one reads
        nothing: one pass would leave the records written back unread."""
        subs = [plan["subtopology"] for plan in plans]
        feedback = any(set(subs[j].sinkTopics) & set(sub.sourceTopics) for i, sub in enumerate(subs)
                       for j in range(i, len(subs)))
        try:
            while not self._stop.is_set():
                rowsRead = 0
                for plan in plans:
                    if self._stop.is_set():
                        break
                    query = self._startQuery(plan, {"availableNow": True})
                    self._queries.append(query)
                    query.awaitTermination()
                    if query.exception() is not None:
                        raise queryFailure(query.exception())
                    rowsRead += sum(_inputRows(p) for p in query.recentProgress)
                if not feedback or rowsRead == 0:
                    break
            if self._state == self.RUNNING:
                self._state = self.NOT_RUNNING
        except BaseException as e:  # noqa: BLE001 - reported by awaitTermination
            from pyspark.errors import StreamingQueryException

            self._error = queryFailure(e) if isinstance(e, StreamingQueryException) else e
            self._state = self.ERROR

    def _session(self):
        if self._spark is None:
            from ._session import getOrCreateSession

            self._spark = getOrCreateSession(self._config)
        return self._spark

    def _startQuery(self, plan: dict, trigger: dict):
        from pyspark.sql import functions as F

        from ._datasource import registerDataSource, topicsOptions
        from ._progress import OBSERVED_METRICS
        from ._task_processor import OUTPUT_SCHEMA, TaskStatefulProcessor

        spark = self._session()
        # Python data sources are looked up through the JVM thread's active session; queries may
        # start on a thread other than the one that created the session.
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        _pyFilesForDriverSideWorkers(spark)  # before the data source and the task UDF take the environment
        registerDataSource(spark)
        _pickleUserModulesByValue()
        sub: Subtopology = plan["subtopology"]
        backend = topicsOptions(self._topics)
        # layout=chunks: Spark moves a few rows of Arrow-encoded records per topic-partition and
        # micro-batch, not one row per record; layout=refs (local topics): one row per
        # topic-partition naming its range, which the task reads from the log itself (see _datasource)
        local = not self._config.usesKafka()
        options = {**backend, "layout": "refs" if local else "chunks", "topics": ",".join(plan["sources"]),
                   "autoOffsetReset": resetPolicy(self._config.clientConfigs("consumer").get("auto.offset.reset", "earliest")),
                   "offsetResetPolicies": json.dumps(plan["offsetResetPolicies"])}
        if self._config.usesKafka():
            options["groupId"] = self._appId
        # a batch's read tasks in one wave: as many as there are cores (a Spark task per
        # topic-partition ran four tasks in two waves on local[2]; bench/README.md, round 19)
        options["readTasks"] = str(max(1, int(spark.sparkContext.defaultParallelism)))
        maxRecords = self._config.get(StreamsConfig.MAX_RECORDS_PER_TRIGGER_CONFIG)
        if maxRecords:
            options["maxRecordsPerTrigger"] = str(maxRecords)
        if plan["globalSources"]:  # read global topics to their end in every batch (see GlobalKTable)
            options["unlimitedTopics"] = ",".join(plan["globalSources"])
        if "processingTime" in trigger:  # wall-clock punctuation needs a batch per trigger
            # a trigger under 100 ms (0: the next batch as soon as one ends) would plan batches
            # back to back while idle: then one per 100 ms, Kafka Streams' poll.ms
            interval = _intervalMs(trigger["processingTime"])
            options["heartbeat"] = "true" if interval >= IDLE_HEARTBEAT_MS else str(IDLE_HEARTBEAT_MS)
        initial = self._initialOffsets(f"subtopology-{sub.id}", options)
        if initial is not None:
            options["initialOffsets"] = json.dumps(initial)
            # a new checkpoint's tasks start with the committed partition times (taking over)
            plan = {**plan, "initialPartitionTimes": self._stateDir().readJson(
                f"subtopology-{sub.id}/{self._INITIAL_PARTITION_TIMES}") or {}}
        reader = spark.readStream.format("kspark-topics").options(**options)
        keyOfTask = {t: k for k, t in plan["taskOfKey"].items()}
        taskKey = F.element_at(F.create_map(*[x for t, k in sorted(keyOfTask.items()) for x in (F.lit(t), F.lit(k))]),
                               F.col("partition"))
        spark.conf.set("spark.sql.shuffle.partitions", str(plan["shufflePartitions"]))
        rows = reader.load()
        if plan["globalSources"]:
            # A global topic's rows (all partitions, marker rows included) go to every task of
            # the sub-topology, with topic "<topic>@<partition>": the task's queue of that
            # global partition (kspark.runtime.global_state.globalQueueKey).
            isGlobal = F.col("topic").isin(*plan["globalSources"])
            everyTask = F.array(*[F.lit(k) for k in sorted(plan["taskOfKey"])])
            rows = (rows.withColumn("task", F.explode(F.when(isGlobal, everyTask).otherwise(F.array(taskKey))))
                    .withColumn("topic", F.when(isGlobal, F.concat(F.col("topic"), F.lit("@"), F.col("partition").cast("string")))
                                .otherwise(F.col("topic"))))
        else:
            rows = rows.withColumn("task", taskKey)
        name = f"{self._appId}-subtopology-{sub.id}"
        # tasks restore their stores from the changelog topics (backend) into their local stores
        plan = {**plan, "backend": backend, "storeDir": self._storeDir()}
        if local:
            # local topics: each task reads its input ranges and stages its output segments itself,
            # and the sink commits them (exactly once, as for records it stages; see
            # _task_processor._outputFrame)
            plan = {**plan, "inputRoot": backend["root"], "staging": {"root": backend["root"], "producer": name}}
        out = (
            rows
            .withColumn("task", F.col("task").cast("int"))
            .groupBy("task")
            .transformWithStateInPandas(TaskStatefulProcessor(plan), OUTPUT_SCHEMA, "Append", "None")
        )
        # the tasks' counters (one metrics row per task and batch) reach the driver with the
        # batch's progress event (the listener adds them to state.dir/metrics)
        out = out.observe(OBSERVED_METRICS, F.collect_list("metrics").alias("metrics"))
        writer = out.writeStream.format("kspark-topics").option("layout", "chunks").options(**backend)
        if self._config.usesKafka():
            writer = (writer.option("guarantee", self._config.processingGuarantee()).option("groupId", self._appId)
                      .option("transactionalIdPrefix", name))
            if getattr(self, "_member", None) is not None:
                writer = writer.option("ownerClientId", self._member.clientId)
        else:
            writer = writer.option("producer", name)
        writer = (
            writer
            .option("checkpointLocation", self._stateDir().path(f"subtopology-{sub.id}"))
            .queryName(name)
            .trigger(**trigger)
        )
        return writer.start()


IDLE_HEARTBEAT_MS = 100
"""Under a trigger shorter than this, an idle query plans at most one micro-batch (for wall-clock
punctuation) per this many ms."""


def _intervalMs(interval: str) -> float:
    """A validated ``kspark.trigger`` processing-time interval in ms."""
    from ..config import _intervalMicros

    return _intervalMicros(interval) / 1000


def _loggingEnabled(builder) -> bool:
    """Whether a store builder logs to a changelog (Kafka ``StoreBuilder#loggingEnabled``, default on)."""
    enabled = getattr(builder, "loggingEnabled", None)
    return True if enabled is None else bool(enabled())


def _inputRows(progress) -> int:
    """``numInputRows`` of a query progress (a ``StreamingQueryProgress`` or its dict form)."""
    rows = getattr(progress, "numInputRows", None)
    return int(rows if rows is not None else progress["numInputRows"])


def _allTopics(topology: Topology) -> list[str]:
    topics: list[str] = list(topology.globalTopics())
    for sub in topology.subtopologies():
        for t in sub.sourceTopics + sub.sinkTopics:
            if t not in topics:
                topics.append(t)
    return topics


def _upstreamFirst(subs: list[Subtopology]) -> list[Subtopology]:
    """Order sub-topologies so that one writing a topic runs before the ones reading it."""
    ordered: list[Subtopology] = []
    remaining = list(subs)
    while remaining:
        for sub in remaining:
            writers = [o for o in remaining if o is not sub and set(o.sinkTopics) & set(sub.sourceTopics)]
            if not writers:
                ordered.append(sub)
                remaining.remove(sub)
                break
        else:  # a cycle through topics: keep the declared order for the rest
            ordered.extend(remaining)
            break
    return ordered


def _pickleUserModulesByValue() -> None:
    """Ship the code of user modules (scripts, tests, examples) with the topology to the Python
    workers, which may not have them on their path; installed packages and kspark are imported
    there (on a cluster: installed on every node, or shipped with ``--py-files``/``--archives``)."""
    from pyspark import cloudpickle

    # directories, with a trailing separator: /src/kspark_jobs.py is not inside /src/kspark
    roots = (sys.prefix, sys.base_prefix, os.path.dirname(os.__file__), os.path.dirname(os.path.dirname(__file__)))
    installed = tuple(os.path.join(os.path.realpath(p), "") for p in roots)
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not path or name == "__main__" or name.partition(".")[0] in ("kspark", "pyspark", "_pytest", "pytest"):
            continue
        if os.path.realpath(path).startswith(installed):
            continue
        try:
            cloudpickle.register_pickle_by_value(module)
        except (ValueError, TypeError):
            pass


def _pyFilesForDriverSideWorkers(spark) -> None:
    """Put ``--py-files`` (``spark.submit.pyFiles``, ``addPyFile``) on the path of the Python
    processes Spark runs on the driver for a streaming query.

    Executors' Python workers get the includes with every task, but the driver-side ones do
    not: Spark 4's Python streaming source runner looks for them in ``<SparkFiles
    root>/streaming_job`` (where they are not), and the ``transformWithStateInPandas`` driver
    worker (``StreamingPythonRunner``) gets none. With kspark shipped as ``--py-files
    kspark.zip`` and not installed for ``spark.pyspark.python``, the query failed at start with
    ``ModuleNotFoundError: No module named 'kspark'``. Both take the ``PYTHONPATH`` of the
    functions' environment (``SparkContext.environment``, as ``spark.executorEnv.PYTHONPATH``
    does), so the includes' driver-side copies are appended there; on other machines those
    paths do not exist and Python skips them.
    """
    from pyspark import SparkFiles

    sc = spark.sparkContext
    includes = sc._python_includes or []
    if not includes:
        return
    root = SparkFiles.getRootDirectory()
    entries = [p for p in sc.environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    missing = [path for name in includes if (path := os.path.join(root, name)) not in entries]
    if missing:
        sc.environment["PYTHONPATH"] = os.pathsep.join(entries + missing)
