from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from ..errors import TopologyException
from ..processor import FailOnInvalidTimestamp
from ..topology._topology import supplierGet
from ._config_objects import (GROUPED, MATERIALIZED, NAMED, PRODUCED, REPARTITIONED, STRING, Grouped, Joined, Materialized,
                              Named, Produced, Repartitioned, named as _named, nameOf)
from ._overloads import Kind, bind, check, instanceOf
from ._internals.common import arity
from ._internals.stateless import (
    FixedKeyProcessorAdapter,
    ForeachProcessor,
    KStreamFilter,
    KStreamFlatMap,
    KStreamFlatMapValues,
    KStreamMap,
    KStreamMapValues,
    KStreamPeek,
    KStreamPrint,
    KStreamSelectKey,
    PassThrough,
    RepartitionNullKeyFilter,
)
from ._internals.stream_table import KStreamKTableJoin
from ._ktable import KTable

if TYPE_CHECKING:
    from ._branched import BranchedKStream
    from ._builder import StreamsBuilder
    from ._grouped import KGroupedStream
    from ._printed import Printed

__all__ = ["KStream"]

log = logging.getLogger("kspark.dsl")

TOPIC = Kind("a topic name (str) or a TopicNameExtractor",
             lambda v: isinstance(v, str) or callable(v) or callable(getattr(v, "extract", None)))

JOINED = instanceOf("Joined (or Named, kspark's addition)", Joined, Named, str)


class KStream:
    """An unbounded stream of key-value records (Kafka ``KStream``).

    Operations only wire the topology; the record logic is one small processor per operation.
    Key-changing operations (``map``, ``selectKey``, ``process``) mark the stream so that a later
    key-dependent operation (a join) first repartitions it by the new key (rules RP-1, RP-2).
    """

    _keyChanger: str | None = None  # node name of the latest key-changing operation upstream (RP-1)
    _joinRepartition: "KStream | None" = None  # Kafka KStreamImpl.repartitionNode, reused by joins

    def __init__(self, builder: "StreamsBuilder", name: str, sourceTopics: set[str], repartitionRequired: bool,
                 keySerde=None, valueSerde=None) -> None:
        self._builder = builder
        self._name = name
        self._sourceTopics = sourceTopics
        self._repartitionRequired = repartitionRequired
        # the serdes Kafka's KStreamImpl carries down the graph (None: the default serde); a sink,
        # grouping or table downstream uses them where it is given none
        self._keySerde, self._valueSerde = keySerde, valueSerde

    def _add(self, prefix: str, method: str, named, supplier: Callable[[], Any], keyChanging: bool,
             keySerde, valueSerde) -> "KStream":
        name = self._builder._nameOrGenerate(_named(f"KStream.{method}", named), prefix)
        self._builder._topology.addProcessor(name, supplier, self._name)
        return self._derived(name, keyChanging, keySerde, valueSerde)

    def _derived(self, name: str, keyChanging: bool, keySerde, valueSerde) -> "KStream":
        stream = KStream(self._builder, name, self._sourceTopics, self._repartitionRequired or keyChanging,
                         keySerde, valueSerde)
        stream._keyChanger = name if keyChanging else self._keyChanger
        return stream

    # ------------------------------------------------------------------ stateless
    def filter(self, predicate: Callable[[Any, Any], bool], named=None) -> "KStream":
        """Records for which ``predicate(key, value)`` is true; stateless (Kafka ``KStream#filter``)."""
        return self._add("KSTREAM-FILTER-", "filter", named, lambda: KStreamFilter(predicate, False), False,
                         self._keySerde, self._valueSerde)

    def filterNot(self, predicate: Callable[[Any, Any], bool], named=None) -> "KStream":
        """Records for which ``predicate(key, value)`` is false; stateless (Kafka ``KStream#filterNot``)."""
        return self._add("KSTREAM-FILTER-", "filterNot", named, lambda: KStreamFilter(predicate, True), False,
                         self._keySerde, self._valueSerde)

    def mapValues(self, mapper: Callable, named=None) -> "KStream":
        """Same key, value ``mapper(value)`` (or ``mapper(key, value)`` for a two-argument mapper:
        Kafka's ``ValueMapperWithKey``); keeps the timestamp (Kafka ``KStream#mapValues``, rule T-15)."""
        withKey = arity(mapper) == 2
        return self._add("KSTREAM-MAPVALUES-", "mapValues", named, lambda: KStreamMapValues(mapper, withKey), False,
                         self._keySerde, None)

    def map(self, mapper: Callable[[Any, Any], Any], named=None) -> "KStream":
        """New key and value from ``mapper(key, value) -> KeyValue | (key, value)``; marks the stream
        for repartitioning (Kafka ``KStream#map``, rule RP-1)."""
        return self._add("KSTREAM-MAP-", "map", named, lambda: KStreamMap(mapper), True, None, None)

    def selectKey(self, mapper: Callable[[Any, Any], Any], named=None) -> "KStream":
        """New key ``mapper(key, value)``, same value; marks the stream for repartitioning
        (Kafka ``KStream#selectKey``, rule RP-1)."""
        return self._add("KSTREAM-KEY-SELECT-", "selectKey", named, lambda: KStreamSelectKey(mapper), True,
                         None, self._valueSerde)

    def peek(self, action: Callable[[Any, Any], None], named=None) -> "KStream":
        """Calls ``action(key, value)`` for each record and passes it on unchanged (Kafka ``KStream#peek``)."""
        return self._add("KSTREAM-PEEK-", "peek", named, lambda: KStreamPeek(action), False,
                         self._keySerde, self._valueSerde)

    # ------------------------------------------------------------------ processor API
    def process(self, processorSupplier, *storeNames, named=None) -> "KStream":
        """Runs ``processorSupplier``'s processor (a new one per task) with access to ``storeNames``.

        ``processorSupplier`` is a ``ProcessorSupplier``: a function (or class) taking no argument
        that returns a new ``Processor``, or an object with ``get()`` doing that; if it also has
        ``stores()`` (Kafka's ``ConnectedStoreProvider``), the ``StoreBuilder``s it returns are
        added and connected to the processor. Kafka's forms ``process(supplier, *storeNames)`` and
        ``process(supplier, Named, *storeNames)`` (or ``named=``) are both accepted.

        The processor may forward any number of records with any key, so the result is marked for
        repartitioning and has no serdes (Kafka ``KStream#process``, rule RP-1).

        Beyond Kafka: if this stream's key was changed upstream and the processor has stores,
        records of one key may reach different tasks, each with its own store (the seed-004 bug);
        ``StreamsBuilder.build()`` logs a WARNING naming the processor, its stores and the
        key-changing operation, or, with ``kspark.repartition.before.stateful.process=true``,
        repartitions by the current key right before the processor.

        Raises
        ------
        TypeError
            If the supplier is neither callable nor has ``get()``, a store name is not a str, or
            ``get()`` returns the same object twice ("#get() must return a new object each time
            it is called.", Kafka's ``ApiUtils.checkSupplier``).
        TopologyException
            If a store name was not added with ``StreamsBuilder.addStateStore`` or ``stores()``.
        """
        name, storeNames = self._processNode("process", "KSTREAM-PROCESSOR-", processorSupplier, storeNames, named,
                                             lambda processor: processor)
        return self._derived(name, True, None, None)

    def _processNode(self, method: str, prefix: str, supplier, storeNames: tuple, named, wrap) -> tuple:
        """Add a ``process``/``processValues`` node: Kafka's overloads by type, the supplier's
        stores, the stateful-after-key-change note. Returns (node name, all its store names)."""
        get = supplierFunction(method, supplier)
        if storeNames and not isinstance(storeNames[0], str) and named is None:  # process(supplier, Named, ...)
            named, storeNames = storeNames[0], storeNames[1:]
        for store in storeNames:
            check(f"KStream.{method}", "a store name", STRING, store, False)
        # Kafka: a generated name when none is given, no counter burnt for a given one
        name = _named(f"KStream.{method}", named) or self._builder._newProcessorName(prefix)
        topology = self._builder._topology
        topology.addProcessor(name, lambda: wrap(get()), self._name)
        provided = topology._addSupplierStores(name, supplier)
        topology.connectProcessorAndStateStores(name, *storeNames)
        allStores = tuple(dict.fromkeys([*provided, *storeNames]))
        self._noteStatefulAfterKeyChange(name, allStores)
        return name, allStores

    # ------------------------------------------------------------------ topics
    def to(self, topic, produced: Produced | None = None) -> None:
        """Write the records to ``topic`` (Kafka ``KStream#to``, rules DP-1, T-20).

        ``topic`` is a topic name, or a ``TopicNameExtractor``: a function ``(key, value,
        recordContext) -> str`` or an object with ``extract(key, value, recordContext)``, called per
        record (``recordContext``: ``topic()``, ``partition()``, ``offset()``, ``timestamp()``,
        ``headers()`` of the record being processed). The serdes are ``produced``'s, else this
        stream's (from ``Consumed``, ``Grouped``, ``Materialized`` or an aggregation's result, as
        Kafka carries them), else the defaults. The partition is murmur2 of the serialized key
        unless ``produced`` sets a partitioner.

        Raises
        ------
        TypeError
            If ``topic`` is neither a str nor a TopicNameExtractor, or ``produced`` is not a ``Produced``.
        """
        topic, produced = bind("KStream.to", "to(topic), to(topic, Produced), to(topicNameExtractor), "
                               "to(topicNameExtractor, Produced)", (TOPIC, PRODUCED), (topic, produced))
        if topic is None:
            raise TypeError("KStream.to(): topic can't be null")
        produced = produced or Produced()
        name = self._builder._nameOrGenerate(produced.name, "KSTREAM-SINK-")
        self._builder._topology.addSink(
            name, topic, self._name, keySerde=produced.keySerde or self._keySerde,
            valueSerde=produced.valueSerde or self._valueSerde, partitioner=produced.partitioner,
        )

    def repartition(self, repartitioned: Repartitioned | None = None) -> "KStream":
        """Write to and read back from a repartition topic ``<application.id>-<name>-repartition``,
        so records are partitioned by their current key (Kafka ``KStream#repartition``, rule RP-3).

        Null-key records are dropped before the topic (rule RP-2) and counted. As in Kafka's
        ``doRepartition``, the topic's key serde is ``repartitioned``'s (else the default) and its
        value serde ``repartitioned``'s or this stream's; the result keeps this stream's serdes
        where ``repartitioned`` sets none.
        """
        repartitioned = check("KStream.repartition", "repartitioned", REPARTITIONED, repartitioned) or Repartitioned()
        name = repartitioned.name or self._builder._newProcessorName("KSTREAM-REPARTITION-")
        valueSerde = repartitioned.valueSerde or self._valueSerde
        stream = self._repartitionThrough(name, repartitioned.withValueSerde(valueSerde))
        stream._keySerde, stream._valueSerde = repartitioned.keySerde or self._keySerde, valueSerde
        return stream

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
        # a repartition topic carries the extracted timestamps as record timestamps: Kafka reads it
        # with FailOnInvalidTimestamp, never with default.timestamp.extractor
        topology.addSource(sourceName, topic, keySerde=repartitioned.keySerde, valueSerde=repartitioned.valueSerde,
                           timestampExtractor=FailOnInvalidTimestamp())
        return KStream(self._builder, sourceName, {topic}, False, repartitioned.keySerde, repartitioned.valueSerde)

    # ------------------------------------------------------------------ grouping
    def groupByKey(self, grouped: Grouped | None = None) -> "KGroupedStream":
        """Group by the current key for an aggregation (Kafka ``KStream#groupByKey``); repartitions
        first if the key was changed upstream. Without ``grouped`` the grouping uses this stream's
        serdes; a given ``Grouped`` is used as it is (Kafka: ``groupByKey()`` is
        ``groupByKey(Grouped.with(keySerde, valueSerde))``)."""
        from ._grouped import KGroupedStream

        grouped = check("KStream.groupByKey", "grouped", GROUPED, grouped)
        return KGroupedStream(self, grouped or Grouped.with_(self._keySerde, self._valueSerde))

    def groupBy(self, keySelector: Callable[[Any, Any], Any], grouped: Grouped | None = None) -> "KGroupedStream":
        """Group by ``keySelector(key, value)``; always repartitions by the new key (Kafka
        ``KStream#groupBy``, rule RP-1). A ``Grouped`` name also names the key-selecting node;
        without ``grouped`` the value serde is this stream's (Kafka: ``Grouped.with(null, valueSerde)``)."""
        from ._grouped import KGroupedStream

        grouped = check("KStream.groupBy", "grouped", GROUPED, grouped) or Grouped.with_(None, self._valueSerde)
        return KGroupedStream(self.selectKey(keySelector, named=grouped.name), grouped)

    # ------------------------------------------------------------------ tables and joins
    def toTable(self, named=None, materialized: Materialized | None = None) -> KTable:
        """The stream as a changelog: a ``KTable`` of the latest value per key (Kafka ``KStream#toTable``;
        forms ``toTable()``, ``toTable(Named)``, ``toTable(Materialized)``, ``toTable(Named, Materialized)``).

        A null value deletes the key; null-key records are skipped and counted. If the stream is
        marked for repartitioning, it is repartitioned first. The table's serdes are
        ``materialized``'s, else this stream's; its store uses ``materialized``'s (this stream's
        when no ``materialized`` is given, as Kafka's ``Materialized.with(keySerde, valueSerde)``).
        """
        named, materialized = bind("KStream.toTable", "toTable(), toTable(Named), toTable(Materialized), "
                                   "toTable(Named, Materialized)", (NAMED, MATERIALIZED), (named, materialized))
        # Kafka KStreamImpl.toTable: node name, then store name, then the repartition topic named
        # after the node ("KSTREAM-TOTABLE-0000000002-repartition")
        name = self._builder._nameOrGenerate(nameOf(named), "KSTREAM-TOTABLE-")
        materialized = materialized or Materialized.with_(self._keySerde, self._valueSerde)
        storeName = materialized.storeName or self._builder._newStoreName("KSTREAM-TOTABLE-")
        keySerde, valueSerde = materialized.keySerde or self._keySerde, materialized.valueSerde or self._valueSerde
        stream = self
        if self._repartitionRequired:
            stream = self._repartitionThrough(name, Repartitioned.with_(keySerde, valueSerde))
        return KTable._materialize(self._builder, stream._name, name, storeName, materialized, stream._sourceTopics,
                                   keySerde=keySerde, valueSerde=valueSerde)

    def join(self, table, *args, **kwargs) -> "KStream":
        """``join(otherStream, joiner, windows[, streamJoined])``: windowed inner join with another
        ``KStream`` (Kafka ``KStream#join(KStream, ValueJoiner, JoinWindows[, StreamJoined])``).
        Every pair of records with equal keys whose timestamps satisfy ``windows``
        (``JoinWindows``: ``other.ts`` in ``[ts - before, ts + after]``) gives ``joiner(value,
        otherValue)`` (or ``joiner(key, value, otherValue)``) with timestamp ``max(ts, other.ts)``,
        when the second of the two arrives; records keep waiting for partners in two window
        stores (duplicates retained) for ``size + grace``. Null keys or values are dropped and
        counted. A side whose key was changed upstream is repartitioned first (topics
        ``<StreamJoined name>-left/-right-repartition`` or ``<node>-repartition``, RP-1); both
        inputs must be co-partitioned (J-6). The stream may be joined with itself (a record joins
        itself once). Names as Kafka's: ``KSTREAM-WINDOWED-``, ``KSTREAM-JOINTHIS-``,
        ``KSTREAM-JOINOTHER-``, ``KSTREAM-MERGE-`` and the stores ``<join node>-store``, or
        ``StreamJoined.withName/withStoreName``'s. The result has ``StreamJoined``'s key serde and
        no value serde.

        ``join`` with ``JoinWindows.ofTimeDifferenceWithNoGrace(100)``:

        ====  =====  ===========  ==========================================  ===========
        step  side   key:value@t  what happens                                forwarded
        ====  =====  ===========  ==========================================  ===========
        1     left   k:A@0        stored
        2     right  k:a@50       joins ``A``                                 k:A+a@50
        3     left   k:B@120      joins ``a`` (``a`` is 70 ms before)         k:B+a@120
        4     right  k:b@250      ``B`` is 130 ms before: nothing
        ====  =====  ===========  ==========================================  ===========

        Raises
        ------
        TypeError
            If ``windows`` is not a ``JoinWindows`` or ``streamJoined`` not a ``StreamJoined``.
        StreamsException
            For ``StreamJoined`` store suppliers that do not retain duplicates, do not match the
            windows (retention ``size + grace``, window size ``size``) or share a name (Kafka's messages).
        TopologyException
            If the streams come from different builders.

        ``join(globalTable, keySelector, joiner, named=None)``: inner join with a ``GlobalKTable``
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
        """``leftJoin(otherStream, joiner, windows[, streamJoined])``: as ``join(otherStream, ...)``,
        and a record of this stream that joins nothing is forwarded as ``joiner(value, None)``
        with its own timestamp: with ``JoinWindows.ofTimeDifference*`` once its window closes
        (stream time past ``ts + after + grace``; kept until then in the outer-join store
        ``KSTREAM-OUTERSHARED-<n>-store``, KIP-633), with the deprecated ``JoinWindows.of`` at
        once. A null-key record with a value is forwarded at once as non-joined (KIP-962). Mirrors
        Kafka ``KStream#leftJoin(KStream, ValueJoiner, JoinWindows[, StreamJoined])``; see
        ``JoinWindows`` for a step-by-step example.

        Left join with ``table`` (``leftJoin(table, joiner, joined=None)``) or with a
        ``GlobalKTable`` (``leftJoin(globalTable, keySelector, joiner, named=None)``): like
        ``join`` but ``tableValue`` is ``None`` when there is no table value, and a null-key
        record with a value is joined rather than dropped (KIP-962; J-8 for global tables: a
        non-null key whose mapped key is null is still dropped). Mirrors Kafka
        ``KStream#leftJoin(KTable, ValueJoiner)`` / ``leftJoin(GlobalKTable, KeyValueMapper, ValueJoiner)``."""
        return self._dispatchJoin(table, args, kwargs, leftJoin=True)

    def outerJoin(self, otherStream: "KStream", joiner: Callable, windows, streamJoined=None) -> "KStream":
        """Outer join with ``otherStream`` within ``windows``: like ``leftJoin(otherStream, ...)``,
        and a right record that joins nothing is forwarded too, as ``joiner(None, otherValue)``
        (with ``ofTimeDifference*`` windows: once its window ``[t - after, t + before]`` closes plus
        grace); a null-key record of either side with a value is forwarded at once as non-joined.
        Mirrors Kafka ``KStream#outerJoin(KStream, ValueJoiner, JoinWindows[, StreamJoined])``;
        see ``join`` for names, stores and repartitioning.

        ``outerJoin`` with ``JoinWindows.ofTimeDifferenceWithNoGrace(10)``:

        ====  =====  ===========  ==========================================  =============
        step  side   key:value@t  what happens                                forwarded
        ====  =====  ===========  ==========================================  =============
        1     right  k:a@0        no left record within 10 ms: ``a`` kept
        2     left   k:A@5        joins ``a``                                 k:A+a@5
        3     right  k:b@100      ``b`` kept
        4     left   j:B@200      ``b``'s window closed (100 + 10 < 200)      k:null+b@100
        ====  =====  ===========  ==========================================  =============
        """
        from ._stream_join import streamStreamJoin

        if not isinstance(otherStream, KStream):
            raise TypeError(f"KStream.outerJoin(): otherStream must be a KStream, got {type(otherStream).__name__}")
        return streamStreamJoin("outerJoin", self, otherStream, joiner, windows, streamJoined, leftOuter=True,
                                rightOuter=True)

    def _dispatchJoin(self, table, args, kwargs, leftJoin: bool) -> "KStream":
        from ._global_ktable import GlobalKTable, globalTableJoin
        from ._stream_join import streamStreamJoin

        if isinstance(table, KStream):
            return streamStreamJoin("leftJoin" if leftJoin else "join", self, table, *args, **kwargs,
                                    leftOuter=leftJoin, rightOuter=False)
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
        check("KStream.join", "joined", JOINED, joined)
        if getattr(joined, "gracePeriodMs", None) is not None:
            # Kafka KStreamImpl.doStreamTableJoin (KIP-923, rule J-5); kspark has no versioned tables
            raise ValueError("KTable must be versioned to use a grace period in a stream table join.")
        reused = (self._repartitionRequired and self._joinRepartition is not None
                  and (nameOf(joined) or self._name) == self._name)
        stream = self._repartitionForJoin(nameOf(joined) or self._name, getattr(joined, "keySerde", None),
                                          getattr(joined, "valueSerde", None)) if self._repartitionRequired else self
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
        # Kafka doStreamTableJoin: the joined key serde or this stream's, no value serde
        return KStream(self._builder, name, stream._sourceTopics, False,
                       getattr(joined, "keySerde", None) or self._keySerde, None)

    # ------------------------------------------------------------------ repartition helpers (RP-1..RP-3)
    def _repartitionForJoin(self, repartitionName: str, keySerde=None, valueSerde=None) -> "KStream":
        """Kafka ``KStreamImpl.repartitionForJoin``: the repartition topic is named
        ``repartitionName`` (the join's name, or this node's); a later join of this same stream
        under this node's name reuses the first one's repartition topic. Sink, filter and source
        names are burnt either way. ``keySerde``/``valueSerde`` (the join's) override this stream's."""
        if self._joinRepartition is None or repartitionName != self._name:
            serdes = Repartitioned.with_(keySerde or self._keySerde, valueSerde or self._valueSerde)
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
        return self._add("KSTREAM-FLATMAP-", "flatMap", named, lambda: KStreamFlatMap(mapper), True, None, None)

    def flatMapValues(self, mapper: Callable, named=None) -> "KStream":
        """Zero or more records per input, same key: ``mapper(value)`` (or ``mapper(key, value)``,
        Kafka's ``ValueMapperWithKey``) returns an iterable of values. Keeps the
        repartition-required flag (Kafka ``KStream#flatMapValues``, rule RP-1)."""
        withKey = arity(mapper) == 2
        return self._add("KSTREAM-FLATMAPVALUES-", "flatMapValues", named,
                         lambda: KStreamFlatMapValues(mapper, withKey), False, self._keySerde, None)

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
        name = self._builder._nameOrGenerate(_named("KStream.merge", named), "KSTREAM-MERGE-")
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

    def processValues(self, processorSupplier, *storeNames, named=None) -> "KStream":
        """Like ``process`` (same supplier and overload forms) but the processor may only change
        values: forwarding a record whose key differs from the input record's raises
        ``StreamsException`` (Kafka's ``FixedKeyProcessor``). Keeps the key serde and the
        repartition-required flag (Kafka ``KStream#processValues``, rule RP-1); with stores
        after a key change, warns or repartitions like ``process``."""
        name, _ = self._processNode("processValues", "KSTREAM-PROCESSVALUES-", processorSupplier, storeNames, named,
                                    FixedKeyProcessorAdapter)
        return self._derived(name, False, self._keySerde, None)

    def foreach(self, action: Callable[[Any, Any], None], named=None) -> None:
        """Call ``action(key, value)`` for every record; terminal (Kafka ``KStream#foreach``)."""
        self._builder._topology.addProcessor(
            self._builder._nameOrGenerate(_named("KStream.foreach", named), "KSTREAM-FOREACH-"),
            lambda: ForeachProcessor(action), self._name)

    def print(self, printed: "Printed | None" = None) -> None:
        """Write every record as ``[label]: key, value`` to stdout or a file (Kafka
        ``KStream#print``); the label defaults to this stream's node name."""
        from ._printed import Printed

        printed = check("KStream.print", "printed", instanceOf("Printed", Printed), printed) or Printed.toSysOut()
        name = self._builder._nameOrGenerate(printed.name, "KSTREAM-PRINTER-")
        path, mapper, label = printed.path, printed.mapper, printed.label or self._name
        self._builder._topology.addProcessor(name, lambda: KStreamPrint(path, mapper, label), self._name)


def supplierFunction(method: str, supplier) -> Callable[[], Any]:
    """``supplierGet`` plus Kafka's ``ApiUtils.checkSupplier``: two calls must return two objects.

    Raises
    ------
    TypeError
        If ``supplier`` is no supplier, or returns the same processor twice.
    """
    get = supplierGet(f"KStream.{method}", supplier)
    if not isinstance(supplier, type):
        first = get()
        if first is not None and first is get():
            raise TypeError(f"KStream.{method}(): processorSupplier#get() must return a new object each time it is called.")
    return get
