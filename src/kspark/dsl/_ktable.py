from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..errors import TopologyException
from ..state._suppression_buffer import SuppressionBufferStoreBuilder
from ._config_objects import GROUPED, MATERIALIZED, NAMED, Grouped, Materialized, keyValueStoreBuilder, nameOf
from ._overloads import FUNCTION, bind, check
from ._internals.aggregation import KTableRepartitionMapSupplier
from ._internals.common import arity
from ._internals.ktable import (KTableFilterSupplier, KTableMapValuesSupplier, KTableSourceSupplier, KTableToStream,
                                MaterializedTableSupplier)
from ._internals.suppress import KTableSuppressSupplier
from ._internals.table_table import (INNER, LEFT, OUTER, RIGHT, KTableKTableJoinMergerSupplier,
                                     KTableKTableJoinSupplier)

if TYPE_CHECKING:
    from ._builder import StreamsBuilder
    from ._kgrouped_table import KGroupedTable
    from ._kstream import KStream

__all__ = ["KTable"]


def _graphChain(builder, name: str) -> str:
    """The chain of Kafka's DSL graph nodes from the root to processor ``name``, as
    ``GraphGraceSearchUtil`` names it in its error (``root->KTABLE-SOURCE-0000000002->...``),
    following first parents: a ``builder.table`` source and its stream source are one node (the
    table's), a repartition topic is the node of its source, a table-table join's two halves are
    inside the merge node."""
    from ..topology._topology import SinkNodeSpec, SourceNodeSpec

    topology, chain = builder._topology, []
    while True:
        spec = topology._nodes[name]
        if isinstance(spec, SourceNodeSpec):
            chain.append(name)
            topic = spec.topics[0]
            if topic not in topology._internalTopics:
                break
            sink = next(n for n in topology._nodes.values() if isinstance(n, SinkNodeSpec) and n.topic == topic)
            name = sink.parents[0]
            if name in topology._nullKeyPolicies:  # the repartition's null-key filter
                name = topology._nodes[name].parents[0]
            continue
        if not isinstance(spec.supplier, KTableKTableJoinSupplier):
            chain.append(name)
            if name in builder._tableSources:
                break
        name = spec.parents[0]
    return "->".join(["root"] + chain[::-1])


class KTable:
    """A changelog stream seen as a table: the latest value per key (Kafka ``KTable``).

    Updates travel between KTable nodes as ``Change(newValue, oldValue)``. A table is materialized
    in a timestamped key-value store only when it is queryable (``Materialized.as_(name)``; an
    aggregation or a join with ``Materialized`` always) or when a downstream operation needs it (a
    join or a lookup reads a source table's store; ``groupBy`` and joins ask their parents for old
    values). A non-materialized ``filter``/``mapValues``/``join`` result can still be joined: the
    lookup applies the operation to its parent's value on the fly (Kafka's value getters).
    """

    def __init__(self, builder: "StreamsBuilder", name: str, storeName: str | None, sourceTopics: set[str],
                 supplier: Any = None, queryableName: Any = ..., keySerde=None, valueSerde=None) -> None:
        self._builder = builder
        # the serdes Kafka's KTableImpl carries (None: the default serde), passed on by toStream()
        self._keySerde, self._valueSerde = keySerde, valueSerde
        self._name = name
        self._storeName = storeName
        self._sourceTopics = sourceTopics
        # what Kafka's KTableImpl keeps: the processor supplier (flags for old values, view())
        self._supplier = supplier if supplier is not None else MaterializedTableSupplier(storeName)
        self._queryableName = storeName if queryableName is ... else queryableName
        self._sendOldValues = False

    @staticmethod
    def _materialize(builder, parentName, tableName, storeName, materialized: Materialized, sourceTopics,
                     keySerde=None, valueSerde=None) -> "KTable":
        """A source table (``builder.table`` / ``KStream.toTable``), Kafka ``KTableSource``: its store
        (``materialized``'s serdes) is added only if ``materialized`` names it or when a
        downstream operation needs it. The table carries ``keySerde``/``valueSerde``."""
        topology = builder._topology

        def storeBuilder():
            return keyValueStoreBuilder("KTable", materialized, storeName)

        supplier = KTableSourceSupplier(topology, tableName, storeName, None, storeBuilder, materialized.caching)
        topology.addProcessor(tableName, supplier, parentName)
        if materialized.storeName is not None:
            supplier.materialize()
        return KTable(builder, tableName, storeName, set(sourceTopics), supplier, materialized.storeName,
                      keySerde, valueSerde)

    # -- Kafka KTableImpl.valueGetterSupplier / enableSendingOldValues
    def _valueGetterSupplier(self):
        return self._supplier.view()

    def _enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        if not self._sendOldValues:
            if not self._supplier.enableSendingOldValues(forceMaterialization):
                return False
            self._sendOldValues = True
        return True

    _windowCloseDuration: int | None = None  # set by windowed aggregations (SU-1)

    def suppress(self, suppressed) -> "KTable":
        """Hold back updates (Kafka ``KTable#suppress``); with ``Suppressed.untilWindowCloses`` each
        window's final result is forwarded once it closes, tombstones dropped (rules SU-1..SU-4);
        with ``Suppressed.untilTimeLimit`` each key's latest update once stream time passes its
        first buffered update's timestamp + the limit, tombstones kept (SU-5).

        Raises
        ------
        TopologyException
            If this table is not the result of a windowed aggregation ("Window close time is only
            defined for windowed computations.").
        """
        from ._internals.suppress import KTableSuppress

        untilWindowCloses = suppressed.timeLimitMs is None
        if untilWindowCloses and self._windowCloseDuration is None:
            raise TopologyException("Window close time is only defined for windowed computations. Got "
                                    f"[{_graphChain(self._builder, self._name)}].")
        builder = self._builder
        name = suppressed.name or builder._newProcessorName("KTABLE-SUPPRESS-")
        # Kafka: "<name>-store", else a generated store name (which burns an index)
        storeName = f"{suppressed.name}-store" if suppressed.name else builder._newStoreName("KTABLE-SUPPRESS-")
        duration = self._windowCloseDuration if untilWindowCloses else suppressed.timeLimitMs
        config = suppressed.bufferConfig
        # KTableSuppressProcessorSupplier: "the suppress buffer requires seeing the old values";
        # forced, so a source table is materialized for it
        self._enableSendingOldValues(True)
        supplier = KTableSuppressSupplier(
            self, lambda: KTableSuppress(duration, config, name, untilWindowCloses, untilWindowCloses, storeName))
        builder._topology.addProcessor(name, supplier, self._name)
        builder._topology.addStateStore(SuppressionBufferStoreBuilder(storeName, self._keySerde, self._valueSerde), name)
        table = KTable(builder, name, self._storeName, self._sourceTopics, supplier, None, self._keySerde,
                       self._valueSerde)
        table._windowCloseDuration = self._windowCloseDuration
        return table

    def queryableStoreName(self) -> str | None:
        """The name of the store to query (``TopologyTestDriver.getKeyValueStore``, Spark
        ``checkpointedStore``), or None when the table is not queryable: Kafka's rule, only a
        store named with ``Materialized.as_`` (or a join/aggregation store) is queryable."""
        return self._queryableName

    def toStream(self, mapper: Callable[[Any, Any], Any] | None = None, named=None) -> "KStream":
        """The table's updates as a stream; a tombstone becomes a record with a null value (Kafka
        ``KTable#toStream``; forms ``toStream()``, ``toStream(Named)``, ``toStream(mapper)``,
        ``toStream(mapper, Named)``). With ``mapper(key, value) -> newKey`` the stream is re-keyed
        as ``toStream().selectKey(mapper)`` (marked for repartitioning, key serde dropped). The
        stream carries this table's serdes.

        Raises
        ------
        TypeError
            For an argument that is neither a function nor a ``Named``/str in Kafka's order.
        """
        from ._kstream import KStream

        mapper, named = bind("KTable.toStream", "toStream(), toStream(Named), toStream(mapper), "
                             "toStream(mapper, Named)", (FUNCTION, NAMED), (mapper, named))
        name = self._builder._nameOrGenerate(nameOf(named), "KTABLE-TOSTREAM-")
        self._builder._topology.addProcessor(name, KTableToStream, self._name)
        stream = KStream(self._builder, name, self._sourceTopics, False, self._keySerde, self._valueSerde)
        return stream if mapper is None else stream.selectKey(mapper)

    # ------------------------------------------------------------------ stateless
    def _derived(self, prefix: str, method: str, named, materialized: Materialized | None, makeSupplier,
                 valueSerdeKept: bool) -> "KTable":
        """Kafka ``KTableImpl.doFilter`` / ``doMapValues``: a store only for a queryable name; an
        unnamed ``Materialized`` still burns one index (``<prefix>STATE-STORE-``) first. Serdes:
        ``materialized``'s, else this table's key serde and (filter only) value serde."""
        named, materialized = bind(f"KTable.{method}", f"{method}(f), {method}(f, Named), {method}(f, Materialized), "
                                   f"{method}(f, Named, Materialized)", (NAMED, MATERIALIZED), (named, materialized))
        builder = self._builder
        queryableName = None
        keySerde, valueSerde = self._keySerde, self._valueSerde if valueSerdeKept else None
        if materialized is not None:
            if materialized.storeName is None:
                builder._newStoreName(prefix)
            queryableName = materialized.storeName
            keySerde = materialized.keySerde or keySerde
            valueSerde = materialized.valueSerde or (valueSerde if valueSerdeKept else None)
        name = builder._nameOrGenerate(nameOf(named), prefix)
        supplier = makeSupplier(queryableName)
        supplier.caching = materialized is not None and materialized.caching
        builder._topology.addProcessor(name, supplier, self._name)
        if queryableName is not None:
            builder._topology.addStateStore(keyValueStoreBuilder(f"KTable.{method}", materialized, queryableName), name)
        table = KTable(builder, name, queryableName, self._sourceTopics, supplier, queryableName, keySerde, valueSerde)
        # Kafka GraphGraceSearchUtil walks up to the windowed aggregation: a filtered or mapped
        # windowed table can still be suppressed until its windows close
        table._windowCloseDuration = self._windowCloseDuration
        return table

    def filter(self, predicate: Callable[[Any, Any], bool], named=None, materialized: Materialized | None = None) -> "KTable":
        """A table of the entries for which ``predicate(key, value)`` is true (Kafka ``KTable#filter``).

        An update whose new value fails the predicate is forwarded as a tombstone (``Change(None,
        ...)``), so the key leaves the result. When the parent is materialized or old values are
        needed downstream, an update that is absent both before and after filtering forwards
        nothing (Kafka ``KTableFilter``). The predicate is never called for a null value.
        ``materialized`` with a name (``Materialized.as_``) keeps the result in a store.
        """
        return self._derived("KTABLE-FILTER-", "filter", named, materialized,
                             lambda q: KTableFilterSupplier(self, predicate, False, q), True)

    def filterNot(self, predicate: Callable[[Any, Any], bool], named=None, materialized: Materialized | None = None) -> "KTable":
        """A table of the entries for which ``predicate(key, value)`` is false (Kafka ``KTable#filterNot``);
        same tombstone rules as ``filter``."""
        return self._derived("KTABLE-FILTER-", "filterNot", named, materialized,
                             lambda q: KTableFilterSupplier(self, predicate, True, q), True)

    def mapValues(self, mapper: Callable, named=None, materialized: Materialized | None = None) -> "KTable":
        """Same keys, values ``mapper(value)`` (or ``mapper(key, value)`` for a two-argument mapper,
        Kafka's ``ValueMapperWithKey``); a tombstone stays a tombstone without calling the mapper;
        timestamps are unchanged (Kafka ``KTable#mapValues``)."""
        fn = mapper if arity(mapper) == 2 else (lambda k, v: mapper(v))
        return self._derived("KTABLE-MAPVALUES-", "mapValues", named, materialized,
                             lambda q: KTableMapValuesSupplier(self, fn, q), False)

    # ------------------------------------------------------------------ grouping
    def groupBy(self, selector: Callable[[Any, Any], Any], grouped: Grouped | None = None) -> "KGroupedTable":
        """Re-group the table by ``selector(key, value) -> KeyValue | (newKey, newValue)`` for an
        aggregation with adder and subtractor (Kafka ``KTable#groupBy``).

        Each update sends the old value's pair to be subtracted and the new value's pair to be
        added, through a repartition topic ``<Grouped name or store name>-repartition`` (rule RP-1).
        Pairs with a null key or value are skipped.
        """
        from ._kgrouped_table import KGroupedTable

        grouped = check("KTable.groupBy", "grouped", GROUPED, grouped) or Grouped()
        name = self._builder._nameOrGenerate(grouped.name, "KTABLE-SELECT-")
        self._builder._topology.addProcessor(name, KTableRepartitionMapSupplier(self, selector), self._name)
        self._enableSendingOldValues(True)
        return KGroupedTable(self._builder, name, self._sourceTopics, grouped)

    # ------------------------------------------------------------------ joins
    def join(self, other: "KTable", joiner: Callable[[Any, Any], Any], named=None,
             materialized: Materialized | None = None) -> "KTable":
        """Inner join on the key with ``other`` (Kafka ``KTable#join(KTable, ValueJoiner)``).

        Both sides trigger: an update on either side looks the other up and forwards
        ``joiner(value, otherValue)`` when both exist; when one side is deleted the result is a
        tombstone. The output timestamp is the max of the two sides' (rule T-19). Null keys are
        skipped and counted. Both tables must be co-partitioned (rule J-6, checked at start).
        ``materialized`` keeps the result in a store (named, or ``KTABLE-MERGE-STATE-STORE-<n>``).
        """
        return self._doJoin(other, joiner, named, materialized, False, False)

    def leftJoin(self, other: "KTable", joiner: Callable[[Any, Any], Any], named=None,
                 materialized: Materialized | None = None) -> "KTable":
        """Left join (Kafka ``KTable#leftJoin``): every left entry has a result,
        ``joiner(value, None)`` while ``other`` has no value for the key; right updates without a
        left value produce nothing. Same timestamps and co-partitioning as ``join``."""
        return self._doJoin(other, joiner, named, materialized, True, False)

    def outerJoin(self, other: "KTable", joiner: Callable[[Any, Any], Any], named=None,
                  materialized: Materialized | None = None) -> "KTable":
        """Outer join (Kafka ``KTable#outerJoin``): a result while either side has a value, the
        missing side passed as None; a tombstone once both are gone."""
        return self._doJoin(other, joiner, named, materialized, True, True)

    def _doJoin(self, other: "KTable", joiner, named, materialized: Materialized | None,
                leftOuter: bool, rightOuter: bool) -> "KTable":
        if not isinstance(other, KTable):
            raise TypeError("join/leftJoin/outerJoin take a KTable")
        if callable(named):  # join(other, foreignKeyExtractor, joiner, ...)
            raise TypeError("KTable join with a foreign-key extractor (join(other, foreignKeyExtractor, joiner)) "
                            "is not supported by kspark yet")
        named, materialized = bind("KTable.join", "join(other, joiner), join(other, joiner, Named), "
                                   "join(other, joiner, Materialized), join(other, joiner, Named, Materialized)",
                                   (NAMED, MATERIALIZED), (named, materialized))
        if other._builder is not self._builder:
            raise TopologyException("Both KTables must come from the same StreamsBuilder")
        if not callable(joiner):
            raise TypeError("joiner must be a callable (value, otherValue) -> result")
        builder, topology = self._builder, self._builder._topology
        storeName = None
        keySerde, valueSerde = self._keySerde, None
        if materialized is not None:  # Kafka: new MaterializedInternal<>(materialized, builder, MERGE_NAME)
            storeName = materialized.storeName or builder._newStoreName("KTABLE-MERGE-")
            materialized = materialized.withKeySerde(materialized.keySerde or self._keySerde)
            keySerde, valueSerde = materialized.keySerde, materialized.valueSerde
        mergeName = builder._nameOrGenerate(nameOf(named), "KTABLE-MERGE-")
        topology._copartition(self._sourceTopics | other._sourceTopics)
        if leftOuter:
            self._enableSendingOldValues(True)
        if rightOuter:
            other._enableSendingOldValues(True)

        def reverse(v2, v1):
            return joiner(v1, v2)

        kinds = (INNER, INNER) if not leftOuter else (LEFT, RIGHT) if not rightOuter else (OUTER, OUTER)
        joinThis = KTableKTableJoinSupplier(kinds[0], self, other, joiner)
        joinOther = KTableKTableJoinSupplier(kinds[1], other, self, reverse)
        base = nameOf(named)
        thisName = builder._nameOrGenerate(f"{base}-join-this" if base else None, "KTABLE-JOINTHIS-")
        otherName = builder._nameOrGenerate(f"{base}-join-other" if base else None, "KTABLE-JOINOTHER-")
        merger = KTableKTableJoinMergerSupplier(joinThis, joinOther, storeName)
        merger.caching = materialized is not None and materialized.caching
        topology.addProcessor(thisName, joinThis, self._name)
        topology.addProcessor(otherName, joinOther, other._name)
        topology.addProcessor(mergeName, merger, thisName, otherName)
        topology.connectProcessorAndStateStores(thisName, *joinThis.view2.storeNames())
        topology.connectProcessorAndStateStores(otherName, *joinOther.view2.storeNames())
        if storeName is not None:
            topology.addStateStore(keyValueStoreBuilder("KTable.join", materialized, storeName), mergeName)
        return KTable(builder, mergeName, storeName, self._sourceTopics | other._sourceTopics, merger, storeName,
                      keySerde, valueSerde)
