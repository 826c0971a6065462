from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..processor import FailOnInvalidTimestamp
from ..serialization import Serdes
from ._config_objects import MATERIALIZED, NAMED, Grouped, Materialized, keyValueStoreBuilder, nameOf
from ._overloads import bind
from ._internals.aggregation import ChangedSerde, KTableAggregateSupplier
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

    def _options(self, method: str, forms: str, named, materialized, valueSerde) -> tuple:
        """Kafka's forms by type, and ``materialized`` with the grouping's key serde and
        ``valueSerde`` where it sets none (``KGroupedTableImpl``)."""
        named, materialized = bind(f"KGroupedTable.{method}", forms, (NAMED, MATERIALIZED), (named, materialized))
        materialized = materialized or Materialized()
        return named, materialized.with_(materialized.keySerde or self._grouped.keySerde,
                                         materialized.valueSerde or valueSerde)

    def count(self, named=None, materialized: Materialized | None = None) -> KTable:
        """Number of entries per new key: +1 for an added value, -1 for a removed one, as
        ``Serdes.Long()`` values (Kafka ``KGroupedTable#count``; forms ``count()``,
        ``count(Named)``, ``count(Materialized)``, ``count(Named, Materialized)``). A count that
        falls to 0 stays in the table as 0."""
        named, materialized = self._options("count", "count(), count(Named), count(Materialized), "
                                            "count(Named, Materialized)", named, materialized, Serdes.Long())
        return self._aggregate("KTABLE-AGGREGATE-", named, materialized,
                               lambda: 0, lambda k, v, agg: agg + 1, lambda k, v, agg: agg - 1, False)

    def reduce(self, adder: Callable[[Any, Any], Any], subtractor: Callable[[Any, Any], Any], named=None,
               materialized: Materialized | None = None) -> KTable:
        """``adder(aggregate, newValue)`` / ``subtractor(aggregate, oldValue)`` per new key,
        starting from the first value (Kafka ``KGroupedTable#reduce``; forms ``reduce(adder,
        subtractor[, Named][, Materialized])``; values use the grouping's value serde by default).
        A result of None deletes the key and forwards a tombstone."""
        named, materialized = self._options("reduce", "reduce(adder, subtractor), reduce(adder, subtractor, "
                                            "Materialized), reduce(adder, subtractor, Named, Materialized)",
                                            named, materialized, self._grouped.valueSerde)
        return self._aggregate("KTABLE-REDUCE-", named, materialized, None, adder, subtractor, True)

    def aggregate(self, initializer: Callable[[], Any], adder: Callable[[Any, Any, Any], Any],
                  subtractor: Callable[[Any, Any, Any], Any], named=None,
                  materialized: Materialized | None = None) -> KTable:
        """``adder(key, newValue, aggregate)`` / ``subtractor(key, oldValue, aggregate)`` per new key,
        starting from ``initializer()`` (Kafka ``KGroupedTable#aggregate``; forms
        ``aggregate(initializer, adder, subtractor[, Named][, Materialized])``). A result of None
        deletes the key and forwards a tombstone. Timestamps: rule T-17."""
        named, materialized = self._options("aggregate", "aggregate(initializer, adder, subtractor), aggregate("
                                            "initializer, adder, subtractor, Named), aggregate(initializer, adder, "
                                            "subtractor, Materialized), aggregate(initializer, adder, subtractor, "
                                            "Named, Materialized)", named, materialized, None)
        return self._aggregate("KTABLE-AGGREGATE-", named, materialized, initializer, adder, subtractor, False)

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
        topology.addStateStore(keyValueStoreBuilder("KGroupedTable", materialized, storeName), funcName)
        return KTable(builder, funcName, storeName, {topic}, supplier, materialized.storeName, materialized.keySerde,
                      materialized.valueSerde)
