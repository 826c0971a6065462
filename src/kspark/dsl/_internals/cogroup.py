"""cogroup (KIP-150): the merge node of a cogrouped aggregation (Kafka ``KTablePassThrough``).

Each cogrouped input has its own aggregation processor (``KStreamAggregate``,
``KStreamWindowAggregate``, ``KStreamSessionWindowAggregate`` or ``KStreamSlidingWindowAggregate``
with that input's aggregator); all of them read and write one store, and the merge node forwards
their updates as they come. With the record cache on they share the store's one cache
(``RecordCache.forStore``), as Kafka's processors share one caching store.
"""

from __future__ import annotations

from ...errors import InvalidStateStoreException
from .ktable import ValueGetterSupplier, materializedView
from .stateless import PassThrough


class KTablePassThroughSupplier:
    """Kafka ``KTablePassThrough``: forwards each update of the cogroup's aggregations unchanged;
    old values, when a downstream operation needs them, are enabled on every aggregation; the
    table is read through the shared store."""

    def __init__(self, parents: list, storeName: str, windowed: bool) -> None:
        self.parents, self.storeName, self.windowed = parents, storeName, windowed
        self.sendOldValues = False

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        for parent in self.parents:
            parent.enableSendingOldValues(forceMaterialization)
        self.sendOldValues = True
        return True

    def view(self) -> ValueGetterSupplier:
        if self.windowed:
            storeName = self.storeName
            return ValueGetterSupplier(lambda: _WindowedPassThroughGetter(storeName), lambda: [storeName])
        return materializedView(self.storeName)

    def __call__(self):
        return PassThrough()


class _WindowedPassThroughGetter:
    """A windowed cogroup's table read by key: Kafka's ``KTablePassThroughValueGetter`` wraps the
    store in a ``KeyValueStoreWrapper``, which refuses a window or session store when the reading
    processor (a join) is initialized: the task fails to start (Kafka 4.3's message, naming the
    store class Kafka's task gives the processor)."""

    def __init__(self, storeName: str) -> None:
        self.storeName = storeName

    def init(self, context) -> None:
        from ...state._stores import SessionStore

        kind = "Session" if isinstance(context.getStateStore(self.storeName), SessionStore) else "TimestampedWindow"
        raise InvalidStateStoreException(
            "KTable source state store must implement either TimestampedKeyValueStoreWithHeaders, or "
            "VersionedKeyValueStore. Got: org.apache.kafka.streams.processor.internals."
            f"AbstractReadWriteDecorator${kind}StoreReadWriteDecorator")
