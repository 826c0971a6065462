"""Persistent forms of the store kinds beyond key-value and session stores (see
``kspark.state._persistent`` for the model): versioned key-value stores, the ``KTable.suppress``
buffer, the outer-join store of left/outer stream-stream joins and the grace buffer of a
stream-table join. Each is its in-memory class (the semantics, TopologyTestDriver's) with its
entries in the task's database: a micro-batch loads what it touches, keeps this batch's changes
in memory and writes them, as pending, when it ends (``_flush``); nothing is written to the
database during a batch except by a restore.

Every class documents its database layout (keys under the store's prefix) and what the task
checkpoint keeps of it (``_metaSnapshot``). Changelog records are Kafka Streams' own (one per
key changed in the batch, its last state, as Kafka's caching and the suppression buffer's own
flush log them; the versioned store logs every put, as Kafka does), and a restore rebuilds the
database entries from them (``_restoreWrites``).

The byte helpers below name the Kafka classes they follow; ``kspark.state._changelog`` (being
written, verified against Java) has the same functions and is to replace them.
"""

from __future__ import annotations

import bisect
import heapq
import inspect
import struct
from typing import Any

from ..processor import Record
from ..processor._record import RecordHeader, RecordMetadata
from ._change import Change
from ._changelog import (SUPPRESSION_BUFFER_HEADERS, RecordContext, decodeBufferValue, decodeListValue,
                         encodeBufferValue, encodeLeftOrRightValue, encodeListValue, encodeTimeFirstWindowKey)
from ._join_stores import ListValueStore, StreamTableJoinBuffer, TimestampedKeyAndJoinSide
from ._persistent import (_ABSENT, _LEN, _LONG, _MISSING, WorkingSet, _fromOrderedLong, _orderedLong, _storedValue,
                          _valueBytes, prefixEnd, registerPersistent)
from ._stores import _IMMUTABLE, KeyValueIterator, _Frozen
from ._suppression_buffer import TimeOrderedKeyValueBuffer, javaChars
from ._versioned import PUT_RETURN_CODE_NOT_PUT, VersionedKeyValueStore

__all__ = ["PersistentListValueStore", "PersistentStreamTableJoinBuffer", "PersistentTimeOrderedKeyValueBuffer",
           "PersistentVersionedKeyValueStore"]

_INT = struct.Struct(">i")
_UNKNOWN = object()
_DROP = object()  # a versioned row to delete (a version no read can see any more)


def _context(timestamp: int, headers, metadata) -> RecordContext:
    """The record context of a buffered record: kspark's record metadata (None in a punctuation:
    Kafka's serializer would fail on its null topic; here an empty topic, partition and offset -1)."""
    headers = tuple(headers or ())
    if metadata is None:
        return RecordContext(timestamp, -1, "", -1, headers)
    return RecordContext(timestamp, metadata[2], metadata[0], metadata[1], headers)


def _metadataOf(context: RecordContext):
    if context.topic == "" and context.partition == -1 and context.offset == -1:
        return None
    return RecordMetadata(context.topic, context.partition, context.offset)


def _headersOf(context: RecordContext) -> tuple:
    return tuple(RecordHeader(k, v) for k, v in context.headers)


def _contextSize(topic: str | None, headers) -> int:
    """Kafka ``ProcessorRecordContext.residentMemorySizeEstimate``."""
    size = 8 + 8 + 4 + javaChars(topic)
    for hkey, hvalue in headers or ():
        size += javaChars(hkey) + (len(hvalue) if hvalue is not None else 0)
    return size


# ---------------------------------------------------------------------------- versioned key-value store
class PersistentVersionedKeyValueStore(VersionedKeyValueStore):
    """A ``VersionedKeyValueStore`` whose versions live in the task's database.

    Database entries under the store's prefix: key length (4 bytes) + key + the version's
    timestamp (8 bytes in signed order) -> ``0x01`` + the value's bytes, or ``0x00`` for a
    tombstone version. A key's versions are one prefix, loaded together on the key's first access
    into the in-memory store's ``(key, times, values)``; ``put`` and ``delete`` change one row each.

    Versions no read can see any more (older than the version valid at ``observed - history
    retention``: a read as of an older time sees only the latest version) are dropped from a key
    when it is loaded or put, and their rows deleted with the batch's writes: Kafka drops its
    expired segments; the in-memory store keeps them, with the same reads.

    Changelog: every put and delete, in order, as Kafka's ``ChangeLoggingVersionedKeyValueBytesStore``
    logs them (those past the grace period too): the key, the value's bytes (None for a delete),
    the version's timestamp as the record's timestamp. A restore replays them in order with the
    store's grace-period check (``RocksDBVersionedStore``'s restore drops expired puts too). The
    task checkpoint keeps the observed stream time."""

    _backend: Any

    def _attach(self, backend) -> None:
        self._backend = backend
        if not isinstance(self._versions, WorkingSet):
            self._resetWorkingSet()

    def _resetWorkingSet(self) -> None:
        self._versions = WorkingSet(self._load)
        self._writes: dict = {}  # (key bytes, timestamp) -> stored value, None (tombstone version) or _DROP
        self._records: list = []  # (key bytes, stored value or None, timestamp): the changelog, in order
        self._restoreObserved = -1
        self._thawed = None

    @staticmethod
    def _rowKey(kb: bytes, timestamp: int) -> bytes:
        return _LEN.pack(len(kb)) + kb + _orderedLong(timestamp)

    def _load(self, kb: bytes):
        head = _LEN.pack(len(kb)) + kb
        n = len(head)
        times, values = [], []
        for rowKey, raw in self._backend.items(head, prefixEnd(head), False):
            times.append(_fromOrderedLong(rowKey, n))
            values.append(_storedValue(self, raw[1:]) if raw[:1] == b"\x01" else None)
        if not times:
            return None
        entry = (self._keySerde.deserialize(self._serdeTopic, kb), times, values)
        self._prune(kb, entry)
        return entry

    def _prune(self, kb: bytes, entry) -> None:
        """Drop the versions of ``entry`` older than the one valid at ``observed - retention``."""
        times = entry[1]
        j = bisect.bisect_right(times, self._observed - self._historyRetentionMs) - 1
        if j > 0:
            writes = self._writes
            for t in times[:j]:
                writes[(kb, t)] = _DROP
            del times[:j]
            del entry[2][:j]

    def _put(self, kb: bytes, key: Any, stored: Any, timestamp: int) -> int:
        validTo = super()._put(kb, key, stored, timestamp)
        self._writes[(kb, timestamp)] = stored
        self._records.append((kb, stored, timestamp))
        self._prune(kb, self._versions.get(kb))
        return validTo

    def put(self, key: Any, value: Any, timestamp: int) -> int:
        validTo = super().put(key, value, timestamp)
        if validTo == PUT_RETURN_CODE_NOT_PUT:  # expired: not stored, but logged all the same (Kafka)
            self._records.append((self._keyBytes(key), None if value is None else self._freeze(value), timestamp))
        return validTo

    def delete(self, key: Any, timestamp: int):
        expired = timestamp < self._observed - self._historyRetentionMs
        found = super().delete(key, timestamp)
        if expired:
            self._records.append((self._keyBytes(key), None, timestamp))
        return found

    def approximateNumEntries(self) -> int:
        live: dict[bytes, bool] = {}
        for rowKey, raw in self._backend.items(None, None, True):  # rows in (key, timestamp) order: the last is the latest
            n = _LEN.unpack_from(rowKey)[0]
            live[rowKey[4:4 + n]] = raw[:1] == b"\x01"
        for kb, entry in dict.items(self._versions):  # this batch's state of the keys it touched
            live[kb] = entry is not _ABSENT and entry[2][-1] is not None
        return sum(live.values())

    def _flush(self, changes, streamTime: int, logged: bool) -> None:
        prefix, writes = self._backend.prefix, changes.writes
        encoded: dict = {}

        def valueBytes(stored):
            raw = encoded.get(id(stored))
            if raw is None:
                raw = encoded[id(stored)] = _valueBytes(self, stored)
            return raw

        for (kb, timestamp), stored in self._writes.items():
            writes.append((prefix + self._rowKey(kb, timestamp), None if stored is _DROP else
                           b"\x00" if stored is None else b"\x01" + valueBytes(stored)))
        if logged:
            changes.records += [(kb, None if stored is None else valueBytes(stored), timestamp)
                                for kb, stored, timestamp in self._records]
        self._writes, self._records = {}, []
        self._versions.dirty = set()

    def _restoreWrites(self, prefix: bytes, records: list, db) -> list:
        writes = []
        observed, grace = self._restoreObserved, self._historyRetentionMs
        for kb, value, timestamp, _ in records:
            if timestamp < observed - grace:
                continue  # RocksDBVersionedStore: "Skipping record for expired put." on restore too
            observed = max(observed, timestamp)
            writes.append((prefix + self._rowKey(kb, timestamp), b"\x00" if value is None else b"\x01" + value))
        self._restoreObserved = observed
        return writes

    def _restored(self) -> None:
        self._observed = max(self._observed, self._restoreObserved)
        self._restoreObserved = -1

    def _metaSnapshot(self):
        return {"observed": self._observed}

    def _metaRestore(self, data) -> None:
        if data:
            self._observed = data["observed"]

    def _evict(self, maxEntries: int) -> None:
        self._versions.evict(maxEntries)

    def snapshot(self) -> dict:
        raise TypeError(f"Store {self._name} is persistent: its entries are in the task's local store, not in a snapshot")


# ---------------------------------------------------------------------------- outer-join store
class PersistentListValueStore(ListValueStore):
    """The outer-join store of a left/outer stream-stream join (``ListValueStore``) in the task's
    database.

    Database entries under the store's prefix: Kafka's own records, the key's bytes
    (``TimestampedKeyAndJoinSide``: 8-byte big-endian timestamp, side byte, key) -> the key's
    whole list (``ListSerde`` of ``LeftOrRightValue`` bytes: side byte + value). So the database
    iterates in the store's order and a restore writes the changelog records as they are.

    A batch loads the lists it appends to (a point read) and merges, for a scan, the database's
    entries with the keys this batch added (a sorted list) and removed. The store is a queue by
    timestamp: the join emits and removes its oldest entries; the checkpoint keeps ``lower``, a
    key no live entry is below (the first entry the last emit loop left, or a smaller key put
    since), so that a scan seeks past the deleted entries' tombstones.

    Changelog: a key's whole list, with the key's timestamp (the record that appended to it:
    Kafka's ``ChangeLoggingListValueBytesStore`` logs with the context's timestamp), or a
    tombstone with the batch's stream time."""

    _backend: Any
    _lower = b""

    def _attach(self, backend) -> None:
        self._backend = backend
        if not isinstance(self._data, WorkingSet):
            self._resetWorkingSet()

    def _resetWorkingSet(self) -> None:
        self._data = WorkingSet(self._load)
        self._added: list[bytes] = []  # keys this batch created (sorted): not in the database
        self._addedSet: set[bytes] = set()
        self._scanned: list[bytes] = []
        self._thawed = None

    def _decodeSide(self, item: bytes) -> tuple:
        left = item[0] == 1
        serde = self._valueSerdes[0 if left else 1]
        raw = item[1:]
        value = serde.deserialize(self._serdeTopic, raw)
        if type(value) not in _IMMUTABLE:
            value = _Frozen(raw)
        return (value, None) if left else (None, value)

    def _encodeSide(self, stored: tuple) -> bytes:
        left, right = stored
        leftSide = left is not None
        value = left if leftSide else right
        if type(value) is _Frozen:
            raw = bytes(value)
        else:
            raw = self._valueSerdes[0 if leftSide else 1].serialize(self._serdeTopic, value)
        return encodeLeftOrRightValue(raw, leftSide)

    def _decode(self, kb: bytes, raw: bytes) -> tuple:
        key = TimestampedKeyAndJoinSide(kb[8] == 1, self._keySerde.deserialize(self._serdeTopic, kb[9:]),
                                        _LONG.unpack_from(kb)[0])
        return key, [self._decodeSide(item) for item in decodeListValue(raw)]

    def _load(self, kb: bytes):
        raw = self._backend.get(kb)
        return None if raw is None else self._decode(kb, raw)

    def _unadd(self, kb: bytes) -> None:
        if kb in self._addedSet:
            self._addedSet.discard(kb)
            del self._added[bisect.bisect_left(self._added, kb)]

    def _append(self, kb: bytes, key, stored: tuple) -> None:
        data = self._data
        entry = data.get(kb)
        if entry is None:
            data[kb] = (key, [stored])
            bisect.insort(self._added, kb)
            self._addedSet.add(kb)
            if kb < self._lower:
                self._lower = kb
        else:
            entry[1].append(stored)
            data.dirty.add(kb)

    def put(self, key: TimestampedKeyAndJoinSide, value) -> None:
        kb = self._joinKeyBytes(key)
        if value is None:
            if self._data.pop(kb, None) is not None:
                self._unadd(kb)
            return
        self._append(kb, key, self._freezeSide(value))

    def _scan(self):
        """``(key bytes, key, stored values)`` in key order from ``lower``: the database's entries
        with this batch's changes over them, and the keys it added. Keeps the keys it yields for
        ``_deleteScanned``."""
        data, added, addedSet = self._data, self._added, self._addedSet
        scanned = self._scanned = []
        db = iter(self._backend.items(self._lower or None, None, False))
        dbNext = None
        last = None
        while True:
            while dbNext is None:
                item = next(db, None)
                if item is None:
                    dbNext = False
                    break
                kb = item[0]
                if kb in addedSet:
                    continue
                entry = data.loaded(kb)
                if entry is None:  # removed in this batch
                    continue
                dbNext = (kb, entry if entry is not _MISSING else item[1])
            i = 0 if last is None else bisect.bisect_right(added, last)
            a = added[i] if i < len(added) else None
            if dbNext and (a is None or dbNext[0] < a):
                kb, entry = dbNext
                dbNext = None
                if type(entry) is bytes:
                    entry = self._decode(kb, entry)
                    dict.__setitem__(data, kb, entry)  # loaded (clean): a removal needs no read
            elif a is not None:
                kb = last = a
                entry = dict.get(data, kb)
            else:
                return
            scanned.append(kb)
            yield kb, entry[0], entry[1]

    def _deleteScanned(self, upto: int, deleted: set) -> None:
        for kb in deleted:
            self._data.write(kb, None)
            self._unadd(kb)
        scanned = self._scanned[:upto]
        for kb in scanned:  # no live key is below the first one the loop left
            if kb not in deleted:
                self._lower = kb
                break
        else:
            if scanned:
                self._lower = scanned[-1] + b"\x00"

    def get(self, key: TimestampedKeyAndJoinSide):
        entry = self._data.get(self._joinKeyBytes(key))
        return None if entry is None else [self._thawSide(v) for v in entry[1]]

    def all(self) -> KeyValueIterator:
        from ..keyvalue import KeyValue

        return KeyValueIterator([KeyValue(key, self._thawSide(v)) for _, key, values in self._scan() for v in values])

    def approximateNumEntries(self) -> int:
        return sum(1 for _ in self._scan())

    def _flush(self, changes, streamTime: int, logged: bool) -> None:
        data, prefix = self._data, self._backend.prefix
        for kb in data.dirty:
            entry = dict.get(data, kb)
            if entry is _ABSENT:
                changes.writes.append((prefix + kb, None))
                if logged:
                    changes.records.append((kb, None, streamTime))
            else:
                raw = encodeListValue(self._encodeSide(stored) for stored in entry[1])
                changes.writes.append((prefix + kb, raw))
                if logged:
                    changes.records.append((kb, raw, entry[0].timestamp))
        data.dirty = set()
        self._added, self._addedSet, self._scanned = [], set(), []

    @staticmethod
    def _restoreWrites(prefix: bytes, records: list, db) -> list:
        return [(prefix + r.key, r.value) for r in records]

    def _restored(self) -> None:
        self._lower = b""  # the restored entries may start anywhere

    def _metaSnapshot(self):
        return {"lower": self._lower.hex()}

    def _metaRestore(self, data) -> None:
        if data:
            self._lower = bytes.fromhex(data["lower"])

    def _evict(self, maxEntries: int) -> None:
        self._data.evict(maxEntries)

    def snapshot(self) -> dict:
        raise TypeError(f"Store {self._name} is persistent: its entries are in the task's local store, not in a snapshot")


# ---------------------------------------------------------------------------- suppression buffer
# The in-memory buffer's interface: keyed by the key object (entries of 8 items) or, once keyed by
# serialized key (Kafka's index of Bytes), by key bytes (entries of 9 items, the key last). The
# persistent buffer keeps its entries by key bytes and follows the interface of the class it extends.
_KEYED_BY_BYTES = "keyBytes" in inspect.signature(TimeOrderedKeyValueBuffer.remove).parameters
_ENTRY_ITEMS = 9 if _KEYED_BY_BYTES else 8


class _EvictionOrder:
    """``evictionOrder()`` of a persistent buffer: its entries in eviction order as a sequence
    read front to back, each taken from the database only when it is read (the suppress
    processor reads the first few). Its length is the number of entries when it was made."""

    __slots__ = ("_buffer", "_n", "_items", "_db", "_dbNext", "_lastAdded")

    def __init__(self, buffer: "PersistentTimeOrderedKeyValueBuffer") -> None:
        self._buffer, self._n, self._items = buffer, buffer._count, []
        self._db = self._dbNext = self._lastAdded = None

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int):
        items = self._items
        while len(items) <= i:
            if len(items) >= self._n:
                raise IndexError(i)
            items.append(self._buffer._nextInOrder(self))
        return items[i]


class PersistentTimeOrderedKeyValueBuffer(TimeOrderedKeyValueBuffer):
    """The ``KTable.suppress`` buffer in the task's database (Kafka's two maps of
    ``InMemoryTimeOrderedKeyValueChangeBuffer``, on disk).

    Database entries under the store's prefix:

    - ``i`` + key bytes -> the entry's buffer time (8 bytes, big-endian): Kafka's ``index``, for
      the key's previous update;
    - ``t`` + buffer time (8 bytes in signed order) + key bytes -> the entry's size (8 bytes) +
      its changelog value (Kafka's ``BufferValue`` format 3 + the buffer time): Kafka's
      ``sortedMap``, the eviction order (buffer time, then key bytes).

    ``evictionOrder()`` reads the time index lazily from ``lower`` (a key no live entry is below,
    kept in the checkpoint; entries leave from the front), merged with the keys this batch added
    (a sorted list); the first live entry is kept between reads, so a record that evicts nothing
    costs no database read. The checkpoint also keeps the entry count and ``sizeBytes``.

    Changelog (at each flush, every key changed since the last one, as Kafka's buffer logs at
    commit): key bytes -> ``BufferValue`` format 3 + buffer time, header ``v`` = 3; a tombstone
    for a key that left. A restore recomputes the sizes as Kafka's restore does (an old value equal
    to the prior one counted once)."""

    _backend: Any
    _lower = b"t"
    _count = 0

    def _attach(self, backend) -> None:
        self._backend = backend
        if not isinstance(self.entries, WorkingSet):
            self._resetWorkingSet()

    def _resetWorkingSet(self) -> None:
        self.entries = WorkingSet(self._load)
        self._added: list[tuple[int, bytes]] = []  # (buffer time, key bytes) placed in this batch, sorted
        self._moved: set[bytes] = set()  # keys placed or removed in this batch: their database place is stale
        self._dbDeletes: list[bytes] = []  # time-index keys of entries removed in this batch
        self._head = _UNKNOWN  # (index key, key bytes, raw) of the first live database entry, None: none

    @staticmethod
    def _indexKey(bufferTime: int, kb: bytes) -> bytes:
        return b"t" + _orderedLong(bufferTime) + kb

    def _bytesOf(self, value) -> bytes | None:
        return None if value is None else self._valueSerde.serialize(self._serdeTopic, value)

    def _valueOf(self, raw: bytes | None):
        return None if raw is None else self._valueSerde.deserialize(self._serdeTopic, raw)

    def _decode(self, kb: bytes, raw: bytes) -> list:
        """The entry of an index value (size + changelog value)."""
        size = _LONG.unpack_from(raw)[0]
        context, prior, old, new, pos = decodeBufferValue(raw, 8)
        bufferTime = _LONG.unpack_from(raw, pos)[0]
        metadata = _metadataOf(context)
        return [bufferTime, kb, Change(self._valueOf(new), self._valueOf(old)), context.timestamp, _headersOf(context),
                size, len(prior or b""), metadata, self._keySerde.deserialize(self._serdeTopic, kb), (prior, old, new)]

    def _load(self, kb: bytes):
        raw = self._backend.get(b"i" + kb)
        if raw is None:
            return None
        raw = self._backend.get(self._indexKey(_LONG.unpack(raw)[0], kb))
        return None if raw is None else self._decode(kb, raw)

    def numRecords(self) -> int:
        return self._count

    def put(self, bufferTime: int, key, change, timestamp: int, headers: tuple, metadata) -> None:
        """The in-memory buffer's ``put`` (same entry, same size), by key bytes."""
        kb = self._keySerde.serialize(self._serdeTopic, key) or b""
        previous = self.entries.get(kb)
        old, new = self._bytesOf(change.oldValue), self._bytesOf(change.newValue)
        if previous is None:
            prior, priorLen, oldLen = old, len(old or b""), 0  # the prior value is the old value: counted once
            bisect.insort(self._added, (bufferTime, kb))
            self._moved.add(kb)
            self._count += 1
        else:
            bufferTime, prior, priorLen = previous[0], previous[9][0], previous[6]
            oldLen = len(old or b"")
            self.sizeBytes -= previous[5]
        size = (8 + len(kb) + priorLen + oldLen + len(new or b"")
                + _contextSize(metadata[0] if metadata is not None else None, headers))
        self.entries[kb] = [bufferTime, kb, change, timestamp, headers, size, priorLen, metadata, key, (prior, old, new)]
        self.sizeBytes += size

    def evictionOrder(self) -> _EvictionOrder:
        return _EvictionOrder(self)

    def remove(self, key) -> list:
        kb = key if _KEYED_BY_BYTES else self._keySerde.serialize(self._serdeTopic, key) or b""
        entry = self.entries.get(kb)
        if entry is None:
            raise KeyError(key)
        self.entries.write(kb, None)
        place = (entry[0], kb)
        i = bisect.bisect_left(self._added, place)
        if i < len(self._added) and self._added[i] == place:
            del self._added[i]
        else:  # its place is in the database
            self._dbDeletes.append(self._indexKey(*place))
        self._moved.add(kb)
        self._count -= 1
        self.sizeBytes -= entry[5]
        return entry[:_ENTRY_ITEMS]

    # -- the eviction order: the database's time index merged with this batch's placements
    def _dbHead(self):
        """The first database entry not moved in this batch, from ``lower`` (which moves past the
        moved ones it skips: they are removed, or placed elsewhere)."""
        head = self._head
        if head is _UNKNOWN or (head is not None and head[1] in self._moved):
            head = None
            for indexKey, raw in self._backend.items(self._lower, b"u", False):
                kb = indexKey[9:]
                if kb not in self._moved:
                    head = (indexKey, kb, raw)
                    break
                self._lower = indexKey + b"\x00"
            self._head = head
        return head

    def _nextInOrder(self, order: _EvictionOrder):
        dbNext = order._dbNext
        if order._db is None:  # first read: the cached head, then an iterator after it
            dbNext = self._dbHead()
            order._db = iter(()) if dbNext is None else self._dbAfter(dbNext[0])
        elif dbNext is None:
            dbNext = next(order._db, None)
        added = self._added
        i = 0 if order._lastAdded is None else bisect.bisect_right(added, order._lastAdded)
        a = added[i] if i < len(added) else None
        if dbNext is not None and (a is None or (_fromOrderedLong(dbNext[0], 1), dbNext[1]) < a):
            order._dbNext = None
            indexKey, kb, raw = dbNext
            entry = self.entries.loaded(kb)
            if entry is _MISSING:
                entry = self._decode(kb, raw)
                dict.__setitem__(self.entries, kb, entry)  # loaded (clean): its removal needs no read
        else:
            order._dbNext = dbNext
            order._lastAdded = a
            kb = a[1]
            entry = dict.get(self.entries, kb)
        return (kb if _KEYED_BY_BYTES else entry[8]), entry

    def _dbAfter(self, indexKey: bytes):
        moved = self._moved
        for key, raw in self._backend.items(indexKey + b"\x00", b"u", False):
            kb = key[9:]
            if kb not in moved:
                yield key, kb, raw

    # -- flush, restore, checkpoint
    def _encodeValue(self, entry) -> bytes:
        """The changelog value of an entry: ``BufferValue`` format 3 + the buffer time."""
        prior, old, new = entry[9]
        return encodeBufferValue(_context(entry[3], entry[4], entry[7]), prior, old, new) + _LONG.pack(entry[0])

    def _flush(self, changes, streamTime: int, logged: bool) -> None:
        entries, prefix = self.entries, self._backend.prefix
        writes = changes.writes
        writes += [(prefix + indexKey, None) for indexKey in self._dbDeletes]  # before a new place of the same key
        for kb in entries.dirty:
            entry = dict.get(entries, kb)
            if entry is _ABSENT:
                writes.append((prefix + b"i" + kb, None))
                if logged:
                    changes.records.append((kb, None, streamTime))
                continue
            value = self._encodeValue(entry)
            if kb in self._moved:
                writes.append((prefix + b"i" + kb, _LONG.pack(entry[0])))
            writes.append((prefix + self._indexKey(entry[0], kb), _LONG.pack(entry[5]) + value))
            if logged:
                changes.records.append((kb, value, streamTime, SUPPRESSION_BUFFER_HEADERS))
        if self._added:
            self._lower = min(self._lower, self._indexKey(*self._added[0]))
        entries.dirty = set()
        self._added, self._moved, self._dbDeletes, self._head = [], set(), [], _UNKNOWN

    def _restoreWrites(self, prefix: bytes, records: list, db) -> list:
        """Database writes of changelog records (Kafka ``restoreBatch``, format 3): a key's
        previous place is read back to be deleted."""
        writes, placed = [], {}
        for kb, value, _, _ in records:
            if kb in placed:
                previous = placed[kb]
            else:
                raw = self._backend.get(b"i" + kb)
                previous = None if raw is None else _LONG.unpack(raw)[0]
            if value is None:
                if previous is not None:
                    writes.append((prefix + self._indexKey(previous, kb), None))
                    writes.append((prefix + b"i" + kb, None))
                placed[kb] = None
                continue
            context, prior, old, new, pos = decodeBufferValue(value)
            bufferTime = _LONG.unpack_from(value, pos)[0]
            if previous is not None and previous != bufferTime:
                writes.append((prefix + self._indexKey(previous, kb), None))
            # Kafka's size of a restored entry: an old value equal to the prior one is the prior one
            size = (8 + len(kb) + len(prior or b"") + (0 if old is None or old is prior else len(old))
                    + len(new or b"") + _contextSize(context.topic, context.headers))
            writes.append((prefix + b"i" + kb, _LONG.pack(bufferTime)))
            writes.append((prefix + self._indexKey(bufferTime, kb), _LONG.pack(size) + value))
            placed[kb] = bufferTime
        return writes

    def _restored(self) -> None:
        """Count and size the restored entries (Kafka's restore recomputes its buffer's size)."""
        count = size = 0
        lower = None
        for indexKey, raw in self._backend.items(b"t", b"u", False):
            if lower is None:
                lower = indexKey
            count += 1
            size += _LONG.unpack_from(raw)[0]
        self._count, self.sizeBytes, self._lower = count, size, lower or b"t"

    def _metaSnapshot(self):
        return {"count": self._count, "bytes": self.sizeBytes, "lower": self._lower.hex()}

    def _metaRestore(self, data) -> None:
        if data:
            self._count, self.sizeBytes, self._lower = data["count"], data["bytes"], bytes.fromhex(data["lower"])

    def _evict(self, maxEntries: int) -> None:
        self.entries.evict(maxEntries)

    def snapshot(self) -> dict:
        raise TypeError(f"Store {self._name} is persistent: its entries are in the task's local store, not in a snapshot")


# ---------------------------------------------------------------------------- stream-table join buffer
class PersistentStreamTableJoinBuffer(StreamTableJoinBuffer):
    """The grace buffer of a stream-table join (``StreamTableJoinBuffer``) in the task's database.

    Database entries under the store's prefix: timestamp (8 bytes in signed order) + key bytes +
    seqnum (4 bytes) -> the changelog value (Kafka's ``BufferValue`` with the record's context and
    value, prior and old null, + 8 zero bytes): the buffer's order (timestamp, key bytes, seqnum).

    Records leave in that order, every one up to ``observed - grace`` at once, so the database's
    live entries are those from ``lower`` on (kept in the checkpoint, with the observed time, the
    seqnum and the count of database entries); this batch's puts are the in-memory store's sorted
    list. ``evict`` reads the database only when its first entry (kept between calls) is due.

    Changelog: Kafka's ``RocksDBTimeOrderedKeyValueBuffer`` records, key ``[0x00][timestamp][key]
    [seqnum]``: the records a batch put and still holds, tombstones for the database's records it
    evicted (a record put and evicted in the same batch leaves none)."""

    _backend: Any
    _lower = b""
    _dbCount = 0

    def _attach(self, backend) -> None:
        self._backend = backend
        if not hasattr(self, "_evictedDb"):
            self._resetWorkingSet()

    def _resetWorkingSet(self) -> None:
        self._entries = []  # this batch's puts, in order (the in-memory store's list)
        self._evictedDb: list[bytes] = []
        self._head = _UNKNOWN  # the database's first live key, None: none
        self._thawed = None

    def numRecords(self) -> int:
        return self._dbCount + len(self._entries)

    def _decode(self, dbKey: bytes, raw: bytes) -> tuple:
        context, _, _, new, _ = decodeBufferValue(raw)
        kb = dbKey[8:-4]
        stored = None if new is None else _storedValue(self, new)
        return (_fromOrderedLong(dbKey), dbKey[8:], self._keySerde.deserialize(self._serdeTopic, kb), stored,
                _headersOf(context), _metadataOf(context))

    def _dbHead(self):
        if self._head is _UNKNOWN:
            self._head = next((k for k, _ in self._backend.items(self._lower or None, None, False)), None)
        return self._head

    def evict(self) -> list:
        bound = self._observed - self.graceMs
        hi = _orderedLong(bound + 1)
        fromDb = []
        if self._dbCount and self._lower < hi:
            head = self._dbHead()
            if head is not None and head < hi:
                for dbKey, raw in self._backend.items(self._lower or None, hi, False):
                    fromDb.append(self._decode(dbKey, raw))
                    self._evictedDb.append(dbKey)
                self._dbCount -= len(fromDb)
                self._head = _UNKNOWN
            self._lower = hi
        entries = self._entries
        n = bisect.bisect_right(entries, bound, key=lambda e: e[0])
        out, self._entries = entries[:n], entries[n:]
        if fromDb:
            out = list(heapq.merge(fromDb, out, key=lambda e: e[:2]))
        return [(Record(key, self._thaw(value), ts, headers), meta) for ts, _, key, value, headers, meta in out]

    @staticmethod
    def _kafkaKey(dbKey: bytes) -> bytes:
        """The changelog key of a database key (``TimeFirstWindowKeySchema``)."""
        return encodeTimeFirstWindowKey(dbKey[8:-4], _fromOrderedLong(dbKey), _INT.unpack_from(dbKey, len(dbKey) - 4)[0])

    def _flush(self, changes, streamTime: int, logged: bool) -> None:
        prefix, writes, records = self._backend.prefix, changes.writes, changes.records
        for dbKey in self._evictedDb:
            writes.append((prefix + dbKey, None))
            if logged:
                records.append((self._kafkaKey(dbKey), None, streamTime))
        for ts, order, _, stored, headers, meta in self._entries:
            dbKey = _orderedLong(ts) + order
            value = (encodeBufferValue(_context(ts, headers, meta), None, None,
                                       None if stored is None else _valueBytes(self, stored)) + _LONG.pack(0))
            writes.append((prefix + dbKey, value))
            if logged:
                records.append((self._kafkaKey(dbKey), value, streamTime))
            if dbKey < self._lower:
                self._lower = dbKey
        self._dbCount += len(self._entries)
        self._entries, self._evictedDb, self._head = [], [], _UNKNOWN

    @staticmethod
    def _restoreWrites(prefix: bytes, records: list, db) -> list:
        writes = []
        for key, value, _, _ in records:  # [0x00][timestamp][key][seqnum] -> [timestamp in signed order][key][seqnum]
            writes.append((prefix + _orderedLong(_LONG.unpack_from(key, 1)[0]) + key[9:], value))
        return writes

    def _restored(self) -> None:
        count, lower = 0, None
        for dbKey, _ in self._backend.items(None, None, True):
            if lower is None:
                lower = dbKey
            count += 1
        self._dbCount, self._lower = count, lower or b""

    def _metaSnapshot(self):
        return {"observed": self._observed, "seqnum": self._seqnum, "count": self._dbCount, "lower": self._lower.hex()}

    def _metaRestore(self, data) -> None:
        if data:
            self._observed, self._seqnum = data["observed"], data["seqnum"]
            self._dbCount, self._lower = data["count"], bytes.fromhex(data["lower"])

    def _evict(self, maxEntries: int) -> None:
        pass  # nothing kept between batches but the meta

    def snapshot(self) -> dict:
        raise TypeError(f"Store {self._name} is persistent: its entries are in the task's local store, not in a snapshot")


registerPersistent(VersionedKeyValueStore, PersistentVersionedKeyValueStore)
registerPersistent(ListValueStore, PersistentListValueStore)
registerPersistent(TimeOrderedKeyValueBuffer, PersistentTimeOrderedKeyValueBuffer)
registerPersistent(StreamTableJoinBuffer, PersistentStreamTableJoinBuffer)
