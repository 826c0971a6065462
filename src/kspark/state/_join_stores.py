"""The stores of KStream-KStream joins: window stores that retain duplicates, and the outer-join
store that holds left/outer join records until their window closes (Kafka
``RocksDBWindowStore``/``InMemoryWindowStore`` with ``retainDuplicates``, ``ListValueStore``,
``TimestampedKeyAndJoinSide``, ``LeftOrRightValue``); and the grace buffer of a stream-table join
(``RocksDBTimeOrderedKeyValueBuffer``)."""

from __future__ import annotations

import bisect
import logging
import struct
from typing import Any, NamedTuple

from ..processor import Record
from ..serialization import Serde
from ._stores import _IMMUTABLE, KeyValueIterator, KeyValueStore, StoreBuilder, WindowStore, _Frozen, _StoreBase
from ._window import TimeWindow, Windowed

__all__ = ["DuplicatesWindowStore", "LeftOrRightValue", "ListValueStore", "OuterJoinStoreBuilder",
           "StreamTableJoinBuffer", "TimestampedKeyAndJoinSide"]

log = logging.getLogger("kspark.state")

_LONG = struct.Struct(">q")


class DuplicatesWindowStore(WindowStore):
    """A window store that keeps every value put, also several per key and timestamp (Kafka's
    window stores with ``retainDuplicates=true``, built by ``Stores.*WindowStore(..., True)``;
    the two stores of a stream-stream join).

    ``put(key, value, timestamp)`` appends; a null value is ignored (Kafka: "this delete is a
    no-op"). ``fetch(key, timeFrom, timeTo)`` returns ``KeyValue(timestamp, value)`` for every
    value of ``key`` put at a timestamp in ``[max(timeFrom, observed - retention + 1), timeTo]``,
    by timestamp, then in put order; ``observed`` is the largest timestamp put.

    A put older than the retention is dropped with Kafka's WARN "Skipping record for expired
    segment." and counted (``droppedCounter``): for a persistent store when its segment
    (``max(retention / 2, 60000)`` ms of time) is older than the segment of ``observed -
    retention`` (Kafka's segmented RocksDB store), for an in-memory store when ``timestamp <=
    observed - retention``. An in-memory store also advances ``observed`` on a null put (and
    counts it if expired), as Kafka's ``InMemoryWindowStore.put`` does; a persistent one ignores it.
    """

    retainDuplicates = True

    def __init__(self, name: str, keySerde: Serde, valueSerde: Serde, persistent: bool,
                 retentionMs: int, windowSizeMs: int) -> None:
        super().__init__(name, keySerde, valueSerde, persistent, retentionMs, windowSizeMs)
        self.droppedCounter = None  # set by the task: called when a put is dropped as expired
        self._segmentInterval = max(retentionMs // 2, 60_000)
        # key bytes -> [(timestamp, seq, key, value)] sorted by (timestamp, seq)
        self._byKey: dict[bytes, list[tuple]] = {}
        self._seq = 0

    def snapshot(self) -> dict:
        return {"byKey": self._byKey, "observed": self._observed, "seq": self._seq, "purgedAt": self._purgedAt}

    def restore(self, data: dict) -> None:
        self._byKey, self._observed = data["byKey"], data["observed"]
        self._seq, self._purgedAt = data["seq"], data["purgedAt"]

    def mergeSnapshot(self, data: dict) -> None:
        """Add another task's snapshot (to view a store over all tasks)."""
        for kb, entries in data["byKey"].items():
            self._byKey[kb] = sorted([*self._byKey.get(kb, ()), *entries], key=lambda e: e[:2])
        self._observed = max(self._observed, data["observed"])
        self._seq = max(self._seq, data["seq"])

    def _expired(self, timestamp: int) -> bool:
        bound = self._observed - self._retentionMs
        if self._persistent:
            interval = self._segmentInterval
            return timestamp // interval < bound // interval
        return timestamp <= bound

    def put(self, key: Any, value: Any, windowStartTimestamp: int) -> None:
        self._put(self._keyBytes(key), key, value, windowStartTimestamp)

    def _put(self, kb: bytes, key: Any, value: Any, timestamp: int) -> None:
        if value is None and self._persistent:
            return  # RocksDBWindowStore: a null put with duplicates is skipped before anything else
        if timestamp > self._observed:
            self._observed = timestamp
        if self._expired(timestamp):
            log.warning("Skipping record for expired segment.")
            if self.droppedCounter is not None:
                self.droppedCounter()
            return
        if value is None:
            return
        if type(value) not in _IMMUTABLE:
            value = self._freeze(value)
        self._seq += 1
        entries = self._byKey.get(kb)
        entry = (timestamp, self._seq, key, value)
        if entries is None:
            self._byKey[kb] = [entry]
        elif entries[-1][0] <= timestamp:
            entries.append(entry)
        else:
            bisect.insort(entries, entry)  # (timestamp, seq) are unique: key and value are never compared
        if self._observed - self._purgedAt >= max(1, self._retentionMs // 2):
            self._purge()

    def _purge(self) -> None:
        """Drop the entries no read can see any more (older than ``observed - retention + 1``)."""
        lowest = self._observed - self._retentionMs + 1
        for kb in list(self._byKey):
            entries = self._byKey[kb]
            if entries[0][0] < lowest:
                del entries[:bisect.bisect_left(entries, (lowest,))]
                if not entries:
                    del self._byKey[kb]
        self._purgedAt = self._observed

    def _fetchEntries(self, kb: bytes, timeFrom: int, timeTo: int) -> list:
        """``(timestamp, seq, key, value)`` of ``kb`` put in ``[max(timeFrom, lowest), timeTo]``
        (Kafka ``AbstractRocksDBSegmentedBytesStore.fetch``'s ``getActualFrom``)."""
        entries = self._byKey.get(kb)
        if not entries:
            return []
        lowest = max(timeFrom, self._observed - self._retentionMs + 1)
        if timeTo < lowest:
            return []
        if entries[0][0] >= lowest and entries[-1][0] <= timeTo:
            return entries
        return entries[bisect.bisect_left(entries, (lowest,)):bisect.bisect_left(entries, (timeTo + 1,))]

    def fetch(self, key: Any, timeFrom: int, timeTo: int | None = None):
        """``fetch(key, from, to)``: ``KeyValue(timestamp, value)`` in time, then put order;
        ``fetch(key, time)``: the first value put at ``time``, or None."""
        from ..keyvalue import KeyValue

        entries = self._fetchEntries(self._keyBytes(key), timeFrom, timeFrom if timeTo is None else timeTo)
        if timeTo is None:
            return self._thaw(entries[0][3]) if entries else None
        return KeyValueIterator([KeyValue(e[0], self._thaw(e[3])) for e in entries])

    def fetchAll(self, timeFrom: int, timeTo: int) -> KeyValueIterator:
        """``KeyValue(Windowed(key, TimeWindow), value)`` for every value put in ``[timeFrom,
        timeTo]``, by timestamp, key bytes, put order."""
        from ..keyvalue import KeyValue

        size, found = self._windowSizeMs, []
        for kb, entries in self._byKey.items():
            found += [(e[0], kb, e[1], e[2], e[3]) for e in self._fetchEntries(kb, timeFrom, timeTo)]
        return KeyValueIterator([KeyValue(Windowed(key, TimeWindow(ts, ts + size)), self._thaw(value))
                                 for ts, _, _, key, value in sorted(found, key=lambda e: e[:3])])

    def all(self) -> KeyValueIterator:
        return self.fetchAll(0, (1 << 63) - 1)


class TimestampedKeyAndJoinSide(NamedTuple):
    """The outer-join store's key (Kafka ``TimestampedKeyAndJoinSide``): a record's key, timestamp
    and side. Stored as 8-byte timestamp + side byte (left 1, right 0) + key bytes, so the store
    iterates by timestamp, right side first, then key bytes."""

    leftSide: bool
    key: Any
    timestamp: int

    def isLeftSide(self) -> bool:
        return self.leftSide

    def __str__(self) -> str:
        return f"<{'left' if self.leftSide else 'right'},{self.key}:{self.timestamp}>"


class LeftOrRightValue(NamedTuple):
    """The outer-join store's value (Kafka ``LeftOrRightValue``): a left or a right value."""

    leftValue: Any
    rightValue: Any


class ListValueStore(KeyValueStore):
    """The outer-join store (Kafka ``ListValueStore`` over a key-value store keyed by
    ``TimestampedKeyAndJoinSide``): ``put(key, value)`` appends ``value`` (a ``LeftOrRightValue``)
    to ``key``'s list, ``put(key, None)`` deletes the list, ``putIfAbsent(key, None)`` deletes it
    if present; ``all()`` returns every value, keys in byte order (timestamp, side, key bytes),
    values in put order. ``valueSerdes`` are the left and right value serdes (mutable values are
    kept as their bytes)."""

    def __init__(self, name: str, keySerde: Serde, valueSerdes: tuple, persistent: bool) -> None:
        super().__init__(name, keySerde, valueSerdes[0], persistent)
        self._valueSerdes = valueSerdes
        self._order: list[bytes] = []  # the keys' bytes, sorted

    def snapshot(self) -> dict:
        return {"data": self._data, "order": self._order}

    def restore(self, data: dict) -> None:
        self._data, self._order = data["data"], data["order"]

    def mergeSnapshot(self, data: dict) -> None:
        for kb, (key, values) in data["data"].items():
            for value in values:
                self._append(kb, key, value)

    def _joinKeyBytes(self, key: TimestampedKeyAndJoinSide) -> bytes:
        return _LONG.pack(key.timestamp) + (b"\x01" if key.leftSide else b"\x00") + self._keyBytes(key.key)

    def _freezeSide(self, value: LeftOrRightValue) -> tuple:
        left, right = value
        if left is not None and type(left) not in _IMMUTABLE:
            left = _Frozen(self._valueSerdes[0].serialize(self._serdeTopic, left))
        if right is not None and type(right) not in _IMMUTABLE:
            right = _Frozen(self._valueSerdes[1].serialize(self._serdeTopic, right))
        return left, right

    def _thawSide(self, stored: tuple) -> LeftOrRightValue:
        left, right = stored
        if type(left) is _Frozen:  # plain bytes to the serde, as in _StoreBase._thaw
            left = self._valueSerdes[0].deserialize(self._serdeTopic, bytes(left))
        if type(right) is _Frozen:
            right = self._valueSerdes[1].deserialize(self._serdeTopic, bytes(right))
        return LeftOrRightValue(left, right)

    def _append(self, kb: bytes, key, stored: tuple) -> None:
        entry = self._data.get(kb)
        if entry is None:
            self._data[kb] = (key, [stored])
            order = self._order
            if not order or order[-1] < kb:
                order.append(kb)
            else:
                bisect.insort(order, kb)
        else:
            entry[1].append(stored)

    def put(self, key: TimestampedKeyAndJoinSide, value: LeftOrRightValue | None) -> None:
        kb = self._joinKeyBytes(key)
        if value is None:
            if self._data.pop(kb, None) is not None:
                del self._order[bisect.bisect_left(self._order, kb)]
            return
        self._append(kb, key, self._freezeSide(value))

    def putIfAbsent(self, key: TimestampedKeyAndJoinSide, value: LeftOrRightValue | None) -> None:
        """Kafka's ``ListValueStore.putIfAbsent``: only acts if ``key`` is present (deletes it for
        a null ``value``, else appends); always returns None."""
        if self._joinKeyBytes(key) in self._data:
            self.put(key, value)
        return None

    def get(self, key: TimestampedKeyAndJoinSide) -> list | None:
        entry = self._data.get(self._joinKeyBytes(key))
        return None if entry is None else [self._thawSide(v) for v in entry[1]]

    def delete(self, key) -> Any:
        raise NotImplementedError("delete not supported")  # Kafka: UnsupportedOperationException

    def range(self, fromKey: Any = None, toKey: Any = None) -> KeyValueIterator:
        if fromKey is None and toKey is None:
            return self.all()
        raise NotImplementedError("range not supported")  # Kafka: UnsupportedOperationException

    def all(self) -> KeyValueIterator:
        from ..keyvalue import KeyValue

        return KeyValueIterator([KeyValue(key, self._thawSide(v)) for key, values in map(self._data.__getitem__, self._order)
                                 for v in values])

    def _scan(self):
        """``(key bytes, key, stored values)`` in key order, for the join's emit loop (values are
        thawed by ``_thawSide``)."""
        data = self._data
        for kb in self._order:
            key, values = data[kb]
            yield kb, key, values

    def _deleteScanned(self, upto: int, deleted: set) -> None:
        """Remove the keys ``deleted`` (all among the first ``upto`` of the scan order)."""
        data = self._data
        for kb in deleted:
            del data[kb]
        self._order[:upto] = [kb for kb in self._order[:upto] if kb not in deleted]

    def approximateNumEntries(self) -> int:
        return len(self._data)


class OuterJoinStoreBuilder(StoreBuilder):
    """Builds the outer-join store of a left/outer stream-stream join (Kafka
    ``OuterStreamJoinStoreFactory``): a ``ListValueStore`` with the join's key serde and the two
    value serdes (None: the task's defaults)."""

    def __init__(self, supplier, keySerde: Serde | None, valueSerde: Serde | None, otherValueSerde: Serde | None) -> None:
        super().__init__(supplier, keySerde, valueSerde)
        self._otherValueSerde = otherValueSerde

    def build(self, defaultKeySerde: Serde | None = None, defaultValueSerde: Serde | None = None) -> ListValueStore:
        if defaultKeySerde is None or defaultValueSerde is None:
            from ..serialization import Serdes

            defaultKeySerde, defaultValueSerde = defaultKeySerde or Serdes.String(), defaultValueSerde or Serdes.JSON()
        s = self._supplier
        return ListValueStore(s.name, self._keySerde or defaultKeySerde,
                              (self._valueSerde or defaultValueSerde, self._otherValueSerde or defaultValueSerde),
                              s.persistent)


class StreamTableJoinBuffer(_StoreBase):
    """The grace-period buffer of a stream-table join (Kafka ``RocksDBTimeOrderedKeyValueBuffer``,
    store ``<join name>-Buffer``): records ordered by timestamp, then serialized key and a
    31-bit sequence number (Kafka's time-first store key). ``put`` refuses a record older than the
    largest timestamp buffered so far minus the grace period; ``evict`` removes and returns the
    records at or before that bound. A null key (a left join's) raises
    ``TypeError('key cannot be null')``, Kafka's ``NullPointerException``: Kafka 4.3 fails the task
    there."""

    def __init__(self, name: str, keySerde: Serde, valueSerde: Serde, graceMs: int) -> None:
        super().__init__(name, keySerde, valueSerde, True)
        self.graceMs = graceMs
        self._entries: list = []  # (timestamp, key bytes + seqnum, key, stored value, headers, metadata)
        self._observed = -1  # the store's observedStreamTime, ConsumerRecord.NO_TIMESTAMP
        self._seqnum = 0

    def snapshot(self) -> dict:
        return {"entries": self._entries, "observed": self._observed, "seqnum": self._seqnum}

    def restore(self, data: dict) -> None:
        self._entries, self._observed, self._seqnum = data["entries"], data["observed"], data["seqnum"]

    def mergeSnapshot(self, data: dict) -> None:
        self._entries = sorted(self._entries + data["entries"], key=lambda e: e[:2])
        self._observed = max(self._observed, data["observed"])

    def numRecords(self) -> int:
        return len(self._entries)

    def put(self, record: Record, meta) -> bool:
        timestamp = record.timestamp()
        if record.key() is None:  # a left join's null-key record (Kafka's serializer NPE in the buffer)
            raise TypeError("key cannot be null")
        if self._observed - self.graceMs > timestamp:
            return False
        self._seqnum = (self._seqnum + 1) & 0x7FFFFFFF
        key = record.key()
        order = self._keyBytes(key) + self._seqnum.to_bytes(4, "big")
        entry = (timestamp, order, key, self._freeze(record.value()), tuple(record.headers()), meta)
        bisect.insort(self._entries, entry, key=lambda e: e[:2])
        self._observed = max(self._observed, timestamp)
        return True

    def evict(self) -> list:
        """``(Record, metadata)`` of the buffered records with timestamp <= observed - grace, in order."""
        bound = self._observed - self.graceMs
        entries = self._entries
        n = bisect.bisect_right(entries, bound, key=lambda e: e[0])
        if not n:
            return []
        out, self._entries = entries[:n], entries[n:]
        return [(Record(key, self._thaw(value), ts, headers), meta) for ts, _, key, value, headers, meta in out]
