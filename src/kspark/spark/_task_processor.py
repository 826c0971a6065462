"""Executor side of the Spark host: one ``StreamTask`` per group of ``transformWithStateInPandas``.

Rows of one kspark task (all its input partitions, one micro-batch) arrive in one call. A task's
state is kept as Kafka Streams keeps it:

- its stores in a local RocksDB on the executor's disk (``kspark.state._persistent``): a batch
  reads and writes the keys it touches, and its changes go to each store's changelog topic
  (``<application.id>-<store>-changelog``, Kafka's byte layout) with the batch's output;
- its copy of each global store in the same local RocksDB, without a changelog: the global
  topic is its changelog, as in Kafka Streams (``kspark.runtime.global_state``);
- the small rest (stream time, partition times, records not processed yet, node states,
  punctuation schedules, the global partitions' positions, and stores without a persistent
  form) as one pickled value in Spark's state store, with the version of the stores it goes
  with: Kafka's ``.checkpoint`` file. One state variable (``task``), one read and one write per
  batch, never a state call per record (spark-stateful-measurements.md); a worker whose cached
  task has the committed version does not unpickle the value. A checkpoint written before
  (with a second variable, ``version``) resumes; the old variable is left
  unread (checked: bench/ab/checkpoint_resume.py, bench/README.md round 20).

A batch's store changes, global ones included, are pending until the next batch finds its
version committed in Spark's state (``kspark.state._rocksdb``); a task that finds no local store
for the committed version (first run here, task moved, directory deleted) restores it from the
changelogs, and its global stores from the global topics up to the checkpointed positions.
"""

from __future__ import annotations

import json
import os
import pickle
import tempfile
import time
import uuid
from operator import itemgetter
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from ..runtime.metrics import addSample
from ..runtime.record_queue import RawRecordColumns
from ..runtime.stream_task import ProducedColumns, StreamTask, encodeHeaders
from ..state._persistent import PersistentTaskState, makePersistent
from ..runtime.global_state import GlobalStoreReprocessor, globalStoreSources
from ..state._restore import restoreGlobalStores, restoreStores
from ..state._snapshots import maybeSnapshot, restoreSnapshot
from ..topics import READ_SCHEMA, RECORD_SCHEMA, LocalTopics
from ._datasource import (SINK_CHUNK_SCHEMA, SegmentStager, chunkTable, decodeChunk, encodeChunk, openTopicsFromOptions,
                          readReference)
from . import _timeline
from ._quiet import followDriverLogLevel
from ._stream_threads import PausedCollector

# Input rows are kspark-topics source chunks (layout=chunks: topic, partition, offset, records,
# lag, end), or with local topics (plan "inputRoot") references to ranges of the local logs that
# the task reads itself (layout=refs); output rows go straight to the kspark-topics sink, as chunks, or, with local topics
# (plan "staging"), as the segments this task staged itself (the records do not travel through
# Spark: see _outputFrame).
OUTPUT_SCHEMA = SINK_CHUNK_SCHEMA
_OUTPUT_COLUMNS = [f.name for f in OUTPUT_SCHEMA.fields]
_TIMINGS = os.environ.get("KSPARK_TASK_TIMINGS")
_COLLECTOR = PausedCollector()  # this Python worker's, for every micro-batch of its tasks
_STATE_SCHEMA = StructType([StructField("version", StringType()), StructField("blob", BinaryType())])

# The sorted runs that start a compaction of a micro-batch task's database (RocksDB's default and
# Kafka Streams': 4). The database is opened every micro-batch, and each open flushes the
# replayed log, the previous batch's writes, to a new small sorted run (2-3 MB for 25K writes),
# where a database kept open (Kafka Streams, the stream threads) flushes 16 MB memtables. With 4,
# RocksDB merged those small runs every few batches: at 2.5M keys per task its background threads
# took 112-123 ms of CPU per 25K-record task call, against 65-71 with 8; the calls' own reads did
# not slow, and the database takes a third more disk (bench/README.md round 37).
MICRO_BATCH_COMPACTION_TRIGGER = 8

# Tasks kept alive in this Python worker between micro-batches, keyed by task id. Every state
# write gets a fresh random version; a cached task is used only if its version is the one in
# Spark's committed state (otherwise: another worker ran the task, a batch was retried, or this
# is another checkpoint) and by the same run (``plan["runId"]``: a restarted application may bring
# a topology with another store or processor over the same committed state), else the task is
# rebuilt from the state.
_LIVE_TASKS: dict[tuple, tuple[tuple[str, str], StreamTask]] = {}


class TaskStatefulProcessor(StatefulProcessor):
    """Runs kspark tasks of one sub-topology; the grouping key is a task's balanced int key."""

    def __init__(self, plan: dict) -> None:
        # plan: applicationId, subtopology, storeBuilders, config, taskOfKey, topicName map, partition counts
        self.plan = plan

    def init(self, handle: StatefulProcessorHandle) -> None:
        followDriverLogLevel(self.plan.get("logLevel"))
        # One state variable per task: each one costs Spark's state server an encoder built and
        # resolved through Catalyst per task and micro-batch (bench/README.md, round 20).
        self.state = handle.getValueState("task", _STATE_SCHEMA)

    def handleInputRows(self, key, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        # Python's cyclic collector paused for the batch, then collecting whole at most once a
        # minute, as a stream thread's poll loop does (PausedCollector: left automatic, its
        # collections walked the working sets' entries, bench/README.md round 31)
        with _COLLECTOR:
            out = self._processBatch(key, rows)
            _COLLECTOR.maybeCollect()
        yield out

    def _processBatch(self, key, rows: Iterator[pd.DataFrame]) -> pd.DataFrame:
        """One task's micro-batch (see the class docstring): the output frame of ``_outputFrame``."""
        plan = self.plan
        startedAt = time.time()
        now = int(startedAt * 1000)
        partition = plan["taskOfKey"][int(key[0])]
        taskId = f"{plan['subtopology'].id}_{partition}"
        cacheKey = (plan["applicationId"], taskId)
        context = TaskContext.get()
        batchId = int(context.getLocalProperty("streaming.sql.batchId") or -1)
        checkpointId = context.getLocalProperty("sql.streaming.queryId") or ""
        base = time.perf_counter()  # wall time of perf_counter t: startedAt + t - base
        checkpointRow = self.state.get()  # (version, blob) or None
        version = checkpointRow[0] if checkpointRow else None
        versionRead = time.perf_counter()
        # taken out while the batch runs: a failed batch must not leave a half-processed task behind
        cached = _LIVE_TASKS.pop(cacheKey, None)
        fresh = cached is None or version is None or cached[0] != (plan["runId"], version)
        if not fresh:
            task = cached[1]
        else:
            task = self._newTask(taskId, partition)
            if checkpointRow:
                task.restore(pickle.loads(checkpointRow[1]))
            elif plan.get("initialPartitionTimes"):  # taking over: Kafka Streams' committed partition times
                _seedPartitionTimes(task, partition, plan["initialPartitionTimes"])
            task.wallClockTime = now
        started = time.perf_counter()
        pdf = pd.concat(list(rows), ignore_index=True)
        inputRows = 0
        inputTopics = LocalTopics(plan["inputRoot"]) if plan.get("inputRoot") else None
        positions: dict[str, int] = {}  # "<topic>/<partition>" -> the batch's end offset (stream topics)
        consumed: dict[str, int] = {}  # topic -> records read (Kafka's offsets also count transaction markers)
        for topic in pdf["topic"].unique().tolist():
            group = pdf[pdf["topic"] == topic]
            isMarker = group["offset"] < 0
            markers = group[isMarker]
            chunks = group[~isMarker].sort_values("offset", kind="stable")
            name, _, globalPartition = topic.partition("@")
            # a chunk row carries its records; a reference row (local topics, source layout=refs)
            # the range of the local log this task reads itself
            tables = [decodeChunk(b) if b is not None else readReference(inputTopics, name, p, o, int(e))
                      for b, p, o, e in zip(chunks["records"].tolist(), chunks["partition"].tolist(),
                                            chunks["offset"].tolist(), chunks["end"].tolist())]
            columns = _rawColumns(tables, task.queueOf[topic].extractsMetadataTimestamp())
            inputRows += len(columns)
            if len(columns) and (not globalPartition or partition == 0):  # a global topic: counted by task 0 only
                consumed[name] = consumed.get(name, 0) + len(columns)
            lag = int(markers["lag"].max()) if len(markers) else None
            task.addRecordColumns(topic, columns, lag=lag)
            if "@" not in topic:  # global partitions ("<topic>@<partition>") are not the task's own
                for p, end in zip(markers["partition"].tolist(), markers["end"].tolist()):
                    if end == end and end is not None:  # not NaN: the marker carries its range's end
                        positions[f"{topic}/{int(p)}"] = int(end)

        # the stores as of the committed version before the processors' init, as Kafka restores
        # a task's stores before it initializes its topology
        stores: PersistentTaskState | None = task.persistentState
        opening = time.perf_counter()
        if stores is not None:
            try:
                self._openStores(task, stores, taskId, partition, checkpointId, batchId, version)
            except BaseException:
                stores.close()
                raise
        if fresh:
            try:
                if stores is not None and task.legacySnapshots:
                    stores.importLegacySnapshots(task.legacySnapshots)
                    task.legacySnapshots = {}
                task.initialize()
            except BaseException:
                if stores is not None:
                    stores.close()
                raise

        initialized = time.perf_counter()
        # one RocksDB MultiGet per store for the batch's keys, before the records read them one
        # at a time (a cache fill, exact whatever the keys: StreamTask.prefillStores)
        prefilled = 0
        if stores is not None and plan.get("storePrefill", True):
            try:
                prefilled = task.prefillStores()
            except BaseException:
                stores.close()
                raise
        converted = time.perf_counter()
        staging = plan.get("staging")
        stager = None
        try:
            # local topics: the task stages its output itself, as it is produced (SegmentStager)
            if staging is not None:
                stager = SegmentStager(LocalTopics(staging["root"]), staging["producer"])
                task.producedListener = lambda produced: _stage(produced, stager)
            punctuateNanos = task.punctuateNanos
            task.processAll(now)  # stream-time punctuation after every record, as in the driver
            task.maybePunctuateSystemTime(now)  # wall-clock punctuation once per batch ("poll loop")
            committing = time.perf_counter()
            task.commit()  # a micro-batch is a commit: the DSL record caches flush here
            # Kafka's record-e2e-latency: a source's records at the batch's wall-clock time (the
            # time the task was given, as Kafka's poll loop's), a terminal node's once processed
            # (what the record caches flushed included)
            task.metrics.recordLatencies(now, int(time.time() * 1000))
            newVersion = uuid.uuid4().hex
            flushing = time.perf_counter()
            if stores is not None:  # the stores' changes: pending in the local store, and to the changelogs
                task.produced.extend(_changelogColumns(
                    stores.flush(newVersion, batchId, task.partitionGroup.streamTime, checkpointId), partition))
            produced = task.drainProducedChunks()
            # each input partition's position with its partition time (the consumer group's
            # offset metadata, as Kafka Streams commits it: kspark.topics._kafka.batchMarker)
            positions = {key: [end, task.queueOf[key.rpartition("/")[0]].partitionTime]
                         for key, end in positions.items()}
            metrics = task.metrics.encoded()
            _addTimings(metrics, taskId, committing - converted, task.punctuateNanos - punctuateNanos)
            task.metrics.clear()
            for topic, n in consumed.items():  # Kafka consumer's records-consumed-total, per topic
                metrics[f"records-consumed-total|consumer-fetch-manager-metrics|topic={topic}"] = n

            processed = time.perf_counter()
            blob = pickle.dumps(task.checkpoint(), protocol=5)
            pickled = time.perf_counter()
            self.state.update((newVersion, blob))
            stored = time.perf_counter()
            # the task's commit: record caches, stores and changelogs, checkpoint (Kafka's commit-latency)
            addSample(metrics, "commit-latency", taskId, round((stored - committing) * 1e9))

            out = _outputFrame(produced, metrics, positions, stager)
            _LIVE_TASKS[cacheKey] = ((plan["runId"], newVersion), task)
        except BaseException:
            if stager is not None:
                stager.abort()
            raise
        finally:
            task.producedListener = None
            if stores is not None:
                stores.close()
        if _TIMINGS:  # KSPARK_TASK_TIMINGS=<file>: one JSON line per task call (bench/README.md)
            with open(_TIMINGS, "a") as f:
                f.write(json.dumps({
                    "task": taskId, "pid": os.getpid(), "batch": batchId, "cachedTask": not fresh, "startedAt": round(startedAt, 3), "endedAt": round(time.time(), 3),
                    "rows": inputRows, "stateBytes": len(blob),
                    "inputSeconds": round(opening - started, 4), "storeOpenSeconds": round(initialized - opening, 4),
                    "prefillSeconds": round(converted - initialized, 4), "prefilledKeys": prefilled,
                    "processSeconds": round(flushing - converted, 4), "storeFlushSeconds": round(processed - flushing, 4),
                    "pickleSeconds": round(pickled - processed, 4), "stateWriteSeconds": round(stored - pickled, 4),
                    "outputSeconds": round(time.perf_counter() - stored, 4)}) + "\n")
        if _timeline.PATH is not None:  # KSPARK_TIMELINE: the steps' wall times
            wall = {name: round(startedAt + t - base, 4) for name, t in (
                ("versionRead", versionRead), ("stateRead", started), ("inputRead", opening), ("storesOpened", converted),
                ("processed", flushing), ("storesFlushed", processed), ("pickled", pickled), ("stateWritten", stored),
                ("outputBuilt", time.perf_counter()))}
            _timeline.mark("task", batch=batchId, task=taskId, rows=inputRows, fresh=fresh, start=round(startedAt, 4),
                           **wall)
        return out

    def _openStores(self, task: StreamTask, stores: PersistentTaskState, taskId: str, partition: int,
                    checkpointId: str, batchId: int, version: str | None) -> None:
        """Open the task's local store at the committed ``version``: restore it from the latest
        snapshot (local topics), the changelogs and the global topics if it does not hold that
        version, else consider a snapshot (local topics, ``kspark.state._snapshots``)."""
        plan = self.plan
        localRoot = plan.get("inputRoot")
        appId = plan["applicationId"]
        # each global partition's [first offset, position] as of the committed version: the
        # batch's records were added after the position (RecordQueue.appliedPosition)
        positions = task.globalPositions()
        if not stores.open(checkpointId, version):
            offsets = restoreSnapshot(stores, localRoot, appId, taskId, checkpointId, batchId) if localRoot else {}
            topics = openTopicsFromOptions(plan["backend"])
            restoreStores(stores, topics, partition, checkpointId, batchId, localTopics=localRoot is not None,
                          taskId=taskId, startOffsets=offsets)
            # a checkpoint of an older kspark has no positions: its global stores are imported
            # from it (importLegacySnapshots); no checkpoint yet: nothing to restore
            if task.globalStores and version is not None and task.globalPositionsKnown:
                sources = globalStoreSources(plan["subtopology"])
                reprocess = {name: GlobalStoreReprocessor(task, name, *sources[name]) for name in task.globalStores
                             if sources[name][1].reprocessOnRestore}
                restoreGlobalStores(stores, topics, task.globalStores, positions, taskId, startOffsets=offsets,
                                    reprocess=reprocess)
            stores.restored(checkpointId, version)
        elif localRoot is not None and version is not None:
            maybeSnapshot(stores, LocalTopics(localRoot), localRoot, appId, taskId, partition, checkpointId, batchId,
                          version, positions)

    def _newTask(self, taskId: str, partition: int,
                 compactionTrigger: int | None = MICRO_BATCH_COMPACTION_TRIGGER) -> StreamTask:
        """A new task of this sub-topology, its stores made persistent where they have a
        persistent form (``task.persistentState``; None when none has), their database opened
        with ``compactionTrigger`` (``TaskStateDB``; None: RocksDB's default, for a host that keeps
        the database open)."""
        plan = self.plan
        topicName = plan["topicName"]
        counts = plan["partitionCounts"]
        task = StreamTask(
            taskId, plan["subtopology"], plan["storeBuilders"], plan["config"], partition,
            lambda t: topicName.get(t, t), lambda t: counts[t],
        )
        changelogs = plan["changelogs"]  # the sub-topology's own stores (not the global ones)
        persistent = {name: store for name, store in task.stores.items()
                      if name in changelogs and makePersistent(store)}
        # global stores: in the same database, no changelog (their topics are: globalStores)
        task.globalStores = {name: [topicName.get(t, t) for t in source.topics]
                             for name, (source, _) in globalStoreSources(plan["subtopology"]).items()
                             if name in task.stores and makePersistent(task.stores[name])}
        persistent.update((name, task.stores[name]) for name in task.globalStores)
        task.persistentStores = set(persistent)
        task.persistentState = None
        if persistent:
            storeDir = plan["storeDir"] or os.path.join(tempfile.gettempdir(), "kspark-stores", plan["applicationId"])
            task.persistentState = PersistentTaskState(
                persistent, {name: changelogs[name] for name in persistent if name in changelogs},
                os.path.join(storeDir, taskId),
                plan["storeMemoryBytes"], plan["storeCacheEntries"], compactionTrigger)
        return task

    def close(self) -> None:
        pass


def _seedPartitionTimes(task: StreamTask, partition: int, times: dict[str, int]) -> None:
    """Set a new task's partition times (``times``: ``"<topic>/<partition>"`` -> the time the
    consumer group's offset metadata holds), and its stream time to their max, as Kafka's
    ``StreamTask`` initializes them from the committed offsets (``PartitionGroup.setPartitionTime``)."""
    for topic, queue in task.queueOf.items():
        time_ = times.get(f"{topic}/{partition}")
        if "@" not in topic and time_ is not None and time_ > queue.partitionTime:
            queue.partitionTime = time_
            if time_ > task.partitionGroup.streamTime:
                task.partitionGroup.streamTime = time_


def _addTimings(metrics: dict, taskId: str, processingSeconds: float, punctuateNanos: int) -> None:
    """The ``process-latency`` (ns per record processed, punctuators excluded) and
    ``punctuate-latency`` (ns per punctuation) samples of task ``taskId`` over a micro-batch (or a
    stream thread's commit interval), added to its metrics row (:func:`addSample`)."""
    processed = metrics.get(f"process-total|stream-task-metrics|task-id={taskId}", 0)
    if processed:
        perRecord = (processingSeconds * 1e9 - punctuateNanos) / processed
        addSample(metrics, "process-latency", taskId, round(max(perRecord, 0.0), 1))
    punctuations = metrics.get(f"punctuate-total|stream-task-metrics|task-id={taskId}", 0)
    if punctuations:
        addSample(metrics, "punctuate-latency", taskId, round(punctuateNanos / punctuations, 1))


def _rawColumns(tables: list[pa.Table], extractsMetadataTimestamp: bool) -> RawRecordColumns:
    """The records of a topic's chunks (``READ_SCHEMA`` tables in offset order) as
    ``RawRecordColumns``: converted to Python objects only as the task's queue needs them."""
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0] if tables else READ_SCHEMA.empty_table()
    offsets = table.column("offset").to_numpy()
    timestamps = table.column("timestamp").to_numpy()
    # Built-in extractors on valid timestamps: taken in bulk, no extractor call per record
    bulk = extractsMetadataTimestamp and bool((timestamps >= 0).all())
    return RawRecordColumns(offsets, timestamps, *(table.column(c).combine_chunks() for c in ("key", "value", "headers")),
                            bulk)


def _outputFrame(produced: list, metrics: dict, positions: dict[str, int],
                 stager: SegmentStager | None = None) -> pd.DataFrame:
    """One sink chunk row per chunk of each topic-partition's records in ``produced``
    (``ProducedRecord`` tuples and ``ProducedColumns``; records in produced order per
    topic-partition), then the metrics row with the task's input ``positions``
    (``"<topic>/<partition>"`` -> next offset).

    With ``stager`` (local topics), ``produced`` is written by the stager after what it has
    staged already, and there is one row per staged segment, with its JSON in ``staged``
    instead of the records: the same records reach the same topic-partitions in the same order,
    without being encoded, handed to Spark and decoded again by the sink."""
    topics: list = []
    partitions: list = []
    blobs: list = []
    staged: list = []
    if stager is not None:
        _stage(produced, stager)
        for topic, partition, segment in stager.close():
            topics.append(topic)
            partitions.append(partition)
            blobs.append(None)
            staged.append(segment.encoded())
    else:
        for topic, partition, part in _producedParts(produced):
            for chunk in chunkTable(part):
                topics.append(topic)
                partitions.append(partition)
                blobs.append(encodeChunk(chunk))
                staged.append(None)
    n = len(blobs)
    return pd.DataFrame(
        {
            "topic": topics + [None],
            "partition": pd.array(partitions + [None], dtype="Int32"),
            "records": blobs + [None],
            "metrics": [None] * n + [json.dumps(metrics)],
            "positions": [None] * n + [json.dumps(positions)],
            "staged": staged + [None],
        },
        columns=_OUTPUT_COLUMNS,
    )


def _stage(produced: list, stager: SegmentStager) -> None:
    """Write ``produced`` with ``stager``, each topic-partition's records in produced order."""
    for topic, partition, part in _producedParts(produced):
        stager.write(topic, partition, part)


def _producedParts(produced: list) -> Iterator[tuple[str, int, pa.Table]]:
    """(topic, partition, ``RECORD_SCHEMA`` table of its records in produced order) of every
    topic-partition in ``produced``, in order of first appearance."""
    if not produced:
        return
    topicIndex: dict[str, int] = {}
    parts = [_columnsOf(run, topicIndex) for run in _runs(produced)]
    table = pa.concat_tables([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
    topicCodes = np.concatenate([p[1] for p in parts])
    partitionCodes = np.concatenate([p[2] for p in parts])
    topicNames = list(topicIndex)
    # (topic, partition) pairs coded in numpy: topic index * (max partition + 1) + partition
    width = int(partitionCodes.max()) + 1
    codes = topicCodes * width + partitionCodes
    # the distinct codes in order of first appearance: few and small, so counted rather than
    # sorted (np.unique sorted every record's code: a tenth of a P1 task's time)
    distinct = np.flatnonzero(np.bincount(codes))
    if len(distinct) > 1:
        distinct = distinct[np.argsort([int(np.argmax(codes == c)) for c in distinct.tolist()], kind="stable")]
    for code in distinct.tolist():
        part = table if len(distinct) == 1 else table.take(pa.array(np.flatnonzero(codes == code)))
        yield topicNames[code // width], code % width, part


def _encodedHeaders(headers: list) -> list:
    """``encodeHeaders`` of each record's headers, each distinct headers tuple encoded once (every
    changelog record of a batch carries the same one)."""
    memo: dict = {}
    out = []
    for h in headers:
        try:
            encoded = memo.get(h)
            if encoded is None and h not in memo:
                encoded = memo[h] = encodeHeaders(h)
        except TypeError:  # a header value that does not hash (a bytearray)
            encoded = encodeHeaders(h)
        out.append(encoded)
    return out


def _changelogColumns(records: list, partition: int) -> list:
    """``ProducedColumns`` per changelog topic of a batch's changelog records (``(topic, key,
    value, timestamp, headers)`` tuples, in order per topic): the sink takes columns without a
    tuple per record."""
    byTopic: dict[str, list] = {}
    for record in records:
        byTopic.setdefault(record[0], []).append(record)
    out = []
    for topic, rows in byTopic.items():
        _, keys, values, timestamps, headers = zip(*rows)
        n = len(rows)
        if None in timestamps:  # a record Kafka logs without a timestamp: its producer stamps the time it sends it
            now = int(time.time() * 1000)
            timestamps = [now if t is None else t for t in timestamps]
        out.append(ProducedColumns(topic, np.full(n, partition, np.int64), np.array(timestamps, np.int64),
                                   pa.array(keys, pa.binary()), pa.array(values, pa.binary()), list(headers)))
    return out


def _runs(produced: list) -> list:
    """``produced`` as a list of ``ProducedColumns`` and lists of consecutive ``ProducedRecord``s."""
    runs: list = []
    for r in produced:
        if type(r) is ProducedColumns:
            runs.append(r)
        elif runs and type(runs[-1]) is list:
            runs[-1].append(r)
        else:
            runs.append([r])
    return runs


def _columnsOf(run, topicIndex: dict[str, int]) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """(records as a ``RECORD_SCHEMA`` table, topic index per record, partition per record) of a
    run; ``topicIndex`` numbers the topics in order of appearance."""
    if type(run) is ProducedColumns:
        n = len(run.timestamps)
        headers = (pa.array(_encodedHeaders(run.headers), pa.binary()) if run.headers is not None
                   and any(run.headers) else pa.nulls(n, pa.binary()))
        table = pa.table([pa.array(run.timestamps, pa.int64()), run.keys, run.values, headers], schema=RECORD_SCHEMA)
        return (table, np.full(n, topicIndex.setdefault(run.topic, len(topicIndex)), np.int64),
                np.asarray(run.partitions, np.int64))
    # one list per column (zip(*run) would build six huge tuples and set off the GC)
    topicCol, partitionCol, tsCol, keyCol, valueCol, headerCol = (list(map(itemgetter(i), run)) for i in range(6))
    headerCol = _encodedHeaders(headerCol) if any(headerCol) else [None] * len(run)
    table = pa.table([pa.array(tsCol, pa.int64()), pa.array(keyCol, pa.binary()), pa.array(valueCol, pa.binary()),
                      pa.array(headerCol, pa.binary())], schema=RECORD_SCHEMA)
    partitionArray = pa.array(partitionCol, pa.int64())
    if partitionArray.null_count:
        raise ValueError("A produced record has a topic but a null partition")
    topicCodes = np.fromiter((topicIndex.setdefault(t, len(topicIndex)) for t in topicCol), np.int64, len(run))
    return table, topicCodes, partitionArray.to_numpy()
