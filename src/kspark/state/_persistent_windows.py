"""Persistent window stores: ``WindowStore`` (time and sliding windows) and
``DuplicatesWindowStore`` (the two stores of a stream-stream join) in the task's local RocksDB,
with Kafka Streams' changelog layout (see ``kspark.state._persistent`` for the working sets, the
pending writes and the task checkpoint's meta).

Both stores hide every entry older than their retention from every read, whatever the in-memory
store has purged yet (the purge inside ``WindowStore._putBytes`` and ``DuplicatesWindowStore._purge``
only bounds its memory). So a persistent store expires the database's entries below that bound at
the end of a micro-batch, as pending deletes, and never writes the database during a batch.

Also the read views of interactive queries over the window and session stores of several tasks
(:class:`MergedWindowView`, :class:`MergedSessionView`), as ``MergedKeyValueView`` is for key-value
stores.
"""

from __future__ import annotations

import bisect
import logging
from typing import Any

from ._changelog import (ChangelogRecord, decodeWindowKey, restoreValueAndTimestamp, timestampedWindowRecord,
                         windowRecord)
from ._join_stores import DuplicatesWindowStore
from ._persistent import (_ABSENT, _LEN, _LONG, _MISSING, _ULONG, WorkingSet, _Changes, _encodeStored, _fromOrderedLong,
                          _orderedLong, _storedValue, registerPersistent)
from ._rocksdb import prefixEnd
from ._stores import _IMMUTABLE, KeyValueIterator, ValueAndTimestamp, WindowStore
from ._window import TimeWindow, Windowed

log = logging.getLogger("kspark.state")

__all__ = ["MergedSessionView", "MergedWindowView", "PersistentDuplicatesWindowStore", "PersistentWindowStore"]

_MIN_LONG, _MAX_LONG = -(1 << 63), (1 << 63) - 1
_SEQNUM_MASK = 0x7FFFFFFF  # Kafka's window store seqnum: a 31-bit counter



def _ol(value: int) -> bytes:
    """``_orderedLong`` of ``value`` clamped to a Java long (reads may pass any bound)."""
    return _orderedLong(_MIN_LONG if value < _MIN_LONG else _MAX_LONG if value > _MAX_LONG else value)


def _encode(store, stored) -> tuple[bytes, int | None]:
    """(database value, changelog timestamp or None) of a stored value."""
    return _encodeStored(store, stored, store.timestamped)


def _decode(store, raw: bytes):
    """A stored value from its database bytes (``_encode``'s inverse)."""
    if store.timestamped:
        return ValueAndTimestamp(_storedValue(store, raw[8:]), _LONG.unpack_from(raw)[0])
    return _storedValue(store, raw)


class PersistentWindowStore(WindowStore):
    """A ``WindowStore`` whose windows live in the task's database (see the module docstring).

    Database entries under the store's prefix (times as 8 bytes in signed order):

    - ``k`` + key length (4 bytes) + key + window start -> the value's bytes (a timestamped
      store's: 8-byte timestamp + value, Kafka's ``ValueAndTimestampSerializer``): a key's windows
      are one prefix in start order, so a point read is one get, and the per-key time ranges of
      sliding windows (``_windowsOfKey``, per record) and ``fetch(key, from, to)`` one scan;
    - ``t`` + window start + key -> empty: the time index, in (start, serialized key) order, the
      order of every read over all keys: emit-final's ``fetchAll`` and
      ``all`` scan it (a get per window found), and expiry deletes the windows below the
      retention bound through it (a range delete of the index, a delete per window).

    The working set (``_data``) holds windows by ``(start, key bytes)``, as the in-memory store
    does, loaded by point reads; the windows written in the current batch are also indexed by key
    and by start (``_dirtyOfKey``, ``_dirtyAt``), so range reads merge them over the database's.

    The changelog record of a window is Kafka's (``_changelog.encodeWindowKey`` with seqnum 0, the value's
    bytes; its timestamp the value's, or the stream time for a plain store or a delete), the last
    value of each window the batch wrote. The task checkpoint keeps the observed stream time and
    the bound below which the database holds no window any more."""

    _backend: Any
    _expiredBelow = _MIN_LONG  # the database holds no window starting before it

    def _attach(self, backend) -> None:
        self._backend = backend
        self._index = None
        if not isinstance(self._data, WorkingSet):
            self._data = WorkingSet(self._load)
            self._clearDirtyIndex()

    def _resetWorkingSet(self) -> None:
        self._data = WorkingSet(self._load)
        self._clearDirtyIndex()
        self._thawed = None

    def _clearDirtyIndex(self) -> None:
        self._dirtyOfKey: dict[bytes, list[int]] = {}  # key bytes -> starts written this batch, sorted
        self._dirtyAt: dict[int, list[bytes]] = {}  # start -> key bytes written this batch
        self._dirtyStarts: list[int] = []  # the keys of _dirtyAt, sorted

    @staticmethod
    def _dataKey(kb: bytes, start: int) -> bytes:
        return b"k" + _LEN.pack(len(kb)) + kb + _orderedLong(start)

    @staticmethod
    def _indexKey(kb: bytes, start: int) -> bytes:
        return b"t" + _orderedLong(start) + kb

    def _load(self, windowKey: tuple[int, bytes]):
        if self._backend.empty:
            return None
        start, kb = windowKey
        raw = self._backend.get(self._dataKey(kb, start))
        return None if raw is None else (self._keySerde.deserialize(self._serdeTopic, kb), _decode(self, raw))

    # -- writes: into the working set only (the database gets them as pending at the flush)
    def _putBytes(self, kb: bytes, key: Any, value: Any, windowStartTimestamp: int) -> None:
        """``WindowStore._putBytes`` without its purge (expiry happens at the flush)."""
        if windowStartTimestamp > self._observed:
            self._observed = windowStartTimestamp
        if windowStartTimestamp < self._observed - self._retentionMs + self._edge:  # not _live
            log.warning("Skipping record for expired segment.")
            return
        if value is not None:
            t = type(value)
            if t not in _IMMUTABLE and (t is not ValueAndTimestamp or type(value[0]) not in _IMMUTABLE):
                value = self._freeze(value)
            value = (key, value)
        windowKey = (windowStartTimestamp, kb)
        data = self._data
        if windowKey not in data.dirty:
            self._markDirty(windowStartTimestamp, kb)
        data.write(windowKey, value)

    def _markDirty(self, start: int, kb: bytes) -> None:
        starts = self._dirtyOfKey.get(kb)
        if starts is None:
            self._dirtyOfKey[kb] = [start]
        elif starts[-1] < start:
            starts.append(start)
        else:
            bisect.insort(starts, start)
        keys = self._dirtyAt.get(start)
        if keys is None:
            self._dirtyAt[start] = [kb]
            allStarts = self._dirtyStarts
            if not allStarts or allStarts[-1] < start:
                allStarts.append(start)
            else:
                bisect.insort(allStarts, start)
        else:
            keys.append(kb)

    # -- reads
    def _fetchBytes(self, kb: bytes, windowStartTimestamp: int) -> Any:
        if windowStartTimestamp < self._observed - self._retentionMs + self._edge:
            return None  # expired: no read of the database
        return super()._fetchBytes(kb, windowStartTimestamp)

    def _keyRange(self, kb: bytes, lo: int, hi: int) -> dict[int, Any]:
        """start -> stored value of key bytes ``kb``'s windows starting in ``[lo, hi]``: the
        database's, with this batch's writes over them."""
        data = self._data
        found: dict[int, Any] = {}
        head = b"k" + _LEN.pack(len(kb)) + kb
        n = len(head)
        for dataKey, raw in self._backend.items(head + _ol(lo), head + _ol(hi), True):
            start = _fromOrderedLong(dataKey, n)
            entry = data.loaded((start, kb))
            if entry is _MISSING:
                found[start] = _decode(self, raw)
            elif entry is not None:
                found[start] = entry[1]
        starts = self._dirtyOfKey.get(kb)
        if starts:
            for start in starts[bisect.bisect_left(starts, lo):bisect.bisect_right(starts, hi)]:
                entry = data.loaded((start, kb))
                if entry is None:
                    found.pop(start, None)
                else:
                    found[start] = entry[1]
        return found

    def _windowsOfKey(self, kb: bytes, timeFrom: int, timeTo: int) -> list:
        lower = max(timeFrom, self._oldestVisible())
        if timeTo < lower:
            return []
        found = self._keyRange(kb, lower, timeTo)
        thaw = self._thaw
        return [(start, thaw(found[start])) for start in sorted(found)]

    def fetch(self, key: Any, timeFrom, timeTo=None):
        from .._duration import toEpochMillis

        kb = self._keyBytes(key)
        timeFrom = toEpochMillis(timeFrom, "timeFrom")
        if timeTo is None:
            return self._fetchBytes(kb, timeFrom)
        from ..keyvalue import KeyValue

        timeTo = toEpochMillis(timeTo, "timeTo")
        return KeyValueIterator([KeyValue(start, value) for start, value in self._windowsOfKey(kb, timeFrom, timeTo)])

    def _timeRange(self, lo: int, hi: int) -> list[tuple[int, bytes, Any, Any]]:
        """``(start, key bytes, key, stored value)`` of every window starting in ``[lo, hi]``, by
        start then key bytes: the time index's, with this batch's writes over them."""
        data, backend = self._data, self._backend
        found: dict[tuple[int, bytes], Any] = {}
        indexLo = b"t" + _ol(lo)
        for indexKey, _ in backend.items(indexLo, prefixEnd(b"t" + _ol(hi)), False):
            windowKey = (_fromOrderedLong(indexKey, 1), indexKey[9:])
            entry = data.loaded(windowKey)
            if entry is not None:
                found[windowKey] = entry  # _MISSING: read below
        allStarts = self._dirtyStarts
        for start in allStarts[bisect.bisect_left(allStarts, lo):bisect.bisect_right(allStarts, hi)]:
            for kb in self._dirtyAt[start]:
                entry = data.loaded((start, kb))
                if entry is None:
                    found.pop((start, kb), None)
                else:
                    found[(start, kb)] = entry
        out = []
        for windowKey in sorted(found):
            entry = found[windowKey]
            start, kb = windowKey
            if entry is _MISSING:
                raw = backend.get(self._dataKey(kb, start))
                if raw is None:
                    continue  # a reader's view: the index range deleted by pending writes
                entry = (self._keySerde.deserialize(self._serdeTopic, kb), _decode(self, raw))
            out.append((start, kb, entry[0], entry[1]))
        return out

    def _windowsFrom(self, timeFrom: int, timeTo: int, oldest: int) -> KeyValueIterator:
        from ..keyvalue import KeyValue

        lower = max(timeFrom, oldest)
        if timeTo < lower:
            return KeyValueIterator([])
        size, thaw = self._windowSizeMs, self._thaw
        return KeyValueIterator([KeyValue(Windowed(key, TimeWindow(start, start + size)), thaw(stored))
                                 for start, _, key, stored in self._timeRange(lower, timeTo)])

    def all(self) -> KeyValueIterator:
        return self._windowsFrom(_MIN_LONG, _MAX_LONG, self._oldestVisible())

    # -- the end of a micro-batch
    def _expiredWrites(self, bound: int, fromBound: int) -> tuple[list, tuple[bytes, bytes] | None]:
        """Deletes of the database's windows starting in ``[fromBound, bound)``: each one's data
        entry, and their time index as one range (None if there are none)."""
        lo, hi = b"t" + _ol(fromBound), b"t" + _ol(bound)
        deletes = [self._dataKey(indexKey[9:], _fromOrderedLong(indexKey, 1))
                   for indexKey, _ in self._backend.items(lo, hi, False)]
        return deletes, (lo, hi) if deletes else None

    def _flush(self, changes: _Changes, streamTime: int, logged: bool) -> None:
        prefix = self._backend.prefix
        writes, records = changes.writes, changes.records
        bound = self._observed - self._retentionMs  # no read sees a window starting before it
        if bound > self._expiredBelow:
            expired, indexRange = self._expiredWrites(bound, self._expiredBelow)
            writes += [(prefix + k, None) for k in expired]
            if indexRange is not None:
                changes.ranges.append((prefix + indexRange[0], prefix + indexRange[1]))
            self._expiredBelow = bound
        data = self._data
        for windowKey in data.dirty:
            start, kb = windowKey
            entry = dict.get(data, windowKey)
            raw, timestamp = (None, None) if entry is _ABSENT else _encode(self, entry[1])
            if start >= bound:
                writes.append((prefix + self._dataKey(kb, start), raw))
                writes.append((prefix + self._indexKey(kb, start), None if raw is None else b""))
            else:  # expired in this batch: never written (its database entry, if any, is deleted above)
                dict.pop(data, windowKey)
            if logged:  # Kafka's ChangeLogging(Timestamped)WindowBytesStore: a timestamped value without its timestamp
                if self.timestamped:
                    records.append(timestampedWindowRecord(kb, start, 0, None if raw is None else raw[8:], timestamp,
                                                           streamTime))
                else:
                    records.append(windowRecord(kb, start, 0, raw, streamTime if timestamp is None else timestamp))
        data.dirty = set()
        self._clearDirtyIndex()

    def _restoreWrites(self, prefix: bytes, records: list[ChangelogRecord], db) -> list:
        """Database writes of changelog records (a timestamped store puts the record's timestamp
        back in front of the value, Kafka's ``rawValueToTimestampedValue``)."""
        writes = []
        for record in records:
            kb, start, _ = decodeWindowKey(record.key)
            if start > self._observed:  # Kafka's segmented store: the observed time follows the restored windows
                self._observed = start
            value = restoreValueAndTimestamp(record) if self.timestamped else record.value
            writes.append((prefix + self._dataKey(kb, start), value))
            writes.append((prefix + self._indexKey(kb, start), None if value is None else b""))
        return writes

    def _restored(self) -> None:
        # the changelog still holds windows the store had expired
        bound = self._observed - self._retentionMs
        expired, indexRange = self._expiredWrites(bound, _MIN_LONG)
        if indexRange is not None:
            self._backend.write([(k, None) for k in expired])
            self._backend.deleteRange(*indexRange)
        self._expiredBelow = max(self._expiredBelow, bound)

    def _metaSnapshot(self):
        return {"observed": self._observed, "expiredBelow": self._expiredBelow}

    def _metaRestore(self, data) -> None:
        if data:
            self._observed, self._expiredBelow = data["observed"], data["expiredBelow"]

    def _evict(self, maxEntries: int) -> None:
        self._data.evict(maxEntries)

    def snapshot(self) -> dict:
        raise TypeError(f"Store {self._name} is persistent: its entries are in the task's local store, not in a snapshot")


class PersistentDuplicatesWindowStore(DuplicatesWindowStore):
    """A ``DuplicatesWindowStore`` whose values live in the task's database (see the module
    docstring).

    Database entries under the store's prefix (times as 8 bytes in signed order, the sequence
    number as 8 bytes):

    - ``k`` + key length (4 bytes) + key + timestamp + seq -> the value's bytes: a key's values are
      one prefix in (timestamp, put) order, loaded together on the key's first access (its live
      ones: a join's lookup window covers most of them), as the in-memory store keeps a list per key;
    - ``t`` + timestamp + key length + key + seq -> empty: the time index, for ``fetchAll``/``all``
      and for expiry (the values below the retention bound, a range delete of the index and a
      delete per value).

    ``_seq`` counts every put, as Kafka's ``ChangeLoggingWindowBytesStore`` counts its seqnum (a
    null or expired put too): a value's seq orders the values of one key and timestamp, and its
    changelog record is Kafka's (``_changelog.encodeWindowKey`` with ``seq & 0x7FFFFFFF``, the value's
    bytes, the put's timestamp), one per put in put order, a null put a tombstone and an expired
    one its value, as Kafka logs them. Unlike Kafka's counter, which restarts at 0 with each store
    instance, ``_seq`` goes on from the task checkpoint, so a restored store's values keep their
    order with later ones. The checkpoint also keeps the observed stream time and the expiry bound."""

    _backend: Any
    _expiredBelow = _MIN_LONG  # the database holds no value older than it

    def _attach(self, backend) -> None:
        self._backend = backend
        if not isinstance(self._byKey, WorkingSet):
            self._byKey = WorkingSet(self._load)
            self._log: list = []

    def _resetWorkingSet(self) -> None:
        self._byKey = WorkingSet(self._load)
        self._log = []
        self._thawed = None

    @staticmethod
    def _dataKey(kb: bytes, timestamp: int, seq: int) -> bytes:
        return b"k" + _LEN.pack(len(kb)) + kb + _orderedLong(timestamp) + _ULONG.pack(seq)

    @staticmethod
    def _indexKey(kb: bytes, timestamp: int, seq: int) -> bytes:
        return b"t" + _orderedLong(timestamp) + _LEN.pack(len(kb)) + kb + _ULONG.pack(seq)

    def _load(self, kb: bytes):
        """The live values of key bytes ``kb``, as the in-memory store's list."""
        if self._backend.empty:
            return None
        head = b"k" + _LEN.pack(len(kb)) + kb
        n = len(head)
        key = None
        entries = []
        for dataKey, raw in self._backend.items(head + _ol(self._observed - self._retentionMs + 1), prefixEnd(head),
                                                False):
            if key is None:
                key = self._keySerde.deserialize(self._serdeTopic, kb)
            entries.append((_fromOrderedLong(dataKey, n), _ULONG.unpack_from(dataKey, n + 8)[0], key,
                            _decode(self, raw)))
        return entries or None

    def _put(self, kb: bytes, key: Any, value: Any, timestamp: int) -> None:
        """``DuplicatesWindowStore._put``, every put counted and logged as Kafka logs it."""
        self._seq += 1
        seq = self._seq
        if value is None and self._persistent:
            self._log.append((kb, timestamp, seq, None, False))  # RocksDBWindowStore skips it; its logger does not
            return
        if timestamp > self._observed:
            self._observed = timestamp
        if self._expired(timestamp):
            log.warning("Skipping record for expired segment.")
            if self.droppedCounter is not None:
                self.droppedCounter()
            self._log.append((kb, timestamp, seq, None if value is None else self._freeze(value), False))
            return
        if value is None:
            self._log.append((kb, timestamp, seq, None, False))
            return
        if type(value) not in _IMMUTABLE:
            value = self._freeze(value)
        entry = (timestamp, seq, key, value)
        entries = self._byKey.get(kb)
        if not entries:
            self._byKey[kb] = [entry]
        elif entries[-1][0] <= timestamp:
            entries.append(entry)
        else:
            bisect.insort(entries, entry)  # (timestamp, seq) are unique: key and value are never compared
        self._log.append((kb, timestamp, seq, value, True))
        if self._observed - self._purgedAt >= max(1, self._retentionMs // 2):
            self._purge()

    def _purge(self) -> None:
        """Drop the loaded values no read can see any more (the database's go at the flush)."""
        lowest = self._observed - self._retentionMs + 1
        byKey = self._byKey
        for kb, entries in list(dict.items(byKey)):
            if type(entries) is list and entries and entries[0][0] < lowest:
                del entries[:bisect.bisect_left(entries, (lowest,))]
                if not entries:
                    dict.__setitem__(byKey, kb, _ABSENT)
        self._purgedAt = self._observed

    def fetchAll(self, timeFrom: int, timeTo: int) -> KeyValueIterator:
        """``DuplicatesWindowStore.fetchAll`` over the keys with a value in the range: those of
        the time index and of this batch's puts."""
        from ..keyvalue import KeyValue

        lowest = max(timeFrom, self._observed - self._retentionMs + 1)
        if timeTo < lowest:
            return KeyValueIterator([])
        keys = set()
        for indexKey, _ in self._backend.items(b"t" + _ol(lowest), prefixEnd(b"t" + _ol(timeTo)), False):
            n = _LEN.unpack_from(indexKey, 9)[0]
            keys.add(indexKey[13:13 + n])
        keys.update(kb for kb, timestamp, _, _, stored in self._log if stored and lowest <= timestamp <= timeTo)
        size, found = self._windowSizeMs, []
        for kb in keys:
            found += [(e[0], kb, e[1], e[2], e[3]) for e in self._fetchEntries(kb, timeFrom, timeTo)]
        return KeyValueIterator([KeyValue(Windowed(key, TimeWindow(ts, ts + size)), self._thaw(value))
                                 for ts, _, _, key, value in sorted(found, key=lambda e: e[:3])])

    def _flush(self, changes: _Changes, streamTime: int, logged: bool) -> None:
        prefix = self._backend.prefix
        writes, records = changes.writes, changes.records
        bound = self._observed - self._retentionMs + 1  # no read sees a value older than it
        if bound > self._expiredBelow:
            lo, hi = b"t" + _ol(self._expiredBelow), b"t" + _ol(bound)
            expired = [self._expiredDataKey(indexKey) for indexKey, _ in self._backend.items(lo, hi, False)]
            if expired:
                writes += [(prefix + k, None) for k in expired]
                changes.ranges.append((prefix + lo, prefix + hi))
            self._expiredBelow = bound
        for kb, timestamp, seq, stored, kept in self._log:
            raw, valueTimestamp = (None, None) if stored is None else _encode(self, stored)
            if kept and timestamp >= bound:
                writes.append((prefix + self._dataKey(kb, timestamp, seq), raw))
                writes.append((prefix + self._indexKey(kb, timestamp, seq), b""))
            if logged:  # Kafka's ChangeLogging(Timestamped)WindowBytesStore, as for PersistentWindowStore
                if self.timestamped:
                    records.append(timestampedWindowRecord(kb, timestamp, seq & _SEQNUM_MASK,
                                                           None if raw is None else raw[8:], valueTimestamp, timestamp))
                else:
                    records.append(windowRecord(kb, timestamp, seq & _SEQNUM_MASK, raw, timestamp))
        self._log = []
        self._byKey.dirty = set()

    @classmethod
    def _expiredDataKey(cls, indexKey: bytes) -> bytes:
        n = _LEN.unpack_from(indexKey, 9)[0]
        return cls._dataKey(indexKey[13:13 + n], _fromOrderedLong(indexKey, 1), _ULONG.unpack_from(indexKey, 13 + n)[0])

    def _restoreWrites(self, prefix: bytes, records: list[ChangelogRecord], db) -> list:
        writes = []
        for record in records:
            kb, timestamp, seqnum = decodeWindowKey(record.key)
            value = restoreValueAndTimestamp(record) if self.timestamped else record.value
            writes.append((prefix + self._dataKey(kb, timestamp, seqnum), value))
            writes.append((prefix + self._indexKey(kb, timestamp, seqnum), None if value is None else b""))
        return writes

    def _restored(self) -> None:
        # the changelog still holds the values the store had expired, and its expired puts
        bound = self._observed - self._retentionMs + 1
        lo, hi = b"t" + _ol(_MIN_LONG), b"t" + _ol(bound)
        expired = [self._expiredDataKey(indexKey) for indexKey, _ in self._backend.items(lo, hi, False)]
        if expired:
            self._backend.write([(k, None) for k in expired])
            self._backend.deleteRange(lo, hi)
        self._expiredBelow = max(self._expiredBelow, bound)

    def _metaSnapshot(self):
        return {"observed": self._observed, "seq": self._seq, "expiredBelow": self._expiredBelow}

    def _metaRestore(self, data) -> None:
        if data:
            self._observed, self._seq, self._expiredBelow = data["observed"], data["seq"], data["expiredBelow"]

    def _evict(self, maxEntries: int) -> None:
        self._byKey.evict(maxEntries)

    def snapshot(self) -> dict:
        raise TypeError(f"Store {self._name} is persistent: its entries are in the task's local store, not in a snapshot")


registerPersistent(WindowStore, PersistentWindowStore)
registerPersistent(DuplicatesWindowStore, PersistentDuplicatesWindowStore)


# ---------------------------------------------------------------------------------------------
# interactive queries over several tasks
class _MergedView:
    def __init__(self, stores: list) -> None:
        self._stores = stores

    def name(self) -> str:
        return self._stores[0].name() if self._stores else ""


class MergedWindowView(_MergedView):
    """The window stores of several tasks read as one (interactive queries over every task,
    Kafka's ``ReadOnlyWindowStore`` reads): a key's windows from the tasks that have them, scans
    over all keys merged by window start, then serialized key (a duplicates store's values of one
    key and time stay in put order)."""

    def windowSize(self) -> int:
        return self._stores[0].windowSize() if self._stores else 0

    def fetch(self, key, timeFrom, timeTo=None):
        """``fetch(key, time)``: the value of that window or None; ``fetch(key, from, to)``:
        ``KeyValue(start, value)`` by start."""
        if timeTo is None:
            for store in self._stores:
                found = store.fetch(key, timeFrom)
                if found is not None:
                    return found
            return None
        found = [kv for store in self._stores for kv in store.fetch(key, timeFrom, timeTo)]
        found.sort(key=lambda kv: kv.key)  # stable: put order within a time
        return KeyValueIterator(found)

    def backwardFetch(self, key, timeFrom, timeTo) -> KeyValueIterator:
        return KeyValueIterator(list(self.fetch(key, timeFrom, timeTo))[::-1])

    def _merged(self, method: str, *args) -> list:
        entries = []
        for store in self._stores:
            keyBytes = store._keyBytes
            entries += [((kv.key.window().start(), keyBytes(kv.key.key())), kv) for kv in getattr(store, method)(*args)]
        entries.sort(key=lambda e: e[0])
        return [kv for _, kv in entries]

    def fetchAll(self, timeFrom, timeTo) -> KeyValueIterator:
        from .._duration import toEpochMillis

        return KeyValueIterator(self._merged("fetchAll", toEpochMillis(timeFrom, "timeFrom"), toEpochMillis(timeTo, "timeTo")))

    def backwardFetchAll(self, timeFrom, timeTo) -> KeyValueIterator:
        return KeyValueIterator(list(self.fetchAll(timeFrom, timeTo))[::-1])

    def all(self) -> KeyValueIterator:
        return KeyValueIterator(self._merged("all"))

    def backwardAll(self) -> KeyValueIterator:
        return KeyValueIterator(self._merged("all")[::-1])


class MergedSessionView(_MergedView):
    """The session stores of several tasks read as one (Kafka's ``ReadOnlySessionStore`` reads):
    a key's sessions by end, then start descending; ``findSessionsByEnd`` by end, serialized key,
    start descending."""

    def _byKey(self, method: str, *args) -> list:
        found = [kv for store in self._stores for kv in getattr(store, method)(*args)]
        found.sort(key=lambda kv: (kv.key.window().end(), -kv.key.window().start()))
        return found

    def fetch(self, key) -> KeyValueIterator:
        return KeyValueIterator(self._byKey("fetch", key))

    def backwardFetch(self, key) -> KeyValueIterator:
        return KeyValueIterator(self._byKey("fetch", key)[::-1])

    def findSessions(self, key, earliestSessionEndTime, latestSessionStartTime) -> KeyValueIterator:
        return KeyValueIterator(self._byKey("findSessions", key, earliestSessionEndTime, latestSessionStartTime))

    def backwardFindSessions(self, key, earliestSessionEndTime, latestSessionStartTime) -> KeyValueIterator:
        return KeyValueIterator(self._byKey("findSessions", key, earliestSessionEndTime, latestSessionStartTime)[::-1])

    def fetchSession(self, key, sessionStartTime: int, sessionEndTime: int):
        for store in self._stores:
            found = store.fetchSession(key, sessionStartTime, sessionEndTime)
            if found is not None:
                return found
        return None

    def findSessionsByEnd(self, earliestSessionEndTime: int, latestSessionEndTime: int) -> KeyValueIterator:
        entries = []
        for store in self._stores:
            keyBytes = store._keyBytes
            entries += [((kv.key.window().end(), keyBytes(kv.key.key()), -kv.key.window().start()), kv)
                        for kv in store.findSessionsByEnd(earliestSessionEndTime, latestSessionEndTime)]
        entries.sort(key=lambda e: e[0])
        return KeyValueIterator([kv for _, kv in entries])
