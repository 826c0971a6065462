"""``KTable.suppress``: the suppression buffer (Kafka ``KTableSuppressProcessorSupplier``,
``InMemoryTimeOrderedKeyValueChangeBuffer``)."""

from __future__ import annotations

from ...errors import TopologyException
from ...processor import ContextualProcessor, Record
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
    ``InMemoryTimeOrderedKeyValueChangeBuffer``, the store ``storeName``), rules SU-2..SU-5.

    Each update is buffered by serialized key (keys with the same bytes are one entry). Its buffer
    time is the window end (``untilWindowCloses``, ``windowEnd=True``) or the record timestamp
    (``untilTimeLimit``), taken from the key's **first** buffered update: a later update replaces
    the value, record timestamp, headers and record context but keeps the place in the queue
    (Kafka's "non-resetting" ``cleanPut``). The
    node's stream time is the max record timestamp it saw. After each record: entries with
    ``bufferTime <= streamTime - duration`` leave in (buffer time, serialized key) order; then, if
    the buffer holds more than ``maxRecords`` keys or ``maxBytes`` bytes (Kafka's sizes, see
    ``kspark.state._suppression_buffer``), EMIT evicts in the same order until it fits and
    SHUT_DOWN raises ``StreamsException("<node> buffer exceeded its max capacity. Currently
    [r/maxR] records and [b/maxB] bytes.")``. Leaving entries are forwarded with their buffered
    timestamp, headers and record context, except tombstones when ``safeToDropTombstones``
    (``untilWindowCloses``). The suppressed table sends old values (Kafka's supplier enables
    them), which the sizes count.
    """

    def __init__(self, durationMs: int, bufferConfig, nodeName: str, windowEnd: bool, safeToDropTombstones: bool,
                 storeName: str) -> None:
        self.durationMs, self.bufferConfig, self.nodeName = durationMs, bufferConfig, nodeName
        self.windowEnd, self.safeToDropTombstones, self.storeName = windowEnd, safeToDropTombstones, storeName

    def init(self, context) -> None:
        super().init(context)
        self.meta = context.nodeState()
        self.meta.setdefault("observedStreamTime", -1)
        self.buffer = context.getStateStore(self.storeName)

    def process(self, record: Record) -> None:
        meta = self.meta
        meta["observedStreamTime"] = max(meta["observedStreamTime"], record.timestamp())
        key = record.key()
        bufferTime = key.window().end() if self.windowEnd else record.timestamp()
        self.buffer.put(bufferTime, key, record.value(), record.timestamp(), record._headers,
                        self.context().recordMetadata())
        self._enforceConstraints()

    def _overCapacity(self) -> bool:
        cfg = self.bufferConfig
        return ((cfg.maxRecords is not None and self.buffer.numRecords() > cfg.maxRecords)
                or (cfg.maxBytes is not None and self.buffer.sizeBytes > cfg.maxBytes))

    def _enforceConstraints(self) -> None:
        buffer = self.buffer
        limit = self.meta["observedStreamTime"] - self.durationMs
        ordered = buffer.evictionOrder()
        i = 0
        while i < len(ordered) and ordered[i][1][0] <= limit:
            self._emit(ordered[i][0])
            i += 1
        if self._overCapacity():
            cfg = self.bufferConfig
            if cfg.strategy == cfg.SHUT_DOWN:
                from .._suppress import bufferFull

                raise bufferFull(self.nodeName, buffer.numRecords(), cfg.maxRecords, buffer.sizeBytes, cfg.maxBytes)
            while i < len(ordered) and self._overCapacity():
                self._emit(ordered[i][0])
                i += 1

    def _emit(self, keyBytes: bytes) -> None:
        _, _, change, timestamp, headers, _, _, metadata, key = self.buffer.remove(keyBytes)
        if change.newValue is not None or not self.safeToDropTombstones:
            context = self.context()
            current = context.metadata
            context.metadata = metadata  # Kafka: setRecordContext(toEmit.recordContext())
            try:
                context.forward(Record(key, change, timestamp, headers))
            finally:
                context.metadata = current
