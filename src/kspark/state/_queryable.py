"""Interactive queries: ``KafkaStreams.store(StoreQueryParameters.fromNameAndType(name, type))``
(Kafka ``StoreQueryParameters``, ``QueryableStoreTypes``, ``ReadOnlyKeyValueStore``,
``ReadOnlyWindowStore``, ``ReadOnlySessionStore``).

A store handle reads through a *provider*: a callable returning the store's current contents
over the queried tasks (on the Spark host: the last committed micro-batch, read again when a
newer one commits; see ``KafkaStreams.store``). Handles are read-only; as in Kafka,
``keyValueStore()`` and ``windowStore()`` return a timestamped store's plain values, and
``timestampedKeyValueStore()`` / ``timestampedWindowStore()`` its ``ValueAndTimestamp``.
"""

from __future__ import annotations

from typing import Any, Callable

from ._stores import KeyValueIterator, KeyValueStore, SessionStore, TimestampedKeyValueStore, ValueAndTimestamp, WindowStore

__all__ = [
    "QueryableStoreType", "QueryableStoreTypes", "ReadOnlyKeyValueStore", "ReadOnlySessionStore",
    "ReadOnlyWindowStore", "StoreQueryParameters",
]

Provider = Callable[[], Any]


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, ValueAndTimestamp) else value


def _plainIterator(it: KeyValueIterator) -> KeyValueIterator:
    from ..keyvalue import KeyValue

    return KeyValueIterator([KeyValue(kv.key, _plain(kv.value)) for kv in it])


class ReadOnlyKeyValueStore:
    """Reads of a key-value store (Kafka ``ReadOnlyKeyValueStore``): ``get``, ``range``,
    ``reverseRange``, ``all``, ``reverseAll``, ``prefixScan``, ``approximateNumEntries``; keys in
    serialized-key order as the store keeps them."""

    def __init__(self, provider: Provider, plainValues: bool) -> None:
        self._provider, self._plainValues = provider, plainValues

    def get(self, key: Any) -> Any:
        value = self._provider().get(key)
        return _plain(value) if self._plainValues else value

    def range(self, fromKey: Any = None, toKey: Any = None) -> KeyValueIterator:
        it = self._provider().range(fromKey, toKey)
        return _plainIterator(it) if self._plainValues else it

    def reverseRange(self, fromKey: Any = None, toKey: Any = None) -> KeyValueIterator:
        """``range`` in descending serialized-key order."""
        it = self._provider().reverseRange(fromKey, toKey)
        return _plainIterator(it) if self._plainValues else it

    def all(self) -> KeyValueIterator:
        it = self._provider().all()
        return _plainIterator(it) if self._plainValues else it

    def reverseAll(self) -> KeyValueIterator:
        return self.reverseRange()

    def prefixScan(self, prefix: Any, prefixKeySerializer) -> KeyValueIterator:
        """Entries whose serialized key starts with ``prefixKeySerializer``'s bytes of ``prefix``
        (a ``Serde`` or anything with ``serialize(topic, data)``), in serialized-key order."""
        it = self._provider().prefixScan(prefix, prefixKeySerializer)
        return _plainIterator(it) if self._plainValues else it

    def approximateNumEntries(self) -> int:
        return self._provider().approximateNumEntries()


class ReadOnlyWindowStore:
    """Reads of a window store (Kafka ``ReadOnlyWindowStore``): ``fetch(key, time)`` -> value,
    ``fetch(key, timeFrom, timeTo)`` / ``backwardFetch`` -> ``KeyValue(windowStart, value)``s,
    ``fetchAll(timeFrom, timeTo)`` and ``all()`` -> ``KeyValue(Windowed, value)``s; times in ms
    (or datetimes, Java's ``Instant``)."""

    def __init__(self, provider: Provider, plainValues: bool) -> None:
        self._provider, self._plainValues = provider, plainValues

    def fetch(self, key: Any, timeFrom, timeTo=None):
        result = self._provider().fetch(key, timeFrom, timeTo)
        if not self._plainValues:
            return result
        return _plain(result) if timeTo is None else _plainIterator(result)

    def backwardFetch(self, key: Any, timeFrom, timeTo) -> KeyValueIterator:
        """``fetch(key, timeFrom, timeTo)`` (ms or datetime), latest window first."""
        it = self._provider().backwardFetch(key, timeFrom, timeTo)
        return _plainIterator(it) if self._plainValues else it

    def fetchAll(self, timeFrom: int, timeTo: int) -> KeyValueIterator:
        it = self._provider().fetchAll(timeFrom, timeTo)
        return _plainIterator(it) if self._plainValues else it

    def all(self) -> KeyValueIterator:
        it = self._provider().all()
        return _plainIterator(it) if self._plainValues else it


class ReadOnlySessionStore:
    """Reads of a session store (Kafka ``ReadOnlySessionStore``): ``fetch(key)``,
    ``backwardFetch(key)``, ``findSessions(key, earliestSessionEndTime, latestSessionStartTime)``,
    ``backwardFindSessions``
    -> ``KeyValue(Windowed(key, SessionWindow), aggregate)``s; ``fetchSession(key, start, end)``
    -> aggregate or None; times in ms."""

    def __init__(self, provider: Provider) -> None:
        self._provider = provider

    def fetch(self, key: Any) -> KeyValueIterator:
        return self._provider().fetch(key)

    def backwardFetch(self, key: Any) -> KeyValueIterator:
        return self._provider().backwardFetch(key)

    def findSessions(self, key: Any, earliestSessionEndTime: int, latestSessionStartTime: int) -> KeyValueIterator:
        return self._provider().findSessions(key, earliestSessionEndTime, latestSessionStartTime)

    def backwardFindSessions(self, key: Any, earliestSessionEndTime, latestSessionStartTime) -> KeyValueIterator:
        return self._provider().backwardFindSessions(key, earliestSessionEndTime, latestSessionStartTime)

    def fetchSession(self, key: Any, sessionStartTime: int, sessionEndTime: int) -> Any:
        return self._provider().fetchSession(key, sessionStartTime, sessionEndTime)


class QueryableStoreType:
    """Which stores a query accepts and the read-only handle it gives (Kafka ``QueryableStoreType``)."""

    def __init__(self, name: str, storeClass: type, create: Callable[[Provider], Any]) -> None:
        self._name, self._storeClass, self._create = name, storeClass, create

    def accepts(self, store: Any) -> bool:
        return isinstance(store, self._storeClass)

    def create(self, provider: Provider) -> Any:
        return self._create(provider)

    def __repr__(self) -> str:
        return f"QueryableStoreTypes.{self._name}()"


class QueryableStoreTypes:
    """The store types of interactive queries (Kafka ``QueryableStoreTypes``)."""

    @staticmethod
    def keyValueStore() -> QueryableStoreType:
        """Any key-value store; a timestamped one's values without their timestamps."""
        return QueryableStoreType("keyValueStore", KeyValueStore, lambda p: ReadOnlyKeyValueStore(p, plainValues=True))

    @staticmethod
    def timestampedKeyValueStore() -> QueryableStoreType:
        """A timestamped key-value store (KTable stores): values are ``ValueAndTimestamp``."""
        return QueryableStoreType("timestampedKeyValueStore", TimestampedKeyValueStore,
                                  lambda p: ReadOnlyKeyValueStore(p, plainValues=False))

    @staticmethod
    def windowStore() -> QueryableStoreType:
        """A window store; a windowed aggregation's ``ValueAndTimestamp`` values without timestamps."""
        return QueryableStoreType("windowStore", WindowStore, lambda p: ReadOnlyWindowStore(p, plainValues=True))

    @staticmethod
    def timestampedWindowStore() -> QueryableStoreType:
        """A window store with its values as stored (``ValueAndTimestamp`` for windowed aggregations)."""
        return QueryableStoreType("timestampedWindowStore", WindowStore, lambda p: ReadOnlyWindowStore(p, plainValues=False))

    @staticmethod
    def sessionStore() -> QueryableStoreType:
        return QueryableStoreType("sessionStore", SessionStore, ReadOnlySessionStore)


class StoreQueryParameters:
    """What ``KafkaStreams.store`` reads (Kafka ``StoreQueryParameters``): a store name, a
    ``QueryableStoreType``, optionally one partition (``withPartition``: that task's store only;
    default all tasks) and ``enableStaleStores()`` (accepted; every kspark view is as of the last
    committed micro-batch anyway)."""

    def __init__(self, storeName: str, queryableStoreType: QueryableStoreType, partition: int | None = None,
                 staleStores: bool = False) -> None:
        if not isinstance(queryableStoreType, QueryableStoreType):
            raise TypeError("queryableStoreType must come from QueryableStoreTypes")
        self._storeName, self._type, self._partition, self._stale = storeName, queryableStoreType, partition, staleStores

    @staticmethod
    def fromNameAndType(storeName: str, queryableStoreType: QueryableStoreType) -> "StoreQueryParameters":
        return StoreQueryParameters(storeName, queryableStoreType)

    def withPartition(self, partition: int | None) -> "StoreQueryParameters":
        return StoreQueryParameters(self._storeName, self._type, partition, self._stale)

    def enableStaleStores(self) -> "StoreQueryParameters":
        return StoreQueryParameters(self._storeName, self._type, self._partition, True)

    def storeName(self) -> str:
        return self._storeName

    def queryableStoreType(self) -> QueryableStoreType:
        return self._type

    def partition(self) -> int | None:
        return self._partition

    def staleStoresEnabled(self) -> bool:
        return self._stale
