from __future__ import annotations

import logging
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
from ._internals.stream_processors import (
    FixedKeyProcessorAdapter,
    ForeachProcessor,
    KStreamFlatMap,
    KStreamFlatMapValues,
    KStreamPrint,
    PassThrough,
)
from ._ktable import KTable

if TYPE_CHECKING:
    from ._branched import BranchedKStream
    from ._builder import StreamsBuilder
    from ._grouped import KGroupedStream
    from ._printed import Printed

__all__ = ["KStream"]

log = logging.getLogger("kspark.dsl")


class KStream:
    """An unbounded stream of key-value records (Kafka ``KStream``).

    Operations only wire the topology; the record logic is one small processor per operation.
    Key-changing operations (``map``, ``selectKey``, ``process``) mark the stream so that a later
    key-dependent operation (a join) first repartitions it by the new key (rules RP-1, RP-2).
    """

    _keyChanger: str | None = None  # node name of the latest key-changing operation upstream (RP-1)
    _joinRepartition: "KStream | None" = None  # Kafka KStreamImpl.repartitionNode, reused by joins

    def __init__(self, builder: "StreamsBuilder", name: str, sourceTopics: set[str], repartitionRequired: bool) -> None:
        self._builder = builder
        self._name = name
        self._sourceTopics = sourceTopics
        self._repartitionRequired = repartitionRequired

    def _add(self, prefix: str, named, supplier: Callable[[], Any], keyChanging: bool) -> "KStream":
        name = self._builder._nameOrGenerate(nameOf(named), prefix)
        self._builder._topology.addProcessor(name, supplier, self._name)
        return self._derived(name, keyChanging)

    def _derived(self, name: str, keyChanging: bool) -> "KStream":
        stream = KStream(self._builder, name, self._sourceTopics, self._repartitionRequired or keyChanging)
        stream._keyChanger = name if keyChanging else self._keyChanger
        return stream

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

        Beyond Kafka: if this stream's key was changed upstream and ``storeNames`` is not empty,
        records of one key may reach different tasks, each with its own store (the seed-004 bug);
        ``StreamsBuilder.build()`` logs a WARNING naming the processor, its stores and the
        key-changing operation, or, with ``kspark.repartition.before.stateful.process=true``,
        repartitions by the current key right before the processor.

        Raises
        ------
        TopologyException
            If a store name was not added with ``StreamsBuilder.addStateStore``.
        """
        if not callable(processorSupplier):
            raise TypeError("processorSupplier must be a callable taking no argument that returns a Processor")
        # Kafka: a generated name when none is given, no counter burnt for a given one
        name = nameOf(named) or self._builder._newProcessorName("KSTREAM-PROCESSOR-")
        topology = self._builder._topology
        topology.addProcessor(name, processorSupplier, self._name)
        topology.connectProcessorAndStateStores(name, *storeNames)
        self._noteStatefulAfterKeyChange(name, storeNames)
        return self._derived(name, True)

    # ------------------------------------------------------------------ topics
    def to(self, topic: str, produced: Produced | None = None) -> None:
        """Write the records to ``topic``; the partition is murmur2 of the serialized key unless
        ``produced`` sets a partitioner (Kafka ``KStream#to``, rules DP-1, T-20)."""
        produced = produced or Produced()
        name = self._builder._nameOrGenerate(produced.name, "KSTREAM-SINK-")
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
        # RP-2: null keys are dropped unless a relaxed (left) join is added downstream later
        # (Topology._markRelaxedNullKeyJoin; Kafka InternalStreamsBuilder.rewriteRepartitionNodes)
        policy = topology._repartitionFilter(filterName)
        topology.addProcessor(filterName, lambda: RepartitionNullKeyFilter(policy), self._name)
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
        ``KStream#groupBy``, rule RP-1). A ``Grouped`` name also names the key-selecting node."""
        return self.selectKey(keySelector, named=grouped.name if grouped is not None else None).groupByKey(grouped)

    # ------------------------------------------------------------------ tables and joins
    def toTable(self, named=None, materialized: Materialized | None = None) -> KTable:
        """The stream as a changelog: a ``KTable`` of the latest value per key (Kafka ``KStream#toTable``).

        A null value deletes the key; null-key records are skipped and counted. If the stream is
        marked for repartitioning, it is repartitioned first.
        """
        # Kafka KStreamImpl.toTable: node name, then store name, then the repartition topic named
        # after the node ("KSTREAM-TOTABLE-0000000002-repartition")
        name = self._builder._nameOrGenerate(nameOf(named), "KSTREAM-TOTABLE-")
        materialized = materialized or Materialized()
        storeName = materialized.storeName or self._builder._newStoreName("KSTREAM-TOTABLE-")
        stream = self
        if self._repartitionRequired:
            stream = self._repartitionThrough(name, Repartitioned.with_(materialized.keySerde, materialized.valueSerde))
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
        co-partitioned: [...]")``. ``joined`` (``Joined`` or ``Named``) names the join and its
        repartition topic and gives the repartition topic's serdes; ``Joined.withGracePeriod``
        raises ``ValueError`` (needs a versioned table, rule J-5). Mirrors Kafka
        ``KStream#join(KTable, ValueJoiner, Joined)``.
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
        if getattr(joined, "gracePeriodMs", None) is not None:
            # Kafka KStreamImpl.doStreamTableJoin (KIP-923, rule J-5); kspark has no versioned tables
            raise ValueError("KTable must be versioned to use a grace period in a stream table join.")
        reused = (self._repartitionRequired and self._joinRepartition is not None
                  and (nameOf(joined) or self._name) == self._name)
        stream = self._repartitionForJoin(nameOf(joined), joined) if self._repartitionRequired else self
        name = self._builder._nameOrGenerate(nameOf(joined), "KSTREAM-LEFTJOIN-" if leftJoin else "KSTREAM-JOIN-")
        view = table._valueGetterSupplier()  # a filtered / mapped table is read through its parent's store
        withKey = n == 3
        topology = self._builder._topology
        topology.addProcessor(name, lambda: KStreamKTableJoin(None, joiner, withKey, leftJoin, view.get()), stream._name)
        topology.connectProcessorAndStateStores(name, *view.storeNames())
        if leftJoin:
            topology._markRelaxedNullKeyJoin(name)  # KIP-962 (RP-2)
        if reused:
            # Kafka: the reusing join's co-partition group names a source node that is never added
            # (KStreamImpl.repartitionForJoin), so only the table's topics are in it and the reused
            # repartition topic is not checked against this table. Same here, said out loud.
            [topic] = stream._sourceTopics
            log.warning(
                "Join %s reuses repartition topic %s of an earlier join of %s; as in Kafka Streams it is not checked "
                "for co-partitioning with %s. Name the join (Joined/Named) to get its own repartition topic.",
                name, topic, self._name, sorted(table._sourceTopics),
            )
            topology._copartition(table._sourceTopics)
        else:
            topology._copartition(stream._sourceTopics | table._sourceTopics)
        return KStream(self._builder, name, stream._sourceTopics, repartitionRequired=False)

    # ------------------------------------------------------------------ repartition helpers (RP-1..RP-3)
    def _repartitionForJoin(self, joinName: str | None, joined=None) -> "KStream":
        """Kafka ``KStreamImpl.repartitionForJoin``: the repartition topic is named after the join
        (``Joined`` name) or this node; without a join name, later joins of this same stream reuse
        the first one's repartition topic. Sink, filter and source names are burnt either way."""
        repartitionName = joinName or self._name
        if self._joinRepartition is None or repartitionName != self._name:
            serdes = Repartitioned.with_(getattr(joined, "keySerde", None), getattr(joined, "valueSerde", None))
            self._joinRepartition = self._repartitionThrough(repartitionName, serdes)
            return self._joinRepartition
        for prefix in ("KSTREAM-SINK-", "KSTREAM-FILTER-", "KSTREAM-SOURCE-"):
            self._builder._newProcessorName(prefix)
        return self._joinRepartition

    def _noteStatefulAfterKeyChange(self, processorName: str, storeNames) -> None:
        """Remember a ``process``/``processValues`` with stores on a stream whose key was changed
        upstream; ``StreamsBuilder.build()`` warns or repartitions (kspark's addition)."""
        if self._repartitionRequired and storeNames:
            self._builder._statefulAfterKeyChange.append((processorName, tuple(storeNames), self._keyChanger))

    # ------------------------------------------------------------------ more KStream operations
    def flatMap(self, mapper: Callable[[Any, Any], Any], named=None) -> "KStream":
        """Zero or more records per input: ``mapper(key, value)`` returns an iterable of
        ``KeyValue``/``(key, value)`` pairs, each forwarded with the input's timestamp and headers.
        Marks the stream for repartitioning (Kafka ``KStream#flatMap``, rule RP-1).

        A ``None`` result fails the record ("The provided KeyValueMapper returned null which is
        not allowed."), handled by ``processing.exception.handler``.
        """
        return self._add("KSTREAM-FLATMAP-", named, lambda: KStreamFlatMap(mapper), True)

    def flatMapValues(self, mapper: Callable, named=None) -> "KStream":
        """Zero or more records per input, same key: ``mapper(value)`` (or ``mapper(key, value)``,
        Kafka's ``ValueMapperWithKey``) returns an iterable of values. Keeps the
        repartition-required flag (Kafka ``KStream#flatMapValues``, rule RP-1)."""
        withKey = arity(mapper) == 2
        return self._add("KSTREAM-FLATMAPVALUES-", named, lambda: KStreamFlatMapValues(mapper, withKey), False)

    def merge(self, stream: "KStream", named=None) -> "KStream":
        """All records of this stream and ``stream``, each forwarded as it is processed (no
        ordering between the two inputs beyond the task's timestamp-ordered choice of the next
        record). The result needs repartitioning if either input does (Kafka ``KStream#merge``).

        Raises
        ------
        TypeError
            If ``stream`` is not a KStream.
        TopologyException
            If the two streams come from different builders.
        """
        if not isinstance(stream, KStream):
            raise TypeError("stream can't be null and must be a KStream")
        if stream._builder is not self._builder:
            raise TopologyException("Cannot merge streams of different StreamsBuilders")
        name = self._builder._nameOrGenerate(nameOf(named), "KSTREAM-MERGE-")
        self._builder._topology.addProcessor(name, PassThrough, self._name, stream._name)
        merged = KStream(self._builder, name, self._sourceTopics | stream._sourceTopics,
                         self._repartitionRequired or stream._repartitionRequired)
        merged._keyChanger = (self._keyChanger if self._repartitionRequired else None) or (
            stream._keyChanger if stream._repartitionRequired else None)
        return merged

    def split(self, named=None) -> "BranchedKStream":
        """Split into branches by predicates: ``split().branch(p1, Branched.as_("a")).branch(p2)
        .defaultBranch()`` returns a dict of branch name -> KStream (Kafka ``KStream#split``, 2.8+).
        Each record goes to the first matching branch only."""
        from ._branched import BranchedKStream

        return BranchedKStream(self, named)

    def processValues(self, processorSupplier: Callable[[], Any], *storeNames: str, named=None) -> "KStream":
        """Like ``process`` but the processor may only change values: forwarding a record whose
        key differs from the input record's raises ``StreamsException`` (Kafka's
        ``FixedKeyProcessor``). Keeps the repartition-required flag (Kafka
        ``KStream#processValues``, rule RP-1); with stores after a key change, warns or
        repartitions like ``process``."""
        if not callable(processorSupplier):
            raise TypeError("processorSupplier must be a callable taking no argument that returns a Processor")
        name = nameOf(named) or self._builder._newProcessorName("KSTREAM-PROCESSVALUES-")
        topology = self._builder._topology
        topology.addProcessor(name, lambda: FixedKeyProcessorAdapter(processorSupplier()), self._name)
        topology.connectProcessorAndStateStores(name, *storeNames)
        self._noteStatefulAfterKeyChange(name, storeNames)
        return self._derived(name, False)

    def foreach(self, action: Callable[[Any, Any], None], named=None) -> None:
        """Call ``action(key, value)`` for every record; terminal (Kafka ``KStream#foreach``)."""
        self._builder._topology.addProcessor(
            self._builder._nameOrGenerate(nameOf(named), "KSTREAM-FOREACH-"), lambda: ForeachProcessor(action), self._name)

    def print(self, printed: "Printed | None" = None) -> None:
        """Write every record as ``[label]: key, value`` to stdout or a file (Kafka
        ``KStream#print``); the label defaults to this stream's node name."""
        from ._printed import Printed

        printed = printed or Printed.toSysOut()
        name = self._builder._nameOrGenerate(printed.name, "KSTREAM-PRINTER-")
        path, mapper, label = printed.path, printed.mapper, printed.label or self._name
        self._builder._topology.addProcessor(name, lambda: KStreamPrint(path, mapper, label), self._name)
