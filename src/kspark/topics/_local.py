"""Local, file-backed, partitioned topic logs: kspark's embedded default "Kafka".

Layout under ``root``::

    <root>/<topic>/topic.json                      {"name": ..., "partitions": n, "config": {...}, "id": ...}
    <root>/<topic>/<partition>/manifest.jsonl      one JSON line per committed segment
    <root>/<topic>/<partition>/<start:020d>.arrow  Arrow IPC file with ``RECORD_SCHEMA`` rows
    <root>/<topic>/<partition>/.lock               flock'd by appenders
    <root>/<topic>/<partition>/logstart            the log start offset, once records were deleted
    <root>/~staging/<producer>/                    segments staged by writers (``appendFile``)

Offsets are implicit and dense per partition, starting at 0: the rows of a segment whose
manifest line says ``start``/``count`` have offsets ``start .. start + count - 1``. An append
places its segment file, then replaces the manifest with a copy holding one more line (written,
fsynced, renamed), so a crash at any point leaves either the old or the new log, never a partial
one; a manifest that cannot be parsed, or segment files without a manifest, is an error naming the
file and line (never read as an empty partition).

Integrity: a manifest line records its segment's size in bytes and a CRC-32 of every Arrow
record batch in it (over the batch's buffers, as Kafka keeps a CRC per record batch); readers
check the size and the CRCs of the batches they read, and a mismatch, a truncated or unparsable
segment raises ``CorruptRecordException`` naming the topic-partition, offset range and file.
Segments written before checksums existed are read unchecked.

A manifest line also records a ``chain``: a CRC-32 over the previous line's chain and this
line's start, count, append time and batch CRCs. A reader keeps, with its position, the chain of
the line holding the record before it; a log rewritten below that position (restored from an
older backup, truncated and appended to again) no longer has that chain there, as a Kafka
consumer's position with its leader epoch tells an unclean truncation (KIP-320).

Records below a partition's log start offset (``logstart``: a decimal, absent = 0) were deleted
(:meth:`LocalTopics.deleteRecords`, Kafka's ``Admin.deleteRecords``): their segment files are
gone, their manifest lines stay (offsets and chains stay continuous), and reading below it raises
``OffsetOutOfRangeException``.

A topic's id (``topic.json``, a random UUID given at creation) tells a topic deleted and
created again from the old one (Kafka's topic id); topics created before ids existed have none.
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
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa

from ._api import READ_SCHEMA, RECORD_SCHEMA, CorruptRecordException, OffsetOutOfRangeException, Topics

__all__ = ["RECORD_SCHEMA", "SEGMENT_BATCH_ROWS", "LocalTopics", "TopicExistsException", "UnknownTopicOrPartitionException"]

_MAX_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
_TOPIC_FILE = "topic.json"
_MANIFEST = "manifest.jsonl"
_LOCK = ".lock"
_LOG_START = "logstart"
# Names with '~', which no legal topic name contains: topic directories being created or deleted,
# and the writers' staging area.
_TRANSIENT_MARK = "~"
_STAGING = "~staging"


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


def localPath(root: str | os.PathLike) -> str:
    """``root`` as an absolute local path: a path (relative ones against the current directory)
    or a ``file:`` URI.

    Raises
    ------
    ValueError
        For a URI of another scheme (``hdfs://``...): local topics are plain files.
    """
    text = os.fspath(root)
    scheme = re.match(r"([a-zA-Z][a-zA-Z0-9+.-]*):", text)
    if scheme and len(scheme.group(1)) > 1:  # not a Windows drive letter
        if scheme.group(1).lower() != "file":
            raise ValueError(f"Local topics need a local or mounted directory, not {text} "
                             "(kspark.topics.dir: a path or a file: URI; use bootstrap.servers for Kafka)")
        from urllib.parse import unquote, urlparse

        parsed = urlparse(text)
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"Local topics need a local path, not the remote file URI {text}")
        text = unquote(parsed.path)
    return os.path.abspath(text)


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


SEGMENT_BATCH_ROWS = 65536
"""Most records in one record batch of a segment: a read checks the CRCs of the batches it
overlaps, so a small read of a large segment reads and checks little more than it needs."""


def segmentChecksums(path: str | os.PathLike) -> list[int]:
    """CRC-32 of every record batch of the Arrow IPC file ``path``, over the batch's buffers
    (what a manifest line records in ``crc32``)."""
    with pa.memory_map(str(path)) as source:
        reader = pa.ipc.open_file(source)
        return [_batchChecksum(reader.get_batch(i)) for i in range(reader.num_record_batches)]


def _batchChecksum(batch: pa.RecordBatch) -> int:
    crc = zlib.crc32(batch.num_rows.to_bytes(8, "little"))
    for column in batch.columns:
        for buffer in column.buffers():
            if buffer is not None:
                crc = zlib.crc32(buffer, crc)
    return crc


def _chain(previous: int, start: int, count: int, appendTime: int, checksums: list[int]) -> int:
    """A manifest line's ``chain``: CRC-32 of the previous line's chain and this line's start,
    count, append time and batch CRCs, so it differs from the old one wherever a log was
    rewritten (restored from a backup, truncated and appended to again) at or before the line."""
    return zlib.crc32(f"{previous}:{start}:{count}:{appendTime}:{checksums}".encode())


def _safeName(name: str) -> str:
    """``name`` as one path component: itself when it is a legal topic name, else a digest."""
    if _isLegalTopicName(name):
        return name
    return "h" + uuid.uuid5(uuid.NAMESPACE_URL, name).hex


class LocalTopics(Topics):
    """Partitioned topic logs stored as Arrow IPC segments under a local directory.

    Safe for concurrent use by several processes on one machine: appends to a partition are
    serialized with an exclusive ``fcntl.flock``; readers take no lock.

    Parameters
    ----------
    root : str or os.PathLike
        Directory holding the topics (a path, relative ones against the current directory, or a
        ``file:`` URI); created if missing. On a cluster it must be a directory every machine
        mounts at the same path (e.g. NFS).

    Raises
    ------
    ValueError
        If ``root`` is a URI of another scheme than ``file``: local topics are plain files.
    """

    def __init__(self, root: str | os.PathLike) -> None:
        self._root = Path(localPath(root))
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
                (tmp / str(partition) / _MANIFEST).touch()
            meta = {"name": name, "partitions": numPartitions, "config": config, "id": str(uuid.uuid4())}
            (tmp / _TOPIC_FILE).write_text(json.dumps(meta))
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
        partDir = self._partitionDir(name, partition)
        try:
            with open(partDir / _MANIFEST, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                # The last line is short; read a tail that holds it, else the whole file.
                tail = min(size, 4096)
                f.seek(size - tail)
                data = f.read(tail)
                if tail < size and data.count(b"\n") < 2:
                    f.seek(0)
                    data = f.read()
        except FileNotFoundError:
            data = self._manifestBytes(partDir, name, partition)  # raises unless never written
        if not data:
            return 0
        try:
            last = json.loads(data[:-1].rsplit(b"\n", 1)[-1]) if data.endswith(b"\n") else None
            return last["start"] + last["count"]
        except (ValueError, KeyError, TypeError):
            pass
        entries = self._readManifest(partDir, name, partition)  # raises naming the damaged line
        return entries[-1]["start"] + entries[-1]["count"] if entries else 0

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
        """Partition -> its log start offset for every partition of ``name``: 0 unless records
        were deleted (:meth:`deleteRecords`).

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic does not exist.
        """
        numPartitions = self.partitionsFor(name)
        if numPartitions is None:
            raise _unknownTopic(name)
        return {p: self._logStart(self._root / name / str(p)) for p in range(numPartitions)}

    @staticmethod
    def _logStart(partDir: Path) -> int:
        try:
            return int((partDir / _LOG_START).read_bytes())
        except FileNotFoundError:
            return 0

    def deleteRecords(self, name: str, partition: int, beforeOffset: int) -> int:
        """Delete the records of ``name``-``partition`` below ``beforeOffset`` that fill whole
        segments (Kafka's ``Admin.deleteRecords``, at segment granularity: a segment holding
        ``beforeOffset - 1`` and later records stays whole). Returns the log start offset after it.

        The log start is written first (atomically), then the segment files are removed; a crash
        in between leaves files that the next call removes. Offsets, the end offset and the
        manifest's chains do not change.

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic or partition does not exist.
        """
        partDir = self._partitionDir(name, partition)
        with self._locked(partDir):
            entries = self._readManifest(partDir, name, partition)
            start = self._logStart(partDir)
            doomed = [entry for entry in entries if entry["start"] + entry["count"] <= beforeOffset]
            if doomed and doomed[-1]["start"] + doomed[-1]["count"] > start:
                start = doomed[-1]["start"] + doomed[-1]["count"]
                tmp = partDir / f".{_LOG_START}.tmp"
                with open(tmp, "wb") as f:
                    f.write(str(start).encode())
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, partDir / _LOG_START)
                _fsyncDir(partDir)
            for entry in entries:
                if entry["start"] + entry["count"] > start:
                    break
                try:
                    os.unlink(partDir / entry["segment"])
                except FileNotFoundError:
                    pass
            return start

    def topicId(self, name: str) -> str | None:
        """The id given to topic ``name`` when it was created (a new one when it is deleted and
        created again); None for a missing topic or one created before topics had ids."""
        if not _isLegalTopicName(name):
            return None
        try:
            meta = json.loads((self._root / name / _TOPIC_FILE).read_text())
        except FileNotFoundError:
            return None
        return meta.get("id")

    def logChains(self, name: str, partition: int, positions: Iterable[int]) -> dict[int, int | None]:
        """Position -> the ``chain`` of the manifest line holding offset ``position - 1`` (see the
        module doc): what a reader keeps with a position to tell, later, that the log below it is
        still the one it read (the local log's counterpart of Kafka's leader epochs, KIP-320).
        None for position 0, a position beyond the log end, or a line written before chains
        existed.

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic or partition does not exist.
        CorruptRecordException
            If the manifest is damaged, naming the file and line.
        """
        positions = list(positions)
        partDir = self._partitionDir(name, partition)
        entries = self._readManifest(partDir, name, partition)
        starts = [entry["start"] for entry in entries]
        end = entries[-1]["start"] + entries[-1]["count"] if entries else 0
        out: dict[int, int | None] = {}
        for position in positions:
            if not 0 < position <= end:
                out[position] = None
                continue
            out[position] = entries[bisect.bisect_right(starts, position - 1) - 1].get("chain")
        return out

    # ------------------------------------------------------------------ writes

    def stagingDir(self, producer: str) -> str:
        """Directory (created) of ``producer`` for segment files to be committed with
        :meth:`appendFile` to any partition (same file system as the logs). What the producer
        leaves there is its own to delete."""
        staging = self._root / _STAGING / _safeName(producer)
        staging.mkdir(parents=True, exist_ok=True)
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

        def writeSegment(target: Path) -> tuple[int, list[int]]:
            tmp = target.with_name(f".{target.name}.tmp")
            with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, RECORD_SCHEMA) as writer:
                writer.write_table(table, max_chunksize=SEGMENT_BATCH_ROWS)
            _fsyncFile(tmp)
            checksums = segmentChecksums(tmp)
            os.replace(tmp, target)
            return os.path.getsize(target), checksums

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
        checksums: list[int] | None = None,
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
        checksums : list of int, optional
            :func:`segmentChecksums` of the file, when its writer computed them (else computed here).

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
            if checksums is not None and len(checksums) != reader.num_record_batches:
                raise ValueError(f"Segment file {path} for {name}-{partition} has {reader.num_record_batches} "
                                 f"record batches but {len(checksums)} checksums were given")
        _fsyncFile(path)
        if checksums is None:
            checksums = segmentChecksums(path)

        def moveSegment(target: Path) -> tuple[int, list[int]]:
            size = os.path.getsize(path)
            os.replace(path, target)
            return size, checksums

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
        OffsetOutOfRangeException
            If ``start`` is below the partition's log start offset (records deleted, :meth:`deleteRecords`).
        """
        if start < 0:
            raise ValueError(f"Offset {start} for {name}-{partition} is negative")
        partDir = self._partitionDir(name, partition)
        entries = self._readManifest(partDir, name, partition)
        end = min(end, entries[-1]["start"] + entries[-1]["count"]) if entries else 0
        if start >= end:
            return READ_SCHEMA.empty_table()
        logStart = self._logStart(partDir)
        if start < logStart:
            raise OffsetOutOfRangeException(f"Offset {start} of {name}-{partition} is below its log start offset "
                                            f"{logStart}: the records before it were deleted")
        starts = [entry["start"] for entry in entries]
        first = bisect.bisect_right(starts, start) - 1
        logAppendTime = self.timestampType(name) == "LogAppendTime"
        pieces = []
        for entry in entries[first:]:
            if entry["start"] >= end:
                break
            lo = max(start, entry["start"]) - entry["start"]
            hi = min(end, entry["start"] + entry["count"]) - entry["start"]
            piece = self._readSegment(partDir, name, partition, entry, lo, hi)
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
    def _readSegment(partDir: Path, name: str, partition: int, entry: dict, lo: int, hi: int) -> pa.Table:
        """Rows ``[lo, hi)`` of the segment of manifest line ``entry``, their record batches'
        checksums verified (see the module doc)."""
        path = partDir / entry["segment"]
        first, count = entry["start"], entry["count"]

        def corrupt(what: str) -> CorruptRecordException:
            return CorruptRecordException(f"Segment file {path} of {name}-{partition} (offsets {first}..{first + count - 1}) "
                                          f"{what}")

        try:
            size = os.path.getsize(path)
        except FileNotFoundError:
            raise corrupt("is missing") from None
        if entry.get("bytes") is not None and size != entry["bytes"]:
            raise corrupt(f"has {size} bytes, not the {entry['bytes']} its manifest line records (truncated or overwritten)")
        checksums = entry.get("crc32")
        batches = []
        try:
            with pa.memory_map(str(path)) as source:
                reader = pa.ipc.open_file(source)
                if not reader.schema.equals(RECORD_SCHEMA):
                    raise corrupt(f"has the schema {reader.schema}, not {RECORD_SCHEMA}")
                if checksums is not None and len(checksums) != reader.num_record_batches:
                    raise corrupt(f"has {reader.num_record_batches} record batches, not the {len(checksums)} "
                                  "its manifest line records")
                row = 0
                for i in range(reader.num_record_batches):
                    batch = reader.get_batch(i)
                    n = batch.num_rows
                    if row < hi and row + n > lo:
                        if checksums is not None and _batchChecksum(batch) != checksums[i]:
                            raise corrupt(f"fails the CRC-32 check of its record batch {i} "
                                          f"(offsets {first + row}..{first + row + n - 1})")
                        begin = max(lo, row)
                        batches.append(batch.slice(begin - row, min(hi, row + n) - begin))
                    row += n
        except (pa.ArrowException, OSError) as e:
            raise corrupt(f"cannot be read: {e}") from e
        if row != count:
            raise corrupt(f"holds {row} records, not the {count} its manifest line records")
        return pa.Table.from_batches(batches, schema=RECORD_SCHEMA)

    def _readManifest(self, partDir: Path, name: str, partition: int) -> list[dict]:
        return self._parseManifest(self._manifestBytes(partDir, name, partition), partDir / _MANIFEST, name, partition)

    def _manifestBytes(self, partDir: Path, name: str, partition: int) -> bytes:
        """The manifest's bytes; empty for a partition never written (no manifest, no segment,
        created before topics got an empty manifest at creation)."""
        path = partDir / _MANIFEST
        try:
            return path.read_bytes()
        except FileNotFoundError:
            pass
        segments = sorted(n for n in os.listdir(partDir) if n.endswith(".arrow"))
        if segments or self.topicId(name) is not None:
            raise CorruptRecordException(
                f"The manifest {path} of {name}-{partition} is missing"
                + (f", but the partition holds {len(segments)} segment files ({segments[0]}, ...)" if segments else "")
                + "; without it the partition's records cannot be read. Restore the file from a backup or delete the topic.")
        return b""

    @staticmethod
    def _parseManifest(data: bytes, path: Path, name: str, partition: int) -> list[dict]:
        """The manifest's lines as dicts; raises ``CorruptRecordException`` naming the file and
        line if one cannot be parsed, lacks its final newline or does not start where the previous
        line ends."""
        lines = data.split(b"\n")
        if lines[-1]:
            raise CorruptRecordException(
                f"The manifest {path} of {name}-{partition} is damaged: line {len(lines)} has no final newline "
                f"(manifests are replaced whole, so a crash cannot leave one): {lines[-1][:200]!r}")
        entries: list[dict] = []
        for number, line in enumerate(lines[:-1], 1):
            end = entries[-1]["start"] + entries[-1]["count"] if entries else 0
            try:
                entry = json.loads(line)
                valid = (isinstance(entry["segment"], str) and type(entry["start"]) is int
                         and type(entry["count"]) is int and entry["count"] > 0)
            except (ValueError, KeyError, TypeError):
                valid = False
            if not valid:
                raise CorruptRecordException(
                    f"The manifest {path} of {name}-{partition} is damaged: line {number} cannot be parsed: {line[:200]!r}")
            if entry["start"] != end:
                raise CorruptRecordException(
                    f"The manifest {path} of {name}-{partition} is damaged: line {number} starts at offset "
                    f"{entry['start']}, but the lines before it end at offset {end}")
            entries.append(entry)
        return entries

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
        """Under the partition lock: dedupe, place the segment file (``placeSegment`` returns its
        size and checksums), then replace the manifest by one with the segment's line added."""
        producer, sequence, index = producerId
        idempotent = producer is not None and sequence is not None
        name, partition = partDir.parent.name, int(partDir.name)
        with self._locked(partDir):
            manifest = partDir / _MANIFEST
            data = self._manifestBytes(partDir, name, partition)
            entries = self._parseManifest(data, manifest, name, partition)
            if idempotent:
                for entry in entries:
                    if (entry["producer"], entry["sequence"], entry["index"]) == (producer, sequence, index):
                        return entry["start"]
            start = entries[-1]["start"] + entries[-1]["count"] if entries else 0
            if count == 0:
                return start
            segment = _segmentName(start)
            size, checksums = placeSegment(partDir / segment)
            appendTime = time.time_ns() // 1_000_000
            previous = entries[-1].get("chain", 0) if entries else 0
            line = json.dumps(
                {
                    "segment": segment,
                    "start": start,
                    "count": count,
                    "producer": producer if idempotent else None,
                    "sequence": sequence if idempotent else None,
                    "index": index,
                    "appendTime": appendTime,
                    "bytes": size,
                    "crc32": checksums,
                    "chain": _chain(previous, start, count, appendTime, checksums),
                }
            ).encode() + b"\n"
            tmp = partDir / f".{_MANIFEST}.tmp"  # one appender at a time (the lock)
            with open(tmp, "wb") as f:
                f.write(data + line)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, manifest)
            _fsyncDir(partDir)
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
