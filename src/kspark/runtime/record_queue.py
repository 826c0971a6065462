"""Per-partition FIFO queues and the task's choice of the next record (Kafka ``RecordQueue``, ``PartitionGroup``)."""

from __future__ import annotations

import logging
from collections import deque
from itertools import repeat
from typing import Any, NamedTuple

from ..errors import StreamsException
from ..processor import ConsumerRecord, TimestampExtractor
from ..serialization import Serde
from .metrics import Metrics

__all__ = ["PartitionGroup", "RawRecord", "RawRecordColumns", "RecordQueue", "StampedRecord"]

log = logging.getLogger("kspark.runtime")

_tupleNew = tuple.__new__  # builds a NamedTuple from a tuple ~2x faster than calling the class
MATERIALIZE_ROWS = 1024  # column rows converted to RawRecord tuples at a time


class RawRecord(NamedTuple):
    """A record as stored in a topic: serialized key/value, metadata timestamp (ms), headers."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()
    extracted: int | None = None  # the timestamp a host already extracted in bulk (built-in extractors)


class RawRecordColumns:
    """Consecutive raw records of one partition as columns (a host's batch, kept unconverted until
    processed): ``offsets`` and ``timestamps`` (ms) int64 numpy arrays, ``keys``, ``values`` and
    ``headers`` (encoded as ``encodeHeaders`` does) pyarrow binary arrays; ``bulk``: the
    timestamps are the records' extracted timestamps (a built-in extractor, all >= 0, rule T-3).
    ``rawRecords(start, stop)`` gives rows as ``RawRecord`` tuples."""

    __slots__ = ("offsets", "timestamps", "keys", "values", "headers", "bulk")

    def __init__(self, offsets, timestamps, keys, values, headers, bulk: bool) -> None:
        self.offsets, self.timestamps, self.keys, self.values, self.headers = offsets, timestamps, keys, values, headers
        self.bulk = bulk

    def __len__(self) -> int:
        return len(self.offsets)

    def rawRecords(self, start: int, stop: int) -> list[RawRecord]:
        from .stream_task import decodeHeaders

        n = stop - start
        ts = self.timestamps[start:stop].tolist()
        headers = self.headers.slice(start, n)
        headerCol = repeat((), n) if headers.null_count == n else map(decodeHeaders, headers.to_pylist())
        return list(map(_tupleNew, repeat(RawRecord), zip(
            self.offsets[start:stop].tolist(), ts, self.keys.slice(start, n).to_pylist(),
            self.values.slice(start, n).to_pylist(), headerCol, ts if self.bulk else repeat(None))))


class StampedRecord(NamedTuple):
    """A deserialized record with its extracted timestamp (Kafka ``StampedRecord``)."""

    timestamp: int
    key: Any
    value: Any
    headers: tuple
    topic: str
    partition: int
    offset: int
    rawKey: bytes | None = None    # the bytes it was read from (an ErrorHandlerContext's sourceRawKey)
    rawValue: bytes | None = None


class RecordQueue:
    """FIFO queue of one input partition (Kafka ``RecordQueue``).

    Invariants (rules T-8..T-11): records leave in offset order, never re-sorted; only the head
    is deserialized and timestamped, lazily, with the partition time at that moment;
    ``partitionTime`` is the max timestamp of records *polled* from this queue (-1 initially);
    a record with a negative extracted timestamp is dropped and counted.
    """

    isGlobal = False  # a queue of a global topic-partition: picked in time order, no stream time
    # a pattern source's queue (one for all matching topics, as Kafka's TopologyTestDriver has):
    # offset -> the topic each record came from; None for a queue of one topic
    recordTopics: dict | None = None
    # a global queue: the offset of the first record it was ever given (None: none yet), and the
    # offset after the last one (its partition's position once the queue is empty; see
    # appliedPosition): a task's copy of the global store holds the records in between
    receivedFrom: int | None = None
    receivedEnd = 0

    def __init__(
        self,
        topic: str,
        partition: int,
        keySerde: Serde,
        valueSerde: Serde,
        extractor: TimestampExtractor,
        metrics: Metrics,
        taskId: str,
        sourceNodeName: str,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self._keySerde = keySerde
        self._valueSerde = valueSerde
        self._extractor = extractor
        from ..processor import FailOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp

        self._builtInExtractor = type(extractor) in (FailOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp,
                                                     UsePartitionTimeOnInvalidTimestamp)
        from ..serialization import (_BooleanSerde, _ByteArraySerde, _ByteBufferSerde, _BytesSerde, _DoubleSerde,
                                     _FloatSerde, _IntegerSerde, _JsonSerde, _LongSerde, _ShortSerde, _StringSerde,
                                     _UUIDSerde, _VoidSerde)

        # built-in deserializers: pure functions of the bytes (None for None), so pollAlone may try them first
        pure = (_BooleanSerde, _ByteArraySerde, _ByteBufferSerde, _BytesSerde, _DoubleSerde, _FloatSerde,
                _IntegerSerde, _JsonSerde, _LongSerde, _ShortSerde, _StringSerde, _UUIDSerde, _VoidSerde)
        self._pollsAlone = self._builtInExtractor and type(keySerde) in pure and type(valueSerde) in pure
        self._metrics = metrics
        self._taskId = taskId
        self.sourceNodeName = sourceNodeName
        self._raw: deque[RawRecord] = deque()
        # records added as columns, after those of _raw: [RawRecordColumns, next row], converted
        # to _raw MATERIALIZE_ROWS rows at a time as the head needs them (column readers such as
        # session_count_batch read them in place)
        self._columns: deque[list] = deque()
        self.head: StampedRecord | None = None
        self._headRaw: RawRecord | None = None
        self.partitionTime = -1
        self.lag: int | None = None  # records known to exist beyond what was added; None = unknown
        # (queue, raw record, exception) -> True to skip the record, False to fail; set by the task
        self.onDeserializationError = lambda queue, raw, e: False

    def addRawRecords(self, records) -> None:
        if self._columns:  # keep offset order: what came as columns goes first
            self._materialize(None)
        if self.isGlobal:
            records = list(records)
            if records:
                if self.receivedFrom is None:
                    self.receivedFrom = records[0].offset
                self.receivedEnd = max(self.receivedEnd, records[-1].offset + 1)
        self._raw.extend(records)
        if self.head is None:
            self._updateHead()

    def addRawColumns(self, columns: RawRecordColumns) -> None:
        """Append records given as columns (same order rules as ``addRawRecords``)."""
        if len(columns):
            if self.isGlobal:
                if self.receivedFrom is None:
                    self.receivedFrom = int(columns.offsets[0])
                self.receivedEnd = max(self.receivedEnd, int(columns.offsets[-1]) + 1)
            self._columns.append([columns, 0])
            if self.head is None:
                if not self._raw:
                    self._materialize(1)  # the head alone: column readers read the rest in place
                self._updateHead()

    def _materialize(self, rows: int | None) -> None:
        """Move up to ``rows`` (None: all) records from the column chunks to ``_raw``."""
        while self._columns and (rows is None or rows > 0):
            entry = self._columns[0]
            columns, start = entry
            stop = len(columns) if rows is None else min(len(columns), start + rows)
            self._raw.extend(columns.rawRecords(start, stop))
            if rows is not None:
                rows -= stop - start
            if stop == len(columns):
                self._columns.popleft()
            else:
                entry[1] = stop

    def extractsMetadataTimestamp(self) -> bool:
        """Whether this queue's extractor is a built-in one that returns the record's metadata
        timestamp when it is >= 0, so a host may take valid timestamps in bulk (rule T-3)."""
        return self._builtInExtractor

    def isEmpty(self) -> bool:
        return self.head is None

    def size(self) -> int:
        return len(self._raw) + (self.head is not None) + sum(len(c) - start for c, start in self._columns)

    def pendingRawKeys(self) -> list:
        """The serialized keys (bytes or None) of the records added and not yet taken to the head,
        in offset order (a host's cache fill before processing, ``StreamTask.prefillStores``)."""
        keys = [r[2] for r in self._raw]
        for columns, start in self._columns:
            keys += columns.keys.slice(start).to_pylist()
        return keys

    def poll(self) -> StampedRecord:
        record = self.head
        self.head = self._headRaw = None
        if record.timestamp > self.partitionTime:
            self.partitionTime = record.timestamp
        self._updateHead()
        return record

    def pollAlone(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None,
                  headers: tuple) -> StampedRecord | None:
        """``addRawRecords([RawRecord(offset, timestamp, key, value, headers)])`` then ``poll()`` on
        an empty queue, without queueing: the record deserialized and stamped with its metadata
        timestamp (T-3), the partition time advanced. Returns None, leaving the queue untouched,
        when the queue is not empty or that takes more than the built-in extractor's valid-timestamp
        case with built-in deserializers, or when deserializing fails (so the caller adds the record
        as usual and the deserialization handler sees it)."""
        if not self._pollsAlone or timestamp < 0 or self.head is not None or self._raw or self._columns:
            return None
        try:
            k = None if key is None else self._keySerde.deserialize(self.topic, key)
            v = None if value is None else self._valueSerde.deserialize(self.topic, value)
        except Exception:
            return None
        if timestamp > self.partitionTime:
            self.partitionTime = timestamp
        return _tupleNew(StampedRecord, (timestamp, k, v, headers, self.topic, self.partition, offset, key, value))

    def appliedPosition(self) -> int:
        """A global queue's position in its partition: the offset of its first record not processed
        yet, or, when it holds none, the offset after the last record added. Every record of the
        partition below it has been applied to the global store (or skipped), none at or above it."""
        if self._headRaw is not None:
            return self._headRaw.offset
        if self._raw:
            return self._raw[0].offset
        if self._columns:
            columns, start = self._columns[0]
            return int(columns.offsets[start])
        return self.receivedEnd

    def unprocessed(self) -> list[RawRecord]:
        """Raw records not yet polled (head included), for hosts that carry them to the next batch."""
        self._materialize(None)
        return ([self._headRaw] if self._headRaw is not None else []) + list(self._raw)

    def _updateHead(self) -> None:
        while self.head is None and (self._raw or self._columns):
            if not self._raw:
                self._materialize(MATERIALIZE_ROWS)
            raw = self._raw.popleft()
            offset, timestamp, rawKey, rawValue, headers, extracted = raw
            topic = self.topic if self.recordTopics is None else self.recordTopics.pop(offset, self.topic)
            try:
                key = self._keySerde.deserialize(topic, rawKey)
                value = self._valueSerde.deserialize(topic, rawValue)
            except Exception as e:
                if isinstance(e, StreamsException):  # not the record's fault (an unreachable schema registry): the task fails
                    raise
                if self.onDeserializationError(self, raw, e):
                    continue  # skipped and counted by the handler's CONTINUE
                raise StreamsException(
                    "Deserialization exception handler is set to fail upon a deserialization error. If you "
                    "would rather have the streaming pipeline continue after a deserialization error, please set "
                    f"the deserialization.exception.handler appropriately. topic={self.topic}, "
                    f"partition={self.partition}, offset={raw.offset}: {type(e).__name__}: {e}"
                ) from e
            if extracted is None and timestamp >= 0 and self._builtInExtractor:
                extracted = timestamp  # what the built-in extractor returns (T-3), without the call
            if extracted is not None:
                self.head = _tupleNew(StampedRecord, (extracted, key, value, headers, topic, self.partition, offset,
                                                      rawKey, rawValue))
                self._headRaw = raw
                continue
            consumerRecord = ConsumerRecord(topic, self.partition, offset, timestamp, key, value, headers)
            try:
                ts = self._extractor.extract(consumerRecord, self.partitionTime)
            except StreamsException:
                raise
            except Exception as e:
                raise StreamsException(
                    f"Fatal user code error in TimestampExtractor callback for record {consumerRecord}."
                ) from e
            if ts < 0:
                log.warning(
                    "Skipping record due to negative extracted timestamp. topic=[%s] partition=[%d] offset=[%d] "
                    "extractedTimestamp=[%d] extractor=[%s]",
                    self.topic, self.partition, offset, ts, type(self._extractor).__qualname__,
                )
                self._metrics.recordDropped(self._taskId, self.sourceNodeName, "negative extracted timestamp")
                continue
            self.head = _tupleNew(StampedRecord, (ts, key, value, headers, topic, self.partition, offset, rawKey,
                                                  rawValue))
            self._headRaw = raw


class PartitionGroup:
    """The queues of one task and its stream time (Kafka ``PartitionGroup``).

    ``nextRecord()`` returns the head of the non-empty queue with the smallest head timestamp
    (ties: the queue added first); stream time is the max timestamp returned so far (-1
    initially) and never decreases (rules T-12, T-13). ``readyToProcess`` applies
    ``max.task.idle.ms`` (rule T-14) using each queue's known ``lag``; an empty global queue
    counts as any other unless ``idleOnGlobal`` is False (the continuous host, whose threads read
    the global partitions live as Kafka's global thread does: Kafka's tasks never idle on them).
    """

    def __init__(self, queues: list[RecordQueue], maxTaskIdleMs: int) -> None:
        self.queues = queues
        self.streamTime = -1
        self._maxTaskIdleMs = maxTaskIdleMs
        self._idleStart: dict[int, int] = {}
        self.idleOnGlobal = True

    def readyToProcess(self, wallClockTime: int) -> bool:
        queues = self.queues
        if len(queues) == 1:  # one input partition: never idles (no other queue to wait for)
            return queues[0].head is not None
        for q in queues:
            if q.head is None:
                break
        else:  # every queue has data: ready, no queue is idling
            if self._idleStart:
                self._idleStart.clear()
            return True
        for q in queues:
            if q.head is not None:
                break
        else:  # no queue has data
            return False
        maxTaskIdleMs = self._maxTaskIdleMs
        if maxTaskIdleMs < 0:
            return True
        ready, idleStart = True, self._idleStart
        for i, q in enumerate(queues):
            if q.head is not None:
                if idleStart:
                    idleStart.pop(i, None)
                continue
            if q.isGlobal and not self.idleOnGlobal:
                continue
            if q.lag is None or q.lag > 0:
                return False  # "Waiting to fetch data" / data exists upstream
            start = idleStart.setdefault(i, wallClockTime)
            if wallClockTime < start + maxTaskIdleMs:
                ready = False
        return ready

    def nextReadyRecord(self, wallClockTime: int) -> tuple[StampedRecord, RecordQueue] | tuple[None, None]:
        """``nextRecord()`` if ``readyToProcess(wallClockTime)``, else ``(None, None)``. When every
        queue has a head (a task's usual state in a batch) both come down to one pass over the
        queues: ready, no queue idling, and the head with the smallest timestamp, the first
        queue's on ties; otherwise it calls the two. An empty global queue that the task does not
        idle on (``idleOnGlobal`` False) is passed over in that pass: ``readyToProcess`` passes it
        over too and never starts its idle time, and ``nextRecord`` never picks it, so the pass
        still gives what the two give."""
        best = bestTimestamp = None
        for q in self.queues:
            h = q.head
            if h is None:
                if q.isGlobal and not self.idleOnGlobal:
                    continue
                break
            if best is None or h.timestamp < bestTimestamp:
                best, bestTimestamp = q, h.timestamp
        else:
            if best is not None:
                if self._idleStart:
                    self._idleStart.clear()
                record = best.poll()
                if record.timestamp > self.streamTime and not best.isGlobal:
                    self.streamTime = record.timestamp
                return record, best
        if not self.readyToProcess(wallClockTime):
            return None, None
        return self.nextRecord()

    def nextRecord(self) -> tuple[StampedRecord, RecordQueue] | tuple[None, None]:
        queues = self.queues
        if len(queues) == 1:
            best = queues[0] if queues[0].head is not None else None
        else:
            best = None
            for q in queues:
                h = q.head
                if h is not None and (best is None or h.timestamp < best.head.timestamp):
                    best = q
        if best is None:
            return None, None
        record = best.poll()
        if record.timestamp > self.streamTime and not best.isGlobal:  # global updates are not task input
            self.streamTime = record.timestamp
        return record, best
