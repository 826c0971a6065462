"""Session-window aggregations: ``SessionWindowedKStream.count/reduce/aggregate``, emitting on
update (with tombstones for merged-away sessions) or on window close (Kafka
``KStreamSessionWindowAggregate``)."""

from __future__ import annotations

from ...processor import ContextualProcessor, Record
from ...state._window import SessionWindow as _SessionWindow, Windowed as _Windowed
from .cache import RecordCache
from .common import Change, dropped, emitIntervalMs, expiredWindow, shouldEmitFinal
from .fast_paths import sessionFastPath, windowedFastPath


class KStreamSessionWindowAggregate(ContextualProcessor):
    """Session-window aggregation, emit on window update (Kafka ``KStreamSessionWindowAggregate``).

    Rules SA-1..SA-9: null keys skipped and counted (before stream time moves); stream time per
    processor instance; candidate sessions = ``findSessions(key, ts - gap, ts + gap)``, merged in
    store order with ``merger`` into ``[min start, max end]``; a merged session ending before
    ``streamTime - grace - gap`` drops the record (counted); otherwise every merged-away session
    gets a tombstone (timestamp = its end) unless the merged window is exactly ``[ts, ts]``, then
    the new aggregate is stored and forwarded with timestamp = the merged window's end.
    """

    sendOldValues = False  # set by the table's supplier when a downstream operation needs old values

    def __init__(self, storeName: str, windows, initializer, aggregator, merger, emitFinal: bool = False,
                 caching: bool = False) -> None:
        self.storeName, self.windows = storeName, windows
        self.initializer, self.aggregator, self.merger = initializer, aggregator, merger
        self.emitFinal = emitFinal
        self.caching = caching and not emitFinal  # the DSL disables caching for emit-final

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.storeName)
        self.meta = context.nodeState()
        self.meta.setdefault("observedStreamTime", -1)
        self.meta.setdefault("lastEmitWindowCloseTime", -1)
        self.cache = RecordCache.forStore(self, self.caching and context.cachingEnabled(), self.store, "session")
        self._gap, self._grace = self.windows.inactivityGap(), self.windows.gracePeriodMs()
        self.emitIntervalMs = emitIntervalMs(context) if self.emitFinal else 0

    def process(self, record: Record) -> None:
        closeTime = self._aggregate(record)
        if self.emitFinal and closeTime is not None:
            self._maybeForwardFinalResult(record, closeTime)

    def _maybeForwardFinalResult(self, record: Record, closeTime: int) -> None:
        """SA-11: emit every session (all keys) whose end is in [max(0, lastEmit), closeTime - 1],
        in time order (end, start, key), once per close-time advance, at most once per emit
        interval of wall-clock time (``common.shouldEmitFinal``)."""
        if not shouldEmitFinal(self.context(), self.meta, self.emitIntervalMs, closeTime):
            return
        last = self.meta["lastEmitWindowCloseTime"]
        upper, lower = closeTime - 1, max(0, last)
        if upper < 0 or upper < lower:
            return
        due = list(self.store.findSessionsByEnd(lower, upper))
        due.sort(key=lambda kv: (kv.key.window().end(), kv.key.window().start(), self.store._keyBytes(kv.key.key())))
        for kv in due:
            self.context().forward(Record(kv.key, Change(kv.value, None), kv.key.window().end(), record._headers))
        self.meta["lastEmitWindowCloseTime"] = closeTime

    def _aggregate(self, record: Record) -> int | None:
        """The update path (SA-1..SA-9); returns the window close time, None for a null key."""
        key, ts = record.key(), record.timestamp()
        if key is None:
            dropped(self.context(), "null key", "Skipping record due to null key.")
            return None
        meta = self.meta
        streamTime = meta["observedStreamTime"]
        if ts > streamTime:
            streamTime = meta["observedStreamTime"] = ts
        gap = self._gap
        closeTime = streamTime - self._grace - gap
        store = self.store
        kb = store._keyBytes(key)
        # (end, start, stored key, aggregate) in findSessions order (store order, SA-3)
        merged = store._findSessionEntries(kb, ts - gap, ts + gap)
        hidden = ()
        cachedIndex = self.cache.byKey.get(kb)
        if cachedIndex:  # ST-9: the cache still shows sessions the store hides past its retention
            merged, hidden = self.cache.withHiddenSessions(merged, cachedIndex, ts - gap, ts + gap)
        agg, start, end = self._merge(key, ts, merged)
        if end < closeTime:
            self._skipExpired(ts, start, end, closeTime, streamTime, merged)
            return closeTime
        emitFinal, forward = self.emitFinal, self.cache.forward
        # Kafka 4.3 forwards new Record(windowedKey, change, end): no headers; cached, the entry
        # keeps the record context it was written in, whose headers the flush forwards
        headers = record._headers if self.cache.enabled else ()
        if start != ts or end != ts:
            for sEnd, sStart, sKey, sAgg in merged:
                store._putEntry(sEnd, kb, sStart, sKey, None)  # store.remove(Windowed(sKey, [sStart, sEnd]))
                if not emitFinal:
                    # a session the store hides is not in it as far as the flush can tell: Kafka
                    # skips its tombstone (the flush finds no old value). Kafka forwards
                    # Change(null, sendOldValues ? oldAgg : null) (an outer join of the table needs it)
                    change = Change(None, sAgg) if self.sendOldValues else _TOMBSTONE
                    forward(Record(_Windowed(sKey, _SessionWindow(sStart, sEnd)), change, sEnd, headers),
                            (sEnd, sStart) not in hidden, kb)
        agg = self.aggregator(key, record.value(), agg)
        # kspark's own lookup for the cache's forward, not a store call of Kafka's: past the
        # metered fetchSession, so DEBUG's fetch-rate counts Kafka's calls only
        existed = type(store).fetchSession(store, key, start, end) is not None
        store._putEntry(end, kb, start, key, agg)  # store.put(Windowed(key, [start, end]), agg)
        if not emitFinal:
            forward(Record(_Windowed(key, _SessionWindow(start, end)), Change(agg, None), end, headers), existed, kb)
        return closeTime


    def _merge(self, key, ts: int, merged) -> tuple:
        """SA-4: the initial aggregate merged with the found sessions in store order, and the
        merged window ``[min start, max end]`` (``ts`` included)."""
        agg, start, end, merger = self.initializer(), ts, ts, self.merger
        for sEnd, sStart, _, sAgg in merged:
            agg = merger(key, agg, sAgg)
            if sStart < start:
                start = sStart
            if sEnd > end:
                end = sEnd
        return agg, start, end

    def _skipExpired(self, ts: int, start: int, end: int, closeTime: int, streamTime: int, merged) -> None:
        """SA-6: the merged session ended before the close time: log, count, drop the record."""
        expiredWindow(self.context(), ts, f"[{start},{end}]", closeTime, streamTime)
        if self.cache.enabled and merged:  # the lookup read them through the cache: now most recently used
            kb = self.store._keyBytes(merged[0][2])  # the sessions of one key
            for sEnd, sStart, _, _ in merged:
                self.cache.touch((kb, sEnd, sStart))

    def fastPath(self, task, source, node, queue):
        """The fused loop of ``source -> this -> toStream() -> to()`` (see ``StreamTask._buildFastPath``),
        or None when the graph has another shape, emits final results, or caches.

        Same records, timestamps, stores, counters, drops and errors as the per-node path: it runs
        ``_aggregate``'s steps inline and writes the sink's records directly (one key serialization
        per output, the partition from the inner key as ``WindowedStreamPartitioner`` does); null
        keys, expired records and exceptions go through the per-node code.
        """
        return windowedFastPath(self, task, source, node, queue, sessionFastPath)


_TOMBSTONE = Change(None, None)
