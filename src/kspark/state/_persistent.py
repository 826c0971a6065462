"""Persistent stores: a task's stores kept in its local RocksDB (``kspark.state._rocksdb``) with a
changelog topic each, as Kafka Streams keeps them (``RocksDBStore`` under ``ChangeLogging*Store``).

The Spark host makes a task's stores persistent (:func:`makePersistent`); TopologyTestDriver keeps
the in-memory stores of ``kspark.state._stores``. A persistent store is the same class with its
entries in a *working set* (:class:`WorkingSet`): a dict of the entries a micro-batch touched,
loaded from the database on first access and written back, as pending, when the batch ends
(:meth:`PersistentTaskState.flush`). So a micro-batch reads and writes the keys it touches, and
never the whole store; every read or write the store's own code does goes through the working
set, so the semantics are the in-memory store's, line for line.

Byte layouts are Kafka Streams' changelog layouts (a store's database entries are its changelog
records): a key-value store's key is the serialized key and its value the serialized value; a
timestamped store's value is the 8-byte big-endian timestamp followed by the value
(``ValueAndTimestampSerializer``). A restore therefore writes the changelog records as they are.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from itertools import islice
from typing import Any, Callable

from ._changelog import (ChangelogRecord, changelogTopic, changelogTopicConfig, decodeSessionKey, keyValueRecord,
                         restoreValueAndTimestamp, sessionRecord, timestampedKeyValueRecord)
from ._rocksdb import _STORE_META, TaskStateDB, copyStoreFiles, prefixEnd, storePrefix
from ._stores import (_IMMUTABLE, KeyValueIterator, KeyValueStore, SessionStore, TimestampedKeyValueStore,
                      ValueAndTimestamp, _Frozen)

log = logging.getLogger("kspark.state")

__all__ = ["CHANGELOG_HEADER", "PersistentTaskState", "WorkingSet", "changelogTopic", "makePersistent"]

# The header kspark puts on every changelog record: "<checkpoint id>:<micro-batch id>" (UTF-8).
# A restore skips the records of the micro-batch being replayed and of later ones: a batch whose
# records reached the changelog (its Kafka transaction or its local append committed) but that
# Spark had not committed when it stopped is replayed, and must start from the batch before it.
# Kafka Streams ignores headers it does not know when it restores a changelog.
CHANGELOG_HEADER = "kspark.checkpoint"

_ABSENT = object()  # a working-set entry: the key is known to have no value
_MISSING = object()
_LONG = struct.Struct(">q")
_ULONG = struct.Struct(">Q")
_LEN = struct.Struct(">I")
_SESSION = struct.Struct(">qqI")  # a packed session: end, start, aggregate length
_SIGN = 1 << 63


class WorkingSet(dict):
    """The entries of one persistent store that the task has touched, by store key (a dict, so
    the in-memory store's code runs unchanged): an access to a key not loaded yet reads it from
    the database (``load(key)``: the entry, or None if absent); every write marks the key dirty.

    Only ``get``, ``[]``, ``in``, ``pop`` and assignment are meaningful; iteration and ``len``
    cover the loaded entries only (the persistent stores override every read that scans).
    """

    __slots__ = ("load", "dirty")

    def __init__(self, load: Callable[[Any], Any]) -> None:
        super().__init__()
        self.load = load
        self.dirty: set = set()

    def get(self, key, default=None):
        entry = dict.get(self, key, _MISSING)
        if entry is _MISSING:
            entry = self.load(key)
            dict.__setitem__(self, key, _ABSENT if entry is None else entry)
            return default if entry is None else entry
        return default if entry is _ABSENT else entry

    def __getitem__(self, key):
        entry = self.get(key)
        if entry is None:
            raise KeyError(key)
        return entry

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __setitem__(self, key, entry) -> None:
        dict.__setitem__(self, key, entry)
        self.dirty.add(key)

    def write(self, key, entry) -> None:
        """Set ``key``'s entry (None: delete it) without loading the old one."""
        dict.__setitem__(self, key, _ABSENT if entry is None else entry)
        self.dirty.add(key)

    def pop(self, key, default=None):
        entry = self.get(key)
        if entry is None:
            return default
        self.write(key, None)
        return entry

    def loaded(self, key):
        """The entry of ``key`` if loaded: an entry, None (known absent) or ``_MISSING``."""
        entry = dict.get(self, key, _MISSING)
        return None if entry is _ABSENT else entry

    def evict(self, maxEntries: int) -> None:
        """Forget the oldest-loaded clean entries beyond ``maxEntries`` (call with nothing dirty)."""
        excess = len(self) - maxEntries
        if excess > 0:
            for key in list(islice(iter(self), excess + maxEntries // 4)):
                dict.__delitem__(self, key)


def _storedValue(store, raw: bytes):
    """A value read back from its serde's bytes as an in-memory store holds it (``_freeze``): the
    value itself if of an immutable type, else the bytes (every read deserializes a new object)."""
    value = store._valueSerde.deserialize(store._serdeTopic, raw)
    return value if type(value) in _IMMUTABLE else _Frozen(raw)


def _valueBytes(store, value) -> bytes:
    """The serde's bytes of a stored value (``_Frozen`` bytes as they are)."""
    if type(value) is _Frozen:
        return bytes(value)
    try:
        data = store._valueSerde.serialize(store._serdeTopic, value)
    except Exception as e:
        from ..errors import StreamsException

        raise StreamsException(f"Store {store._name}: the value serde {type(store._valueSerde).__name__} cannot "
                               f"serialize {value!r} ({type(e).__name__}: {e})") from e
    return b"" if data is None else bytes(data)


def _encodeStored(store, stored, timestamped: bool) -> tuple[bytes, int | None]:
    """(database value, changelog timestamp or None) of a stored value: a timestamped store's
    ``ValueAndTimestamp`` as ``ValueAndTimestampSerializer`` writes it (8-byte big-endian
    timestamp, then the value), any other value as its serde's bytes."""
    if type(stored) is ValueAndTimestamp:
        if timestamped:
            return _LONG.pack(stored[1]) + _valueBytes(store, stored[0]), stored[1]
        return _valueBytes(store, stored), stored[1]
    return _valueBytes(store, stored), None


def _orderedLong(value: int) -> bytes:
    """8 bytes whose unsigned order is the signed order of ``value`` (offset by 2**63)."""
    return _ULONG.pack(value + _SIGN)


def _fromOrderedLong(data: bytes, offset: int = 0) -> int:
    return _ULONG.unpack_from(data, offset)[0] - _SIGN


class _Changes:
    """What a flush collects: database writes (full keys) and changelog records."""

    __slots__ = ("writes", "ranges", "records")

    def __init__(self) -> None:
        self.writes: list[tuple[bytes, bytes | None]] = []
        self.ranges: list[tuple[bytes, bytes]] = []  # [lo, hi) to delete before the writes
        self.records: list = []  # ChangelogRecords, or (key, value, timestamp[, headers]) tuples


class PersistentKeyValueStore(KeyValueStore):
    """A ``KeyValueStore`` whose entries live in the task's database (see the module docstring).

    Database entry: the serialized key -> the serialized value (a ``TimestampedKeyValueStore``:
    8-byte big-endian timestamp + serialized value). Values read back are kept as their serde's
    bytes and deserialized by each read, as every mutable value of an in-memory store is."""

    _backend: "_Backend"
    _timestamped = False

    def _attach(self, backend: "_Backend") -> None:
        self._backend = backend
        self._sorted = None
        if not isinstance(self._data, WorkingSet):
            self._data = WorkingSet(self._load)

    def _resetWorkingSet(self) -> None:
        self._data = WorkingSet(self._load)
        self._thawed = None

    # -- entries <-> bytes
    def _load(self, kb: bytes):
        if self._backend.empty:
            return None
        raw = self._backend.get(kb)
        return None if raw is None else self._decode(kb, raw)

    def _prefill(self, keys: list) -> int:
        """Cache fill: load the entries of ``keys`` (store key bytes; None and repeats allowed)
        that the working set has not loaded yet, with one RocksDB ``MultiGet`` instead of a
        point read at each key's first access. Returns how many keys were read.

        Exact by construction: a key gets the entry its first access would load (``_load``: the
        same database, the same decoding), and keys already in the working set (loaded, or
        written by this batch) are left alone. Call it before the batch writes the database,
        i.e. after the store is open (pending writes reconciled or restored) and before the flush."""
        data = self._data
        if self._backend.empty or type(data) is not WorkingSet:
            return 0
        missing = [kb for kb in dict.fromkeys(keys) if kb is not None and dict.get(data, kb, _MISSING) is _MISSING]
        if not missing:
            return 0
        decode, setEntry = self._decode, dict.__setitem__
        for kb, raw in zip(missing, self._backend.multiGet(missing)):
            setEntry(data, kb, _ABSENT if raw is None else decode(kb, raw))
        return len(missing)

    def _decode(self, kb: bytes, raw: bytes) -> tuple:
        key = self._keySerde.deserialize(self._serdeTopic, kb)
        if self._timestamped:
            return key, ValueAndTimestamp(_storedValue(self, raw[8:]), _LONG.unpack_from(raw)[0])
        return key, _storedValue(self, raw)

    def _encode(self, stored) -> tuple[bytes, int | None]:
        return _encodeStored(self, stored, self._timestamped)

    def _metaSnapshot(self):
        """What the task checkpoint keeps of this store (its entries are in the database)."""
        return None

    def _evict(self, maxEntries: int) -> None:
        self._data.evict(maxEntries)

    def _importSnapshot(self, data) -> None:
        """Write the entries of an in-memory store's ``snapshot()`` (a checkpoint of a kspark that
        kept stores there) as this batch's changes."""
        for kb, entry in data.items():
            self._data.write(kb, entry)

    def _metaRestore(self, data) -> None:
        pass

    def _restored(self) -> None:
        """After a restore wrote the changelog's records (and the checkpoint's meta is back)."""

    def _flush(self, changes: _Changes, streamTime: int, logged: bool) -> None:
        """This batch's changes: database writes, and changelog records as Kafka's
        ``ChangeLogging(Timestamped)KeyValueBytesStore`` logs them: the value's bytes (a
        timestamped store's without its timestamp, which becomes the record's timestamp); other
        records (and deletes) carry the task's stream time, kspark's record context at a commit."""
        from ..serialization import _LongSerde

        data, prefix = self._data, self._backend.prefix
        timestamped = self._timestamped
        # Fast path, a timestamped store of Serdes.Long() values (count): an int value's bytes are
        # struct ">q" (the serde's own packing), the database value and the changelog record are
        # built inline; the same bytes and records as the general path below, which takes every
        # other value (and an int out of range, whose error it raises). Both: tests/unit/test_persistent_stores.py
        longValues = timestamped and type(self._valueSerde) is _LongSerde
        writes, records, pack = changes.writes, changes.records, _LONG.pack
        # In key order: RocksDB's memtable (a skip list) inserts a key near the one before it faster
        # than at a random place, which pays for the sort (bench/README.md round 38); and the
        # changelog records come in the same order in every run, not in the set's hash order,
        # which changes with each process's hash seed. The keys are distinct: any order leaves
        # the same entries.
        for kb in sorted(data.dirty):
            entry = dict.get(data, kb)
            if entry is _ABSENT:
                writes.append((prefix + kb, None))
                if logged:
                    records.append(keyValueRecord(kb, None, streamTime))
                continue
            stored = entry[1]
            if longValues and type(stored) is ValueAndTimestamp and type(stored[0]) is int:
                try:
                    valueBytes = pack(stored[0])
                except struct.error:
                    pass
                else:
                    writes.append((prefix + kb, pack(stored[1]) + valueBytes))
                    if logged:
                        records.append((kb, valueBytes, stored[1]))  # a ChangelogRecord's fields
                    continue
            raw, timestamp = self._encode(stored)
            changes.writes.append((prefix + kb, raw))
            if not logged:
                continue
            if timestamped:
                changes.records.append(timestampedKeyValueRecord(kb, raw[8:], timestamp, streamTime))
            else:
                changes.records.append(keyValueRecord(kb, raw, streamTime if timestamp is None else timestamp))
        data.dirty = set()

    @classmethod
    def _restoreWrites(cls, prefix: bytes, records: list[ChangelogRecord], db) -> list:
        """Database writes of changelog records, in offset order (a timestamped store puts the
        record's timestamp back in front of the value: Kafka's ``rawValueToTimestampedValue``)."""
        if cls._timestamped:
            return [(prefix + r.key, restoreValueAndTimestamp(r)) for r in records]
        return [(prefix + r.key, r.value) for r in records]

    # -- KeyValueStore: writes without reading the old value, scans merged with the working set
    def put(self, key: Any, value: Any) -> None:
        kb = self._keyBytes(key)
        self._data.write(kb, None if value is None else (key, self._freeze(value)))

    def delete(self, key: Any) -> Any:
        kb = self._keyBytes(key)
        entry = self._data.get(kb)
        if entry is None:
            return None
        self._data.write(kb, None)
        return self._thaw(entry[1])

    def _scan(self, lo: bytes | None, hi: bytes | None, hiInclusive: bool) -> list[tuple[bytes, Any, Any]]:
        """``(key bytes, key, stored value)`` of the store's entries in ``[lo, hi]`` (``[lo, hi)``
        unless ``hiInclusive``; None: open), in key order: the database's, with this batch's
        changes over them."""
        backend, data = self._backend, self._data
        found: dict[bytes, Any] = {}
        for kb, raw in backend.items(lo, hi, hiInclusive):
            entry = data.loaded(kb)
            found[kb] = entry if entry is not _MISSING else raw
        for kb in data.dirty:
            if (lo is None or kb >= lo) and (hi is None or kb < hi or (hiInclusive and kb == hi)):
                found[kb] = data.loaded(kb)
        out = []
        for kb in sorted(found):
            entry = found[kb]
            if entry is None:
                continue
            if type(entry) is bytes:
                entry = self._decode(kb, entry)
            out.append((kb, entry[0], entry[1]))
        return out

    def _entriesIterator(self, entries) -> KeyValueIterator:
        from ..keyvalue import KeyValue

        thaw = self._thaw
        return KeyValueIterator([KeyValue(key, thaw(stored)) for _, key, stored in entries])

    def range(self, fromKey: Any = None, toKey: Any = None) -> KeyValueIterator:
        bounds = self._bounds(fromKey, toKey)
        return KeyValueIterator([]) if bounds is None else self._entriesIterator(self._scan(*bounds, True))

    def reverseRange(self, fromKey: Any = None, toKey: Any = None) -> KeyValueIterator:
        bounds = self._bounds(fromKey, toKey)
        return KeyValueIterator([]) if bounds is None else self._entriesIterator(self._scan(*bounds, True)[::-1])

    def prefixScan(self, prefix: Any, prefixKeySerializer) -> KeyValueIterator:
        if prefix is None or prefixKeySerializer is None:
            raise TypeError("prefix and prefixKeySerializer cannot be null")
        prefixBytes = bytes(prefixKeySerializer.serialize(self._serdeTopic, prefix))
        if (not self._persistent or self._cachingLayer) and not prefixBytes.rstrip(b"\xff"):
            raise IndexError(f"prefix {prefixBytes.hex() or '(empty)'} of store {self._name} cannot be incremented")
        return self.prefixScanBytes(prefixBytes)

    def prefixScanBytes(self, prefix: bytes) -> KeyValueIterator:
        return self._entriesIterator(self._scan(prefix, prefixEnd(prefix) if prefix else None, False))

    def _keysBetween(self, lo: bytes | None, hi: bytes | None, hiInclusive: bool = True) -> list[bytes]:
        return [kb for kb, _, _ in self._scan(lo, hi, hiInclusive)]

    def _iterator(self, keys) -> KeyValueIterator:
        from ..keyvalue import KeyValue

        data, thaw = self._data, self._thaw
        return KeyValueIterator([KeyValue(k, thaw(v)) for k, v in map(data.__getitem__, keys)])

    def approximateNumEntries(self) -> int:
        return len(self._scan(None, None, True))

    def snapshot(self) -> dict:
        raise TypeError(f"Store {self._name} is persistent: its entries are in the task's local store, not in a snapshot")


class PersistentTimestampedKeyValueStore(PersistentKeyValueStore, TimestampedKeyValueStore):
    """A ``TimestampedKeyValueStore`` in the task's database (see ``PersistentKeyValueStore``)."""

    _timestamped = True


class PersistentSessionStore(SessionStore):
    """A ``SessionStore`` whose sessions live in the task's database (see the module docstring).

    Database entries under the store's prefix (timestamps as 8 bytes in signed order):

    - ``k`` + key -> the key's sessions packed, each ``end (8) start (8) length (4) aggregate``:
      a key's first access in a micro-batch is one point read (absent keys are answered by
      RocksDB's bloom filters);
    - ``t`` + end + key length (4) + key + start -> empty: the time index, for expiry (ST-6/ST-7:
      the segments below the retention bound go, without changelog records, as Kafka drops a
      segment) and for ``findSessionsByEnd`` (emit-final).

    The changelog record of a session is Kafka's (``SessionKeySchema``: key + 8-byte end + 8-byte
    start, big-endian; the aggregate's bytes). The store's observed stream time and expiry point
    are in the task checkpoint."""

    _backend: "_Backend"

    def _attach(self, backend: "_Backend") -> None:
        self._backend = backend
        self._byEnd = None
        if not isinstance(self._sessions, WorkingSet):
            self._resetWorkingSet()

    def _resetWorkingSet(self) -> None:
        self._sessions = WorkingSet(self._load)
        self._segments = {}
        # this batch's changes: (key bytes, end, start) -> aggregate, None for a delete
        self._changes: dict = {}
        # key bytes -> its (end, start) in the database (or pending), for the loaded keys: a
        # session created and merged away in one batch leaves no record (P1 extends a session
        # record after record: a delete of the old one each time)
        self._persisted: dict[bytes, set] = {}
        self._thawed = None
        # changes of sessions that expired within this batch: logged, not stored (Kafka's
        # ChangeLoggingSessionBytesStore logs every put and remove, expired or not)
        self._expiredChanges: dict = {}

    @staticmethod
    def _indexKey(kb: bytes, end: int, start: int) -> bytes:
        return b"t" + _orderedLong(end) + _LEN.pack(len(kb)) + kb + _orderedLong(start)

    @staticmethod
    def _unpack(raw: bytes) -> list[tuple[int, int, bytes]]:
        out, pos, n = [], 0, len(raw)
        while pos < n:
            end, start, size = _SESSION.unpack_from(raw, pos)
            pos += 20
            out.append((end, start, raw[pos:pos + size]))
            pos += size
        return out

    @staticmethod
    def _pack(sessions) -> bytes:
        return b"".join(_SESSION.pack(end, start, len(raw)) + raw for end, start, raw in sessions)

    def _load(self, kb: bytes):
        if self._backend.empty:
            return None
        raw = self._backend.get(b"k" + kb)
        if raw is None:
            return None
        live = self._purgedBelow * self._segmentInterval  # expired, deleted from the database at the batch's end
        key = self._keySerde.deserialize(self._serdeTopic, kb)
        sessions = [(end, start, key, _storedValue(self, aggregate)) for end, start, aggregate in self._unpack(raw)
                    if end >= live]
        sessions.sort(key=lambda e: (e[0], -e[1]))  # key lookup order: end, then start descending
        self._persisted[kb] = {(e[0], e[1]) for e in sessions}
        return sessions or None

    def _store(self, end: int, kb: bytes, start: int, key, aggregate) -> None:
        super()._store(end, kb, start, key, aggregate)
        self._changes[(kb, end, start)] = aggregate

    def _delete(self, end: int, kb: bytes, start: int) -> None:
        super()._delete(end, kb, start)
        if (end, start) in self._persisted.get(kb, ()):
            self._changes[(kb, end, start)] = None
        else:  # created in this batch: nothing to undo in the database or the changelog
            self._changes.pop((kb, end, start), None)

    def _purge(self, below: int) -> None:
        """Expire every session of the segments below ``below`` (ST-6/ST-7): the touched keys' now
        (the in-memory store's way), the database's with the batch's other writes (``_flush``);
        a loaded key's expired sessions are invisible to every read until then. Expiry writes no
        changelog record, as Kafka drops a segment."""
        super()._purge(below)
        bound = below * self._segmentInterval
        if any(k[1] < bound for k in self._changes):
            self._expiredChanges.update((k, v) for k, v in self._changes.items() if k[1] < bound)
            self._changes = {k: v for k, v in self._changes.items() if k[1] >= bound}

    def findSessionsByEnd(self, earliestSessionEndTime: int, latestSessionEndTime: int) -> KeyValueIterator:
        lower = max(earliestSessionEndTime, self._purgedBelow * self._segmentInterval)  # live segments only
        if not self._persistent:
            lower = max(lower, self._minLiveEnd())
        found = set()
        for indexKey, _ in self._backend.items(b"t" + _orderedLong(lower), b"t" + _orderedLong(latestSessionEndTime),
                                                True):
            if _fromOrderedLong(indexKey, 1) > latestSessionEndTime:
                continue
            n = _LEN.unpack_from(indexKey, 9)[0]
            found.add((_fromOrderedLong(indexKey, 1), indexKey[13:13 + n], _fromOrderedLong(indexKey, 13 + n)))
        for (kb, end, start), aggregate in self._changes.items():
            if lower <= end <= latestSessionEndTime:
                if aggregate is None:
                    found.discard((end, kb, start))
                else:
                    found.add((end, kb, start))
        return self._iterator(self._entry(end, kb, start) for end, kb, start in sorted(found, key=lambda e: (e[0], e[1], -e[2])))

    _expiredFrom = -(1 << 63)  # the database's time index holds nothing below it (pending included)

    def _expiredKeys(self, fromStart: bool = False) -> tuple[set[bytes], tuple[bytes, bytes] | None]:
        """The keys with sessions in the database below the expiry point, and the time index's
        range to delete (None: nothing expired). Scans from where the last expiry ended (the
        index below it is deleted, with the point tombstones of merged sessions RocksDB would
        otherwise skip again at every flush), or from the start after a restore."""
        bound = self._purgedBelow * self._segmentInterval
        start = -(1 << 63) if fromStart else self._expiredFrom
        if bound <= start:
            return set(), None
        lo, hi = b"t" + _orderedLong(start), b"t" + _orderedLong(bound)
        keys = set()
        for indexKey, _ in self._backend.items(lo, hi, False):
            n = _LEN.unpack_from(indexKey, 9)[0]
            keys.add(indexKey[13:13 + n])
        self._expiredFrom = bound
        return keys, (lo, hi)

    def _packed(self, kb: bytes) -> bytes | None:
        """The database value of ``kb``: its live sessions (the working set's, loaded if need be)."""
        bound = self._purgedBelow * self._segmentInterval
        sessions = self._sessions.get(kb) or ()
        live = [(end, start, _valueBytes(self, aggregate)) for end, start, _, aggregate in sessions if end >= bound]
        return self._pack(live) if live else None

    def _flush(self, changes: _Changes, streamTime: int, logged: bool) -> None:
        prefix = self._backend.prefix
        writes, records = changes.writes, changes.records
        keys, indexRange = self._expiredKeys()
        if indexRange is not None:
            changes.ranges.append((prefix + indexRange[0], prefix + indexRange[1]))
        for (kb, end, start), aggregate in self._changes.items():
            keys.add(kb)
            writes.append((prefix + self._indexKey(kb, end, start), None if aggregate is None else b""))
            if logged:  # Kafka's ChangeLoggingSessionBytesStore: SessionKeySchema key, the value's bytes
                raw = None if aggregate is None else _valueBytes(self, aggregate)
                records.append(sessionRecord(kb, start, end, raw, streamTime))
        if logged:
            for (kb, end, start), aggregate in self._expiredChanges.items():
                records.append(sessionRecord(kb, start, end, None if aggregate is None else _valueBytes(self, aggregate),
                                             streamTime))
        self._expiredChanges = {}
        for kb in keys:
            writes.append((prefix + b"k" + kb, self._packed(kb)))
        persisted = self._persisted
        for (kb, end, start), aggregate in self._changes.items():
            if aggregate is None:
                persisted.get(kb, set()).discard((end, start))
            else:
                persisted.setdefault(kb, set()).add((end, start))
        self._changes = {}
        self._segments = {}
        self._sessions.dirty = set()

    def _restoreWrites(self, prefix: bytes, records: list[ChangelogRecord], db) -> list:
        """Database writes of changelog records: each key's packed sessions, read from ``db`` and
        updated in offset order, and the time index. The observed stream time follows the
        sessions' ends, as Kafka's segmented store's does on restore (sessions of the segments
        it expires go in ``_restored``)."""
        cls = type(self)
        byKey: dict[bytes, dict] = {}
        writes = []
        for key, value, _, _ in records:
            kb, start, end = decodeSessionKey(key)
            if end > self._observed:
                self._observed = end
            sessions = byKey.get(kb)
            if sessions is None:
                raw = db.get(prefix + b"k" + kb)
                sessions = byKey[kb] = {} if raw is None else {(e, s): a for e, s, a in cls._unpack(raw)}
            if value is None:
                sessions.pop((end, start), None)
            else:
                sessions[(end, start)] = value
            writes.append((prefix + cls._indexKey(kb, end, start), None if value is None else b""))
        for kb, sessions in byKey.items():
            writes.append((prefix + b"k" + kb, cls._pack((e, s, a) for (e, s), a in sorted(sessions.items()))
                           if sessions else None))
        return writes

    def _metaSnapshot(self):
        return {"observed": self._observed, "purgedBelow": self._purgedBelow, "expiredFrom": self._expiredFrom}

    def _evict(self, maxEntries: int) -> None:
        self._sessions.evict(maxEntries)
        if len(self._persisted) > len(self._sessions):
            loaded = self._sessions
            self._persisted = {kb: known for kb, known in self._persisted.items() if dict.__contains__(loaded, kb)}

    def _importSnapshot(self, data) -> None:
        """Write the sessions of an in-memory session store's ``snapshot()`` as this batch's
        changes (the observed time and expiry point come with it)."""
        self._observed, self._purgedBelow = data["observed"], data["purgedBelow"]
        for kb, sessions in data["sessions"].items():
            for end, start, key, aggregate in sessions:
                self._store(end, kb, start, key, aggregate)

    def _metaRestore(self, data) -> None:
        if data:
            self._observed, self._purgedBelow = data["observed"], data["purgedBelow"]
            self._expiredFrom = data.get("expiredFrom", -(1 << 63))

    def _restored(self) -> None:
        below = (self._observed - self._retentionMs) // self._segmentInterval
        if below > self._purgedBelow:  # the segments Kafka's store drops at the restored observed time
            self._purgedBelow = below
        keys, indexRange = self._expiredKeys(fromStart=True)  # the changelog still holds sessions the store had expired
        if indexRange is not None:
            self._backend.empty = False
            self._backend.write([(b"k" + kb, self._packed(kb)) for kb in keys])
            self._backend.deleteRange(*indexRange)
            self._resetWorkingSet()

    def snapshot(self) -> dict:
        raise TypeError(f"Store {self._name} is persistent: its entries are in the task's local store, not in a snapshot")


class _Backend:
    """One store's view of its task's database: keys without the store's prefix."""

    __slots__ = ("db", "prefix", "end", "empty")

    def __init__(self, db: TaskStateDB, storeName: str) -> None:
        self.db, self.prefix = db, storePrefix(storeName)
        self.end = prefixEnd(self.prefix)
        # Fast path: a store with no entry in the database (its first batch) answers every load
        # "absent" without a read; exact, as nothing is written to the database during a batch
        # (its writes are pending until the next one) except by a restore or a flush applied at
        # once (PersistentTaskState.flush's applyNow), which clear it.
        self.empty = next(iter(db.items(self.prefix, self.end)), None) is None

    def get(self, key: bytes) -> bytes | None:
        return self.db.get(self.prefix + key)

    def multiGet(self, keys: list[bytes]) -> list[bytes | None]:
        prefix = self.prefix
        return self.db.multiGet([prefix + k for k in keys])

    def write(self, writes: list[tuple[bytes, bytes | None]]) -> None:
        prefix = self.prefix
        self.db.write([(prefix + k, v) for k, v in writes])

    def deleteRange(self, lo: bytes, hi: bytes) -> None:
        self.db.deleteRange(self.prefix + lo, self.prefix + hi)

    def items(self, lo: bytes | None, hi: bytes | None, hiInclusive: bool):
        prefix, skip = self.prefix, len(self.prefix)
        start = prefix if lo is None else prefix + lo
        if hi is None:
            end = self.end
        elif hiInclusive:
            end = prefix + hi + b"\x00"  # the smallest key after prefix + hi
        else:
            end = prefix + hi
        for key, value in self.db.items(start, end):
            yield key[skip:], value


def changelogConfigOf(store, topicConfigs: dict, additionalRetentionMs: int) -> dict[str, str]:
    """The configs Kafka Streams creates ``store``'s changelog topic with (``_changelog.
    changelogTopicConfig`` for the store's kind and retention)."""
    from ._join_stores import DuplicatesWindowStore, ListValueStore
    from ._stores import WindowStore
    from ._suppression_buffer import TimeOrderedKeyValueBuffer
    from ._versioned import VersionedKeyValueStore

    retention = getattr(store, "_retentionMs", None)
    if isinstance(store, DuplicatesWindowStore):
        kind = "streamJoinWindow"
    elif isinstance(store, WindowStore):
        kind = "timestampedWindow" if store.timestamped else "window"
    elif isinstance(store, SessionStore):
        kind = "session"
    elif isinstance(store, VersionedKeyValueStore):
        return changelogTopicConfig("versioned", historyRetentionMs=store.historyRetention(), topicConfigs=topicConfigs)
    elif isinstance(store, ListValueStore):
        kind = "outerJoin"
    elif isinstance(store, TimeOrderedKeyValueBuffer):
        kind = "suppressionBuffer"
    elif isinstance(store, TimestampedKeyValueStore):
        kind = "timestampedKeyValue"
    else:
        kind = "keyValue"
    return changelogTopicConfig(kind, retentionMs=retention, topicConfigs=topicConfigs,
                                additionalRetentionMs=additionalRetentionMs)


# store class -> its persistent class (the in-memory class of a store decides its semantics)
_PERSISTENT = {
    KeyValueStore: PersistentKeyValueStore,
    TimestampedKeyValueStore: PersistentTimestampedKeyValueStore,
    SessionStore: PersistentSessionStore,
}
_PERSISTENT_CLASSES = frozenset(_PERSISTENT.values())


def registerPersistent(memoryClass: type, persistentClass: type) -> None:
    """Give the stores of class ``memoryClass`` the persistent class ``persistentClass`` (for the
    store kinds whose persistent classes live in other modules)."""
    global _PERSISTENT_CLASSES
    _PERSISTENT[memoryClass] = persistentClass
    _PERSISTENT_CLASSES = frozenset(_PERSISTENT.values())


def makePersistent(store) -> bool:
    """Turn ``store`` (as a ``StoreBuilder`` built it) into its persistent class, in place, so that
    every reference to it sees the change; False when its class has none (the store then stays
    in the task checkpoint)."""
    if type(store) in _PERSISTENT_CLASSES:
        return True
    cls = _PERSISTENT.get(type(store))
    if cls is None:
        return False
    store.__class__ = cls
    return True


class PersistentTaskState:
    """The persistent stores of one task, their database and their changelogs (host side).

    Parameters
    ----------
    stores : dict of str to store
        The task's stores already made persistent (:func:`makePersistent`), by name.
    logged : dict of str to (str or None)
        Each store's changelog topic (None: logging disabled, Kafka's ``withLoggingDisabled``).
    path : str
        The task's database directory.
    memoryBytes : int
        RocksDB's memory bound per process (``kspark.store.memory.bytes``).
    maxCachedEntries : int
        Loaded entries a store keeps between micro-batches (``kspark.store.cache.max.entries``).
    compactionTrigger : int, optional
        The database's sorted runs that start a compaction (``TaskStateDB``; None: RocksDB's default).
    """

    def __init__(self, stores: dict, logged: dict[str, str | None], path: str, memoryBytes: int,
                 maxCachedEntries: int, compactionTrigger: int | None = None) -> None:
        self.stores, self.logged, self.path = stores, logged, path
        self.memoryBytes, self.maxCachedEntries = memoryBytes, maxCachedEntries
        self.compactionTrigger = compactionTrigger
        self.db: TaskStateDB | None = None

    def open(self, checkpointId: str, committedVersion: str | None) -> bool:
        """Open the database and bring it to ``committedVersion``; True if it holds those stores
        (the working sets are valid if they were), False if a restore is needed (the database and
        the working sets are then empty)."""
        self.db = TaskStateDB(self.path, self.memoryBytes, compactionTrigger=self.compactionTrigger)
        ok = self.db.reconcile(checkpointId, committedVersion)
        for name, store in self.stores.items():
            store._attach(_Backend(self.db, name))
            if not ok:
                store._resetWorkingSet()
        if not ok:
            self.db.wipe(checkpointId, committedVersion)
        else:
            self._dropRemovedStores()
        return ok

    def wipeStores(self, names) -> None:
        """Delete every entry of stores ``names`` (to be restored whole: a task's copies of the
        global stores, on a database kept from an earlier run)."""
        for name in names:
            prefix = storePrefix(name)
            self.db.deleteRange(prefix, prefixEnd(prefix))

    def _dropRemovedStores(self) -> None:
        """Delete the entries of stores the topology no longer has (topology evolution)."""
        for name in self.db.storeNames() - set(self.stores):
            prefix = storePrefix(name)
            log.info("Deleting the local entries of store %s, which the topology no longer has", name)
            self.db.deleteRange(prefix, prefixEnd(prefix))

    def importLegacySnapshots(self, snapshots: dict) -> None:
        """Take stores that an older kspark kept in the task checkpoint (``snapshots``: name ->
        the in-memory store's ``snapshot()``) into the persistent stores, as changes of this
        batch: they reach the database and the changelog when it commits."""
        for name, data in snapshots.items():
            log.info("Importing store %s from the task checkpoint into the local store", name)
            self.stores[name]._importSnapshot(data)

    def restoreRecords(self, storeName: str, records: list[ChangelogRecord]) -> None:
        """Write changelog records (in offset order) into store ``storeName``'s entries."""
        store = self.stores[storeName]
        self.db.write(store._restoreWrites(storePrefix(storeName), records, self.db))
        store._backend.empty = False

    def writeWorkingSet(self, storeName: str) -> None:
        """Write store ``storeName``'s changes so far straight into its entries (a restore that
        runs records through a processor, ``GlobalStoreReprocessor``), not as pending writes."""
        store = self.stores[storeName]
        changes = _Changes()
        store._flush(changes, -1, False)
        for lo, hi in changes.ranges:
            self.db.deleteRange(lo, hi)
        self.db.write(changes.writes)
        store._backend.empty = False
        store._evict(self.maxCachedEntries)

    def restored(self, checkpointId: str, committedVersion: str | None) -> None:
        """The restore is complete: the stores are those of ``committedVersion``."""
        for store in self.stores.values():
            store._restored()
        self.db.markApplied(checkpointId, committedVersion)

    def flush(self, version: str, batchId: int, streamTime: int, checkpointId: str, applyNow: bool = False) -> list:
        """Write this micro-batch's changes as pending under ``version`` and return the changelog
        records as ``(topic, key, value, timestamp, headers)`` tuples, in change order per store.
        Each record carries the ``CHANGELOG_HEADER`` tag ``<checkpointId>:<batchId>``, by which a
        restore skips the records of a batch Spark replays.
        ``applyNow``: the changes are applied to the stores at once (:meth:`TaskStateDB.write`),
        for a host that discards the database when a commit fails, and the records carry no tag
        (Kafka Streams' changelog records: such a host never replays a commit, whose records
        are in the Kafka transaction it aborts)."""
        writes: list = []
        ranges: list = []
        records: list = []
        header = () if applyNow else ((CHANGELOG_HEADER, f"{checkpointId}:{batchId}".encode()),)
        for name, store in self.stores.items():
            topic = self.logged.get(name)
            changes = _Changes()
            store._flush(changes, streamTime, topic is not None)
            meta = store._metaSnapshot()
            if meta is not None:  # for readers of the database (interactive queries)
                changes.writes.append((_STORE_META + name.encode("utf-8"), json.dumps(meta).encode()))
            writes += changes.writes
            ranges += changes.ranges
            if topic is not None:  # ChangelogRecords, or (key, value, timestamp[, the record's own headers]) tuples
                records += [(topic, r[0], r[1], r[2], r[3] + header if len(r) > 3 else header) for r in changes.records]
        if applyNow:
            self.db.write(writes, ranges)
            if writes or ranges:  # the database is written while the stores stay open: no fast path now
                for store in self.stores.values():
                    store._backend.empty = False
        else:
            self.db.writePending(writes, version, batchId, ranges, len(records))
        for store in self.stores.values():
            store._evict(self.maxCachedEntries)
        return records

    def replaceWith(self, snapshot: str) -> None:
        """Replace the database by a copy of the snapshot directory ``snapshot`` and reopen it
        (its table files are linked where the filesystems allow: RocksDB never changes them)."""
        self.db.close()
        TaskStateDB.destroy(self.path)
        os.makedirs(self.path)
        copyStoreFiles(snapshot, self.path, skip=("snapshot.json",))
        self.db = TaskStateDB(self.path, self.memoryBytes, compactionTrigger=self.compactionTrigger)
        for name, store in self.stores.items():
            store._attach(_Backend(self.db, name))

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


class ReadOnlyBackend:
    """A store's view of a task database opened read-only by another process (RocksDB's secondary
    instance: interactive queries, ``checkpointedStore``), as of a committed micro-batch: the
    applied entries, with ``pending`` over them (``kspark.state._rocksdb.pendingWrites``: database
    key -> value or None for a delete) when their batch has committed, else None; ``ranges``: the
    ``[lo, hi)`` database key ranges that committed batch deletes from the applied entries
    (expired segments: ``pendingChanges``)."""

    __slots__ = ("db", "prefix", "end", "pending", "ranges")
    empty = False  # no fast path for readers

    def __init__(self, db, storeName: str, pending: dict | None, ranges: list = ()) -> None:
        self.db, self.prefix, self.pending = db, storePrefix(storeName), pending
        self.end = prefixEnd(self.prefix)
        self.ranges = [(lo, hi) for lo, hi in ranges if hi > self.prefix and (self.end is None or lo < self.end)]

    def get(self, key: bytes) -> bytes | None:
        return self.getRaw(self.prefix + key)

    def getRaw(self, key: bytes) -> bytes | None:
        """The value of database key ``key`` (with its prefix), pending writes first if committed."""
        if self.pending and key in self.pending:
            return self.pending[key]
        if any(lo <= key < hi for lo, hi in self.ranges):
            return None
        return self.db.get(key)

    def items(self, lo: bytes | None, hi: bytes | None, hiInclusive: bool):
        import rocksdict

        def scan(prefix: bytes, end: bytes | None):
            start = prefix if lo is None else prefix + lo
            if hi is not None:
                end = prefix + hi + b"\x00" if hiInclusive else prefix + hi
            options = rocksdict.ReadOptions()
            if end is not None:
                options.set_iterate_upper_bound(end)
            skip = len(prefix)
            return {key[skip:]: value for key, value in self.db.items(from_key=start, read_opt=options)}

        found = scan(self.prefix, self.end)
        skip = len(self.prefix)
        for rangeLo, rangeHi in self.ranges:
            for key in [key for key in found if rangeLo <= self.prefix + key < rangeHi]:
                del found[key]
        for key, value in (self.pending or {}).items():
            if not key.startswith(self.prefix):
                continue
            key = key[skip:]
            if (lo is not None and key < lo) or (hi is not None and (key > hi if hiInclusive else key >= hi)):
                continue
            if value is None:
                found.pop(key, None)
            else:
                found[key] = value
        return sorted(found.items())


def readOnlyStore(store, db, pending: dict | None, ranges: list = ()):
    """``store`` (as its builder built it) made persistent over ``db`` read-only (see
    ``ReadOnlyBackend``), with the meta its task last wrote (observed stream time...); None if
    its kind has no persistent form."""
    if not makePersistent(store):
        return None
    backend = ReadOnlyBackend(db, store.name(), pending, ranges)
    store._attach(backend)
    meta = backend.getRaw(_STORE_META + store.name().encode("utf-8"))
    if meta is not None:
        store._metaRestore(json.loads(meta))
    return store


class MergedKeyValueView:
    """The key-value stores of several tasks read as one (interactive queries over every task):
    ``get`` from the task that has the key, scans merged in serialized-key order."""

    def __init__(self, stores: list) -> None:
        self._stores = stores

    def name(self) -> str:
        return self._stores[0].name() if self._stores else ""

    def get(self, key, *asOf):
        for store in self._stores:
            found = store.get(key, *asOf)  # asOf: a versioned store's get(key, asOfTimestamp)
            if found is not None:
                return found
        return None

    def _merged(self, method: str, *args, reverse: bool = False) -> KeyValueIterator:
        entries = []
        for store in self._stores:
            keyBytes = store._keyBytes
            entries += [(keyBytes(kv.key), kv) for kv in getattr(store, method)(*args)]
        entries.sort(key=lambda e: e[0], reverse=reverse)
        return KeyValueIterator([kv for _, kv in entries])

    def range(self, fromKey=None, toKey=None) -> KeyValueIterator:
        return self._merged("range", fromKey, toKey)

    def reverseRange(self, fromKey=None, toKey=None) -> KeyValueIterator:
        return self._merged("range", fromKey, toKey, reverse=True)

    def all(self) -> KeyValueIterator:
        return self._merged("range")

    def reverseAll(self) -> KeyValueIterator:
        return self._merged("range", reverse=True)

    def prefixScan(self, prefix, prefixKeySerializer) -> KeyValueIterator:
        return self._merged("prefixScan", prefix, prefixKeySerializer)

    def approximateNumEntries(self) -> int:
        return sum(store.approximateNumEntries() for store in self._stores)


from . import _persistent_windows  # noqa: E402,F401 - registers the window stores' persistent classes
from . import _persistent_more  # noqa: E402,F401 - registers the other store kinds' persistent classes
