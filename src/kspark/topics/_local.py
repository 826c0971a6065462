"""Local, file-backed, partitioned topic logs: kspark's embedded default "Kafka".

Layout under ``root``::

    <root>/<topic>/topic.json                      {"name": ..., "partitions": n}
    <root>/<topic>/<partition>/manifest.jsonl      one JSON line per committed segment
    <root>/<topic>/<partition>/<start:020d>.arrow  Arrow IPC file with ``RECORD_SCHEMA`` rows
    <root>/<topic>/<partition>/.lock               flock'd by appenders
    <root>/<topic>/<partition>/_staging/           segments staged by writers (``appendFile``)

Offsets are implicit and dense per partition, starting at 0: the rows of a segment whose
manifest line says ``start``/``count`` have offsets ``start .. start + count - 1``. Only
newline-terminated manifest lines are trusted, so a crash at any point of an append leaves
either the old or the new log, never a partial one.
"""

from __future__ import annotations

import bisect
import fcntl
import json
import operator
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa

from ._api import READ_SCHEMA, RECORD_SCHEMA, Topics

__all__ = ["RECORD_SCHEMA", "LocalTopics", "TopicExistsException", "UnknownTopicOrPartitionException"]

_MAX_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
_TOPIC_FILE = "topic.json"
_MANIFEST = "manifest.jsonl"
_LOCK = ".lock"
_STAGING = "_staging"
# Topic directories being created or deleted carry '~', which no legal topic name contains.
_TRANSIENT_MARK = "~"


class TopicExistsException(Exception):
    """The topic already exists (Kafka ``TopicExistsException``)."""


class UnknownTopicOrPartitionException(Exception):
    """The topic or partition does not exist (Kafka ``UnknownTopicOrPartitionException``)."""


def _validateTopicName(name: str) -> None:
    """Raise ``ValueError`` with Kafka's ``Topic.validate`` wording if ``name`` is illegal."""
    if not name:
        raise ValueError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise ValueError('Topic name cannot be "." or ".."')
    if len(name) > _MAX_NAME_LENGTH:
        raise ValueError(
            f"Topic name is illegal, it can't be longer than {_MAX_NAME_LENGTH} characters, topic name: {name}"
        )
    if not _LEGAL_NAME.fullmatch(name):
        raise ValueError(
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )


def _isLegalTopicName(name: str) -> bool:
    try:
        _validateTopicName(name)
    except ValueError:
        return False
    return True


def _unknownPartition(name: str, partition: int) -> UnknownTopicOrPartitionException:
    return UnknownTopicOrPartitionException(f"This server does not host this topic-partition: {name}-{partition}")


def _unknownTopic(name: str) -> UnknownTopicOrPartitionException:
    return UnknownTopicOrPartitionException(f"This server does not host this topic-partition: {name}")


def _segmentName(start: int) -> str:
    return f"{start:020d}.arrow"


def _fsyncDir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsyncFile(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _committedLines(data: bytes) -> list[bytes]:
    """The newline-terminated lines of a manifest; a torn last line is not committed."""
    return data.split(b"\n")[:-1]


class LocalTopics(Topics):
    """Partitioned topic logs stored as Arrow IPC segments under a local directory.

    Safe for concurrent use by several processes on one machine: appends to a partition are
    serialized with an exclusive ``fcntl.flock``; readers take no lock.

    Parameters
    ----------
    root : str or os.PathLike
        Directory holding the topics; created if missing.
    """

    def __init__(self, root: str | os.PathLike) -> None:
        self._root = Path(root)
        self._root.mkdir(parents=True, exist_ok=True)

    @property
    def root(self) -> Path:
        """The directory holding the topics."""
        return self._root

    # ------------------------------------------------------------------ admin

    def createTopic(self, name: str, numPartitions: int, *, ifNotExists: bool = False,
                    config: dict[str, str] | None = None, replicationFactor: int = -1) -> None:
        """Create topic ``name`` with ``numPartitions`` empty partitions.

        Parameters
        ----------
        name : str
            Topic name: ASCII alphanumerics, '.', '_' and '-', at most 249 characters.
        numPartitions : int
            Number of partitions, at least 1.
        ifNotExists : bool, default False
            Make creating an existing topic with the same partition count a no-op.
        config : dict, optional
            Topic configs; only ``message.timestamp.type`` (``CreateTime``, the default, keeps the
            producer's timestamp; ``LogAppendTime`` replaces it by the time the log appended the
            record, in ms) is supported.
        replicationFactor : int, default -1
            Ignored: a local log has one copy.

        Raises
        ------
        ValueError
            If the name is illegal (Kafka's wording) or ``numPartitions`` < 1.
        TopicExistsException
            If the topic exists, unless ``ifNotExists`` and its partition count is ``numPartitions``.
        """
        _validateTopicName(name)
        config = dict(config or {})
        unknown = set(config) - {"message.timestamp.type"}
        if unknown or config.get("message.timestamp.type", "CreateTime") not in ("CreateTime", "LogAppendTime"):
            raise ValueError(f"Unsupported topic config for {name}: {config} "
                             "(only message.timestamp.type = CreateTime | LogAppendTime)")
        if isinstance(numPartitions, bool) or not isinstance(numPartitions, int) or numPartitions < 1:
            raise ValueError(f"Number of partitions must be at least 1, got {numPartitions!r}")
        if self.partitionsFor(name) is None:
            # Build the topic aside, then publish it with one atomic rename.
            tmp = self._root / f"{_TRANSIENT_MARK}creating{_TRANSIENT_MARK}{uuid.uuid4().hex}"
            tmp.mkdir()
            for partition in range(numPartitions):
                (tmp / str(partition)).mkdir()
            (tmp / _TOPIC_FILE).write_text(json.dumps({"name": name, "partitions": numPartitions, "config": config}))
            _fsyncFile(tmp / _TOPIC_FILE)
            try:
                os.rename(tmp, self._root / name)
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)
                if self.partitionsFor(name) is None:  # not a concurrent creator winning the race
                    raise
            else:
                _fsyncDir(self._root)
                return
        existing = self.partitionsFor(name)
        if ifNotExists and existing == numPartitions:
            return
        detail = "" if existing == numPartitions else f" It has {existing} partitions, not {numPartitions}."
        raise TopicExistsException(f"Topic '{name}' already exists.{detail}")

    def deleteTopic(self, name: str) -> None:
        """Delete topic ``name`` and all its data.

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic does not exist.
        """
        if self.partitionsFor(name) is None:
            raise _unknownTopic(name)
        doomed = self._root / f"{_TRANSIENT_MARK}deleting{_TRANSIENT_MARK}{uuid.uuid4().hex}"
        try:
            os.rename(self._root / name, doomed)
        except FileNotFoundError:  # deleted concurrently
            raise _unknownTopic(name) from None
        shutil.rmtree(doomed)

    def listTopics(self) -> list[str]:
        """Names of the existing topics, sorted."""
        return sorted(
            entry.name
            for entry in os.scandir(self._root)
            if _isLegalTopicName(entry.name) and os.path.isfile(os.path.join(entry.path, _TOPIC_FILE))
        )

    def partitionsFor(self, name: str) -> int | None:
        """Number of partitions of topic ``name``, or None if it does not exist."""
        if not _isLegalTopicName(name):
            return None
        try:
            meta = json.loads((self._root / name / _TOPIC_FILE).read_text())
        except FileNotFoundError:
            return None
        return int(meta["partitions"])

    # ------------------------------------------------------------------ offsets

    def timestampType(self, name: str) -> str:
        """``"CreateTime"`` or ``"LogAppendTime"`` (topic config ``message.timestamp.type``)."""
        try:
            meta = json.loads((self._root / name / _TOPIC_FILE).read_text())
        except FileNotFoundError:
            raise _unknownTopic(name) from None
        return meta.get("config", {}).get("message.timestamp.type", "CreateTime")

    def endOffset(self, name: str, partition: int) -> int:
        """The offset the next record appended to ``name``-``partition`` gets (0 when empty).

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic or partition does not exist.
        """
        manifest = self._partitionDir(name, partition) / _MANIFEST
        try:
            with open(manifest, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                # The last committed line is short; read a tail that holds it, else the whole file.
                tail = min(size, 4096)
                f.seek(size - tail)
                lines = _committedLines(f.read(tail))
                if tail < size and len(lines) < 2:
                    f.seek(0)
                    lines = _committedLines(f.read())
        except FileNotFoundError:
            return 0
        if not lines:
            return 0
        last = json.loads(lines[-1])
        return last["start"] + last["count"]

    def endOffsets(self, name: str) -> dict[int, int]:
        """End offset of every partition of ``name``: partition -> next offset to be written.

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic does not exist.
        """
        numPartitions = self.partitionsFor(name)
        if numPartitions is None:
            raise _unknownTopic(name)
        return {partition: self.endOffset(name, partition) for partition in range(numPartitions)}

    def beginningOffsets(self, name: str) -> dict[int, int]:
        """Partition -> 0 for every partition of ``name``: a local log keeps every record.

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic does not exist.
        """
        numPartitions = self.partitionsFor(name)
        if numPartitions is None:
            raise _unknownTopic(name)
        return dict.fromkeys(range(numPartitions), 0)

    def topicId(self, name: str) -> str | None:
        """None: local topics have no id yet."""
        return None

    # ------------------------------------------------------------------ writes

    def stagingDir(self, name: str, partition: int) -> str:
        """Directory (created) for segment files to be committed with :meth:`appendFile`.

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic or partition does not exist.
        """
        staging = self._partitionDir(name, partition) / _STAGING
        staging.mkdir(exist_ok=True)
        return str(staging)

    def append(
        self,
        name: str,
        partition: int,
        table: pa.Table | pa.RecordBatch,
        *,
        producer: str | None = None,
        sequence: int | None = None,
        index: int = 0,
    ) -> int:
        """Append the rows of ``table``, in order, to ``name``-``partition`` as one segment.

        Parameters
        ----------
        name, partition
            The topic-partition.
        table : pyarrow.Table or pyarrow.RecordBatch
            Exactly the columns of ``RECORD_SCHEMA`` (any order, castable types;
            ``timestamp`` in ms, never null).
        producer, sequence, index
            Idempotent-producer id of this append. When ``producer`` and ``sequence`` are given
            and ``(producer, sequence, index)`` was already appended to this partition, nothing
            is written and the base offset assigned then is returned.

        Returns
        -------
        int
            Offset of the first appended row (the end offset when ``table`` is empty, in which
            case nothing is written).

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic or partition does not exist.
        ValueError
            If the columns do not match ``RECORD_SCHEMA``, naming the topic-partition.
        """
        partDir = self._partitionDir(name, partition)
        table = self._toRecordTable(name, partition, table)

        def writeSegment(target: Path) -> None:
            tmp = target.with_name(f".{target.name}.tmp")
            with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, RECORD_SCHEMA) as writer:
                writer.write_table(table)
            _fsyncFile(tmp)
            os.replace(tmp, target)

        return self._commitSegment(partDir, table.num_rows, writeSegment, (producer, sequence, index))

    def appendFile(
        self,
        name: str,
        partition: int,
        path: str | os.PathLike,
        *,
        producer: str | None = None,
        sequence: int | None = None,
        index: int = 0,
    ) -> int:
        """Append an already-written Arrow IPC file as one segment of ``name``-``partition``.

        The file is moved into the log (``os.replace``), so it must be on the same file system,
        e.g. in :meth:`stagingDir`. Idempotent like :meth:`append`: when
        ``(producer, sequence, index)`` was already appended, ``path`` is deleted and the base
        offset assigned then is returned. An empty file is deleted and nothing is written.

        Parameters
        ----------
        name, partition
            The topic-partition.
        path : str or os.PathLike
            Arrow IPC file (random-access format) with exactly ``RECORD_SCHEMA``.
        producer, sequence, index
            Idempotent-producer id of this append, as in :meth:`append`.

        Returns
        -------
        int
            Offset of the file's first row.

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic or partition does not exist.
        ValueError
            If the file's schema is not ``RECORD_SCHEMA``.
        """
        partDir = self._partitionDir(name, partition)
        path = Path(path)
        with pa.memory_map(str(path)) as source:
            reader = pa.ipc.open_file(source)
            if not reader.schema.equals(RECORD_SCHEMA):
                raise ValueError(
                    f"Segment file {path} for {name}-{partition} has schema\n{reader.schema}\n"
                    f"but topics store\n{RECORD_SCHEMA}"
                )
            count = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
        _fsyncFile(path)

        def moveSegment(target: Path) -> None:
            os.replace(path, target)

        base = self._commitSegment(partDir, count, moveSegment, (producer, sequence, index))
        path.unlink(missing_ok=True)  # left over when nothing was written
        return base

    def produce(
        self,
        name: str,
        records: Iterable[tuple],
        *,
        partitioner: Callable[[bytes | None, int], int],
    ) -> dict[int, int]:
        """Append ``(key, value, timestamp_ms[, headers])`` records, one segment per partition written.

        Parameters
        ----------
        name : str
            Topic to write to.
        records : iterable of (bytes or None, bytes or None, int[, tuple])
            Serialized key, serialized value, timestamp (ms since the epoch) and optionally the
            headers, a tuple of ``(str, bytes or None)`` pairs.
        partitioner : callable
            ``partitioner(keyBytes, numPartitions) -> partition``; called for every record,
            also with a ``None`` key.

        Returns
        -------
        dict of int to int
            Partition -> number of records appended, for the partitions written to (ascending).

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic does not exist.
        ValueError
            If the partitioner returns a partition outside ``[0, numPartitions)``.
        """
        numPartitions = self.partitionsFor(name)
        if numPartitions is None:
            raise _unknownTopic(name)
        from ..runtime.stream_task import encodeHeaders

        columns: dict[int, tuple[list, list, list, list]] = {}
        for record in records:
            key, value, timestamp = record[:3]
            partition = partitioner(key, numPartitions)
            if not 0 <= partition < numPartitions:
                raise ValueError(f"Partitioner returned partition {partition} for topic {name} "
                                 f"with {numPartitions} partitions")
            keys, values, timestamps, headers = columns.setdefault(partition, ([], [], [], []))
            keys.append(key)
            values.append(value)
            timestamps.append(timestamp)
            headers.append(encodeHeaders(record[3]) if len(record) > 3 else None)
        counts = {}
        for partition in sorted(columns):
            keys, values, timestamps, headers = columns[partition]
            table = pa.table(
                {
                    "timestamp": pa.array(timestamps, pa.int64()),
                    "key": pa.array(keys, pa.binary()),
                    "value": pa.array(values, pa.binary()),
                    "headers": pa.array(headers, pa.binary()),
                }
            )
            self.append(name, partition, table)
            counts[partition] = len(keys)
        return counts

    # ------------------------------------------------------------------ reads

    def read(self, name: str, partition: int, start: int, end: int) -> pa.Table:
        """Rows of ``name``-``partition`` with offsets in ``[start, end)``, in offset order.

        Only the segments overlapping the range are opened (memory-mapped).

        Parameters
        ----------
        name, partition
            The topic-partition.
        start : int
            First offset, >= 0.
        end : int
            End offset (exclusive); clamped to the partition's end offset.

        Returns
        -------
        pyarrow.Table
            Columns ``offset`` (int64) followed by the ``RECORD_SCHEMA`` columns; empty when
            ``start >= end`` after clamping.

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic or partition does not exist.
        ValueError
            If ``start`` is negative.
        """
        if start < 0:
            raise ValueError(f"Offset {start} for {name}-{partition} is negative")
        partDir = self._partitionDir(name, partition)
        entries = self._readManifest(partDir)
        end = min(end, entries[-1]["start"] + entries[-1]["count"]) if entries else 0
        if start >= end:
            return READ_SCHEMA.empty_table()
        starts = [entry["start"] for entry in entries]
        first = bisect.bisect_right(starts, start) - 1
        logAppendTime = self.timestampType(name) == "LogAppendTime"
        pieces = []
        for entry in entries[first:]:
            if entry["start"] >= end:
                break
            with pa.memory_map(str(partDir / entry["segment"])) as source:
                segment = pa.ipc.open_file(source).read_all()
            lo = max(start, entry["start"]) - entry["start"]
            hi = min(end, entry["start"] + entry["count"]) - entry["start"]
            piece = segment.slice(lo, hi - lo)
            if logAppendTime:  # the log's append time replaces the producer's timestamp
                index = piece.schema.get_field_index("timestamp")
                piece = piece.set_column(index, "timestamp", pa.array(np.full(piece.num_rows, entry["appendTime"], dtype=np.int64)))
            pieces.append(piece)
        records = pa.concat_tables(pieces)
        offsets = pa.array(np.arange(start, end, dtype=np.int64))
        return pa.Table.from_arrays([offsets, *records.columns], schema=READ_SCHEMA)

    def readBatches(self, name: str, partition: int, start: int, end: int, maxRows: int = 65536) -> Iterator[pa.Table]:
        """:meth:`read` in slices of at most ``maxRows`` rows (none when the range is empty)."""
        table = self.read(name, partition, start, end)
        for offset in range(0, table.num_rows, maxRows):
            yield table.slice(offset, maxRows)

    # ------------------------------------------------------------------ internals

    def _partitionDir(self, name: str, partition: int) -> Path:
        try:
            number = operator.index(partition)  # ints of any kind (numpy's too), not "0" or 0.0
        except TypeError:
            raise _unknownPartition(name, partition) from None
        if number < 0 or not _isLegalTopicName(name):
            raise _unknownPartition(name, partition)
        partDir = self._root / name / str(number)
        if not partDir.is_dir():
            raise _unknownPartition(name, partition)
        return partDir

    @staticmethod
    def _readManifest(partDir: Path) -> list[dict]:
        try:
            data = (partDir / _MANIFEST).read_bytes()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in _committedLines(data)]

    @staticmethod
    @contextmanager
    def _locked(partDir: Path) -> Iterator[None]:
        fd = os.open(partDir / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _commitSegment(
        self,
        partDir: Path,
        count: int,
        placeSegment: Callable[[Path], None],
        producerId: tuple[str | None, int | None, int],
    ) -> int:
        """Under the partition lock: dedupe, place the segment file, then append its manifest line."""
        producer, sequence, index = producerId
        idempotent = producer is not None and sequence is not None
        with self._locked(partDir):
            manifest = partDir / _MANIFEST
            try:
                data = manifest.read_bytes()
            except FileNotFoundError:
                data = b""
            lines = _committedLines(data)
            committedSize = sum(len(line) + 1 for line in lines)
            entries = [json.loads(line) for line in lines]
            if idempotent:
                for entry in entries:
                    if (entry["producer"], entry["sequence"], entry["index"]) == (producer, sequence, index):
                        return entry["start"]
            start = entries[-1]["start"] + entries[-1]["count"] if entries else 0
            if count == 0:
                return start
            segment = _segmentName(start)
            placeSegment(partDir / segment)
            _fsyncDir(partDir)
            line = json.dumps(
                {
                    "segment": segment,
                    "start": start,
                    "count": count,
                    "producer": producer if idempotent else None,
                    "sequence": sequence if idempotent else None,
                    "index": index,
                    "appendTime": time.time_ns() // 1_000_000,
                }
            ).encode() + b"\n"
            fd = os.open(manifest, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                if committedSize != len(data):  # drop a torn line left by a crashed appender
                    os.ftruncate(fd, committedSize)
                os.lseek(fd, committedSize, os.SEEK_SET)
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            return start

    @staticmethod
    def _toRecordTable(name: str, partition: int, table: pa.Table | pa.RecordBatch) -> pa.Table:
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        expected = RECORD_SCHEMA.names
        if sorted(table.column_names) != sorted(expected):
            raise ValueError(
                f"Records for {name}-{partition} must have exactly the columns {expected}, "
                f"got {table.column_names}"
            )
        try:
            return table.select(expected).cast(RECORD_SCHEMA)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
            raise ValueError(f"Records for {name}-{partition} do not fit {RECORD_SCHEMA}: {e}") from e
