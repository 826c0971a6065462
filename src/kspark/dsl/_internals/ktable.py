"""KTable sources and stateless KTable operators: the source, filter, mapValues, toStream, and
the value getters through which joins read a table (Kafka ``KTableSource``, ``KTableFilter``,
``KTableMapValues``, ``KTable#toStream``, ``KTableValueGetterSupplier``,
``KTableMaterializedValueGetterSupplier``).

Each supplier is a callable returning a new processor per task (our ``ProcessorSupplier``) and,
like Kafka's ``KTableProcessorSupplier``, also answers:

- ``enableSendingOldValues(forceMaterialization) -> bool``: downstream needs ``Change.oldValue``
  (groupBy's subtractor, a join's left/outer side, a filter over a materialized table);
  returns False when it cannot be done without materializing and that is not forced.
- ``view() -> ValueGetterSupplier``: how a downstream join reads this table's current value for a
  key. A materialized table reads its store; a non-materialized filter / mapValues / join applies
  its function to the parent's getter on the fly, so it can be joined without a store of its own.

The mutable flags are read when a task builds its processors (after ``StreamsBuilder.build()``),
as Kafka reads them when ``get()`` is called.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from ...processor import ContextualProcessor, Record
from ...state import ValueAndTimestamp, VersionedKeyValueStore
from ...state._stores import _IMMUTABLE, KeyValueStore, TimestampedKeyValueStore
from ...state._versioned import PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED, VersionedStoreBuilder
from .cache import RecordCache
from .common import Change, dropped

log = logging.getLogger("kspark.dsl")


class KTableSource(ContextualProcessor):
    """Materializes a changelog into a timestamped store and forwards ``Change`` (Kafka ``KTableSource``).

    Null keys are skipped and counted (``dropped-records``); a null value deletes the key.
    Not materialized (``storeName`` None) it forwards ``Change(value, None)``; the old value is
    forwarded only when ``sendOldValues`` (a downstream subtractor or join asked for it).
    Materialized with ``caching`` (``Materialized``'s default) and a record cache, updates go
    through the cache as in Kafka's ``CachingKeyValueStore``: a delete of a key the store does not
    hold forwards nothing.
    """

    def __init__(self, storeName: str | None, sendOldValues: bool = True, caching: bool = False) -> None:
        self.storeName, self.sendOldValues, self.caching = storeName, sendOldValues, caching

    def init(self, context) -> None:
        super().init(context)
        self.store = None if self.storeName is None else context.getStateStore(self.storeName)
        self.cache = RecordCache(self, self.caching and self.store is not None and context.cachingEnabled(),
                                 self.store, "keyValue")
        # With the record cache on a store of ours, a value is serialized once: the store's bytes
        # (_freeze) are what the store keeps and what the cache holds (RecordCache.forward would
        # serialize the same value with the same serde again, and keeps _Frozen bytes as they are).
        self._freezeOnce = self.cache.enabled and type(self.store) in (TimestampedKeyValueStore, KeyValueStore)

    def process(self, record: Record) -> None:
        key = record.key()
        if key is None:
            dropped(self.context(), "null key", "Skipping record due to null key.")
            return
        if self.store is None:
            self.context().forward(record.withValue(Change(record.value(), None)))
            return
        old = self.store.get(key)
        oldValue = None
        if old is not None:
            oldValue = old.value
            if record.timestamp() < old.timestamp:
                log.warning(
                    "Detected out-of-order KTable update for %s, old timestamp=[%d] new timestamp=[%d].",
                    self.storeName, old.timestamp, record.timestamp(),
                )
        value = record.value()
        if value is not None and self._freezeOnce and type(value) not in _IMMUTABLE:
            value = self.store._freeze(value)  # the same bytes put would keep and the cache hold
        self.store.put(key, None if value is None else ValueAndTimestamp(value, record.timestamp()))
        self.cache.forward(record.withValue(Change(value, oldValue if self.sendOldValues else None)), old is not None)


class VersionedKTableSource(ContextualProcessor):
    """A ``KTableSource`` materialized in a versioned store (KIP-914, Kafka ``KTableSource`` over
    ``KeyValueStoreWrapper``): each update is put at its timestamp; an out-of-order one (older
    than the key's latest version) goes into the history and is forwarded with
    ``Change.isLatest`` False (its old value is the latest one); one past the store's history
    retention is not put and not forwarded. Never cached."""

    def __init__(self, storeName: str, sendOldValues: bool) -> None:
        self.storeName, self.sendOldValues = storeName, sendOldValues

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.storeName)

    def process(self, record: Record) -> None:
        key = record.key()
        if key is None:
            dropped(self.context(), "null key", "Skipping record due to null key.")
            return
        old = self.store.get(key)
        oldValue = None
        if old is not None:
            oldValue = old.value()
            if record.timestamp() < old.timestamp():
                log.warning("Detected out-of-order KTable update for %s, old timestamp=[%d] new timestamp=[%d].",
                            self.storeName, old.timestamp(), record.timestamp())
        value = record.value()
        code = self.store.put(key, value, record.timestamp())
        if code != PUT_RETURN_CODE_NOT_PUT:
            self.context().forward(record.withValue(Change(value, oldValue if self.sendOldValues else None,
                                                           code == PUT_RETURN_CODE_VALID_TO_UNDEFINED)))


class KTableToStream(ContextualProcessor):
    def process(self, record: Record) -> None:
        self.context().forward(record.withValue(record.value().newValue))


UNKNOWN = -1  # Kafka's ConsumerRecord.NO_TIMESTAMP / RecordQueue.UNKNOWN


# ---------------------------------------------------------------------------- value getters
class ValueGetterSupplier:
    """Kafka ``KTableValueGetterSupplier``: ``get()`` returns a getter with ``init(context)`` and
    ``get(key) -> ValueAndTimestamp | None``; ``storeNames()`` are the stores the reading processor
    must be connected to."""

    def __init__(self, factory: Callable[[], Any], storeNames: Callable[[], list[str]]) -> None:
        self._factory, self._storeNames = factory, storeNames

    def get(self):
        return self._factory()

    def storeNames(self) -> list[str]:
        return self._storeNames()


class _StoreGetter:
    """Kafka ``KTableMaterializedValueGetter`` over ``KeyValueStoreWrapper``: a timestamped store's
    ``ValueAndTimestamp``, or a versioned store's latest version (``get``) or version as of a time
    (``getAsOf``) as a ``ValueAndTimestamp``."""

    def __init__(self, storeName: str) -> None:
        self.storeName = storeName

    def init(self, context) -> None:
        self.store = context.getStateStore(self.storeName)
        self.versioned = isinstance(self.store, VersionedKeyValueStore)

    def get(self, key):
        if self.versioned:
            found = self.store.get(key)
            return None if found is None else ValueAndTimestamp(found.value(), found.timestamp())
        return self.store.get(key)

    def getAsOf(self, key, asOfTimestamp: int):
        if not self.versioned:
            raise NotImplementedError("get(key, timestamp) is only supported for versioned stores")
        found = self.store.get(key, asOfTimestamp)
        return None if found is None else ValueAndTimestamp(found.value(), found.timestamp())

    def isVersioned(self) -> bool:
        return self.versioned


def materializedView(storeName: str) -> ValueGetterSupplier:
    """Kafka ``KTableMaterializedValueGetterSupplier`` / ``KTableSourceValueGetterSupplier``."""
    return ValueGetterSupplier(lambda: _StoreGetter(storeName), lambda: [storeName])


class _WindowedStoreGetter:
    """How a join reads a windowed aggregation's table by its ``Windowed`` key: a time or sliding
    window's ``windowStore.fetch(key, window.start())`` (Kafka ``KStreamWindowAggregate`` /
    ``KStreamSlidingWindowAggregate``'s ``KStreamWindowAggregateValueGetter``), a session's
    ``ValueAndTimestamp.make(store.fetchSession(key, start, end), end)`` (Kafka
    ``KTableSessionWindowValueGetter``). Read as Kafka reads through a caching store: the record
    cache's entry of that window first (``CachingWindowStore.fetch`` / ``CachingSessionStore
    .fetchSession``; it may hold a window the store hides past its retention), then the store."""

    def __init__(self, storeName: str) -> None:
        self.storeName = storeName

    def init(self, context) -> None:
        from ...state._stores import SessionStore
        from .cache import taskCache

        self.store = context.getStateStore(self.storeName)
        self.session = isinstance(self.store, SessionStore)
        # the aggregation's cache (looked up per read: the aggregation may be initialized after the reader)
        self.caches = taskCache(context).byStore if hasattr(context, "_task") else {}

    def get(self, windowedKey):
        key, window = windowedKey.key(), windowedKey.window()
        store, cache = self.store, self.caches.get(self.storeName)
        if self.session:
            if cache is not None and cache.enabled:
                cacheKey = (store._keyBytes(key), window.end(), window.start())
                entry = cache.entries.get(cacheKey)
                if entry is not None:  # the entry becomes the most recently used
                    cache.entries.move_to_end(cacheKey)
                    value = entry.record.value().newValue
                    return None if value is None else ValueAndTimestamp(store._thaw(value), window.end())
            value = store.fetchSession(key, window.start(), window.end())
            return None if value is None else ValueAndTimestamp(value, window.end())
        kb = store._keyBytes(key)
        if cache is not None and cache.enabled:
            found = cache.cachedWindow((kb, window.start()))
            if found is not None:
                return found
        return store._fetchBytes(kb, window.start())

    def isVersioned(self) -> bool:
        return False


def windowedView(storeName: str) -> ValueGetterSupplier:
    """The view of a windowed aggregation's table (``_WindowedStoreGetter``)."""
    return ValueGetterSupplier(lambda: _WindowedStoreGetter(storeName), lambda: [storeName])


class _MappedGetter:
    """A parent getter with a function applied to what it returns (filter / mapValues views)."""

    def __init__(self, parent, fn) -> None:
        self.parent, self.fn = parent, fn

    def init(self, context) -> None:
        self.parent.init(context)

    def get(self, key):
        return self.fn(key, self.parent.get(key))

    def getAsOf(self, key, asOfTimestamp: int):
        return self.fn(key, self.parent.getAsOf(key, asOfTimestamp))

    def isVersioned(self) -> bool:
        return self.parent.isVersioned()


def valueOrNull(vt):
    return None if vt is None else vt.value


# ---------------------------------------------------------------------------- source
class KTableSourceSupplier:
    """``builder.table`` / ``KStream.toTable`` (Kafka ``KTableSource``): materialized only when the
    table is queryable (``Materialized.as_``) or something downstream needs its store (a join's
    value getter, old values for a subtractor or a join). ``materialize()`` adds the store to the
    topology at that moment, so ``describe()`` shows ``(stores: [])`` otherwise, as Kafka does."""

    def __init__(self, topology, nodeName: str, storeName: str, queryableName: str | None, storeBuilder,
                 caching: bool = True) -> None:
        self.topology, self.nodeName, self.storeName = topology, nodeName, storeName
        self.storeBuilder, self.caching = storeBuilder, caching
        self.queryableName: str | None = None
        self.sendOldValues = False
        if queryableName is not None:
            self.materialize()

    def materialized(self) -> bool:
        return self.queryableName is not None

    def materialize(self) -> None:
        if self.queryableName is None:
            self.queryableName = self.storeName
            self.topology.addStateStore(self.storeBuilder(), self.nodeName)

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        if not forceMaterialization and not self.materialized():
            return False
        self.sendOldValues = True
        self.materialize()
        return True

    def view(self) -> ValueGetterSupplier:
        self.materialize()  # "whenever a source ktable is required for getter, it should be materialized"
        return materializedView(self.storeName)

    def __call__(self):
        if isinstance(self.topology._storeBuilders.get(self.queryableName), VersionedStoreBuilder):
            return VersionedKTableSource(self.queryableName, self.sendOldValues)  # never cached
        return KTableSource(self.queryableName, self.sendOldValues, self.caching)


class MaterializedTableSupplier:
    """The table of a ``KGroupedStream`` aggregation: always materialized, always able to send
    old values (Kafka ``KStreamAggProcessorSupplier``). ``windowed`` tables have no key-value view."""

    def __init__(self, storeName: str, processorSupplier: Callable[[], Any] | None = None, windowed: bool = False) -> None:
        self.storeName, self.processorSupplier, self.windowed = storeName, processorSupplier, windowed
        self.sendOldValues = False

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        self.sendOldValues = True
        return True

    def view(self) -> ValueGetterSupplier:
        return windowedView(self.storeName) if self.windowed else materializedView(self.storeName)

    def __call__(self):
        processor = self.processorSupplier()
        processor.sendOldValues = self.sendOldValues  # Kafka: Change(newAgg, sendOldValues ? oldAgg : null)
        return processor


# ---------------------------------------------------------------------------- filter / mapValues
class StoreForwarder(ContextualProcessor):
    """Shared by filter / mapValues / join merger: with a queryable store, put the new value (a
    null deletes) and forward ``Change(new, old if sendOldValues)`` (Kafka ``TimestampedTupleForwarder``),
    through the record cache when the store caches (the supplier's ``caching``, ``Materialized``'s
    default): a delete of a key the store does not hold forwards nothing (``CachingKeyValueStore``)."""

    def init(self, context) -> None:
        super().init(context)
        s = self.supplier
        self.store = None if s.queryableName is None else context.getStateStore(s.queryableName)
        versioned = isinstance(self.store, VersionedKeyValueStore)
        if versioned:  # Kafka: a versioned store is never cached
            self.store = VersionedTableStore(self.store)
        self.cache = RecordCache(self, getattr(s, "caching", False) and self.store is not None and not versioned
                                 and context.cachingEnabled(), self.store, "keyValue")

    def _putAndForward(self, record: Record, newValue, oldValue) -> None:
        if type(self.store) is VersionedTableStore:  # Kafka: not put (past the history retention), not forwarded
            code = self.store.put(record.key(), newValue, record.timestamp())
            if code != PUT_RETURN_CODE_NOT_PUT:
                self.context().forward(record.withValue(Change(
                    newValue, oldValue if self.supplier.sendOldValues else None,
                    code == PUT_RETURN_CODE_VALID_TO_UNDEFINED)))
            return
        key = record.key()
        existed = self.cache.enabled and self.store.get(key) is not None
        self.store.put(key, None if newValue is None else ValueAndTimestamp(newValue, record.timestamp()))
        self.cache.forward(record.withValue(Change(newValue, oldValue if self.supplier.sendOldValues else None)), existed)


class VersionedTableStore:
    """A KTable's versioned store as its operators use it (Kafka ``KeyValueStoreWrapper``):
    ``get(key)`` -> the latest version as a ``ValueAndTimestamp``; ``put(key, value, timestamp)``
    -> the store's return code."""

    def __init__(self, store: VersionedKeyValueStore) -> None:
        self.store = store

    def get(self, key):
        found = self.store.get(key)
        return None if found is None else ValueAndTimestamp(found.value(), found.timestamp())

    def put(self, key, value, timestamp: int) -> int:
        return self.store.put(key, value, timestamp)


class KTableFilterSupplier:
    """Kafka ``KTableFilter``. A record whose new value fails the predicate becomes a tombstone
    ``Change(None, old')``; with old values enabled, a change that is null on both sides after
    filtering is not forwarded at all (no tombstone for a key that was never in the result)."""

    def __init__(self, parent, predicate, filterNot: bool, queryableName: str | None) -> None:
        self.parent, self.predicate, self.filterNot, self.queryableName = parent, predicate, filterNot, queryableName
        # "If upstream is already materialized, enable sending old values to avoid sending unnecessary tombstones"
        self.sendOldValues = parent._enableSendingOldValues(False)
        # KIP-914: below a versioned table a change null on both sides is forwarded anyway
        self.useVersionedSemantics = parent._isVersioned()

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        if self.queryableName is not None:
            self.sendOldValues = True
            return True
        if self.parent._enableSendingOldValues(forceMaterialization):
            self.sendOldValues = True
        return self.sendOldValues

    def computeValue(self, key, value):
        if value is not None and (self.filterNot ^ bool(self.predicate(key, value))):
            return value
        return None

    def view(self) -> ValueGetterSupplier:
        if self.queryableName is not None:
            return materializedView(self.queryableName)
        parentView = self.parent._valueGetterSupplier()

        def apply(key, vt):
            return vt if vt is not None and (self.filterNot ^ bool(self.predicate(key, vt.value))) else None

        return ValueGetterSupplier(lambda: _MappedGetter(parentView.get(), apply), parentView.storeNames)

    def __call__(self):
        return KTableFilterProcessor(self)


class KTableFilterProcessor(StoreForwarder):
    def __init__(self, supplier: KTableFilterSupplier) -> None:
        self.supplier = supplier

    def process(self, record: Record) -> None:
        s, key, change = self.supplier, record.key(), record.value()
        newValue = s.computeValue(key, change.newValue)
        oldValue = None
        if s.sendOldValues:
            oldValue = valueOrNull(self.store.get(key)) if self.store is not None else s.computeValue(key, change.oldValue)
            if oldValue is None and newValue is None and not s.useVersionedSemantics:
                return  # unnecessary to forward here
        if self.store is not None:
            self._putAndForward(record, newValue, oldValue)
        else:
            self.context().forward(record.withValue(Change(newValue, oldValue, change.isLatest)))


class KTableMapValuesSupplier:
    """Kafka ``KTableMapValues``: ``mapper(key, value)``; a null value stays null (the mapper is not
    called), so a tombstone stays a tombstone. The timestamp is unchanged."""

    def __init__(self, parent, mapper, queryableName: str | None) -> None:
        self.parent, self.mapper, self.queryableName = parent, mapper, queryableName
        self.sendOldValues = False

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        if self.queryableName is not None:
            self.sendOldValues = True
            return True
        if self.parent._enableSendingOldValues(forceMaterialization):
            self.sendOldValues = True
        return self.sendOldValues

    def computeValue(self, key, value):
        return None if value is None else self.mapper(key, value)

    def view(self) -> ValueGetterSupplier:
        if self.queryableName is not None:
            return materializedView(self.queryableName)
        parentView = self.parent._valueGetterSupplier()

        def apply(key, vt):
            # Kafka: ValueAndTimestamp.make(null, ts) is null
            if vt is None:
                return None
            value = self.mapper(key, vt.value)
            return None if value is None else ValueAndTimestamp(value, vt.timestamp)

        return ValueGetterSupplier(lambda: _MappedGetter(parentView.get(), apply), parentView.storeNames)

    def __call__(self):
        return KTableMapValuesProcessor(self)


class KTableMapValuesProcessor(StoreForwarder):
    def __init__(self, supplier: KTableMapValuesSupplier) -> None:
        self.supplier = supplier

    def process(self, record: Record) -> None:
        s, key, change = self.supplier, record.key(), record.value()
        newValue = s.computeValue(key, change.newValue)
        oldValue = None
        if s.sendOldValues:
            oldValue = valueOrNull(self.store.get(key)) if self.store is not None else s.computeValue(key, change.oldValue)
        if self.store is not None:
            self._putAndForward(record, newValue, oldValue)
        else:
            self.context().forward(record.withValue(Change(newValue, oldValue, change.isLatest)))
