from __future__ import annotations

import bisect
import logging
from typing import Any, NamedTuple

from ..serialization import Serde, _JsonSerde, _StringSerde
from ._window import SessionWindow, TimeWindow, Windowed

__all__ = [
    "KeyValueBytesStoreSupplier",
    "KeyValueIterator",
    "KeyValueStore",
    "StoreBuilder",
    "Stores",
    "TimestampedKeyValueStore",
    "SessionBytesStoreSupplier",
    "SessionStore",
    "ValueAndTimestamp",
    "WindowBytesStoreSupplier",
    "WindowStore",
]

log = logging.getLogger("kspark.state")


_tupleNew = tuple.__new__  # builds a NamedTuple from a tuple ~2x faster than calling the class


class ValueAndTimestamp(NamedTuple):
    """A value with the timestamp (ms) of the record that wrote it (Kafka ``ValueAndTimestamp``)."""

    value: Any
    timestamp: int


class KeyValueIterator:
    """Iterator of ``KeyValue`` pairs (Kafka ``KeyValueIterator``): Python iteration, or Kafka's
    ``hasNext()`` / ``next()`` / ``peekNextKey()``; ``close()`` (or ``with``) releases it.

    Raises
    ------
    LookupError
        From ``next()`` / ``peekNextKey()`` past the end (Kafka: ``NoSuchElementException``).
    """

    def __init__(self, items) -> None:
        self._items = items if isinstance(items, list) else list(items)
        self._i = 0

    def __iter__(self) -> "KeyValueIterator":
        return self

    def __next__(self):
        i = self._i
        if i >= len(self._items):
            raise StopIteration
        self._i = i + 1
        return self._items[i]

    def hasNext(self) -> bool:
        return self._i < len(self._items)

    def next(self):
        if self._i >= len(self._items):
            raise LookupError("no more entries in this iterator")
        return self.__next__()

    def peekNextKey(self):
        if self._i >= len(self._items):
            raise LookupError("no more entries in this iterator")
        return self._items[self._i][0]

    def close(self) -> None:
        self._items, self._i = [], 0

    def __enter__(self) -> "KeyValueIterator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Frozen(bytes):
    """A mutable value as stored: its value serde's bytes (Kafka's stores hold bytes), so nothing a
    processor forwarded or read can change what is stored. ``bytes`` so it pickles as it is."""

    __slots__ = ()


# values stored as they are: nobody can change them in place (a tuple may hold mutable values)
_IMMUTABLE = frozenset({int, float, str, bool, bytes, type(None), complex, _Frozen})
# the types json.loads gives that nobody can change in place, and how many values a store keeps
# decoded by _deserializeFrozen at least: as many as it holds entries if that is more, so that
# the values a task reads again and again stay (P2's join reads ~8K table and ~22K global keys;
# 4,096 alone decoded them again and again). Then it starts again from none: a bound, not an LRU.
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})
_THAWED_ENTRIES = 4096


class _StoreBase:
    """What every store of a task has: a name, serdes, open/closed, and keys as bytes.

    Values are not aliased (Kafka: a store holds serialized bytes): a value of an immutable type
    (int, float, str, bool, bytes) is kept as it is; any other value is kept as its value serde's
    bytes (``_freeze``) and every read deserializes a new object (``_thaw``). So mutating a value
    after ``put``, or one returned by ``get``, never changes the store, and a value that its
    serde cannot serialize fails at ``put``, as in Kafka. ``ValueAndTimestamp`` values are frozen inside.
    """

    # frozen bytes -> their JSON value, a flat dict or list (_deserializeFrozen's fast path); an
    # instance's own dict from its first such read
    _thawed: dict | None = None

    def __init__(self, name: str, keySerde: Serde, valueSerde: Serde, persistent: bool) -> None:
        self._name, self._keySerde, self._valueSerde, self._persistent = name, keySerde, valueSerde, persistent
        # the topic the serdes are called with: Kafka's changelog name, set by the task (changelogFor)
        self._serdeTopic = name
        self._open = True

    def name(self) -> str:
        return self._name

    def persistent(self) -> bool:
        return self._persistent

    def isOpen(self) -> bool:
        return self._open

    def flush(self) -> None:
        pass

    def init(self, context=None, root=None) -> None:
        """Kafka ``StateStore#init``: a store built by a test (``MockProcessorContext``) needs nothing more."""

    def close(self) -> None:
        self._open = False

    def _keyBytes(self, key: Any) -> bytes:
        if type(key) is str and type(self._keySerde) is _StringSerde:
            try:  # what _StringSerde.serialize returns for a str, without its call
                return key.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: the serde's own way (Java's '?')
                pass
        if key is None:
            raise TypeError(f"Null key is not allowed in store {self._name}")
        return self._keySerde.serialize(self._serdeTopic, key)

    def _freeze(self, value: Any) -> Any:
        """``value`` as stored: itself if immutable, else its serialized bytes (also inside a ``ValueAndTimestamp``)."""
        t = type(value)
        if t in _IMMUTABLE:
            return value
        if t is ValueAndTimestamp:
            inner = value[0]
            if type(inner) in _IMMUTABLE:
                return value
            return ValueAndTimestamp(_Frozen(self._valueSerde.serialize(self._serdeTopic, inner)), value[1])
        return _Frozen(self._valueSerde.serialize(self._serdeTopic, value))

    def _thaw(self, stored: Any) -> Any:
        """A new object for a stored value (the inverse of ``_freeze``)."""
        t = type(stored)
        if t is ValueAndTimestamp:
            frozen = stored[0]
            if type(frozen) is not _Frozen:
                return stored
            memo = self._thawed  # _deserializeFrozen's fast path, inline: one call less per read
            value = None if memo is None else memo.get(frozen)
            return _tupleNew(ValueAndTimestamp, (self._deserializeFrozen(frozen) if value is None else value.copy(),
                                                 stored[1]))
        if t is _Frozen:
            return self._deserializeFrozen(stored)
        return stored

    def _deserializeFrozen(self, frozen: _Frozen) -> Any:
        """The value serde's value of ``frozen``: a new object at every call.

        Fast path, for the built-in JSON serde only: its ``deserialize`` is a pure function of
        the bytes (no state, no side effect, the topic unused), so the value of bytes read before
        can be kept by their content. A value is kept only if it is a dict or list whose items
        are all of JSON's immutable types (str, int, float, bool, None); a shallow copy of it is
        then equal to what ``deserialize`` returns and shares nothing that can be changed in
        place, which is all a caller can tell of a new deserialization. Anything else (nested
        containers, other serdes) is deserialized at every read. ``tests/unit/test_store_fast_paths.py``
        compares both paths."""
        memo = self._thawed
        if memo is not None:
            value = memo.get(frozen)
            if value is not None:
                return value.copy()
        # serdes get plain bytes, as they do from a topic: some accept no bytes subclass (orjson,
        # which the JSON serde uses, refuses one, so every read took its slower fallback)
        value = self._valueSerde.deserialize(self._serdeTopic, bytes(frozen))
        if type(self._valueSerde) is _JsonSerde:
            t = type(value)
            if (t is dict and all(type(v) in _JSON_SCALARS for v in value.values())) or (
                    t is list and all(type(v) in _JSON_SCALARS for v in value)):
                if memo is None or (len(memo) >= _THAWED_ENTRIES and len(memo) >= len(getattr(self, "_data", ()))):
                    memo = self._thawed = {}
                memo[frozen] = value
                return value.copy()
        return value


class _TimeOrderedStoreBase(_StoreBase):
    """A store whose expiry follows the largest timestamp put (``observedStreamTime``)."""

    def __init__(self, name: str, keySerde: Serde, valueSerde: Serde, persistent: bool, retentionMs: int) -> None:
        super().__init__(name, keySerde, valueSerde, persistent)
        self._retentionMs = retentionMs
        self._data: dict = {}
        self._observed = -1

    def snapshot(self) -> dict:
        return {"data": self._data, "observed": self._observed}

    def restore(self, data: dict) -> None:
        self._data, self._observed = data["data"], data["observed"]

    def mergeSnapshot(self, data: dict) -> None:
        """Add another task's snapshot (to view a store over all tasks)."""
        self._data.update(data["data"])
        self._observed = max(self._observed, data["observed"])


class KeyValueStore(_StoreBase):
    """A key-value store of one task (Kafka ``KeyValueStore``, rule E-2).

    ``get`` returns ``None`` when absent; ``put(k, None)`` deletes; ``putIfAbsent`` returns the
    previous value; ``delete`` returns the old value; ``range``/``all`` iterate in unsigned
    lexicographic order of the *serialized* key, as Kafka's byte-keyed stores do. A ``None`` key
    raises ``TypeError`` (Kafka: ``NullPointerException``).

    Values are never aliased (see ``_StoreBase``): ``get`` returns a new object for a mutable
    value. On the Spark host a task's stores live in its local RocksDB (``kspark.state._persistent``),
    with the same semantics.
    """

    def __init__(self, name: str, keySerde: Serde, valueSerde: Serde, persistent: bool) -> None:
        super().__init__(name, keySerde, valueSerde, persistent)
        self._data: dict[bytes, tuple[Any, Any]] = {}
        # the serialized keys in order: built by the first ordered read (range, prefix scan) and
        # kept up to date from then on; point reads and writes of a store never scanned skip it
        self._sorted: list[bytes] | None = None
        self._cachingLayer = False  # set by a DSL record cache over this store (Kafka's CachingKeyValueStore)

    # -- contents as a picklable value, for hosts that checkpoint stores
    def snapshot(self) -> dict:
        return self._data

    def restore(self, data: dict) -> None:
        self._data, self._sorted = data, None

    def mergeSnapshot(self, data: dict) -> None:
        """Add another task's snapshot (to view a store over all tasks)."""
        self._data.update(data)
        self._sorted = None

    # -- KeyValueStore
    def get(self, key: Any) -> Any:
        entry = self._data.get(self._keyBytes(key))
        return None if entry is None else self._thaw(entry[1])

    def put(self, key: Any, value: Any) -> None:
        kb = self._keyBytes(key)
        if value is None:
            if self._data.pop(kb, None) is not None and self._sorted is not None:
                self._unindex(kb)
        else:
            if self._sorted is not None and kb not in self._data:
                bisect.insort(self._sorted, kb)
            self._data[kb] = (key, self._freeze(value))

    def putIfAbsent(self, key: Any, value: Any) -> Any:
        old = self.get(key)
        if old is None:
            self.put(key, value)
        return old

    def putAll(self, entries) -> None:
        for key, value in entries:
            self.put(key, value)

    def delete(self, key: Any) -> Any:
        kb = self._keyBytes(key)
        entry = self._data.pop(kb, None)
        if entry is None:
            return None
        if self._sorted is not None:
            self._unindex(kb)
        return self._thaw(entry[1])

    def _unindex(self, kb: bytes) -> None:
        keys = self._sorted
        del keys[bisect.bisect_left(keys, kb)]

    def _keysBetween(self, lo: bytes | None, hi: bytes | None, hiInclusive: bool = True) -> list[bytes]:
        """Serialized keys in ``[lo, hi]`` (``[lo, hi)`` unless ``hiInclusive``) in order; None = open end."""
        keys = self._sorted
        if keys is None:
            keys = self._sorted = sorted(self._data)
        start = 0 if lo is None else bisect.bisect_left(keys, lo)
        end = len(keys) if hi is None else (bisect.bisect_right if hiInclusive else bisect.bisect_left)(keys, hi)
        return keys[start:end]

    def _iterator(self, keys) -> KeyValueIterator:
        """Entries of the serialized keys ``keys``; a key of a mutable type (a dict, a list) is read
        back from its bytes, as Kafka's are: changing a key after ``put`` changes nothing stored."""
        from ..keyvalue import KeyValue

        data, thaw = self._data, self._thaw
        out = []
        for kb in keys:
            k, v = data[kb]
            if type(k) not in _IMMUTABLE:
                k = self._keySerde.deserialize(self._serdeTopic, kb)
            out.append(KeyValue(k, thaw(v)))
        return KeyValueIterator(out)

    def _bounds(self, fromKey: Any, toKey: Any) -> tuple[bytes | None, bytes | None] | None:
        lo = None if fromKey is None else self._keyBytes(fromKey)
        hi = None if toKey is None else self._keyBytes(toKey)
        if lo is not None and hi is not None and lo > hi:
            log.warning(
                "Returning empty iterator for fetch with invalid key range: from > to. This may be due to "
                "range arguments set in the wrong order, or serdes that don't preserve ordering when "
                "lexicographically comparing the serialized bytes."
            )
            return None
        return lo, hi

    def range(self, fromKey: Any = None, toKey: Any = None) -> KeyValueIterator:
        """Entries with ``fromKey <= key <= toKey`` by serialized key; ``None`` bound = open end.
        ``from > to`` (by serialized key) gives an empty iterator and Kafka's warning."""
        bounds = self._bounds(fromKey, toKey)
        return KeyValueIterator([]) if bounds is None else self._iterator(self._keysBetween(*bounds))

    def reverseRange(self, fromKey: Any = None, toKey: Any = None) -> KeyValueIterator:
        """``range(fromKey, toKey)`` in descending serialized-key order (Kafka ``reverseRange``)."""
        bounds = self._bounds(fromKey, toKey)
        return KeyValueIterator([]) if bounds is None else self._iterator(reversed(self._keysBetween(*bounds)))

    def all(self) -> KeyValueIterator:
        return self.range()

    def reverseAll(self) -> KeyValueIterator:
        return self.reverseRange()

    def prefixScan(self, prefix: Any, prefixKeySerializer: Serde) -> KeyValueIterator:
        """Entries whose serialized key starts with ``prefixKeySerializer``'s bytes of ``prefix``,
        in serialized-key order (Kafka ``prefixScan(prefix, prefixKeySerializer)``; the serializer
        may be a ``Serde`` or anything with ``serialize(topic, data)``).

        Raises
        ------
        TypeError
            If ``prefix`` or ``prefixKeySerializer`` is None (Kafka: ``NullPointerException``).
        IndexError
            If the store is in-memory or has a record cache and the serialized prefix is empty or
            all 0xFF bytes: Kafka's ``InMemoryKeyValueStore`` and ``CachingKeyValueStore`` bound
            the scan by ``Bytes.increment(prefix)``, which throws ``IndexOutOfBoundsException``
            there (its RocksDB store scans every key).
        """
        if prefix is None or prefixKeySerializer is None:
            raise TypeError("prefix and prefixKeySerializer cannot be null")
        prefixBytes = bytes(prefixKeySerializer.serialize(self._serdeTopic, prefix))
        if (not self._persistent or self._cachingLayer) and not prefixBytes.rstrip(b"\xff"):
            raise IndexError(f"prefix {prefixBytes.hex() or '(empty)'} of store {self._name} cannot be incremented")
        return self._iterator(self._prefixKeys(prefixBytes))

    def prefixScanBytes(self, prefix: bytes) -> KeyValueIterator:
        """``prefixScan`` by serialized prefix; keys are returned as stored."""
        return self._iterator(self._prefixKeys(prefix))

    def _prefixKeys(self, prefix: bytes) -> list[bytes]:
        # the keys in [prefix, prefix + 1): the smallest key past every key with the prefix is the
        # prefix without its trailing 0xff bytes, last byte + 1 (none if all bytes are 0xff)
        stripped = prefix.rstrip(b"\xff")
        upper = stripped[:-1] + bytes([stripped[-1] + 1]) if stripped else None
        return self._keysBetween(prefix, upper, hiInclusive=False)

    def approximateNumEntries(self) -> int:
        return len(self._data)


class TimestampedKeyValueStore(KeyValueStore):
    """A ``KeyValueStore`` whose values are ``ValueAndTimestamp`` (Kafka ``TimestampedKeyValueStore``).

    Used by KTables (rule T-17).
    """

    def _getValue(self, key: Any) -> Any:
        """``get(key).value``, None if absent, without building the ``ValueAndTimestamp``: the
        read of the fused stream-table joins (``KStreamKTableJoin.fusedStep``). The same value
        as ``get``: ``_thaw``'s steps for a ``ValueAndTimestamp``, and ``get`` itself otherwise."""
        entry = self._data.get(self._keyBytes(key))
        if entry is None:
            return None
        stored = entry[1]
        if type(stored) is not ValueAndTimestamp:
            return self._thaw(stored).value
        frozen = stored[0]
        if type(frozen) is not _Frozen:
            return frozen
        memo = self._thawed
        value = None if memo is None else memo.get(frozen)
        return self._deserializeFrozen(frozen) if value is None else value.copy()


class WindowStore(_TimeOrderedStoreBase):
    """Values per (key, window start) of one task (Kafka ``WindowStore``; here timestamped:
    values are ``ValueAndTimestamp`` when built by a windowed aggregation).

    Retention (ms) is judged against the largest window start put so far: windows starting at or
    before ``observedStreamTime - retention`` are dropped (Kafka's in-memory window store and the
    reads of its RocksDB one), or only those before it in a ``timeFirst`` store.
    Iteration is by window start, then serialized key.
    """

    timestamped = False  # built by Stores.timestampedWindowStoreBuilder: values are ValueAndTimestamp
    # The store of an emit-final aggregation (EmitStrategy.onWindowClose() without a store supplier
    # of the user's): Kafka's time-ordered window store (RocksDbIndexedTimeOrderedWindowBytesStoreSupplier,
    # time-first key schema), whose puts and reads keep the window starting exactly at
    # observedStreamTime - retention (AbstractDualSchemaRocksDBSegmentedBytesStore.getActualFrom and
    # get: "observedStreamTime - retentionPeriod", where the key-first schema adds 1).
    # _edge: reads and puts see windows starting at observedStreamTime - retention + _edge or later.
    timeFirst = False
    _edge = 1

    def __init__(self, name: str, keySerde: Serde, valueSerde: Serde, persistent: bool,
                 retentionMs: int, windowSizeMs: int) -> None:
        super().__init__(name, keySerde, valueSerde, persistent, retentionMs)
        self._windowSizeMs = windowSizeMs
        self._purgedAt = -1  # self._data: (start, keyBytes) -> (key, value)
        # key bytes -> sorted window starts: built on the first key range read (sliding windows)
        # and kept from then on; point reads (time windows) never need it
        self._index: dict[bytes, list[int]] | None = None

    def restore(self, data: dict) -> None:
        super().restore(data)
        self._index = None

    def mergeSnapshot(self, data: dict) -> None:
        super().mergeSnapshot(data)
        self._index = None

    def windowSize(self) -> int:
        return self._windowSizeMs

    def _setTimeFirst(self) -> None:
        self.timeFirst, self._edge = True, 0

    def _oldestVisible(self) -> int:
        """The earliest window start a read or put sees (see ``timeFirst``)."""
        return self._observed - self._retentionMs + self._edge

    def _live(self, start: int) -> bool:
        return start >= self._observed - self._retentionMs + self._edge

    def put(self, key: Any, value: Any, windowStartTimestamp: int) -> None:
        self._putBytes(self._keyBytes(key), key, value, windowStartTimestamp)

    def _putBytes(self, kb: bytes, key: Any, value: Any, windowStartTimestamp: int) -> None:
        """``put`` by serialized key (hot path of the DSL)."""
        if windowStartTimestamp > self._observed:
            self._observed = windowStartTimestamp
        if windowStartTimestamp < self._observed - self._retentionMs + self._edge:  # not _live
            log.warning("Skipping record for expired segment.")
            return
        index = self._index
        if value is None:
            if self._data.pop((windowStartTimestamp, kb), None) is not None and index is not None:
                starts = index[kb]
                del starts[bisect.bisect_left(starts, windowStartTimestamp)]
        else:
            t = type(value)  # _freeze's checks inline: a count's ValueAndTimestamp(int) is kept as it is
            if t not in _IMMUTABLE and (t is not ValueAndTimestamp or type(value[0]) not in _IMMUTABLE):
                value = self._freeze(value)
            data = self._data
            if index is not None and (windowStartTimestamp, kb) not in data:
                starts = index.get(kb)
                if starts is None:
                    index[kb] = [windowStartTimestamp]
                else:
                    bisect.insort(starts, windowStartTimestamp)
            data[(windowStartTimestamp, kb)] = (key, value)
        if self._observed - self._purgedAt >= max(1, self._retentionMs // 2):
            # keep the window starting exactly at observed - retention: a timeFirst store still shows it
            bound = self._observed - self._retentionMs
            self._data = {k: v for k, v in self._data.items() if k[0] >= bound}
            if index is not None:
                for kb_ in list(index):
                    starts = index[kb_]
                    del starts[:bisect.bisect_left(starts, bound)]
                    if not starts:
                        del index[kb_]
            self._purgedAt = self._observed

    def _windowsOfKey(self, kb: bytes, timeFrom: int, timeTo: int) -> list:
        """``(start, value)`` of the live windows of key bytes ``kb`` starting in ``[timeFrom,
        timeTo]``, by start (Kafka's ``fetch(key, from, to)``: reads start at ``observed -
        retention + _edge``)."""
        index = self._index
        if index is None:
            index = self._index = {}
            for start, k in sorted(self._data):
                index.setdefault(k, []).append(start)
        starts = index.get(kb)
        if not starts:
            return []
        lower = max(timeFrom, self._observed - self._retentionMs + self._edge)
        data, thaw = self._data, self._thaw
        return [(start, thaw(data[(start, kb)][1]))
                for start in starts[bisect.bisect_left(starts, lower):bisect.bisect_right(starts, timeTo)]]

    def fetch(self, key: Any, timeFrom, timeTo=None):
        """``fetch(key, start)``: the value of that window (or None); ``fetch(key, from, to)``:
        ``KeyValue(start, value)`` for windows of ``key`` starting in ``[from, to]`` (ms or
        datetime), earliest first."""
        from .._duration import toEpochMillis

        kb = self._keyBytes(key)
        timeFrom = toEpochMillis(timeFrom, "timeFrom")
        if timeTo is None:
            return self._fetchBytes(kb, timeFrom)
        from ..keyvalue import KeyValue

        timeTo = toEpochMillis(timeTo, "timeTo")
        return KeyValueIterator([KeyValue(start, self._thaw(v)) for (start, k), (_, v) in sorted(self._data.items())
                                 if k == kb and timeFrom <= start <= timeTo and self._live(start)])

    def backwardFetch(self, key: Any, timeFrom, timeTo) -> KeyValueIterator:
        """``fetch(key, from, to)``, latest window first (Kafka ``backwardFetch``)."""
        return KeyValueIterator(list(self.fetch(key, timeFrom, timeTo))[::-1])

    def _fetchBytes(self, kb: bytes, windowStartTimestamp: int) -> Any:
        """``fetch(key, start)`` by serialized key (hot path of the DSL)."""
        entry = self._data.get((windowStartTimestamp, kb))
        if entry is None or windowStartTimestamp < self._observed - self._retentionMs + self._edge:
            return None
        value = entry[1]
        t = type(value)
        return self._thaw(value) if t is _Frozen or (t is ValueAndTimestamp and type(value[0]) is _Frozen) else value

    def fetchAll(self, timeFrom: int, timeTo: int) -> KeyValueIterator:
        """``KeyValue(Windowed(key, TimeWindow), value)`` for every live window starting in
        ``[timeFrom, timeTo]``, by start then serialized key (Kafka ``WindowStore#fetchAll``; a
        ``timeFirst`` store still shows the window that closes exactly as it leaves the retention,
        which emit-final then emits)."""
        return self._windowsFrom(timeFrom, timeTo, self._oldestVisible())

    def _windowsFrom(self, timeFrom: int, timeTo: int, oldest: int) -> KeyValueIterator:
        from ..keyvalue import KeyValue

        lower = max(timeFrom, oldest)
        return KeyValueIterator([
            KeyValue(Windowed(key, TimeWindow(start, start + self._windowSizeMs)), self._thaw(v))
            for (start, _), (key, v) in sorted(self._data.items()) if lower <= start <= timeTo
        ])

    def all(self) -> KeyValueIterator:
        """``KeyValue(Windowed(key, TimeWindow), value)`` for every live window."""
        from ..keyvalue import KeyValue

        return KeyValueIterator([
            KeyValue(Windowed(key, TimeWindow(start, start + self._windowSizeMs)), self._thaw(v))
            for (start, _), (key, v) in sorted(self._data.items()) if self._live(start)
        ])


class SessionStore(_TimeOrderedStoreBase):
    """Aggregates per session ``Windowed(key, SessionWindow)`` of one task (rules ST-3..ST-7).

    The store tracks ``observedStreamTime`` = the max session end put or removed.

    - in-memory (``Stores.inMemorySessionStore``, ST-7): a put whose session ends at or before
      ``observedStreamTime - retention`` is dropped (counted through ``droppedCounter``) and such
      sessions are invisible to every read;
    - persistent (``Stores.persistentSessionStore``, Kafka's segmented RocksDB store, ST-6):
      sessions live in segments of ``max(retention / 2, 60000)`` ms of end time; a put into a
      segment older than ``segmentId(observedStreamTime - retention)`` is dropped (counted) and
      such segments are deleted; key lookups hide sessions ending at or before
      ``observedStreamTime - retention``, but ``findSessionsByEnd`` (the time-ordered read used by
      emit-final) sees every session of a live segment.

    Key lookups return sessions ordered by end, then serialized key, then start descending.
    """

    def __init__(self, name: str, keySerde: Serde, valueSerde: Serde, persistent: bool, retentionMs: int) -> None:
        super().__init__(name, keySerde, valueSerde, persistent, retentionMs)
        self.droppedCounter = None  # set by the task: called when a put is dropped as expired
        self._segmentInterval = max(retentionMs // 2, 60_000)
        # serialized key -> [(end, start, key, aggregate)] ordered by end, then start descending
        # (the key lookup order); a key's list may be empty until its segment is purged
        self._sessions: dict[bytes, list[tuple[int, int, Any, Any]]] = {}
        # segment id (end // segment interval) -> serialized keys that put a session there; every
        # segment below ``_purgedBelow`` is gone. Both hosts only ever read sessions by key unless
        # emit-final asks for a time range: the time-ordered index ``_byEnd`` (sorted (end,
        # keyBytes, start)) is built on the first such read and kept from then on.
        self._segments: dict[int, set[bytes]] = {}
        self._purgedBelow = 0
        self._byEnd: list[tuple[int, bytes, int]] | None = None

    def snapshot(self) -> dict:
        return {"sessions": self._sessions, "segments": self._segments, "purgedBelow": self._purgedBelow,
                "observed": self._observed}

    def restore(self, data: dict) -> None:
        self._sessions, self._segments = data["sessions"], data["segments"]
        self._purgedBelow, self._observed = data["purgedBelow"], data["observed"]
        self._byEnd = None

    def mergeSnapshot(self, data: dict) -> None:
        """Add another task's snapshot (to view a store over all tasks)."""
        for kb, sessions in data["sessions"].items():
            for end, start, key, aggregate in sessions:
                self._store(end, kb, start, key, aggregate)
        for segment, keys in data["segments"].items():
            self._segments.setdefault(segment, set()).update(keys)
        self._purgedBelow = min(self._purgedBelow, data["purgedBelow"])
        self._observed = max(self._observed, data["observed"])

    def _minLiveEnd(self) -> int:
        return self._observed - self._retentionMs + 1

    def _store(self, end: int, kb: bytes, start: int, key: Any, aggregate: Any) -> None:
        """Insert or replace the session in its key's list, in key lookup order."""
        entry = (end, start, key, aggregate)
        sessions = self._sessions.get(kb)
        if not sessions:
            if sessions is None:
                self._sessions[kb] = [entry]
            else:
                sessions.append(entry)
        else:
            i = len(sessions)
            while i:
                e = sessions[i - 1]
                if e[0] < end or (e[0] == end and e[1] > start):
                    break  # e comes first
                if e[0] == end and e[1] == start:
                    sessions[i - 1] = entry
                    return
                i -= 1
            sessions.insert(i, entry)
        segments = self._segments.get(end // self._segmentInterval)
        if segments is None:
            self._segments[end // self._segmentInterval] = {kb}
        else:
            segments.add(kb)
        if self._byEnd is not None:
            bisect.insort(self._byEnd, (end, kb, start))

    def _delete(self, end: int, kb: bytes, start: int) -> None:
        sessions = self._sessions.get(kb)
        if not sessions:
            return
        i = len(sessions) - 1  # mostly the key's latest session (a record extending it); entries are unique
        if sessions[i][0] != end or sessions[i][1] != start:
            i = next((j for j, e in enumerate(sessions) if e[0] == end and e[1] == start), None)
            if i is None:
                return
        del sessions[i]
        if self._byEnd is not None:
            byEnd = self._byEnd
            del byEnd[bisect.bisect_left(byEnd, (end, kb, start))]

    def _purge(self, below: int) -> None:
        """Delete every session of the segments below ``below`` (ST-6/ST-7 expiry)."""
        interval, sessionsOf = self._segmentInterval, self._sessions
        for segment in [s for s in self._segments if s < below]:
            for kb in self._segments.pop(segment):
                sessions = sessionsOf.get(kb)
                if sessions is None:
                    continue
                live = [e for e in sessions if e[0] // interval >= below]
                if not live:
                    del sessionsOf[kb]
                elif len(live) < len(sessions):
                    sessionsOf[kb] = live
        self._purgedBelow = below
        byEnd = self._byEnd
        if byEnd is not None:
            del byEnd[:bisect.bisect_left(byEnd, (below * interval,))]

    def put(self, sessionKey, aggregate: Any) -> None:
        """Store ``aggregate`` for ``sessionKey`` (a ``Windowed``); ``None`` removes it (ST-5)."""
        window = sessionKey.window()
        key = sessionKey.key()
        self._putEntry(window.end(), self._keyBytes(key), window.start(), key, aggregate)

    def _putEntry(self, end: int, kb: bytes, start: int, key: Any, aggregate: Any) -> None:
        """``put`` by serialized key, without building a ``Windowed`` (hot path of the DSL)."""
        if end > self._observed:
            self._observed = end
        if aggregate is None:
            self._delete(end, kb, start)
            return
        bound = self._observed - self._retentionMs
        interval = self._segmentInterval
        if (end // interval < bound // interval) if self._persistent else end <= bound:
            log.warning("Skipping record for expired segment.")
            if self.droppedCounter is not None:
                self.droppedCounter()
            return
        if type(aggregate) not in _IMMUTABLE:
            aggregate = self._freeze(aggregate)
        self._store(end, kb, start, key, aggregate)
        # segments wholly older than the retention bound go (an in-memory store's reads also hide
        # the expired sessions of the live segments)
        if bound // interval > self._purgedBelow:
            self._purge(bound // interval)

    def remove(self, sessionKey) -> None:
        self.put(sessionKey, None)

    def _iterator(self, entries) -> KeyValueIterator:
        """``entries`` as (end, start, key, aggregate) tuples -> ``KeyValue(Windowed, aggregate)``."""
        from ..keyvalue import KeyValue

        return KeyValueIterator([KeyValue(Windowed(key, SessionWindow(start, end)), aggregate)
                                 for end, start, key, aggregate in entries])

    def _thawEntry(self, e: tuple) -> tuple:
        """``(end, start, key, aggregate)`` with a new object for a frozen aggregate."""
        return e if type(e[3]) is not _Frozen else (e[0], e[1], e[2], self._thaw(e[3]))

    def _ofKey(self, key: Any) -> list[tuple[int, int, Any, Any]]:
        """Live sessions of ``key`` in key lookup order."""
        lowest = self._minLiveEnd()
        return [self._thawEntry(e) for e in self._sessions.get(self._keyBytes(key), ()) if e[0] >= lowest]

    def findSessions(self, key: Any, earliestSessionEndTime, latestSessionStartTime) -> KeyValueIterator:
        """Sessions of ``key`` with ``end >= earliestSessionEndTime`` and ``start <=
        latestSessionStartTime`` (ms or datetime; ST-3), ordered by end, then start descending."""
        from .._duration import toEpochMillis

        earliest = toEpochMillis(earliestSessionEndTime, "earliestSessionEndTime")
        latest = toEpochMillis(latestSessionStartTime, "latestSessionStartTime")
        return self._iterator(e for e in self._ofKey(key) if e[0] >= earliest and e[1] <= latest)

    def backwardFindSessions(self, key: Any, earliestSessionEndTime, latestSessionStartTime) -> KeyValueIterator:
        """``findSessions`` in reverse order (Kafka ``backwardFindSessions``)."""
        return KeyValueIterator(list(self.findSessions(key, earliestSessionEndTime, latestSessionStartTime))[::-1])

    def _findSessionEntries(self, kb: bytes, earliestSessionEndTime: int, latestSessionStartTime: int) -> list:
        """``findSessions`` by serialized key as ``(end, start, key, aggregate)`` tuples, same
        sessions and order, without building ``Windowed`` objects (hot path of the DSL)."""
        sessions = self._sessions.get(kb)
        if not sessions:
            return []
        lowest = self._observed - self._retentionMs + 1  # _minLiveEnd()
        if earliestSessionEndTime > lowest:
            lowest = earliestSessionEndTime
        if len(sessions) == 1:
            e = sessions[0]
            if e[0] >= lowest and e[1] <= latestSessionStartTime:
                return [e if type(e[3]) is not _Frozen else self._thawEntry(e)]
            return []
        return [self._thawEntry(e) for e in sessions if e[0] >= lowest and e[1] <= latestSessionStartTime]

    def findSessionsByEnd(self, earliestSessionEndTime: int, latestSessionEndTime: int) -> KeyValueIterator:
        """All keys' sessions whose end lies in ``[earliest, latest]`` (Kafka ``findSessions(long, long)``,
        ST-4), ordered by end, serialized key, start descending."""
        byEnd = self._byEnd
        if byEnd is None:
            byEnd = self._byEnd = sorted((e[0], kb, e[1]) for kb, sessions in self._sessions.items() for e in sessions)
        lo = bisect.bisect_left(byEnd, (earliestSessionEndTime,))
        if not self._persistent:  # an in-memory store hides expired sessions from every read
            lo = max(lo, bisect.bisect_left(byEnd, (self._minLiveEnd(),)))
        hi = bisect.bisect_left(byEnd, (latestSessionEndTime + 1,))
        found = sorted(byEnd[lo:hi], key=lambda e: (e[0], e[1], -e[2]))
        return self._iterator(self._entry(end, kb, start) for end, kb, start in found)

    def _entry(self, end: int, kb: bytes, start: int) -> tuple[int, int, Any, Any]:
        for e in self._sessions[kb]:
            if e[0] == end and e[1] == start:
                return self._thawEntry(e)
        raise KeyError((end, kb, start))

    def fetchSession(self, key: Any, sessionStartTime: int, sessionEndTime: int) -> Any:
        """The aggregate of exactly that session, or None."""
        if sessionEndTime < self._minLiveEnd():
            return None
        for end, start, _, aggregate in self._sessions.get(self._keyBytes(key), ()):
            if end == sessionEndTime and start == sessionStartTime:
                return self._thaw(aggregate)
        return None

    def fetch(self, key: Any) -> KeyValueIterator:
        """All live sessions of ``key``, earliest first."""
        return self._iterator(self._ofKey(key))

    def backwardFetch(self, key: Any) -> KeyValueIterator:
        """All live sessions of ``key``, latest first."""
        return self._iterator(reversed(self._ofKey(key)))


class SessionBytesStoreSupplier(NamedTuple):
    """Names a session store and its retention in ms (Kafka ``SessionBytesStoreSupplier``)."""

    name: str
    retentionPeriod: int
    persistent: bool


class WindowBytesStoreSupplier(NamedTuple):
    """Names a window store: retention and window size in ms, whether it keeps every value put
    (``retainDuplicates``: the stores of stream-stream joins) (Kafka ``WindowBytesStoreSupplier``)."""

    name: str
    retentionPeriod: int
    windowSize: int
    persistent: bool
    retainDuplicates: bool = False


class KeyValueBytesStoreSupplier(NamedTuple):
    """Names a key-value store and its kind (Kafka ``KeyValueBytesStoreSupplier``)."""

    name: str
    persistent: bool
    timestamped: bool = False

    def metricsScope(self) -> str:
        return "rocksdb" if self.persistent else "in-memory"


class StoreBuilder:
    """Builds one store instance per task (Kafka ``StoreBuilder``)."""

    def __init__(self, supplier: KeyValueBytesStoreSupplier, keySerde: Serde | None, valueSerde: Serde | None) -> None:
        self._supplier = supplier
        self._keySerde = keySerde
        self._valueSerde = valueSerde
        self._caching = False
        self._logging = True
        self._timestampedWindows = False  # Stores.timestampedWindowStoreBuilder
        self._timeFirst = False  # an emit-final aggregation's window store (WindowStore.timeFirst)

    def name(self) -> str:
        return self._supplier.name

    def withCachingEnabled(self) -> "StoreBuilder":
        self._caching = True
        return self

    def withCachingDisabled(self) -> "StoreBuilder":
        self._caching = False
        return self

    def withLoggingEnabled(self, config: dict | None = None) -> "StoreBuilder":
        self._logging = True
        return self

    def withLoggingDisabled(self) -> "StoreBuilder":
        self._logging = False
        return self

    def loggingEnabled(self) -> bool:
        return self._logging

    def build(self, defaultKeySerde: Serde | None = None,
              defaultValueSerde: Serde | None = None) -> KeyValueStore | WindowStore | SessionStore:
        """A new store; serdes unset here and in the builder fall back to ``defaultKeySerde`` /
        ``defaultValueSerde`` (the task's ``default.key.serde`` / ``default.value.serde``), else to
        kspark's defaults (String keys, JSON values) for a store built by a test."""
        if defaultKeySerde is None or defaultValueSerde is None:
            from ..serialization import Serdes

            defaultKeySerde, defaultValueSerde = defaultKeySerde or Serdes.String(), defaultValueSerde or Serdes.JSON()
        if isinstance(self._supplier, SessionBytesStoreSupplier):
            s = self._supplier
            return SessionStore(s.name, self._keySerde or defaultKeySerde, self._valueSerde or defaultValueSerde,
                                s.persistent, s.retentionPeriod)
        if isinstance(self._supplier, WindowBytesStoreSupplier):
            s = self._supplier
            if s.retainDuplicates:
                from ._join_stores import DuplicatesWindowStore

                store = DuplicatesWindowStore(s.name, self._keySerde or defaultKeySerde,
                                              self._valueSerde or defaultValueSerde, s.persistent, s.retentionPeriod,
                                              s.windowSize)
                store.timestamped = self._timestampedWindows
                return store
            store = WindowStore(s.name, self._keySerde or defaultKeySerde, self._valueSerde or defaultValueSerde,
                                s.persistent, s.retentionPeriod, s.windowSize)
            store.timestamped = self._timestampedWindows
            if self._timeFirst:
                store._setTimeFirst()
            return store
        cls = TimestampedKeyValueStore if self._supplier.timestamped else KeyValueStore
        return cls(
            self._supplier.name,
            self._keySerde or defaultKeySerde,
            self._valueSerde or defaultValueSerde,
            self._supplier.persistent,
        )


class Stores:
    """Factory of store suppliers and builders (Kafka ``Stores``, rule E-4)."""

    @staticmethod
    def inMemoryKeyValueStore(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(_checkName(name), persistent=False)

    @staticmethod
    def persistentKeyValueStore(name: str) -> KeyValueBytesStoreSupplier:
        """A persistent store: on the Spark host it lives in the task's local RocksDB, with a changelog."""
        return KeyValueBytesStoreSupplier(_checkName(name), persistent=True)

    @staticmethod
    def persistentTimestampedKeyValueStore(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(_checkName(name), persistent=True, timestamped=True)

    @staticmethod
    def inMemoryWindowStore(name: str, retentionPeriod, windowSize, retainDuplicates: bool = False) -> WindowBytesStoreSupplier:
        """A window store keeping windows for ``retentionPeriod`` (ms or timedelta) after their start;
        with ``retainDuplicates`` every value put is kept (what a stream-stream join's
        ``StreamJoined.withThisStoreSupplier`` needs)."""
        return _windowSupplier(name, retentionPeriod, windowSize, retainDuplicates, persistent=False)

    @staticmethod
    def persistentWindowStore(name: str, retentionPeriod, windowSize, retainDuplicates: bool = False) -> WindowBytesStoreSupplier:
        return _windowSupplier(name, retentionPeriod, windowSize, retainDuplicates, persistent=True)

    @staticmethod
    def persistentTimestampedWindowStore(name: str, retentionPeriod, windowSize,
                                         retainDuplicates: bool = False) -> WindowBytesStoreSupplier:
        """Kafka ``Stores#persistentTimestampedWindowStore``: the supplier of a persistent window store
        for ``Stores.timestampedWindowStoreBuilder`` (values ``ValueAndTimestamp``). Here the
        builder decides how values are kept, so it is ``persistentWindowStore``'s supplier.

        Raises
        ------
        ValueError
            For a negative retention or window size, or a window size above the retention."""
        return _windowSupplier(name, retentionPeriod, windowSize, retainDuplicates, persistent=True)

    @staticmethod
    def inMemorySessionStore(name: str, retentionPeriod) -> SessionBytesStoreSupplier:
        """A session store keeping sessions until ``retentionPeriod`` (ms or timedelta) past their end."""
        return _sessionSupplier(name, retentionPeriod, persistent=False)

    @staticmethod
    def persistentSessionStore(name: str, retentionPeriod) -> SessionBytesStoreSupplier:
        """Same semantics as the in-memory one here (ST-7); on Spark it lives in the task's local RocksDB."""
        return _sessionSupplier(name, retentionPeriod, persistent=True)

    @staticmethod
    def sessionStoreBuilder(supplier: SessionBytesStoreSupplier, keySerde: Serde | None = None,
                            valueSerde: Serde | None = None) -> StoreBuilder:
        return StoreBuilder(supplier, keySerde, valueSerde)  # type: ignore[arg-type]

    @staticmethod
    def windowStoreBuilder(supplier: WindowBytesStoreSupplier, keySerde: Serde | None = None,
                           valueSerde: Serde | None = None) -> StoreBuilder:
        return StoreBuilder(supplier, keySerde, valueSerde)  # type: ignore[arg-type]

    @staticmethod
    def timestampedWindowStoreBuilder(supplier: WindowBytesStoreSupplier, keySerde: Serde | None = None,
                                      valueSerde: Serde | None = None) -> StoreBuilder:
        """Builder of a window store whose values are ``ValueAndTimestamp`` (Kafka
        ``Stores#timestampedWindowStoreBuilder``; the DSL's windowed aggregations use it)."""
        builder = StoreBuilder(supplier, keySerde, valueSerde)  # type: ignore[arg-type]
        builder._timestampedWindows = True
        return builder

    @staticmethod
    def keyValueStoreBuilder(
        supplier: KeyValueBytesStoreSupplier, keySerde: Serde | None = None, valueSerde: Serde | None = None
    ) -> StoreBuilder:
        """Builder of a ``KeyValueStore``; ``None`` serdes fall back to the default serdes."""
        if not isinstance(supplier, KeyValueBytesStoreSupplier):
            raise TypeError("supplier must come from Stores.inMemoryKeyValueStore/persistentKeyValueStore")
        return StoreBuilder(supplier, keySerde, valueSerde)

    @staticmethod
    def timestampedKeyValueStoreBuilder(
        supplier: KeyValueBytesStoreSupplier, keySerde: Serde | None = None, valueSerde: Serde | None = None
    ) -> StoreBuilder:
        return StoreBuilder(supplier._replace(timestamped=True), keySerde, valueSerde)

    @staticmethod
    def persistentVersionedKeyValueStore(name: str, historyRetention, segmentInterval=None):
        """A versioned key-value store (KIP-889) keeping each key's older values for
        ``historyRetention`` (ms or timedelta; also the grace period after which an out-of-order
        put is refused), in segments of ``segmentInterval`` (default: Kafka's choice from the
        retention). Give it to ``Materialized.as_`` for a versioned ``builder.table``/``toTable``,
        or to ``Stores.versionedKeyValueStoreBuilder``. On Spark it lives in the task's local
        RocksDB, with a changelog topic.

        Raises
        ------
        ValueError
            For a negative retention ("historyRetention cannot be negative") or a segment interval
            below 1 ms ("segmentInterval cannot be zero or negative").
        """
        from .._duration import toMillis
        from ._versioned import VersionedBytesStoreSupplier

        retention = toMillis(historyRetention, "historyRetention")
        if retention < 0:
            raise ValueError("historyRetention cannot be negative")
        if segmentInterval is None:  # Kafka RocksDbVersionedKeyValueBytesStoreSupplier.defaultSegmentInterval
            interval = (max(retention // 3, 2_000) if retention <= 60_000 else max(retention // 5, 20_000)
                        if retention <= 300_000 else max(retention // 12, 60_000) if retention <= 3_600_000
                        else max(retention // 24, 300_000))
        else:
            interval = toMillis(segmentInterval, "segmentInterval")
            if interval < 1:
                raise ValueError("segmentInterval cannot be zero or negative")
        return VersionedBytesStoreSupplier(_checkName(name), retention, interval)

    @staticmethod
    def versionedKeyValueStoreBuilder(supplier, keySerde: Serde | None = None, valueSerde: Serde | None = None):
        """Builder of a ``VersionedKeyValueStore`` (Kafka ``Stores#versionedKeyValueStoreBuilder``)."""
        from ._versioned import VersionedBytesStoreSupplier, VersionedStoreBuilder

        if not isinstance(supplier, VersionedBytesStoreSupplier):
            raise TypeError("supplier must come from Stores.persistentVersionedKeyValueStore")
        return VersionedStoreBuilder(supplier, keySerde, valueSerde)


def _windowSupplier(name, retentionPeriod, windowSize, retainDuplicates, persistent) -> WindowBytesStoreSupplier:
    from .._duration import toMillis

    retention, size = toMillis(retentionPeriod, "retentionPeriod"), toMillis(windowSize, "windowSize")
    if retention < 0:
        raise ValueError("retentionPeriod cannot be negative")
    if size < 0:
        raise ValueError("windowSize cannot be negative")
    if size > retention:
        raise ValueError(f"The retention period of the window store {name} must be no smaller than its window size. "
                         f"Got size=[{size}], retention=[{retention}]")
    return WindowBytesStoreSupplier(_checkName(name), retention, size, persistent, bool(retainDuplicates))


def _sessionSupplier(name, retentionPeriod, persistent) -> SessionBytesStoreSupplier:
    from .._duration import toMillis

    retention = toMillis(retentionPeriod, "retentionPeriod")
    if retention < 0:
        raise ValueError("retentionPeriod cannot be negative")
    return SessionBytesStoreSupplier(_checkName(name), retention, persistent)


def _checkName(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError("name cannot be null")  # Kafka: NullPointerException("name cannot be null")
    return name
