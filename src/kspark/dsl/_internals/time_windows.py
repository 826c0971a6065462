"""Time-window aggregations: ``TimeWindowedKStream.count/reduce/aggregate`` over ``TimeWindows``
or a custom ``Windows``, emitting on update or on window close (Kafka
``KStreamWindowAggregate``, ``AbstractKStreamTimeWindowAggregateProcessor``)."""

from __future__ import annotations

from ...processor import ContextualProcessor, Record
from ...state import ValueAndTimestamp
from ...state._window import Windowed
from .cache import RecordCache
from .common import Change, dropped, emitIntervalMs, expiredWindow, shouldEmitFinal
from .fast_paths import timeWindowFastPath, windowedFastPath


class KStreamWindowAggregate(ContextualProcessor):
    """Time-window aggregation (Kafka ``KStreamWindowAggregate``).

    Null keys are skipped and counted. The processor's stream time is the max timestamp it has
    seen; for each window containing the record, if ``window.end > streamTime - grace`` the
    aggregate is updated (timestamp = max of contributing timestamps, rule T-18) and
    ``Change(newAgg, None)`` is forwarded under ``Windowed(key, window)``; otherwise the record is
    dropped for that window and counted ("Skipping record for expired window").

    ``emitFinal`` (``EmitStrategy.onWindowClose()``, KIP-825): no update is forwarded; after
    every non-null-key record, when the close time ``streamTime - grace`` has advanced past the
    last emission, every window (all keys) starting in ``[lower, closeTime - size]`` is forwarded
    once, by start then key, with its aggregate's timestamp and the current record's headers;
    ``lower`` is 0 the first time, then ``max(0, lastCloseTime - size) + 1``; nothing is fetched
    (and the last close time stays) while no new window has closed (``shouldRangeFetch``).
    Cached (Kafka's default), the scan reads through the record cache, which forwards nothing here
    but still holds windows the store hides past its retention (``CachingWindowStore.fetchAll``).
    At most one emit pass per ``__emit.interval.ms.kstreams.windowed.aggregation__`` ms of wall-clock
    time (``common.shouldEmitFinal``; 0 when not set: TopologyTestDriver's value, TTD-2, on every host).
    """

    sendOldValues = False

    def __init__(self, storeName: str, windows, initializer, aggregator, reduce: bool = False, caching: bool = False,
                 emitFinal: bool = False) -> None:
        self.storeName, self.windows = storeName, windows
        self.initializer, self.aggregator, self.reduce = initializer, aggregator, reduce
        self.emitFinal = emitFinal
        # emit-final caches too (Kafka's window store is cached; the final scan reads through the
        # cache), but its cache forwards nothing: no flush listener
        self.caching = caching

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.storeName)
        self.cache = RecordCache.forStore(self, self.caching and context.cachingEnabled(), self.store, "window",
                                          forwards=not self.emitFinal)
        self.meta = context.nodeState()
        self.meta.setdefault("observedStreamTime", -1)
        self.emitIntervalMs = emitIntervalMs(context) if self.emitFinal else 0

    def process(self, record: Record) -> None:
        key, value, ts = record.key(), record.value(), record.timestamp()
        if key is None:
            dropped(self.context(), "null key", "Skipping record due to null key.")
            return
        streamTime = self.meta["observedStreamTime"] = max(self.meta["observedStreamTime"], ts)
        closeTime = streamTime - self.windows.gracePeriodMs()
        store, kb = self.store, None
        for start, window in self.windows.windowsFor(ts).items():
            if window.end() <= closeTime:
                self._skipExpiredWindow(ts, start, window.end(), closeTime, streamTime)
                continue
            if kb is None:  # serialized once, when a window first needs the store
                kb = store._keyBytes(key)
            old = store._fetchBytes(kb, start)
            if old is None and self.cache.enabled:
                # Kafka reads through the caching store, which still holds a window the store hides
                # past its retention (a cogroup's other inputs can move the store's time ahead)
                old = self.cache.cachedWindow((kb, start))
            if old is None:
                # Kafka: oldAgg = initializer() (reduce: null, and "agg == null ? value : reducer(agg,
                # value)", so a null value makes a null aggregate)
                initial = None if self.reduce else self.initializer()
                newAgg = value if self.reduce else self.aggregator(key, value, initial)
                timestamp = ts
            else:
                initial = old.value
                newAgg = self.aggregator(old.value, value) if self.reduce else self.aggregator(key, value, old.value)
                timestamp = max(ts, old.timestamp)
            # ValueAndTimestamp.make(null, ts) is null: a null aggregate deletes the window
            store._putBytes(kb, key, None if newAgg is None else ValueAndTimestamp(newAgg, timestamp), start)
            if not self.emitFinal or self.cache.enabled:  # emit-final: into the cache only
                # Change(newAgg, sendOldValues ? oldAgg : null), oldAgg the initializer's value for a
                # new window; cached, the flush reads the old value from the store instead (none)
                oldAgg = initial if self.sendOldValues and (old is not None or not self.cache.enabled) else None
                self.cache.forward(Record(Windowed(key, window), Change(newAgg, oldAgg), timestamp, record._headers),
                                   old is not None, kb)
        if self.emitFinal:
            self._maybeForwardFinalResult(record, closeTime)

    def _skipExpiredWindow(self, ts: int, start: int, end: int, closeTime: int, streamTime: int) -> None:
        """The record is too late for window ``[start, end)``: log, count, skip that window."""
        expiredWindow(self.context(), ts, f"[{start},{end})", closeTime, streamTime)

    def fastPath(self, task, source, node, queue):
        """The fused loop of ``source -> this -> toStream() -> to()`` without emit-final or cache
        (see ``StreamTask._buildFastPath``), or None: same records, stores, counters, drops and
        errors as the per-node path."""
        return windowedFastPath(self, task, source, node, queue, timeWindowFastPath)

    def _maybeForwardFinalResult(self, record: Record, closeTime: int) -> None:
        """KIP-825 for time windows (``AbstractKStreamTimeWindowAggregateProcessor``)."""
        meta, size = self.meta, self.windows.size()
        if not shouldEmitFinal(self.context(), meta, self.emitIntervalMs, closeTime):
            return
        last = meta.get("lastEmitWindowCloseTime", -1)
        upper = closeTime - size
        if upper < 0:
            return
        lower = 0 if last == -1 else max(0, last - size) + 1
        if last != -1 and self.windows.windowsFor(upper) == self.windows.windowsFor(lower - 1):
            return  # no new window closed since the last emission
        due = list(self.store.fetchAll(lower, upper))
        if self.cache.enabled and lower < self.store._oldestVisible():
            due = self.cache.hiddenWindows(due, lower, upper)  # windows the store hides, still cached
        for kv in due:
            self.context().forward(Record(kv.key, Change(kv.value.value, None), kv.value.timestamp, record._headers))
        meta["lastEmitWindowCloseTime"] = closeTime
