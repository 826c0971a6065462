from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..serialization import Serdes
from ..state import Stores
from ._config_objects import Grouped, Materialized, Repartitioned
from ._internals.processors import KStreamAggregate
from ._ktable import KTable

if TYPE_CHECKING:
    from ._kstream import KStream

__all__ = ["KGroupedStream"]


class KGroupedStream:
    """A stream grouped by key, ready to aggregate (Kafka ``KGroupedStream``).

    If the stream was marked for repartitioning (its key changed), aggregating first writes it
    to a repartition topic named after ``Grouped``'s name or the store name (rules RP-1, RP-2, SA-12).
    """

    def __init__(self, stream: "KStream", grouped: Grouped) -> None:
        self._stream = stream
        self._grouped = grouped

    def count(self, named=None, materialized: Materialized | None = None) -> KTable:
        """Number of records per key (null keys and null values skipped and counted) as a
        ``KTable``; the timestamp of each update is the max input timestamp of the key so far
        (rule T-17). Mirrors Kafka ``KGroupedStream#count``."""
        materialized = materialized or Materialized()
        if materialized.valueSerde is None:
            materialized = materialized.withValueSerde(Serdes.Long())
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized,
                               lambda store: KStreamAggregate(store, lambda: 0, lambda k, v, agg: agg + 1))

    def reduce(self, reducer: Callable, named=None, materialized: Materialized | None = None) -> KTable:
        """``reducer(aggregate, value)`` per key, starting from the key's first value (Kafka
        ``KGroupedStream#reduce``; null keys/values skipped, T-17 timestamps)."""
        return self._aggregate("KSTREAM-REDUCE-", named, materialized or Materialized(),
                               lambda store: KStreamAggregate(store, None, reducer, reduce=True))

    def aggregate(self, initializer: Callable, aggregator: Callable, named=None,
                  materialized: Materialized | None = None) -> KTable:
        """``aggregator(key, value, aggregate)`` per key, starting from ``initializer()`` (Kafka
        ``KGroupedStream#aggregate``; null keys/values skipped, T-17 timestamps)."""
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized or Materialized(),
                               lambda store: KStreamAggregate(store, initializer, aggregator))

    def _aggregate(self, prefix: str, named, materialized: Materialized, processor) -> KTable:
        from ._config_objects import nameOf

        builder = self._stream._builder
        storeName = materialized.storeName or builder._newStoreName(prefix)
        stream = self._stream
        if stream._repartitionRequired:
            stream = stream._repartitionThrough(
                self._grouped.name or storeName,
                Repartitioned.with_(self._grouped.keySerde, self._grouped.valueSerde),
            )
        name = nameOf(named) or builder._newProcessorName(prefix)
        topology = builder._topology
        topology.addProcessor(name, lambda: processor(storeName), stream._name)
        topology.addStateStore(
            Stores.timestampedKeyValueStoreBuilder(
                Stores.persistentKeyValueStore(storeName),
                materialized.keySerde or self._grouped.keySerde, materialized.valueSerde,
            ),
            name,
        )
        return KTable(builder, name, storeName, stream._sourceTopics)
