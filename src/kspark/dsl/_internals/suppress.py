"""``KTable.suppress``: the suppression buffer (Kafka ``KTableSuppressProcessorSupplier``,
``InMemoryTimeOrderedKeyValueChangeBuffer``)."""

from __future__ import annotations

from ...errors import TopologyException
from ...processor import ContextualProcessor, Record
from ...state._window import SessionWindow, Windowed
from .ktable import ValueGetterSupplier


class KTableSuppressSupplier:
    """Kafka ``KTableSuppressProcessorSupplier.enableSendingOldValues`` delegates to the parent."""

    def __init__(self, parent, processorSupplier) -> None:
        self.parent, self.processorSupplier = parent, processorSupplier

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        return self.parent._enableSendingOldValues(forceMaterialization)

    def view(self) -> ValueGetterSupplier:
        raise TopologyException("kspark cannot look up or join a suppressed KTable (not supported yet)")

    def __call__(self):
        return self.processorSupplier()


class KTableSuppress(ContextualProcessor):
    """Suppression of KTable updates (Kafka ``KTableSuppressProcessor`` over an
    ``InMemoryTimeOrderedKeyValueChangeBuffer``), rules SU-2..SU-5.

    Each update is buffered by key. Its buffer time is the window end (``untilWindowCloses``,
    ``windowEnd=True``) or the record timestamp (``untilTimeLimit``), taken from the key's
    **first** buffered update: a later update replaces the value, record timestamp and headers
    but keeps the place in the queue (Kafka's "non-resetting" ``cleanPut``). The node's stream
    time is the max record timestamp it saw. After each record: entries with ``bufferTime <=
    streamTime - duration`` leave in (buffer time, serialized key) order; then, if the buffer
    holds more than ``maxRecords`` keys or ``maxBytes`` bytes, EMIT evicts in the same order until
    it fits and SHUT_DOWN raises ``StreamsException("<node> buffer exceeded its max capacity.
    Currently [r/maxR] records and [b/maxB] bytes.")``. Leaving entries are forwarded with their
    buffered timestamp and headers, except tombstones when ``safeToDropTombstones``
    (``untilWindowCloses``). The buffer lives in the task checkpoint.

    Sizes are Kafka's ``computeRecordSize``: 8 + key bytes + prior value + old value (when not
    the prior one) + new value bytes + record context (8 + 8 + 4 + topic + headers). Keys and
    values are serialized with the serdes of the upstream table's store (windowed keys as Kafka's
    windowed serdes lay them out); without a store, ``str(x)`` as UTF-8 stands in. kspark's
    windowed aggregations do not send old values (Kafka's suppress turns them on), so a
    buffered windowed update counts fewer bytes than in Kafka.
    """

    def __init__(self, durationMs: int, bufferConfig, nodeName: str, windowEnd: bool = True,
                 safeToDropTombstones: bool = True, storeName: str | None = None) -> None:
        self.durationMs, self.bufferConfig, self.nodeName = durationMs, bufferConfig, nodeName
        self.windowEnd, self.safeToDropTombstones, self.storeName = windowEnd, safeToDropTombstones, storeName

    def init(self, context) -> None:
        super().init(context)
        self.meta = context.nodeState()
        self.meta.setdefault("observedStreamTime", -1)
        # key -> [bufferTime, keyBytes, Change, timestamp, headers, size, priorLen]
        self.meta.setdefault("buffer", {})
        self.meta.setdefault("bufferBytes", 0)
        store = context._task.stores.get(self.storeName) if self.storeName else None
        self.keySerde = getattr(store, "_keySerde", None)
        self.valueSerde = getattr(store, "_valueSerde", None)

    # -- serialized sizes
    def _keyBytes(self, key) -> bytes:
        if isinstance(key, Windowed):
            inner = self._keyBytes(key.key())
            window = key.window()
            if isinstance(window, SessionWindow):
                return inner + window.end().to_bytes(8, "big", signed=True) + window.start().to_bytes(8, "big", signed=True)
            return inner + window.start().to_bytes(8, "big", signed=True)
        if self.keySerde is not None:
            return self.keySerde.serialize(self.nodeName, key) or b""
        return str(key).encode()

    def _valueLen(self, value) -> int:
        if value is None:
            return 0
        if self.valueSerde is not None:
            return len(self.valueSerde.serialize(self.nodeName, value) or b"")
        return len(str(value).encode())

    def process(self, record: Record) -> None:
        meta, buffer = self.meta, self.meta["buffer"]
        meta["observedStreamTime"] = max(meta["observedStreamTime"], record.timestamp())
        key, change = record.key(), record.value()
        previous = buffer.get(key)
        if previous is None:
            bufferTime = key.window().end() if self.windowEnd else record.timestamp()
            keyBytes = self._keyBytes(key)
            priorLen = self._valueLen(change.oldValue)
            oldLen = 0                      # the prior value *is* the old value: counted once
        else:
            bufferTime, keyBytes, priorLen = previous[0], previous[1], previous[6]
            oldLen = self._valueLen(change.oldValue)
            meta["bufferBytes"] -= previous[5]
        recordMeta = self.context().recordMetadata()
        size = 8 + len(keyBytes) + priorLen + oldLen + self._valueLen(change.newValue) + 20
        size += len(recordMeta.topic) if recordMeta is not None and recordMeta.topic else 0
        size += sum(len(k) + (len(v) if v is not None else 0) for k, v in record.headers() or ())
        buffer[key] = [bufferTime, keyBytes, change, record.timestamp(), record.headers(), size, priorLen]
        meta["bufferBytes"] += size
        self._enforceConstraints()

    def _overCapacity(self) -> bool:
        cfg = self.bufferConfig
        return ((cfg.maxRecords is not None and len(self.meta["buffer"]) > cfg.maxRecords)
                or (cfg.maxBytes is not None and self.meta["bufferBytes"] > cfg.maxBytes))

    def _enforceConstraints(self) -> None:
        buffer = self.meta["buffer"]
        limit = self.meta["observedStreamTime"] - self.durationMs
        ordered = sorted(buffer.items(), key=lambda e: (e[1][0], e[1][1]))
        i = 0
        while i < len(ordered) and ordered[i][1][0] <= limit:
            self._emit(*ordered[i])
            i += 1
        if self._overCapacity():
            cfg = self.bufferConfig
            if cfg.strategy == cfg.SHUT_DOWN:
                from .._suppress import bufferFull

                raise bufferFull(self.nodeName, len(buffer), cfg.maxRecords, self.meta["bufferBytes"], cfg.maxBytes)
            while i < len(ordered) and self._overCapacity():
                self._emit(*ordered[i])
                i += 1

    def _emit(self, key, entry) -> None:
        del self.meta["buffer"][key]
        self.meta["bufferBytes"] -= entry[5]
        change, timestamp, headers = entry[2], entry[3], entry[4]
        if change.newValue is not None or not self.safeToDropTombstones:
            self.context().forward(Record(key, change, timestamp, headers))
