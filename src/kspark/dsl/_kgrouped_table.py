from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..processor import FailOnInvalidTimestamp
from ..serialization import Serdes
from ..state import Stores
from ._config_objects import Grouped, Materialized, nameOf
from ._internals.ktable_processors import ChangedSerde, KTableAggregateSupplier
from ._ktable import KTable

if TYPE_CHECKING:
    from ._builder import StreamsBuilder

__all__ = ["KGroupedTable"]


class KGroupedTable:
    """A re-grouped table, ready to aggregate with an adder and a subtractor (Kafka ``KGroupedTable``).

    Aggregating writes the selected ``Change``s to a repartition topic named
    ``<application.id>-<Grouped name or store name>-repartition`` (rule RP-3). Each change travels
    as one record in Kafka's ``ChangedSerializer`` format: when the selected key did not change
    (KIP-904) old and new value share one record, otherwise the old value goes to its key's
    partition and the new value to its own. The aggregating processor then subtracts the old
    value before adding the new one.
    """

    def __init__(self, builder: "StreamsBuilder", selectName: str, sourceTopics: set[str], grouped: Grouped) -> None:
        self._builder = builder
        self._selectName = selectName
        self._sourceTopics = sourceTopics
        self._grouped = grouped
        self._repartition: tuple[str, str] | None = None  # (source node, topic) when reused under a Grouped name

    def count(self, named=None, materialized: Materialized | None = None) -> KTable:
        """Number of entries per new key: +1 for an added value, -1 for a removed one (Kafka
        ``KGroupedTable#count``). A count that falls to 0 stays in the table as 0."""
        materialized = materialized or Materialized()
        if materialized.valueSerde is None:
            materialized = materialized.withValueSerde(Serdes.Long())
        return self._aggregate("KTABLE-AGGREGATE-", named, materialized,
                               lambda: 0, lambda k, v, agg: agg + 1, lambda k, v, agg: agg - 1, False)

    def reduce(self, adder: Callable[[Any, Any], Any], subtractor: Callable[[Any, Any], Any], named=None,
               materialized: Materialized | None = None) -> KTable:
        """``adder(aggregate, newValue)`` / ``subtractor(aggregate, oldValue)`` per new key,
        starting from the first value (Kafka ``KGroupedTable#reduce``). A result of None deletes
        the key and forwards a tombstone."""
        materialized = materialized or Materialized()
        if materialized.valueSerde is None and self._grouped.valueSerde is not None:
            materialized = materialized.withValueSerde(self._grouped.valueSerde)
        return self._aggregate("KTABLE-REDUCE-", named, materialized, None, adder, subtractor, True)

    def aggregate(self, initializer: Callable[[], Any], adder: Callable[[Any, Any, Any], Any],
                  subtractor: Callable[[Any, Any, Any], Any], named=None,
                  materialized: Materialized | None = None) -> KTable:
        """``adder(key, newValue, aggregate)`` / ``subtractor(key, oldValue, aggregate)`` per new key,
        starting from ``initializer()`` (Kafka ``KGroupedTable#aggregate``). A result of None
        deletes the key and forwards a tombstone. Timestamps: rule T-17."""
        return self._aggregate("KTABLE-AGGREGATE-", named, materialized or Materialized(),
                               initializer, adder, subtractor, False)

    def _aggregate(self, functionPrefix: str, named, materialized: Materialized, initializer, adder, subtractor,
                   reduce: bool) -> KTable:
        """Kafka ``KGroupedTableImpl.doAggregate``: names in Kafka's order (store, sink, source,
        processor), sink/source ``<name>-sink``/``<name>-source`` when ``named`` is given."""
        builder, topology = self._builder, self._builder._topology
        storeName = materialized.storeName or builder._newStoreName("KTABLE-AGGREGATE-")
        base = nameOf(named)
        # Kafka NamedInternal.suffixWithOrElseGet / orElseGenerateWithPrefix: a given name still
        # burns each counter value
        sinkName = builder._nameOrGenerate(f"{base}-sink" if base else None, "KSTREAM-SINK-")
        sourceName = builder._nameOrGenerate(f"{base}-source" if base else None, "KSTREAM-SOURCE-")
        funcName = builder._nameOrGenerate(base, functionPrefix)
        topic = f"{self._grouped.name or storeName}-repartition"
        keySerde, valueSerde = self._grouped.keySerde, self._grouped.valueSerde
        if self._repartition is None or self._grouped.name is None:
            changed = ChangedSerde(valueSerde)
            topology._addInternalTopic(topic, None)
            topology.addSink(sinkName, topic, self._selectName, keySerde=keySerde, valueSerde=changed)
            topology.addSource(sourceName, topic, keySerde=keySerde, valueSerde=changed,
                               timestampExtractor=FailOnInvalidTimestamp())
            self._repartition = (sourceName, topic)
        sourceName, topic = self._repartition
        supplier = KTableAggregateSupplier(storeName, initializer, adder, subtractor, reduce, materialized.caching)
        topology.addProcessor(funcName, supplier, sourceName)
        topology.addStateStore(
            Stores.timestampedKeyValueStoreBuilder(Stores.persistentKeyValueStore(storeName),
                                                   materialized.keySerde or keySerde, materialized.valueSerde),
            funcName,
        )
        return KTable(builder, funcName, storeName, {topic}, supplier, materialized.storeName)
