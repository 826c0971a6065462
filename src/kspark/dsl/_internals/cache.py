"""The DSL record cache (Kafka ``ThreadCache`` / ``NamedCache`` / ``LRUCacheEntry`` and the
flush path of ``CachingKeyValueStore`` / ``CachingWindowStore`` / ``CachingSessionStore``).

kspark keeps the store itself always up to date and puts the cache in front of the
aggregation's *downstream*: what the cache decides is when, and with which value, an update is
forwarded (rules SA-10, E-5). The decisions are Kafka's:

- every update of a key makes its entry dirty (the dirty order is the order of each key's
  **last** update) and the most recently used;
- at commit (after every record in TopologyTestDriver, once per micro-batch on Spark) every
  dirty entry is forwarded, in dirty order, with its latest value; entries stay cached (clean);
  deleted keys leave the cache;
- when the task's cache holds more than ``statestore.cache.max.bytes``, the least recently used
  entries of the cache just written are evicted until it fits; evicting a dirty entry flushes
  that cache: the evicted entry first, then every other dirty entry in dirty order
  (``NamedCache.evict`` / ``flush(evicted)``). So a small cache forwards before the commit;
- a key created and removed between two flushes, unknown to the store at the last flush,
  forwards nothing (``oldValue == null && newValue == null`` is skipped).

Entries are keyed by the serialized key, as Kafka's cache is (``Bytes``): a key-value cache by
the key's bytes, a window cache by ``(key bytes, window start)``, a session cache by ``(key bytes,
end, start)``. So two keys are one entry exactly when their key serde writes the same bytes (a
``dict`` or ``list`` key works; ``1`` and ``1.0`` with the JSON serde are two entries); each entry
keeps its record, whose key object is the one forwarded.

Size accounting is ``LRUNode.size()``: cache-key bytes + 24 + 1 (dirty flag) + value bytes +
8 (timestamp) + 8 (offset) + 4 (partition) + topic name characters + header key characters and
value bytes. Cache keys: key-value stores the serialized key; window stores 8 (segment prefix)
+ key + 8 (window start) + 4 (sequence number); session stores 8 + key + 16 (end, start).
Values: timestamped key-value and window stores prefix 8 timestamp bytes to the serialized
value; session stores store the value bytes only.

Budget: Kafka gives each stream thread ``statestore.cache.max.bytes / num.stream.threads``,
shared by the thread's tasks. kspark gives **each task** the whole
``statestore.cache.max.bytes``, shared by the caches of that task's stores: that is Kafka's
budget for TopologyTestDriver (one task) and for one-thread-per-task, and it keeps a task's
output independent of which other tasks run beside it on a Spark worker.

Reads (ST-9): a session aggregation's lookup also sees the cached sessions of the key (clean or
dirty, not deleted, no retention bound), as Kafka's ``CachingSessionStore.findSessions`` merges
the cache with the store's clamped read. The store is written through, so a cached session differs
from the store only when the store already hides it past its retention: those are added to the
lookup (``withHiddenSessions``), and when merged away their tombstone is skipped at the flush (the
store has no old value). Window lookups likewise see cached windows the store hides
(``cachedWindow``, ``withCachedWindows``: Kafka's ``CachingWindowStore.fetch``): that happens when
the store's time runs ahead of the reading processor's, as with a cogroup's inputs sharing one
store. Key-value lookups are not routed through the cache (the store shows nothing the cache
would show differently). Processors that write one store share its one cache (``forStore``).

Emit-on-window-close (KIP-825) caches its window store without a flush listener: the cache
forwards nothing, but the final scan reads through it (``CachingWindowStore.fetchAll`` merges the
cache with the store), so a window the store already hides past its retention is still emitted
while it is cached (``hiddenWindows``). Kafka's underlying store only learns a later window at the
flush, so it may show a window that kspark's written-through store hides and the cache has evicted;
with a cache that holds the task's open windows (the default 10 MB) the two agree.

A Spark micro-batch is a commit, not a restart, so a task rebuilt from Spark's state between
batches must find the cache a running Kafka task would have (Kafka itself starts with an empty
cache only after a restart or rebalance): at each checkpoint a session or window cache writes its
entries, least recently used first, to the node's checkpointed state as flat ``(key, start, end,
size, value, timestamp)`` tuples (entries are clean after the commit), and a rebuilt task reads
them back. Key-value caches are not checkpointed: a rebuilt task starts them empty, which can move
an eviction, never the last value forwarded per key.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import OrderedDict
from typing import Any

from ...state import ValueAndTimestamp
from ...state._stores import _IMMUTABLE, _Frozen

_NODE_OVERHEAD = 8 + 8 + 8 + 1 + 8 + 8 + 4   # LRUNode entry/previous/next, dirty flag, timestamp, offset, partition


class TaskCache:
    """The record-cache budget of one task (Kafka ``ThreadCache``; see the module docstring)."""

    def __init__(self, maxBytes: int) -> None:
        self.maxBytes = maxBytes
        self.sizeBytes = 0
        self.evictions = 0
        self.byStore: dict[str, "RecordCache"] = {}  # store name -> its cache (read-through views)

    def maybeEvict(self, cache: "RecordCache") -> None:
        """``ThreadCache.maybeEvict``: evict from the cache just written until the task fits."""
        while self.sizeBytes > self.maxBytes:
            if not cache.entries:
                return
            cache.evict()
            self.evictions += 1


def taskCache(context) -> TaskCache:
    """The task's ``TaskCache``, created on first use."""
    task = context._task
    cache = getattr(task, "recordCache", None)
    if cache is None:
        cache = task.recordCache = TaskCache(task.cacheMaxBytes)
    return cache


class _Entry:
    """A cached update (Kafka ``LRUCacheEntry``): the record, whether the store held the key at the
    last flush, dirty flag, size, and ``meta``: the record context (topic, partition, offset) it
    was written in, which is the context downstream sees when it is flushed."""

    __slots__ = ("record", "existed", "dirty", "size", "meta")

    def __init__(self, record, existed: bool, size: int, meta=None) -> None:
        self.record, self.existed, self.dirty, self.size, self.meta = record, existed, True, size, meta


class RecordCache:
    """The cache of one aggregation's store (Kafka ``NamedCache`` + the caching store's flush).

    ``forward(record, existedInStore)`` takes the update the processor would forward (a
    ``Record`` whose value is a ``Change``) and whether the key was in the store before this
    update; disabled, it forwards at once. ``schema`` is ``"keyValue"``, ``"window"`` or
    ``"session"`` (for the size accounting); ``store`` gives the serdes.
    """

    def __init__(self, processor, enabled: bool, store=None, schema: str = "keyValue", forwards: bool = True) -> None:
        self.processor, self.enabled = processor, enabled
        # False: a caching store without a flush listener (emit-final's window store): entries are
        # kept (and read) as in Kafka's cache, a flush or eviction forwards nothing
        self.forwards = forwards
        # cache key (see the module docstring: serialized key, with the window) -> entry
        self.entries: OrderedDict[Any, _Entry] = OrderedDict()  # least recently used first
        self.dirty: dict[Any, None] = {}                         # order of each key's last update
        self.sizeBytes = 0
        # session schema: inner key bytes -> ([(end, start)] sorted, {(end, start): cache key}) of
        # cached sessions that have a value (tombstones are left out: lookups skip them, and an
        # active key's tombstones would otherwise pile up until the next flush); window schema:
        # the same with window starts instead of (end, start)
        self.byKey: dict = {}
        if enabled:
            context = processor.context()
            self.task = taskCache(context)
            self.store, self.schema = store, schema
            if store is not None:
                self.task.byStore[store.name()] = self
                store._cachingLayer = True  # its prefixScan bounds as Kafka's CachingKeyValueStore
            if schema in ("session", "window"):
                state, slot = context.nodeState(), f"{schema}Cache"
                saved = state.pop(slot, None)
                if saved:
                    self._restoreWindows(saved)
                context.registerCheckpointCallback(lambda: state.__setitem__(slot, self._savedWindows()))
            # a Long serde always writes 8 bytes: counts need no serializing to be sized
            self._fixed8 = store is not None and type(store._valueSerde).__name__ == "_LongSerde"
            context.registerCommitCallback(self.flush)

    @classmethod
    def forStore(cls, processor, enabled: bool, store, schema: str = "keyValue", forwards: bool = True) -> "RecordCache":
        """The record cache of ``store`` in this task: the one already made for it, if another
        processor writes the same store (a cogroup's aggregations: Kafka has one caching layer
        per store, so their updates share one dirty order and one flush), else a new one."""
        if enabled and store is not None:
            existing = taskCache(processor.context()).byStore.get(store.name())
            if existing is not None:
                return existing
        return cls(processor, enabled, store, schema, forwards)

    # -- cache keys
    def cacheKey(self, key, kb: bytes | None = None):
        """The entry key of the record key ``key`` (a ``Windowed`` for window and session caches):
        its serialized bytes, with the window's start (and end) for windowed caches; ``kb`` is the
        (inner) key's bytes if the caller has them."""
        if kb is None:
            kb = self.store._keyBytes(key if self.schema == "keyValue" else key.key())
        if self.schema == "keyValue":
            return kb
        window = key.window()
        return (kb, window.end(), window.start()) if self.schema == "session" else (kb, window.start())

    # -- size accounting (LRUNode.size)
    def _sizeOf(self, record, meta, kb: bytes) -> int:
        """``kb``: the serialized (inner) key."""
        store = self.store
        newValue = record.value().newValue
        if store is None:
            keyLen = valueLen = 0
        else:
            if self.schema == "keyValue":
                keyLen = len(kb)
            else:
                keyLen = 8 + len(kb) + (16 if self.schema == "session" else 12)
            valueLen = 0
            if newValue is not None:
                if type(newValue) is _Frozen:
                    valueLen = len(newValue)
                else:
                    valueLen = 8 if self._fixed8 else len(store._valueSerde.serialize(store._serdeTopic, newValue) or b"")
                valueLen += 0 if self.schema == "session" else 8
        size = keyLen + valueLen + _NODE_OVERHEAD + (len(meta[0]) if meta is not None and meta[0] else 0)
        for hkey, hvalue in record._headers or ():
            size += len(hkey) + (len(hvalue) if hvalue is not None else 0)
        return size

    # -- NamedCache
    def forward(self, record, existedInStore: bool, kb: bytes | None = None) -> None:
        """Cache (or, disabled, forward) ``record``; ``kb``: its (inner) key's serialized bytes,
        if the caller has them (else serialized here)."""
        if not self.enabled:
            if self.forwards:
                self.processor.context().forward(record)
            return
        schema = self.schema
        if kb is None:
            kb = self.store._keyBytes(record.key() if schema == "keyValue" else record.key().key())
        if schema == "keyValue":
            key = kb
        else:
            window = record.key().window()
            key = (kb, window.end(), window.start()) if schema == "session" else (kb, window.start())
        change = record.value()
        if type(change.newValue) not in _IMMUTABLE and self.store is not None:
            # Kafka's cache holds bytes: what is forwarded later cannot be changed in place meanwhile
            record = record.withValue(type(change)(self.store._freeze(change.newValue), change.oldValue))
        meta = self.processor.context().recordMetadata()
        size = self._sizeOf(record, meta, kb)
        old = self.entries.pop(key, None)
        if old is not None:
            self.sizeBytes -= old.size
            self.task.sizeBytes -= old.size
            if old.dirty:
                existedInStore = old.existed   # what the store held at the last flush
                change = record.value()
                if change.oldValue is not None or old.record.value().oldValue is not None:
                    # the old value is the one of the last flush (Kafka reads it from the underlying store)
                    record = record.withValue(type(change)(change.newValue, old.record.value().oldValue))
        self.entries[key] = _Entry(record, existedInStore, size, meta)
        if self.schema != "keyValue":  # the index holds the cached windows with a value only
            if record.value().newValue is None:
                self._unindex(key)
            elif old is None or old.record.value().newValue is None:
                self._index(key)
        self.dirty.pop(key, None)
        self.dirty[key] = None
        self.sizeBytes += size
        self.task.sizeBytes += size
        self.task.maybeEvict(self)

    def _pair(self, cacheKey):
        """The window part of a windowed cache key: ``(end, start)`` (session) or ``start``."""
        return cacheKey[1:] if self.schema == "session" else cacheKey[1]

    def _index(self, cacheKey) -> None:
        pair, kb = self._pair(cacheKey), cacheKey[0]
        index = self.byKey.get(kb)
        if index is None:
            index = self.byKey[kb] = ([], {})
        insort(index[0], pair)
        index[1][pair] = cacheKey

    def _unindex(self, cacheKey) -> None:
        if self.schema != "keyValue":
            kb = cacheKey[0]
            index = self.byKey.get(kb)
            if index is not None:
                pair = self._pair(cacheKey)
                if index[1].pop(pair, None) is not None:
                    pairs = index[0]
                    del pairs[bisect_left(pairs, pair)]
                if not index[1]:
                    del self.byKey[kb]

    def withHiddenSessions(self, merged: list, index: tuple, earliestSessionEndTime: int,
                           latestSessionStartTime: int) -> tuple[list, set]:
        """ST-9 (Kafka ``CachingSessionStore.findSessions``): ``merged`` (the store's
        ``(end, start, key, aggregate)`` entries of one key) plus the cached sessions of that key
        in range that the store hides (past its retention), in store order (end, start); and the
        ``(end, start)`` of the added ones. ``index`` is the key's entry in ``byKey`` (by the key's
        bytes)."""
        pairs, windows = index
        extra = None
        for n in range(bisect_left(pairs, (earliestSessionEndTime,)), len(pairs)):
            end, start = pairs[n]
            if start > latestSessionStartTime:
                continue
            for entry in merged:
                if entry[0] == end and entry[1] == start:
                    break
            else:
                record = self.entries[windows[(end, start)]].record
                value = self.store._thaw(record.value().newValue)
                if value is not None:
                    if extra is None:
                        extra = []
                    extra.append((end, start, record.key().key(), value))
        if extra is None:
            return merged, ()
        return sorted([*merged, *extra], key=lambda e: (e[0], e[1])), {(e[0], e[1]) for e in extra}

    def cachedWindow(self, cacheKey):
        """Kafka ``CachingWindowStore.fetch(key, time)``: the cached value of the window of cache
        key ``cacheKey`` (``(key bytes, start)``) as a ``ValueAndTimestamp`` (the entry becomes the
        most recently used), or None."""
        entry = self.entries.get(cacheKey)
        if entry is None or entry.record.value().newValue is None:
            return None
        self.entries.move_to_end(cacheKey)
        return ValueAndTimestamp(self.store._thaw(entry.record.value().newValue), entry.record.timestamp())

    def withCachedWindows(self, kb: bytes, windows: list, timeFrom: int, timeTo: int) -> list:
        """Kafka ``CachingWindowStore.fetch(key, from, to)``: ``windows`` (the store's ``(start,
        ValueAndTimestamp)`` of the key of bytes ``kb``, by start) merged with that key's cached
        windows starting in ``[timeFrom, timeTo]``, which the store hides once past its retention
        (the cache has no retention bound); the cached ones read become the most recently used."""
        index = self.byKey.get(kb)
        if index is None:
            return windows
        starts, byStart = index
        cached = {}
        for start in starts[bisect_left(starts, timeFrom):bisect_left(starts, timeTo + 1)]:
            vt = self.cachedWindow(byStart[start])
            if vt is not None:
                cached[start] = vt
        if not cached:
            return windows
        for start, vt in windows:
            cached.setdefault(start, vt)
        return sorted(cached.items())

    def _savedWindows(self) -> list:
        """The session or window cache as flat tuples for the checkpoint, least recently used
        first: clean entries ``(key, start, end, size, value, timestamp, key bytes)``, a dirty one
        (not after a commit) as ``(cache key, entry, dirty position)``."""
        saved = []
        dirtyOrder = {key: n for n, key in enumerate(self.dirty)}
        for cacheKey, entry in self.entries.items():
            if entry.dirty:
                saved.append((cacheKey, entry, dirtyOrder[cacheKey]))
            else:
                windowed = entry.record.key()
                window = windowed.window()
                saved.append((windowed.key(), window.start(), window.end(), entry.size, entry.record.value().newValue,
                              entry.record.timestamp(), cacheKey[0]))
        return saved

    def _restoreWindows(self, saved: list) -> None:
        from ...processor import Record
        from ...state._window import SessionWindow, TimeWindow, Windowed
        from .common import Change

        windowType = SessionWindow if self.schema == "session" else TimeWindow
        dirty = []
        for item in saved:
            if len(item) == 3:
                cacheKey, entry, n = item
                if isinstance(cacheKey, Windowed):  # saved before caches were keyed by bytes
                    cacheKey = self.cacheKey(cacheKey)
                dirty.append((n, cacheKey))
            else:
                key, start, end, size, value = item[:5]
                timestamp = item[5] if len(item) > 5 else end  # a session's record timestamp is its end
                windowed = Windowed(key, windowType(start, end))
                cacheKey = self.cacheKey(windowed, item[6] if len(item) > 6 else None)
                entry = _Entry(Record(windowed, Change(value, None), timestamp, ()), True, size)
                entry.dirty = False
            self.entries[cacheKey] = entry
            if entry.record.value().newValue is not None:
                self._index(cacheKey)
            self.sizeBytes += entry.size
        self.dirty.update((cacheKey, None) for _, cacheKey in sorted(dirty, key=lambda d: d[0]))
        self.task.sizeBytes += self.sizeBytes

    def hiddenWindows(self, shown: list, timeFrom: int, timeTo: int) -> list:
        """``shown`` (a window store's ``KeyValue(Windowed, ValueAndTimestamp)`` for windows
        starting in ``[timeFrom, timeTo]``, by start then key bytes) plus the cached windows in
        that range it does not show (past the store's retention), in the same order: Kafka's
        ``CachingWindowStore.fetchAll`` merges the cache, which has no retention, with the store."""
        from ...keyvalue import KeyValue

        keyBytes = self.store._keyBytes
        ordered = [((kv.key.window().start(), keyBytes(kv.key.key())), kv) for kv in shown]
        seen = {(kb, start) for (start, kb), _ in ordered}
        extra = [((cacheKey[1], cacheKey[0]),
                  KeyValue(entry.record.key(), ValueAndTimestamp(self.store._thaw(entry.record.value().newValue),
                                                                 entry.record.timestamp())))
                 for cacheKey, entry in self.entries.items()
                 if timeFrom <= cacheKey[1] <= timeTo and cacheKey not in seen
                 and entry.record.value().newValue is not None]
        if not extra:
            return shown
        return [kv for _, kv in sorted([*ordered, *extra], key=lambda e: e[0])]

    def cachedValues(self, key=None) -> list:
        """The cached entries with a value (a tombstone hides nothing the store still holds: the
        store is written through), as ``(record key, value, record timestamp)`` (the record key a
        ``Windowed`` for windowed caches); with ``key``, only those whose (inner) key serializes
        as ``key`` does. For read-through views of the store."""
        out = []
        kb = None if key is None else self.store._keyBytes(key)
        keyValue = self.schema == "keyValue"
        for cacheKey, entry in self.entries.items():
            if kb is not None and (cacheKey if keyValue else cacheKey[0]) != kb:
                continue
            value = self.store._thaw(entry.record.value().newValue)
            if value is not None:
                out.append((entry.record.key(), value, entry.record.timestamp()))
        return out

    def touch(self, cacheKey) -> None:
        """A read of a cached entry makes it the most recently used (``NamedCache.get``)."""
        if self.enabled and cacheKey in self.entries:
            self.entries.move_to_end(cacheKey)

    def evict(self) -> None:
        """``NamedCache.evict``: drop the least recently used entry; if dirty, flush with it first."""
        key, eldest = self.entries.popitem(last=False)
        self._unindex(key)
        self.sizeBytes -= eldest.size
        self.task.sizeBytes -= eldest.size
        if eldest.dirty:
            self._flush(key, eldest)

    def flush(self) -> None:
        """At commit: forward every dirty entry in dirty order (``NamedCache.flush``)."""
        self._flush(None, None)

    def _flush(self, evictedKey, evicted: _Entry | None) -> None:
        if not self.dirty:
            return
        out = []
        if evicted is not None:
            out.append(evicted)
            self.dirty.pop(evictedKey, None)
        deleted = []
        for key in self.dirty:
            entry = self.entries[key]
            entry.dirty = False
            out.append(entry)
            if entry.record.value().newValue is None:
                deleted.append(key)
        self.dirty = {}
        context = self.processor.context()
        current, source = context.metadata, getattr(context, "sourceRecord", None)
        context.sourceRecord = None  # Kafka: a cache entry's record context has no raw record
        try:
            for entry in out if self.forwards else ():
                if entry.record.value().newValue is None and not entry.existed:
                    continue   # created and removed between two flushes: the store never saw it
                # Kafka: context.setRecordContext(entry.context()) before forwarding a flushed entry
                context.metadata = entry.meta
                record, change = entry.record, entry.record.value()
                if type(change.newValue) is _Frozen:  # a new object per flush, as Kafka deserializes
                    record = record.withValue(type(change)(self.store._thaw(change.newValue), change.oldValue))
                context.forward(record)
        finally:
            context.metadata, context.sourceRecord = current, source
        for key in deleted:
            entry = self.entries.pop(key, None)
            if entry is not None:
                self._unindex(key)
                self.sizeBytes -= entry.size
                self.task.sizeBytes -= entry.size
