"""What ``TopologyTestDriver.get*Store`` return: the task's stores as Kafka's metered, caching
and timestamped-facade layers show them.

kspark's DSL stores are written through (the record cache only decides when updates are
forwarded, see ``dsl/_internals/cache.py``), so a store and its cache disagree only where the
store hides an entry past its retention that the cache still holds: Kafka's caching layer
merges the cache into every read without a retention bound (rule ST-9), so these views add
those cached entries, until the cache evicts them.
"""

from __future__ import annotations

from typing import Any

from .._duration import toEpochMillis
from ..state._window import TimeWindow, Windowed
from ..keyvalue import KeyValue
from ..state import KeyValueIterator, ValueAndTimestamp

__all__ = ["PlainValueStore", "SessionStoreView", "WindowStoreView"]


class PlainValueStore:
    """Read view of a timestamped key-value store with plain values (Kafka TTD's
    ``KeyValueStoreFacade``)."""

    def __init__(self, store) -> None:
        self._store = store

    def name(self) -> str:
        return self._store.name()

    def get(self, key: Any) -> Any:
        v = self._store.get(key)
        return None if v is None else v.value

    @staticmethod
    def _plain(it) -> KeyValueIterator:
        return KeyValueIterator([KeyValue(k, v.value) for k, v in it])

    def range(self, fromKey: Any = None, toKey: Any = None) -> KeyValueIterator:
        """Entries with ``fromKey <= key <= toKey`` by serialized key (None: open end)."""
        return self._plain(self._store.range(fromKey, toKey))

    def reverseRange(self, fromKey: Any = None, toKey: Any = None) -> KeyValueIterator:
        """``range`` in descending serialized-key order."""
        return self._plain(self._store.reverseRange(fromKey, toKey))

    def all(self) -> KeyValueIterator:
        return self.range()

    def reverseAll(self) -> KeyValueIterator:
        return self.reverseRange()

    def prefixScan(self, prefix: Any, prefixKeySerializer) -> KeyValueIterator:
        """Entries whose serialized key starts with ``prefixKeySerializer``'s bytes of ``prefix``."""
        return self._plain(self._store.prefixScan(prefix, prefixKeySerializer))

    def approximateNumEntries(self) -> int:
        return self._store.approximateNumEntries()


class SessionStoreView:
    """A session store read through its record cache (Kafka ``CachingSessionStore``): key lookups
    also return the cached sessions the store hides past its retention (ST-9)."""

    def __init__(self, store, cache) -> None:
        self._store, self._cache = store, cache

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def _sessions(self, key) -> list[tuple]:
        """(end, start, key, aggregate) of ``key``'s sessions, store order (end, start descending)."""
        entries = self._store._ofKey(key)
        if self._cache is not None:
            shown = {(e[0], e[1]) for e in entries}
            for windowed, value, _ in self._cache.cachedValues(key):
                w = windowed.window()
                if (w.end(), w.start()) not in shown:
                    entries.append((w.end(), w.start(), windowed.key(), value))
            entries.sort(key=lambda e: (e[0], -e[1]))
        return entries

    def fetch(self, key: Any) -> KeyValueIterator:
        return self._store._iterator(self._sessions(key))

    def backwardFetch(self, key: Any) -> KeyValueIterator:
        return self._store._iterator(reversed(self._sessions(key)))

    def findSessions(self, key: Any, earliestSessionEndTime, latestSessionStartTime) -> KeyValueIterator:
        """Sessions of ``key`` ending at or after ``earliestSessionEndTime`` and starting at or
        before ``latestSessionStartTime`` (ms or datetime), earliest first."""
        earliest = toEpochMillis(earliestSessionEndTime, "earliestSessionEndTime")
        latest = toEpochMillis(latestSessionStartTime, "latestSessionStartTime")
        return self._store._iterator(e for e in self._sessions(key) if e[0] >= earliest and e[1] <= latest)

    def backwardFindSessions(self, key: Any, earliestSessionEndTime, latestSessionStartTime) -> KeyValueIterator:
        """``findSessions``, latest first."""
        return KeyValueIterator(list(self.findSessions(key, earliestSessionEndTime, latestSessionStartTime))[::-1])

    def fetchSession(self, key: Any, sessionStartTime: int, sessionEndTime: int) -> Any:
        return next((e[3] for e in self._sessions(key) if e[0] == sessionEndTime and e[1] == sessionStartTime), None)


class WindowStoreView:
    """A window store read through its record cache (Kafka ``CachingWindowStore``: cached windows
    past the store's retention stay visible), with plain values (``plain``: Kafka TTD's
    ``WindowStoreFacade`` of ``getWindowStore``) or ``ValueAndTimestamp``s."""

    def __init__(self, store, cache, plain: bool) -> None:
        self._store, self._cache, self._plain = store, cache, plain

    def name(self) -> str:
        return self._store.name()

    def windowSize(self) -> int:
        return self._store.windowSize()

    def _windows(self, key=None) -> dict:
        """(start, key bytes) -> (key, value as shown) of live and cached windows; with ``key``,
        those of the key that serializes as ``key`` does (Kafka's stores find keys by their bytes)."""
        store, timestamped = self._store, self._store.timestamped
        kb = None if key is None else store._keyBytes(key)
        out = {k: (key_, store._thaw(v)) for k, (key_, v) in store._data.items()
               if store._live(k[0]) and (kb is None or k[1] == kb)}
        if self._cache is not None:
            for windowed, value, timestamp in self._cache.cachedValues(key):
                start = windowed.window().start()
                out.setdefault((start, store._keyBytes(windowed.key())),
                               (windowed.key(), ValueAndTimestamp(value, timestamp) if timestamped else value))
        plain = self._plain and timestamped
        return {k: (key_, v.value if plain else v) for k, (key_, v) in sorted(out.items())}

    def fetch(self, key: Any, timeFrom, timeTo=None):
        """``fetch(key, start)``: that window's value or None; ``fetch(key, from, to)``:
        ``KeyValue(start, value)`` for ``key``'s windows starting in ``[from, to]`` (ms or
        datetime), earliest first."""
        windows = self._windows(key)
        timeFrom = toEpochMillis(timeFrom, "timeFrom")
        if timeTo is None:
            return next((v for (start, _), (_, v) in windows.items() if start == timeFrom), None)
        timeTo = toEpochMillis(timeTo, "timeTo")
        return KeyValueIterator([KeyValue(start, v) for (start, _), (_, v) in windows.items()
                                 if timeFrom <= start <= timeTo])

    def backwardFetch(self, key: Any, timeFrom, timeTo) -> KeyValueIterator:
        """``fetch(key, from, to)``, latest window first (Kafka ``backwardFetch``)."""
        return KeyValueIterator(list(self.fetch(key, timeFrom, timeTo))[::-1])

    def fetchAll(self, timeFrom, timeTo) -> KeyValueIterator:
        size = self._store.windowSize()
        timeFrom, timeTo = toEpochMillis(timeFrom, "timeFrom"), toEpochMillis(timeTo, "timeTo")
        return KeyValueIterator([KeyValue(Windowed(k, TimeWindow(start, start + size)), v)
                                 for (start, _), (k, v) in self._windows().items() if timeFrom <= start <= timeTo])

    def all(self) -> KeyValueIterator:
        size = self._store.windowSize()
        return KeyValueIterator([KeyValue(Windowed(k, TimeWindow(start, start + size)), v)
                                 for (start, _), (k, v) in self._windows().items()])

