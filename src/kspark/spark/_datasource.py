"""Spark Structured Streaming source and sink over :class:`kspark.topics.Topics`: the local
topics (``backend=local``, the default) or a Kafka cluster (``backend=kafka``).

Registered as the Python data source ``"kspark-topics"``.

Backend options
    ``backend=local``: ``root`` (the LocalTopics directory). ``backend=kafka``: ``kafka.admin``,
    ``kafka.consumer`` and ``kafka.producer``, JSON objects of librdkafka settings
    (:func:`topicsOptions` makes them from a ``Topics``).

Source options
    ``topics`` (comma-separated names) and optionally ``maxRecordsPerTrigger`` (records per
    micro-batch across all partitions, shared fairly), ``heartbeat`` (``"true"``: outside
    availableNow, every trigger plans a micro-batch even without new records, so tasks run their
    wall-clock punctuators; a number N: at most one such batch every N ms, for a trigger of 0),
    ``unlimitedTopics`` (comma-separated topics always read to their
    end, outside ``maxRecordsPerTrigger``: the global topics, so a global partition is caught up
    in every batch), ``autoOffsetReset`` / ``offsetResetPolicies`` / ``groupId`` (where reading
    starts; :class:`TopicsStreamReader`), ``readTasks`` (at most that many Spark partitions per
    micro-batch, each reading several topic-partitions' ranges in turn; default one per range).
    Every micro-batch reads one range per topic-partition; it yields the data rows in offset
    order (``lag`` null), then one marker row (``offset`` -1, ``timestamp`` 0, null bytes) whose
    ``lag`` is how many offsets of that topic-partition were already in the log when the batch
    was planned but lie beyond the batch (0 = caught up).

Sink options
    Local: ``producer`` (the query's stable name; with Spark's query id, the idempotent producer
    making replays of a batch write nothing twice). Kafka: ``guarantee``, ``groupId``,
    ``transactionalIdPrefix`` (:class:`KafkaTopicsStreamWriter`). Rows whose ``topic`` is null
    are not written (``metrics``: the task's counters, which a query collects with
    ``observe``; ``positions``: its input positions, for the Kafka sink). Other rows are
    written, in the order received per topic-partition, exactly once per batch (Kafka with
    ``at_least_once``: at least once).

Layout (source and sink option ``layout``)
    ``"records"`` (default): one Spark row per record (:data:`SOURCE_SCHEMA`, :data:`SINK_SCHEMA`).
    ``"chunks"``: one Spark row per chunk of up to :data:`CHUNK_MAX_ROWS` consecutive records of
    one topic-partition (at most about :data:`CHUNK_MAX_BYTES` of keys, values and headers, or a
    single larger record), the records in ``records`` as an Arrow IPC stream
    (:func:`encodeChunk` / :func:`decodeChunk`) of ``READ_SCHEMA`` rows in the source
    (:data:`SOURCE_CHUNK_SCHEMA`, marker rows as above with null ``records``) and
    ``RECORD_SCHEMA`` rows in the sink, which writes them to ``topic``/``partition``
    (:data:`SINK_CHUNK_SCHEMA`). The same records in the same order, but Spark moves, sorts and
    converts a few rows instead of one per record (what the ``KafkaStreams`` host uses over
    Kafka topics).
    ``"refs"`` (source only, local topics only): :data:`SOURCE_CHUNK_SCHEMA` rows, but instead of
    its records a non-empty range yields one reference row (``offset`` the range's start, null
    ``records``, ``end`` its end), then the marker row: the Spark task that gets the row reads
    ``[offset, end)`` of the local log itself (:func:`readReference`), so the records are not
    encoded, shuffled and decoded on their way (what the ``KafkaStreams`` host uses over local
    topics; a local log keeps every record, so the range is still there when the task reads it).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import uuid
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from ..topics import RECORD_SCHEMA, LocalTopics, OffsetOutOfRangeException, Topics, UnknownTopicOrPartitionException
from ..topics._local import SEGMENT_BATCH_ROWS, _fsyncFile, segmentChecksums
from . import _timeline
from ._timeline import mark

log = logging.getLogger("kspark.spark")

__all__ = [
    "CHUNK_MAX_BYTES",
    "CHUNK_MAX_ROWS",
    "SINK_CHUNK_SCHEMA",
    "SINK_SCHEMA",
    "SOURCE_CHUNK_SCHEMA",
    "SOURCE_SCHEMA",
    "SegmentStager",
    "StagedSegment",
    "KafkaCommitMessage",
    "KafkaTopicsStreamWriter",
    "LocalTopicsCommitMessage",
    "LocalTopicsStreamWriter",
    "TopicsDataSource",
    "TopicsStreamReader",
    "TopicPartitionRange",
    "TopicPartitionRanges",
    "chunkTable",
    "decodeChunk",
    "encodeChunk",
    "openTopicsFromOptions",
    "readReference",
    "registerDataSource",
    "topicsOptions",
]

SOURCE_SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", LongType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("headers", BinaryType()),
        StructField("lag", LongType()),
    ]
)
"""Rows of the source; ``timestamp`` in ms, ``offset`` -1 and ``lag`` set on marker rows."""

SINK_SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("timestamp", LongType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("headers", BinaryType()),
        StructField("metrics", StringType()),
    ]
)
"""Rows the sink accepts (any column order); ``timestamp`` in ms."""

SOURCE_CHUNK_SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("records", BinaryType()),
        StructField("lag", LongType()),
        StructField("end", LongType()),
    ]
)
"""Source rows with ``layout=chunks``: ``records`` holds consecutive records of the partition as
an Arrow IPC stream of ``READ_SCHEMA`` rows (their offsets, which may have gaps, then the
``RECORD_SCHEMA`` columns), ``offset`` the first one's offset; marker rows have ``offset`` -1,
null ``records``, ``lag`` and ``end`` (the range's end offset: the position after the batch) set.
With ``layout=refs`` a data row is a reference: null ``records``, ``offset`` and ``end`` the
range to read (:func:`readReference`)."""

SINK_CHUNK_SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("records", BinaryType()),
        StructField("metrics", StringType()),
        StructField("positions", StringType()),
        StructField("staged", StringType()),
    ]
)
"""Rows the sink accepts with ``layout=chunks``: ``records`` (Arrow IPC stream of
``RECORD_SCHEMA`` rows) are appended to ``topic``-``partition``; null ``topic``: a metrics row,
whose ``positions`` (optional column) is a JSON object ``{"<topic>/<partition>": next offset}``
(or ``[next offset, partition time]``) of the task's input positions (committed with the records by the Kafka sink). ``staged``
(optional column, local topics only): the records of ``topic``-``partition`` were already
written by the same Spark task as a segment in the producer's staging directory
(:class:`SegmentStager`); the row carries that segment's JSON description instead of ``records``."""

_OPTIONAL_SINK_COLUMNS = ("positions", "staged")

SPLIT_OFFSETS = 200_000
"""``layout=chunks``: a planned range of more offsets is read by several Spark tasks, each a
consecutive part of it (the task of a kspark task sorts the chunks by offset). The source
stage then has tasks of similar sizes: P2 over Kafka read five partitions of about 650K prices
as five tasks, three waves on two cores with one core idle in the last (bench/README.md, round 17)."""

CHUNK_MAX_ROWS = 65536
"""Most records in one chunk row (``layout=chunks``)."""
CHUNK_MAX_BYTES = 8 << 20
"""About the most bytes of keys, values and headers in one chunk row (a larger record gets its own)."""

# The Arrow form Spark expects from read(): every field nullable, as Spark's own conversion makes it.
_SOURCE_ARROW_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", pa.binary()),
        ("lag", pa.int64()),
    ]
)
_SOURCE_CHUNK_ARROW_SCHEMA = pa.schema(
    [("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()), ("records", pa.binary()),
     ("lag", pa.int64()), ("end", pa.int64())]
)
_MAX_BATCH_ROWS = 65536
_LAYOUTS = ("records", "chunks", "refs")
_LATEST = "@logEnd"  # offset-dict suffix: a partition's log end offset when the batch was planned
_HEARTBEAT = "@heartbeat"  # offset-dict key: planning time (ms), with option heartbeat=true
_FROM = "@from"  # offset-dict suffix: where a partition's batch starts after a reset (TopicsStreamReader)
_CHAIN = "@chain"  # offset-dict suffix: Topics.logChains at the partition's position (local topics)


def _offsetKey(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


def _layout(options) -> str:
    layout = (options.get("layout") or "records").lower()
    if layout not in _LAYOUTS:
        raise ValueError(f"Option 'layout' must be one of {', '.join(_LAYOUTS)}, got {layout!r}")
    return layout


def _sinkLayout(options) -> str:
    layout = _layout(options)
    if layout == "refs":
        raise ValueError("Option 'layout' refs is for the source only; the sink takes records or chunks")
    return layout


# Chunks are zstd-compressed Arrow: a chunk crosses Python -> JVM -> shuffle -> sort -> Python,
# and at a fifth of the size the JVM hands a task its input in a tenth of the time (P1 on chunks).
_CHUNK_WRITE_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")


def encodeChunk(table: pa.Table) -> bytes:
    """``table`` (``RECORD_SCHEMA`` or ``READ_SCHEMA`` columns) as the bytes of a zstd-compressed
    Arrow IPC stream (a chunk's ``records``)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_CHUNK_WRITE_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def decodeChunk(data) -> pa.Table:
    """The records of a chunk (bytes of an Arrow IPC stream) as a table, without copying."""
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def readReference(topics: LocalTopics, topic: str, partition: int, start: int, end: int) -> pa.Table:
    """The records a ``layout=refs`` reference row stands for: offsets ``[start, end)`` of
    ``topic``-``partition`` as one ``READ_SCHEMA`` table, what the source's chunks of that range
    hold (segments memory-mapped, their checksums verified).

    Raises
    ------
    UnknownTopicOrPartitionException
        If the topic-partition does not exist.
    CorruptRecordException
        If a segment is missing, truncated or fails its checksum.
    OffsetOutOfRangeException
        If the log no longer holds every offset of the range (the topic was created again).
    """
    table = topics.read(topic, partition, start, end)
    if table.num_rows != end - start:  # a local log keeps every record: the range was planned from its end
        raise OffsetOutOfRangeException(f"Offsets {start}..{end - 1} of {topic}-{partition} are no longer all in its "
                                        f"log at {topics.root}: {table.num_rows} records read")
    return table


def chunkTable(table: pa.Table, maxRows: int = CHUNK_MAX_ROWS, maxBytes: int = CHUNK_MAX_BYTES) -> Iterator[pa.Table]:
    """Consecutive slices of ``table``, each at most ``maxRows`` rows and about ``maxBytes`` bytes
    of its binary columns (a row alone over ``maxBytes`` is a slice of its own); none if empty."""
    n = table.num_rows
    if n == 0:
        return
    binary = [c for c in table.columns if pa.types.is_binary(c.type)]
    if table.nbytes <= maxBytes or not binary:
        for start in range(0, n, maxRows):
            yield table.slice(start, maxRows)
        return
    sizes = np.zeros(n, dtype=np.int64)
    for column in binary:
        sizes += pc.fill_null(pc.binary_length(column), 0).to_numpy().astype(np.int64)
    ends = np.cumsum(sizes)
    start = 0
    while start < n:
        base = ends[start - 1] if start else 0
        stop = int(np.searchsorted(ends, base + maxBytes, side="right"))
        stop = min(max(stop, start + 1), start + maxRows)
        yield table.slice(start, stop - start)
        start = stop


def _option(options, name: str) -> str:
    value = options.get(name)
    if not value:
        raise ValueError(f"Option '{name}' is required by the kspark-topics data source")
    return value


def _jsonOption(options, name: str) -> dict:
    return json.loads(_option(options, name))


def openTopicsFromOptions(options) -> Topics:
    """The topics named by the data source options: ``backend`` ``"local"`` (default; ``root``)
    or ``"kafka"`` (``kafka.admin``, ``kafka.consumer``, ``kafka.producer``: JSON objects of
    librdkafka settings, as ``KafkaTopics`` derived them on the driver)."""
    backend = (options.get("backend") or "local").lower()
    if backend == "kafka":
        from ..topics._kafka import KafkaTopics

        topics = KafkaTopics.__new__(KafkaTopics)  # the settings were checked on the driver
        topics.adminConfig = _jsonOption(options, "kafka.admin")
        topics.consumerConfig = _jsonOption(options, "kafka.consumer")
        topics.producerConfig = json.loads(options.get("kafka.producer") or "{}")
        topics.servers = topics.adminConfig.get("bootstrap.servers", "")
        topics.timeoutS = float(options.get("kafka.timeoutS") or 30)
        topics._admin = None
        return topics
    if backend != "local":
        raise ValueError(f"Option 'backend' must be local or kafka, got {backend!r}")
    return LocalTopics(_option(options, "root"))


def topicsOptions(topics: Topics) -> dict[str, str]:
    """The data source options that make :func:`openTopicsFromOptions` open ``topics`` again (on
    the executors)."""
    if isinstance(topics, LocalTopics):
        return {"backend": "local", "root": str(topics.root)}
    return {"backend": "kafka", "kafka.admin": json.dumps(topics.adminConfig),
            "kafka.consumer": json.dumps(topics.consumerConfig), "kafka.producer": json.dumps(topics.producerConfig),
            "kafka.timeoutS": str(topics.timeoutS)}


class TopicsDataSource(DataSource):
    """The ``"kspark-topics"`` data source: a streaming source and sink over :class:`kspark.topics.Topics`
    (local topics or Kafka).

    See the module docstring for the options, and :data:`SOURCE_SCHEMA` / :data:`SINK_SCHEMA`.
    """

    @classmethod
    def name(cls) -> str:
        return "kspark-topics"

    def schema(self) -> StructType:
        return SOURCE_SCHEMA if _layout(self.options) == "records" else SOURCE_CHUNK_SCHEMA

    def streamReader(self, schema: StructType) -> "TopicsStreamReader":
        return TopicsStreamReader(self.options)

    def streamWriter(self, schema: StructType, overwrite: bool):
        mark("sink.streamWriter")  # on the driver: each batch's planning and its commit make one
        if (self.options.get("backend") or "local").lower() == "kafka":
            return KafkaTopicsStreamWriter(self.options, schema)
        return LocalTopicsStreamWriter(self.options, schema)


# ---------------------------------------------------------------------- source


@dataclass(frozen=True)
class TopicPartitionRange(InputPartition):
    """The offsets ``[start, end)`` of one topic-partition read by one Spark task.

    ``lag`` is the partition's end offset at planning time minus ``end`` (offsets, which
    with Kafka's gaps can exceed the records still to come). ``marker``: whether the range
    yields the partition's marker row after its records (False for all but the last part of a
    range split over several tasks, see :data:`SPLIT_OFFSETS`).
    """

    topic: str
    partition: int
    start: int
    end: int
    lag: int
    marker: bool = True


@dataclass(frozen=True)
class TopicPartitionRanges(InputPartition):
    """Several :class:`TopicPartitionRange` read one after the other by one Spark task (source
    option ``readTasks``)."""

    ranges: tuple


def packRanges(ranges: list[TopicPartitionRange], tasks: int) -> list:
    """``ranges`` as at most ``tasks`` Spark partitions of about equal offsets: the largest
    range first into the group with the fewest offsets so far (an empty range counts as one
    offset, so markers spread too); ``ranges`` themselves when there are no more of them."""
    if tasks >= len(ranges):
        return list(ranges)
    groups: list[list[TopicPartitionRange]] = [[] for _ in range(tasks)]
    sizes = [0] * tasks
    for r in sorted(ranges, key=lambda r: r.end - r.start, reverse=True):
        i = sizes.index(min(sizes))
        groups[i].append(r)
        sizes[i] += max(1, r.end - r.start)
    return [TopicPartitionRanges(tuple(g)) for g in groups]


_RESET_POLICIES = ("earliest", "latest", "none")


class TopicsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader of the partitions of ``topics``.

    A batch's offsets (Spark's offset log) are ``{"<topic>/<partition>": next offset,
    "<topic>/<partition>@logEnd": end offset when planned}``, plus ``"<topic>@id"`` (the topic's
    id, where the backend has one) and ``"<topic>/<partition>@from"`` where the batch starts
    elsewhere than the previous batch ended (a reset, below).

    Where reading starts: a new checkpoint starts each partition at the offset committed by the
    consumer group ``groupId`` if it has one (Kafka topics, as a Kafka consumer resumes), else
    at the reset policy's position (``auto.offset.reset``: ``earliest``, Kafka Streams' default,
    ``latest``, or ``none``: an error). The same policy applies, with a WARNING naming the
    offsets skipped or read again, when a checkpointed position is no longer in the log: before
    the log start (deleted by retention), beyond its end (truncated), in a topic deleted and
    created again (its id changed), or in a local log rewritten below it (restored from an older
    backup, truncated and appended to again: ``"<topic>/<partition>@chain"``, the chain of the
    manifest line before the position, no longer matches; Kafka's leader-epoch check, KIP-320).

    Parameters
    ----------
    options : mapping of str to str
        The backend's options (:func:`openTopicsFromOptions`), ``topics`` and optionally
        ``maxRecordsPerTrigger`` (a positive integer), ``autoOffsetReset`` (default policy),
        ``offsetResetPolicies`` (JSON object topic -> policy), ``groupId``, ``initialOffsets``
        (JSON object: the start positions of a new checkpoint, see :meth:`initialOffset`).

    Raises
    ------
    ValueError
        If a required option is missing or ``maxRecordsPerTrigger`` is not a positive integer.
    UnknownTopicOrPartitionException
        If a topic does not exist.
    """

    def __init__(self, options) -> None:
        self._layout = _layout(options)
        if self._layout == "refs" and (options.get("backend") or "local").lower() != "local":
            raise ValueError("Option 'layout' refs reads local topics only (backend=local); use chunks with Kafka")
        self._topics = openTopicsFromOptions(options)
        names = [t.strip() for t in _option(options, "topics").split(",") if t.strip()]
        self._names = names
        self._partitions: list[tuple[str, int]] = []
        for topic in names:
            numPartitions = self._topics.partitionsFor(topic)
            if numPartitions is None:
                raise UnknownTopicOrPartitionException(f"This server does not host this topic-partition: {topic}")
            self._partitions += [(topic, p) for p in range(numPartitions)]
        maxRecords = options.get("maxRecordsPerTrigger")
        self._maxRecordsPerTrigger = None
        if maxRecords is not None:
            if not str(maxRecords).strip().isdigit() or int(maxRecords) < 1:
                raise ValueError(f"Option 'maxRecordsPerTrigger' must be a positive integer, got {maxRecords!r}")
            self._maxRecordsPerTrigger = int(maxRecords)
        default = (options.get("autoOffsetReset") or "earliest").lower()
        self._policies = {t: str(p).lower() for t, p in json.loads(options.get("offsetResetPolicies") or "{}").items()}
        for policy in [default, *self._policies.values()]:
            if policy not in _RESET_POLICIES and not re.fullmatch(r"by_duration:\d+", policy):
                raise ValueError(f"Offset reset policy must be one of {', '.join(_RESET_POLICIES)} or "
                                 f"by_duration:<ms>, got {policy!r}")
        self._defaultPolicy = default
        self._groupId = options.get("groupId") or None
        self._availableNowTargets: dict[str, int] | None = None
        self._seenEnds: dict[str, int] | None = None  # the log ends latestOffset read (reportLatestOffset)
        heartbeat = options.get("heartbeat", "false").strip().lower()
        # None: no heartbeat; 0: one per trigger; N: one per N ms at most
        self._heartbeat = 0 if heartbeat == "true" else int(heartbeat) if heartbeat.isdigit() else None
        self._unlimited = {t.strip() for t in options.get("unlimitedTopics", "").split(",") if t.strip()}
        self._initialOffsets = json.loads(options["initialOffsets"]) if options.get("initialOffsets") else None
        readTasks = options.get("readTasks")
        if readTasks is not None and (not str(readTasks).strip().isdigit() or int(readTasks) < 1):
            raise ValueError(f"Option 'readTasks' must be a positive integer, got {readTasks!r}")
        self._readTasks = int(readTasks) if readTasks is not None else None

    def _policy(self, topic: str) -> str:
        return self._policies.get(topic, self._defaultPolicy)

    def _endOffsets(self, ends: dict[str, dict[int, int]] | None = None) -> dict[str, int]:
        """``"<topic>/<partition>"`` -> log end offset, from ``ends`` (topic -> partition -> end,
        as :meth:`Topics.endOffsets` gives them) if given, else read now."""
        if ends is None:
            ends = {t: self._topics.endOffsets(t) for t in self._names}
        return {_offsetKey(t, p): ends[t][p] for t, p in self._partitions}

    def _topicIds(self) -> dict[str, str]:
        return {f"{t}@id": i for t in self._names if (i := self._topics.topicId(t)) is not None}

    def _logChains(self, offsets: dict) -> dict[str, int]:
        """``"<topic>/<partition>@chain"`` -> the log's chain at the partition's offset in
        ``offsets``, where the backend keeps one (local topics: :meth:`LocalTopics.logChains`)."""
        out = {}
        for topic, partition in self._partitions:
            key = _offsetKey(topic, partition)
            chain = self._topics.logChains(topic, partition, [offsets[key]])[offsets[key]]
            if chain is not None:
                out[key + _CHAIN] = chain
        return out

    def _resetPosition(self, topic: str, partition: int, beginning: int, end: int, why: str) -> int:
        policy = self._policy(topic)
        if policy == "none":
            raise OffsetOutOfRangeException(
                f"{why} for {topic}-{partition}, and the offset reset policy (auto.offset.reset) is none")
        if policy.startswith("by_duration:"):  # Kafka: offsetsForTimes(now - duration), else the end
            return self._topics.offsetsForTimes(topic, int(time.time() * 1000) - int(policy.split(":")[1]))[partition]
        return beginning if policy == "earliest" else end

    def initialOffset(self) -> dict:
        """Start positions of a new checkpoint: option ``initialOffsets`` (a JSON object, as this
        method returns it) if given, else the group's committed offsets, else the reset policy's.

        Spark asks again after a restart that interrupted the checkpoint's first batch, and
        these positions can have moved by then (the interrupted batch's transactions committed
        the group's offsets, ``latest`` moved on): ``KafkaStreams`` computes them once per
        checkpoint and passes them in (``_kafka_streams.KafkaStreams._initialOffsets``)."""
        if self._initialOffsets is not None:
            return dict(self._initialOffsets)
        offsets = {}
        committed = self._committed()
        for topic in self._names:
            beginnings, ends = self._topics.beginningOffsets(topic), self._topics.endOffsets(topic)
            for partition in beginnings:
                if (topic, partition) in committed:
                    offsets[_offsetKey(topic, partition)] = committed[(topic, partition)]
                else:
                    offsets[_offsetKey(topic, partition)] = self._resetPosition(
                        topic, partition, beginnings[partition], ends[partition],
                        "Undefined offset with no committed offset of group " + str(self._groupId))
        if committed:
            log.warning("A new checkpoint starts %s at the offsets committed by consumer group %s, as a Kafka consumer "
                        "resumes; stores are restored from their changelog topics. Delete the group or use "
                        "a new application.id to process the topics from the reset policy's position.",
                        ", ".join(self._names), self._groupId)
        offsets.update(self._topicIds())
        return offsets

    def _committed(self) -> dict[tuple[str, int], int]:
        if self._groupId is None or isinstance(self._topics, LocalTopics):
            return {}
        return {(t, p): o for t in self._names for p, (o, _) in self._topics.committedOffsets(self._groupId, t).items()}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._maxRecordsPerTrigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self._maxRecordsPerTrigger)

    def prepareForTriggerAvailableNow(self) -> None:
        self._availableNowTargets = self._endOffsets()

    def reportLatestOffset(self) -> dict:
        """The log ends (progress ``latestOffset``). Spark asks right after :meth:`latestOffset`,
        which read them a moment ago: those are returned (one call, once), not read again."""
        mark("source.reportLatestOffset")
        seen, self._seenEnds = self._seenEnds, None
        return seen if seen is not None else self._endOffsets()

    def _startsOf(self, start: dict, ids: dict[str, str] | None = None,
                  logEnds: dict[str, dict[int, int]] | None = None) -> tuple[dict[str, int], dict[str, int]]:
        """Where the next batch starts per partition, and the resets among them (see the class doc).
        ``ids`` (:meth:`_topicIds`) and ``logEnds`` (topic -> partition -> end offset): as read
        by the caller, else read here."""
        if ids is None:
            ids = self._topicIds()
        starts: dict[str, int] = {}
        resets: dict[str, int] = {}
        for topic in self._names:
            recreated = f"{topic}@id" in start and f"{topic}@id" in ids and start[f"{topic}@id"] != ids[f"{topic}@id"]
            beginnings = self._topics.beginningOffsets(topic)
            ends = logEnds[topic] if logEnds is not None else self._topics.endOffsets(topic)
            for partition, beginning in beginnings.items():
                key = _offsetKey(topic, partition)
                position = start.get(key, beginning)
                why = None
                if recreated:
                    why = f"Topic {topic} was deleted and created again (its id changed) since offset {position}"
                elif position > ends[partition]:
                    why = f"Offset {position} is beyond the log end {ends[partition]} (the log was truncated or recreated)"
                elif position < beginning:
                    why = f"Offset {position} is before the log start {beginning} (deleted by retention)"
                elif key + _CHAIN in start and \
                        self._topics.logChains(topic, partition, [position])[position] != start[key + _CHAIN]:
                    why = (f"The log below offset {position} was rewritten since it was read up to there (the chain of "
                           f"the manifest line holding offset {position - 1} changed: restored from an older backup, "
                           "or truncated and appended to again)")
                if why is not None:
                    reset = self._resetPosition(topic, partition, beginning, ends[partition], why)
                    if reset < position:
                        what = f"; offsets {reset}..{position - 1} are read again"
                    elif reset > position:
                        what = f"; offsets {position}..{reset - 1} are skipped"
                    else:
                        what = ""
                    log.warning("%s for %s-%d: reading continues at offset %d (auto.offset.reset=%s)%s",
                                why, topic, partition, reset, self._policy(topic), what)
                    resets[key] = position = reset
                starts[key] = position
        return starts, resets

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """End offsets of the next batch: everything available, at most ``limit`` records.

        Under ``Trigger.AvailableNow`` the end never passes the targets captured by
        :meth:`prepareForTriggerAvailableNow`. A ``ReadMaxRows`` limit is shared fairly:
        every partition with records gets an equal share, unused shares go to the others.
        Other limits read everything available.
        """
        mark("source.latestOffset.start")
        # each of the logs' ends, starts and topic ids read once per batch (each read is a
        # request to the cluster on the driver, before Spark writes the batch's offsets)
        logEnds = {t: self._topics.endOffsets(t) for t in self._names}
        ids = self._topicIds()
        # Under availableNow the run sees the logs as they were when it started: records appended
        # later count neither as input nor as lag (else the run would never end).
        ends = latest = self._availableNowTargets if self._availableNowTargets is not None else self._endOffsets(logEnds)
        self._seenEnds = self._endOffsets(logEnds)  # for reportLatestOffset, which Spark calls next
        starts, resets = self._startsOf(start, ids, logEnds)
        ends = {key: max(ends[key], starts[key]) for key in ends}
        available = {key: max(0, ends[key] - starts[key]) for key in ends}
        if isinstance(limit, ReadMaxRows):
            unlimited = {key for key in available if key.rsplit("/", 1)[0] in self._unlimited}
            taken = _fairShares({k: n for k, n in available.items() if k not in unlimited}, limit.max_rows)
            taken.update({key: available[key] for key in unlimited})
        else:
            taken = available
        # The log ends seen now are part of the batch's offsets (written to Spark's offset log
        # before the batch runs), so a replayed batch gets the same lags as the original.
        offsets = {key: starts[key] + taken[key] for key in ends}
        offsets.update({key + _LATEST: max(latest[key], starts[key]) for key in ends})
        offsets.update({key + _FROM: position for key, position in resets.items()})
        offsets.update(self._logChains(offsets))
        offsets.update(ids)
        if self._heartbeat is not None and self._availableNowTargets is None:
            now = time.time_ns() // 1_000_000  # a new batch every trigger (or N ms), data or not
            offsets[_HEARTBEAT] = now - now % self._heartbeat if self._heartbeat else now
        mark("source.latestOffset.end", records=sum(taken.values()))
        return offsets

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        """One range per topic-partition, empty ranges included (each yields its marker row);
        with ``layout=chunks``, a range of more than :data:`SPLIT_OFFSETS` offsets as that many
        consecutive parts of about equal size, the last one yielding the marker; with option
        ``readTasks``, packed into at most that many Spark partitions (:func:`packRanges`)."""
        mark("source.partitions")
        ranges = []
        for topic, partition in self._partitions:
            key = _offsetKey(topic, partition)
            first = end.get(key + _FROM, start.get(key, 0))
            last = end.get(key, first)
            lag = max(0, end.get(key + _LATEST, last) - last)
            parts = max(1, -(-(last - first) // SPLIT_OFFSETS)) if self._layout == "chunks" else 1
            bounds = [first + (last - first) * i // parts for i in range(parts)] + [last]
            ranges += [TopicPartitionRange(topic, partition, a, b, lag, b == last)
                       for a, b in zip(bounds, bounds[1:])]
        return ranges if self._readTasks is None else packRanges(ranges, self._readTasks)

    def _readBatches(self, partition: TopicPartitionRange) -> Iterator[pa.Table]:
        """The range's records as ``READ_SCHEMA`` tables; a start deleted by retention meanwhile
        follows the reset policy (``none``: the error)."""
        try:
            yield from self._topics.readBatches(partition.topic, partition.partition, partition.start, partition.end)
        except OffsetOutOfRangeException:
            if self._policy(partition.topic) == "none":
                raise
            beginning = self._topics.beginningOffsets(partition.topic)[partition.partition]
            log.warning("Offsets %d..%d of %s-%d were deleted before they were read; reading continues at %d "
                        "(auto.offset.reset=%s)", partition.start, beginning - 1, partition.topic, partition.partition,
                        beginning, self._policy(partition.topic))
            yield from self._topics.readBatches(partition.topic, partition.partition, beginning, partition.end)

    def read(self, partition: TopicPartitionRange) -> Iterator[pa.RecordBatch]:
        """The data rows (or chunks) of ``partition`` in offset order, then its marker row (of
        each of its ranges in turn, for :class:`TopicPartitionRanges`)."""
        if isinstance(partition, TopicPartitionRanges):
            for part in partition.ranges:
                yield from self.read(part)
            return
        if _timeline.PATH is not None:
            mark("source.read", batch=_timeline.batchOfTask(), partition=partition.partition,
                 records=partition.end - partition.start)
        if self._layout == "refs":
            if partition.end > partition.start:
                yield self._chunkBatch(partition, partition.start, None, None, partition.end)
            yield self._chunkBatch(partition, -1, None, partition.lag, partition.end)
            return
        if self._layout == "chunks":
            yield from self._readChunks(partition)
            return
        for table in self._readBatches(partition):
            for batch in table.to_batches(max_chunksize=_MAX_BATCH_ROWS):
                n = batch.num_rows
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.repeat(pa.scalar(partition.topic, pa.string()), n),
                        pa.repeat(pa.scalar(partition.partition, pa.int32()), n),
                        batch.column("offset"),
                        batch.column("timestamp"),
                        batch.column("key"),
                        batch.column("value"),
                        batch.column("headers"),
                        pa.nulls(n, pa.int64()),
                    ],
                    schema=_SOURCE_ARROW_SCHEMA,
                )
        yield pa.RecordBatch.from_pylist(
            [
                {"topic": partition.topic, "partition": partition.partition, "offset": -1, "timestamp": 0,
                 "key": None, "value": None, "headers": None, "lag": partition.lag}
            ],
            schema=_SOURCE_ARROW_SCHEMA,
        )

    def _readChunks(self, partition: TopicPartitionRange) -> Iterator[pa.RecordBatch]:
        """One batch per chunk (a batch of many chunks could pass Arrow's 2 GB per binary array),
        then the marker row."""
        for table in self._readBatches(partition):
            for chunk in chunkTable(table):
                yield self._chunkBatch(partition, chunk.column("offset")[0].as_py(), encodeChunk(chunk), None, None)
        if partition.marker:
            yield self._chunkBatch(partition, -1, None, partition.lag, partition.end)

    @staticmethod
    def _chunkBatch(partition: TopicPartitionRange, offset: int, records: bytes | None, lag: int | None,
                    end: int | None) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(
            [pa.array([partition.topic], pa.string()), pa.array([partition.partition], pa.int32()),
             pa.array([offset], pa.int64()), pa.array([records], pa.binary()), pa.array([lag], pa.int64()),
             pa.array([end], pa.int64())],
            schema=_SOURCE_CHUNK_ARROW_SCHEMA,
        )

    def commit(self, end: dict) -> None:
        """Nothing to do: topics are retained (Kafka: the sink commits the group's offsets)."""
        mark("source.commit")


def _fairShares(available: dict[str, int], budget: int) -> dict[str, int]:
    """Split ``budget`` records over partitions: equal shares, capped by what each has available.

    Shares that a partition cannot use are handed out again among the others; an indivisible
    remainder goes one record each to the first partitions in key order.
    """
    taken = dict.fromkeys(available, 0)
    pending = [key for key in available if available[key] > 0]
    while budget > 0 and pending:
        share = max(1, budget // len(pending))
        stillPending = []
        for key in pending:
            if budget == 0:
                break
            grant = min(share, available[key] - taken[key], budget)
            taken[key] += grant
            budget -= grant
            if taken[key] < available[key]:
                stillPending.append(key)
        pending = stillPending
    return taken


# ---------------------------------------------------------------------- sink


@dataclass
class LocalTopicsCommitMessage(WriterCommitMessage):
    """What one Spark task staged.

    Attributes
    ----------
    files : list of (topic, partition, staged path, rows, checksums)
        One staged segment per topic-partition, in order of first appearance in the task, with
        its record batches' checksums (``kspark.topics._local.segmentChecksums``).
    sparkPartitionId : int
        The Spark partition the task wrote.
    checkpointId : str
        Spark's query id: created with the checkpoint, the same on every restart from it.
    """

    files: list[tuple[str, int, str, int, list[int]]]
    sparkPartitionId: int
    checkpointId: str = ""


class LocalTopicsStreamWriter(DataSourceStreamArrowWriter):
    """Exactly-once micro-batch sink into ``LocalTopics``.

    Tasks stage one segment per topic-partition in the producer's staging directory; the driver
    commits the staged segments with ``appendFile(..., producer="<producer>/<checkpoint id>",
    sequence=batchId, index=i)``, where ``i`` counts the segments of a topic-partition within
    the batch in Spark-partition order and the checkpoint id is Spark's query id, so a replayed
    batch appends nothing twice (given the replay produces the same rows), and a new checkpoint
    (a reset ``state.dir``) never takes the appends of an old one for its own. After the
    appends, the driver deletes what else is staged for batches up to this one: files of task
    attempts that were killed or retried, and of older checkpoints.

    Parameters
    ----------
    options : mapping of str to str
        ``root`` and ``producer``.
    schema : StructType
        The input schema; must have the columns of :data:`SINK_SCHEMA` with their types.

    Raises
    ------
    ValueError
        If a required option is missing or a column is missing or has another type.
    """

    def __init__(self, options, schema: StructType) -> None:
        self._root = _option(options, "root")
        self._producer = _option(options, "producer")
        self._chunks = _sinkLayout(options) == "chunks"
        _checkSinkSchema(schema, SINK_CHUNK_SCHEMA if self._chunks else SINK_SCHEMA)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LocalTopicsCommitMessage:
        """Stage the records of this task per topic-partition (executor side)."""
        context = TaskContext.get()
        sparkPartitionId = context.partitionId()
        batchId = int(context.getLocalProperty("streaming.sql.batchId") or -1)
        checkpointId = context.getLocalProperty("sql.streaming.queryId") or ""
        topics = LocalTopics(self._root)
        stagingDir = topics.stagingDir(self._producer)
        staged: dict[tuple[str, int], tuple[str, pa.ipc.RecordBatchFileWriter]] = {}
        rows: dict[tuple[str, int], int] = {}
        files: list = []  # (topic, partition, path, rows, checksums), or a key of staged: its file, once closed
        try:
            for batch in iterator:
                for topic, partition, part in _recordParts(batch, self._chunks, {}):
                    key = (topic, partition)
                    if isinstance(part, StagedSegment):  # written by the task itself (SegmentStager)
                        if key in staged:
                            raise ValueError(f"The sink got both records and staged segments for {topic}-{partition} "
                                             "in one task; their order would be lost")
                        files.append((topic, partition, part.pathIn(stagingDir), part.rows, part.checksums))
                        continue
                    if key not in staged:
                        if any(type(f) is tuple and f[:2] == key for f in files):
                            raise ValueError(f"The sink got both staged segments and records for {topic}-{partition} "
                                             "in one task; their order would be lost")
                        files.append(key)
                        if not 0 <= partition < (topics.partitionsFor(topic) or 0):
                            raise UnknownTopicOrPartitionException(
                                f"This server does not host this topic-partition: {topic}-{partition}")
                        path = os.path.join(stagingDir, _stagedName(batchId, checkpointId))
                        staged[key] = (path, pa.ipc.new_file(path, RECORD_SCHEMA))
                        rows[key] = 0
                    try:
                        part = part.select(RECORD_SCHEMA.names).cast(RECORD_SCHEMA)
                    except (pa.ArrowInvalid, ValueError, KeyError) as e:
                        raise ValueError(f"Records for {topic}-{partition} do not fit {RECORD_SCHEMA}: {e}") from e
                    staged[key][1].write_table(part, max_chunksize=SEGMENT_BATCH_ROWS)
                    rows[key] += part.num_rows
        except BaseException:
            for path, writer in staged.values():
                writer.close()
                os.remove(path)
            raise
        for (topic, partition), (path, writer) in staged.items():
            writer.close()
            _fsyncFile(path)
            files[files.index((topic, partition))] = (topic, partition, path, rows[(topic, partition)], segmentChecksums(path))
        return LocalTopicsCommitMessage(files=files, sparkPartitionId=sparkPartitionId, checkpointId=checkpointId)

    def commit(self, messages: list[LocalTopicsCommitMessage | None], batchId: int) -> None:
        """Append the staged segments exactly once, then delete what else is staged (driver side)."""
        topics = LocalTopics(self._root)
        done = [m for m in messages if m is not None]
        if not done:
            return
        index: dict[tuple[str, int], int] = {}
        checkpointId = done[0].checkpointId
        for message in sorted(done, key=lambda m: m.sparkPartitionId):
            for topic, partition, path, _, checksums in message.files:
                i = index.get((topic, partition), 0)
                topics.appendFile(topic, partition, path, producer=f"{self._producer}/{checkpointId}", sequence=batchId,
                                  index=i, checksums=checksums)
                index[(topic, partition)] = i + 1
        self._removeStaged(topics, batchId, checkpointId)

    def _removeStaged(self, topics: LocalTopics, batchId: int, checkpointId: str) -> None:
        """Delete staged files of batches up to ``batchId`` (killed or retried task attempts; the
        committed ones were moved into the logs) and of other checkpoints. Later batches' files
        stay: only a zombie attempt of this batch could be writing, and it is not one of them."""
        stagingDir = topics.stagingDir(self._producer)
        for name in os.listdir(stagingDir):
            batch, _, rest = name.partition(".")
            checkpoint = rest.partition(".")[0]
            if checkpoint != checkpointId or (batch.lstrip("-").isdigit() and int(batch) <= batchId):
                try:
                    os.remove(os.path.join(stagingDir, name))
                except FileNotFoundError:
                    pass

    def abort(self, messages: list[LocalTopicsCommitMessage | None], batchId: int) -> None:
        """Delete the segments staged by the tasks that reported back."""
        for message in messages:
            if message is not None:
                for _, _, path, _, _ in message.files:
                    try:
                        os.remove(path)
                    except FileNotFoundError:
                        pass


def _stagedName(batchId: int, checkpointId: str) -> str:
    """``<batch id>.<checkpoint id>.<random>.arrow``: what ``_removeStaged`` parses."""
    return f"{batchId:020d}.{checkpointId}.{uuid.uuid4().hex}.arrow"


@dataclass(frozen=True)
class StagedSegment:
    """A segment a Spark task staged for the local-topics sink (a sink row's ``staged`` JSON).

    ``file`` is the name inside the producer's staging directory (never a path: the sink
    resolves it in its own staging directory), ``rows`` its record count, ``checksums`` its
    record batches' CRC-32s (``segmentChecksums``)."""

    file: str
    rows: int
    checksums: list

    def encoded(self) -> str:
        return json.dumps({"file": self.file, "rows": self.rows, "checksums": self.checksums})

    @classmethod
    def decode(cls, text: str, topic: str, partition: int) -> "StagedSegment":
        try:
            d = json.loads(text)
            segment = cls(str(d["file"]), int(d["rows"]), [int(c) for c in d["checksums"]])
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"Bad staged-segment description for {topic}-{partition}: {text!r}") from e
        if os.path.basename(segment.file) != segment.file or segment.file in ("", ".", ".."):
            raise ValueError(f"A staged segment for {topic}-{partition} names {segment.file!r}, not a file of the "
                             "staging directory")
        return segment

    def pathIn(self, stagingDir: str) -> str:
        path = os.path.join(stagingDir, self.file)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"The staged segment {path} is missing (deleted before its batch committed?)")
        return path


class SegmentStager:
    """Stages a Spark task's records for the local-topics sink as the task produces them: one
    segment per topic-partition in ``producer``'s staging directory, named for the running Spark
    task's micro-batch and query. :meth:`write` appends records (``RECORD_SCHEMA`` tables, in
    order per topic-partition); :meth:`close` closes, syncs and check-sums the segments. This is
    what :class:`LocalTopicsStreamWriter` does with the records it receives, done by the task
    that produced them, so the records do not travel through Spark to the sink (the sink row
    carries :meth:`StagedSegment.encoded`), and a task need not hold a whole batch's output in
    memory. :meth:`abort` deletes what was staged (a failed task; the sink's commit also deletes
    staged files of task attempts that did not commit).
    """

    def __init__(self, topics: LocalTopics, producer: str) -> None:
        context = TaskContext.get()
        self._batchId = int(context.getLocalProperty("streaming.sql.batchId") or -1) if context else -1
        self._checkpointId = (context.getLocalProperty("sql.streaming.queryId") or "") if context else ""
        self._topics, self._dir = topics, topics.stagingDir(producer)
        self._open: dict[tuple[str, int], list] = {}  # (topic, partition) -> [path, writer, rows], in order of first write

    def write(self, topic: str, partition: int, table: pa.Table) -> None:
        """Append ``table`` (``RECORD_SCHEMA`` columns) to the segment of ``topic``-``partition``.

        Raises
        ------
        UnknownTopicOrPartitionException
            If ``topic`` has no partition ``partition``.
        """
        entry = self._open.get((topic, partition))
        if entry is None:
            if not 0 <= partition < (self._topics.partitionsFor(topic) or 0):
                raise UnknownTopicOrPartitionException(
                    f"This server does not host this topic-partition: {topic}-{partition}")
            path = os.path.join(self._dir, _stagedName(self._batchId, self._checkpointId))
            entry = self._open[(topic, partition)] = [path, pa.ipc.new_file(path, RECORD_SCHEMA), 0]
        entry[1].write_table(table.cast(RECORD_SCHEMA), max_chunksize=SEGMENT_BATCH_ROWS)
        entry[2] += table.num_rows

    def close(self) -> list[tuple[str, int, "StagedSegment"]]:
        """(topic, partition, segment) of every topic-partition written, in order of first write;
        the segments are closed and synced."""
        out = []
        for (topic, partition), (path, writer, rows) in self._open.items():
            writer.close()
            _fsyncFile(path)
            out.append((topic, partition, StagedSegment(os.path.basename(path), rows, segmentChecksums(path))))
        self._open = {}
        return out

    def abort(self) -> None:
        """Delete the segments staged so far."""
        for path, writer, _ in self._open.values():
            try:
                writer.close()
            finally:
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass
        self._open = {}


def _checkSinkSchema(schema: StructType, expected: StructType) -> None:
    types = {f.name: f.dataType for f in schema.fields}
    wrong = [f"{f.name} {f.dataType.simpleString()}" for f in expected.fields
             if f.name not in _OPTIONAL_SINK_COLUMNS and types.get(f.name) != f.dataType]
    if wrong:
        raise ValueError(
            f"The kspark-topics sink needs the columns {expected.simpleString()}; "
            f"missing or mistyped: {', '.join(wrong)} (got {schema.simpleString()})"
        )


def _distinctPairs(records: pa.Table) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of ``records`` in order of first appearance."""
    rowNumbers = pa.array(np.arange(records.num_rows, dtype=np.int64))
    pairs = (
        records.select(["topic", "partition"])
        .append_column("row", rowNumbers)
        .group_by(["topic", "partition"])
        .aggregate([("row", "min")])
        .sort_by("row_min")
    )
    return list(zip(pairs.column("topic").to_pylist(), pairs.column("partition").to_pylist()))


def _recordParts(batch: pa.RecordBatch, chunks: bool, positions: dict[tuple[str, int], int],
                 partitionTimes: dict[tuple[str, int], int] | None = None
                 ) -> Iterator[tuple[str, int, pa.Table | StagedSegment]]:
    """The records of one sink batch as ``(topic, partition, records)`` in order (with
    ``layout=chunks``, a ``StagedSegment`` in place of the records of a ``staged`` row); the
    input positions of its metrics rows are added to ``positions`` (their partition times to
    ``partitionTimes``)."""
    isMetric = pc.is_null(batch.column("topic"))
    if chunks:
        # Chunk rows hold large binaries: read them row by row instead of filtering the batch
        # (a filter copies every chunk's bytes).
        topics = batch.column("topic").to_pylist()
        partitionColumn = batch.column("partition")
        if "positions" in batch.schema.names:
            for text, isMetricRow in zip(batch.column("positions").to_pylist(), isMetric.to_pylist()):
                if isMetricRow:
                    _addPositions(positions, text, partitionTimes)
        stagedColumn = batch.column("staged") if "staged" in batch.schema.names else None
        records = batch.column("records")
        for i, topic in enumerate(topics):
            if topic is None:
                continue
            partition = partitionColumn[i].as_py()
            if partition is None:
                raise ValueError("A kspark-topics sink row has a topic but a null partition")
            staged = stagedColumn[i].as_py() if stagedColumn is not None else None
            if staged is not None:
                yield topic, partition, StagedSegment.decode(staged, topic, partition)
            elif records[i].is_valid:
                yield topic, partition, decodeChunk(records[i].as_buffer())
        return
    if "positions" in batch.schema.names:
        for text in batch.filter(isMetric).column("positions").to_pylist():
            _addPositions(positions, text, partitionTimes)
    records = pa.Table.from_batches([batch.filter(pc.invert(isMetric))])
    if records.num_rows == 0:
        return
    if records.column("partition").null_count:
        raise ValueError("A kspark-topics sink row has a topic but a null partition")
    yield from ((t, p, records.filter(pc.and_(pc.equal(records.column("topic"), t),
                                              pc.equal(records.column("partition"), p))))
                for t, p in _distinctPairs(records))


def _addPositions(positions: dict[tuple[str, int], int], text: str | None,
                  partitionTimes: dict[tuple[str, int], int] | None = None) -> None:
    """Add a metrics row's positions: ``{"<topic>/<partition>": next offset}``, or ``[next offset,
    partition time]`` (the task's partition time, committed in Kafka Streams' offset metadata)."""
    for key, position in json.loads(text or "{}").items():
        topic, partition = key.rsplit("/", 1)
        if isinstance(position, list):
            position, partitionTime = position
            if partitionTimes is not None:
                partitionTimes[(topic, int(partition))] = partitionTime
        positions[(topic, int(partition))] = position


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one Spark task wrote to Kafka: ``written`` records (0 when an earlier attempt had
    already committed the batch)."""

    written: int
    sparkPartitionId: int


class KafkaTopicsStreamWriter(DataSourceStreamArrowWriter):
    """Micro-batch sink into Kafka topics, with Kafka's ``processing.guarantee``.

    Each Spark task writes its own records from the executor with
    :class:`kspark.topics._kafka.KafkaSinkWriter`: ``at_least_once`` through an idempotent
    producer, ``exactly_once_v2`` in one Kafka transaction per task and batch that also commits
    the task's input positions (its metrics rows' ``positions``) to the consumer group
    ``groupId``, marked with the checkpoint (Spark's query id) and batch id, so a batch Spark
    replays after a crash is not written twice.

    Parameters
    ----------
    options : mapping of str to str
        The Kafka backend's options (``kafka.producer``, ``kafka.consumer``), ``guarantee``
        (``at_least_once`` or ``exactly_once_v2``), ``groupId``, ``transactionalIdPrefix`` and
        ``ownerClientId`` (the client id of the driver's group member: a writer fenced while the
        group has another member fails, :meth:`KafkaSinkWriter._failIfFencedByAnotherInstance`).
    schema : StructType
        The input schema: :data:`SINK_CHUNK_SCHEMA` (``layout=chunks``) or :data:`SINK_SCHEMA`.

    Raises
    ------
    ValueError
        If a required option is missing or a column is missing or mistyped.
    """

    def __init__(self, options, schema: StructType) -> None:
        self._producerConfig = _jsonOption(options, "kafka.producer")
        self._consumerConfig = _jsonOption(options, "kafka.consumer")
        guarantee = (options.get("guarantee") or "at_least_once").lower()
        if guarantee not in ("at_least_once", "exactly_once_v2"):
            raise ValueError(f"Option 'guarantee' must be at_least_once or exactly_once_v2, got {guarantee!r}")
        self._exactlyOnce = guarantee == "exactly_once_v2"
        self._groupId = _option(options, "groupId")
        self._prefix = _option(options, "transactionalIdPrefix")
        self._owner = options.get("ownerClientId") or None
        self._chunks = _sinkLayout(options) == "chunks"
        _checkSinkSchema(schema, SINK_CHUNK_SCHEMA if self._chunks else SINK_SCHEMA)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        """Produce this task's records (executor side); see the class doc."""
        from ..topics._kafka import KafkaSinkWriter

        context = TaskContext.get()
        batchId = int(context.getLocalProperty("streaming.sql.batchId") or -1)
        checkpointId = context.getLocalProperty("sql.streaming.queryId") or ""
        positions: dict[tuple[str, int], int] = {}
        partitionTimes: dict[tuple[str, int], int] = {}
        mark("sink.write", batch=batchId, writer=context.partitionId())
        sink = KafkaSinkWriter(self._producerConfig, self._consumerConfig, self._groupId, self._exactlyOnce, self._prefix,
                               self._owner)
        # the transactional producer is made (if this worker has no current one) while the
        # batch's tasks still process: the first input arrives only when they are done
        sink.prepare(context.partitionId())
        mark("sink.prepared", batch=batchId, writer=context.partitionId())
        # the positions arrive on the metrics rows, which may come after the records: collect first
        parts = [part for batch in iterator for part in _recordParts(batch, self._chunks, positions, partitionTimes)]
        if any(isinstance(part, StagedSegment) for _, _, part in parts):
            raise ValueError("The Kafka sink got staged segments, which only the local-topics sink can commit")
        if _timeline.PATH is not None:
            mark("sink.input", batch=batchId, writer=context.partitionId(), records=sum(len(p) for _, _, p in parts))
            sink.onStep = lambda name: mark("sink." + name, batch=batchId, writer=context.partitionId())
        written = sink.write(context.partitionId(), checkpointId, batchId,
                             [(t, p, part.select(RECORD_SCHEMA.names)) for t, p, part in parts], positions,
                             partitionTimes)
        return KafkaCommitMessage(written, context.partitionId())

    def commit(self, messages: list[KafkaCommitMessage | None], batchId: int) -> None:
        """Nothing to do: the records are in Kafka already."""
        mark("sink.commit", batch=batchId)

    def abort(self, messages: list[KafkaCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: a task's transaction committed whole or not at all (at_least_once:
        what was written stays, and the replayed batch writes it again)."""


def registerDataSource(spark) -> None:
    """Register :class:`TopicsDataSource` as ``"kspark-topics"`` with ``spark`` (idempotent)."""
    spark.dataSource.register(TopicsDataSource)
