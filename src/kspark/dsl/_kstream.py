from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..errors import TopologyException
from ._config_objects import Grouped, Materialized, Produced, Repartitioned, nameOf
from ._internals.processors import (
    KStreamFilter,
    KStreamKTableJoin,
    KStreamMap,
    KStreamMapValues,
    KStreamPeek,
    KStreamSelectKey,
    RepartitionNullKeyFilter,
    arity,
)
from ._ktable import KTable

if TYPE_CHECKING:
    from ._builder import StreamsBuilder
    from ._grouped import KGroupedStream

__all__ = ["KStream"]


class KStream:
    """An unbounded stream of key-value records (Kafka ``KStream``).

    Operations only wire the topology; the record logic is one small processor per operation.
    Key-changing operations (``map``, ``selectKey``, ``process``) mark the stream so that a later
    key-dependent operation (a join) first repartitions it by the new key (rules RP-1, RP-2).
    """

    def __init__(self, builder: "StreamsBuilder", name: str, sourceTopics: set[str], repartitionRequired: bool) -> None:
        self._builder = builder
        self._name = name
        self._sourceTopics = sourceTopics
        self._repartitionRequired = repartitionRequired

    def _add(self, prefix: str, named, supplier: Callable[[], Any], keyChanging: bool) -> "KStream":
        name = nameOf(named) or self._builder._newProcessorName(prefix)
        self._builder._topology.addProcessor(name, supplier, self._name)
        return KStream(self._builder, name, self._sourceTopics, self._repartitionRequired or keyChanging)

    # ------------------------------------------------------------------ stateless
    def filter(self, predicate: Callable[[Any, Any], bool], named=None) -> "KStream":
        """Records for which ``predicate(key, value)`` is true; stateless (Kafka ``KStream#filter``)."""
        return self._add("KSTREAM-FILTER-", named, lambda: KStreamFilter(predicate, False), False)

    def filterNot(self, predicate: Callable[[Any, Any], bool], named=None) -> "KStream":
        """Records for which ``predicate(key, value)`` is false; stateless (Kafka ``KStream#filterNot``)."""
        return self._add("KSTREAM-FILTER-", named, lambda: KStreamFilter(predicate, True), False)

    def mapValues(self, mapper: Callable, named=None) -> "KStream":
        """Same key, value ``mapper(value)`` (or ``mapper(key, value)`` for a two-argument mapper:
        Kafka's ``ValueMapperWithKey``); keeps the timestamp (Kafka ``KStream#mapValues``, rule T-15)."""
        withKey = arity(mapper) == 2
        return self._add("KSTREAM-MAPVALUES-", named, lambda: KStreamMapValues(mapper, withKey), False)

    def map(self, mapper: Callable[[Any, Any], Any], named=None) -> "KStream":
        """New key and value from ``mapper(key, value) -> KeyValue | (key, value)``; marks the stream
        for repartitioning (Kafka ``KStream#map``, rule RP-1)."""
        return self._add("KSTREAM-MAP-", named, lambda: KStreamMap(mapper), True)

    def selectKey(self, mapper: Callable[[Any, Any], Any], named=None) -> "KStream":
        """New key ``mapper(key, value)``, same value; marks the stream for repartitioning
        (Kafka ``KStream#selectKey``, rule RP-1)."""
        return self._add("KSTREAM-KEY-SELECT-", named, lambda: KStreamSelectKey(mapper), True)

    def peek(self, action: Callable[[Any, Any], None], named=None) -> "KStream":
        """Calls ``action(key, value)`` for each record and passes it on unchanged (Kafka ``KStream#peek``)."""
        return self._add("KSTREAM-PEEK-", named, lambda: KStreamPeek(action), False)

    # ------------------------------------------------------------------ processor API
    def process(self, processorSupplier: Callable[[], Any], *storeNames: str, named=None) -> "KStream":
        """Runs ``processorSupplier()``'s processor (one per task) with access to ``storeNames``.

        The processor may forward any number of records with any key, so the result is marked for
        repartitioning (Kafka ``KStream#process``, rule RP-1).

        Raises
        ------
        TopologyException
            If a store name was not added with ``StreamsBuilder.addStateStore``.
        """
        if not callable(processorSupplier):
            raise TypeError("processorSupplier must be a callable taking no argument that returns a Processor")
        result = self._add("KSTREAM-PROCESSOR-", named, processorSupplier, True)
        self._builder._topology.connectProcessorAndStateStores(result._name, *storeNames)
        return result

    # ------------------------------------------------------------------ topics
    def to(self, topic: str, produced: Produced | None = None) -> None:
        """Write the records to ``topic``; the partition is murmur2 of the serialized key unless
        ``produced`` sets a partitioner (Kafka ``KStream#to``, rules DP-1, T-20)."""
        produced = produced or Produced()
        name = produced.name or self._builder._newProcessorName("KSTREAM-SINK-")
        self._builder._topology.addSink(
            name, topic, self._name, keySerde=produced.keySerde, valueSerde=produced.valueSerde,
            partitioner=produced.partitioner,
        )

    def repartition(self, repartitioned: Repartitioned | None = None) -> "KStream":
        """Write to and read back from a repartition topic ``<application.id>-<name>-repartition``,
        so records are partitioned by their current key (Kafka ``KStream#repartition``, rule RP-3).

        Null-key records are dropped before the topic (rule RP-2) and counted.
        """
        repartitioned = repartitioned or Repartitioned()
        name = repartitioned.name or self._builder._newProcessorName("KSTREAM-REPARTITION-")
        return self._repartitionThrough(name, repartitioned)

    def _repartitionThrough(self, prefix: str, repartitioned: Repartitioned) -> "KStream":
        import re

        topology = self._builder._topology
        topic = prefix if prefix.endswith("-repartition") else f"{prefix}-repartition"
        sinkName = self._builder._newProcessorName("KSTREAM-SINK-")
        filterName = self._builder._newProcessorName("KSTREAM-FILTER-")
        sourceName = self._builder._newProcessorName("KSTREAM-SOURCE-")
        if not re.fullmatch(r"KSTREAM.*-[0-9]{10}", prefix):
            sinkName, filterName, sourceName = f"{topic}-sink", f"{topic}-filter", f"{topic}-source"
        topology._addInternalTopic(topic, repartitioned.numberOfPartitions)
        topology.addProcessor(filterName, RepartitionNullKeyFilter, self._name)
        topology.addSink(
            sinkName, topic, filterName, keySerde=repartitioned.keySerde, valueSerde=repartitioned.valueSerde,
            partitioner=repartitioned.partitioner,
        )
        topology.addSource(sourceName, topic, keySerde=repartitioned.keySerde, valueSerde=repartitioned.valueSerde)
        return KStream(self._builder, sourceName, {topic}, repartitionRequired=False)

    # ------------------------------------------------------------------ grouping
    def groupByKey(self, grouped=None) -> "KGroupedStream":
        """Group by the current key for an aggregation (Kafka ``KStream#groupByKey``); repartitions
        first if the key was changed upstream."""
        from ._grouped import KGroupedStream

        return KGroupedStream(self, grouped or Grouped())

    def groupBy(self, keySelector: Callable[[Any, Any], Any], grouped=None) -> "KGroupedStream":
        """Group by ``keySelector(key, value)``; always repartitions by the new key (Kafka
        ``KStream#groupBy``, rule RP-1)."""
        return self.selectKey(keySelector).groupByKey(grouped)

    # ------------------------------------------------------------------ tables and joins
    def toTable(self, named=None, materialized: Materialized | None = None) -> KTable:
        """The stream as a changelog: a ``KTable`` of the latest value per key (Kafka ``KStream#toTable``).

        A null value deletes the key; null-key records are skipped and counted. If the stream is
        marked for repartitioning, it is repartitioned first.
        """
        stream = self._repartitionThrough(f"{self._name}", Repartitioned()) if self._repartitionRequired else self
        name = nameOf(named) or self._builder._newProcessorName("KSTREAM-TOTABLE-")
        materialized = materialized or Materialized()
        storeName = materialized.storeName or self._builder._newStoreName("KSTREAM-TOTABLE-")
        return KTable._materialize(self._builder, stream._name, name, storeName, materialized, stream._sourceTopics)

    def join(self, table, *args, **kwargs) -> "KStream":
        """``join(globalTable, keySelector, joiner, named=None)``: inner join with a ``GlobalKTable``
        looking up ``keySelector(key, value)``; no repartitioning or co-partitioning (rules J-7,
        J-8: a null mapped key or value is dropped and counted; a null stream key with a mapped
        key joins). Mirrors Kafka ``KStream#join(GlobalKTable, KeyValueMapper, ValueJoiner)``.

        ``join(table, joiner, joined=None)``: inner join with ``table``: for each stream record whose key has a table value, forward
        ``joiner(value, tableValue)`` (or ``joiner(key, value, tableValue)``, Kafka's
        ``ValueJoinerWithKey``) with the stream record's key and timestamp.

        Only stream records trigger output; null keys or values are dropped and counted (rules
        J-1..J-4). Both inputs must be co-partitioned (rule J-6): a stream marked for
        repartitioning is repartitioned first; topics with different partition counts make the
        application fail to start with ``TopologyException("Invalid topology: Topics not
        co-partitioned: [...]")``. Mirrors Kafka ``KStream#join(KTable, ValueJoiner)``.
        """
        return self._dispatchJoin(table, args, kwargs, leftJoin=False)

    def leftJoin(self, table, *args, **kwargs) -> "KStream":
        """Left join with ``table`` (``leftJoin(table, joiner, joined=None)``) or with a
        ``GlobalKTable`` (``leftJoin(globalTable, keySelector, joiner, named=None)``): like
        ``join`` but ``tableValue`` is ``None`` when there is no table value, and a null-key
        record with a value is joined rather than dropped (KIP-962; J-8 for global tables: a
        non-null key whose mapped key is null is still dropped). Mirrors Kafka
        ``KStream#leftJoin(KTable, ValueJoiner)`` / ``leftJoin(GlobalKTable, KeyValueMapper, ValueJoiner)``."""
        return self._dispatchJoin(table, args, kwargs, leftJoin=True)

    def _dispatchJoin(self, table, args, kwargs, leftJoin: bool) -> "KStream":
        from ._global_ktable import GlobalKTable, globalTableJoin

        if isinstance(table, GlobalKTable):
            return globalTableJoin(self, table, *args, leftJoin=leftJoin, **kwargs)
        return self._joinTable(table, *args, leftJoin=leftJoin, **kwargs)

    def _joinTable(self, table: KTable, joiner: Callable, joined=None, *, leftJoin: bool) -> "KStream":
        if not isinstance(table, KTable):
            raise TypeError("join/leftJoin take a KTable or a GlobalKTable")
        if table._builder is not self._builder:
            raise TopologyException("KStream and KTable must come from the same StreamsBuilder")
        n = arity(joiner)
        if n not in (2, 3):
            raise TypeError("joiner must take (value, tableValue) or (key, value, tableValue)")
        stream = self
        if self._repartitionRequired:
            stream = self._repartitionThrough(nameOf(joined) or self._name, Repartitioned())
        name = nameOf(joined) or self._builder._newProcessorName("KSTREAM-LEFTJOIN-" if leftJoin else "KSTREAM-JOIN-")
        storeName = table._storeName
        withKey = n == 3
        topology = self._builder._topology
        topology.addProcessor(name, lambda: KStreamKTableJoin(storeName, joiner, withKey, leftJoin), stream._name)
        topology.connectProcessorAndStateStores(name, storeName)
        topology._copartition(stream._sourceTopics | table._sourceTopics)
        return KStream(self._builder, name, stream._sourceTopics, repartitionRequired=False)


