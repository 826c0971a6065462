from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from ..state import StoreBuilder
from ..topology import Topology
from ._config_objects import CONSUMED, MATERIALIZED, Consumed, Materialized
from ._overloads import bind, check
from ._internals.stateless import RepartitionNullKeyFilter

log = logging.getLogger("kspark.dsl")

if TYPE_CHECKING:
    from ._global_ktable import GlobalKTable
    from ._kstream import KStream
    from ._ktable import KTable

__all__ = ["StreamsBuilder"]


class StreamsBuilder:
    """Builds a ``Topology`` with the DSL (Kafka ``StreamsBuilder``).

    Generated names follow Kafka's: ``KSTREAM-SOURCE-0000000000``, ``KSTREAM-FILTER-0000000001``,
    one counter shared by processors and stores; an operation given a name still uses up its
    counter value where Kafka's does (``NamedInternal.orElseGenerateWithPrefix``), so the
    generated names around it, repartition topics included, are the same as in Kafka.
    """

    def __init__(self, topologyConfig: Any = None) -> None:
        """``topologyConfig``: optional ``StreamsConfig`` or mapping of configs that shape the
        topology (Kafka ``StreamsBuilder(TopologyConfig)``); kspark reads
        ``kspark.repartition.before.stateful.process`` from it (``build(props)`` may override)."""
        self._topology = Topology()
        self._index = 0
        self._tableSources: set[str] = set()  # KTABLE-SOURCE processors of builder.table()
        self._built = False
        self._config = self._asConfig(topologyConfig)
        self._statefulAfterKeyChange: list[tuple[str, tuple[str, ...], str | None]] = []

    @staticmethod
    def _asConfig(props: Any):
        from ..config import StreamsConfig

        if props is None or isinstance(props, StreamsConfig):
            return props
        return StreamsConfig(props)

    # -- naming (Kafka InternalStreamsBuilder.newProcessorName / newStoreName)
    def _newProcessorName(self, prefix: str) -> str:
        name = f"{prefix}{self._index:010d}"
        self._index += 1
        return name

    def _newStoreName(self, prefix: str) -> str:
        return self._newProcessorName(f"{prefix}STATE-STORE-")

    def _nameOrGenerate(self, name: str | None, prefix: str) -> str:
        """Kafka ``NamedInternal.orElseGenerateWithPrefix``: a user-given name still burns one
        counter value, so the generated names after it are the same as Kafka's."""
        generated = self._newProcessorName(prefix)
        return name if name is not None else generated

    def stream(self, topics, consumed: Consumed | None = None) -> "KStream":
        """A ``KStream`` of the records of ``topics`` (Kafka ``StreamsBuilder#stream``).

        ``topics`` is a topic name, a list of names, or a compiled ``re.Pattern`` (every topic
        whose whole name matches; on ``TopologyTestDriver`` the matching topics share one input
        partition, as in Kafka's driver). Keys and values are deserialized with ``consumed``'s
        serdes (default ``default.key.serde`` / ``default.value.serde``), which the stream carries
        on to sinks, groupings and tables downstream; event time comes from its timestamp
        extractor (default ``default.timestamp.extractor``).

        Raises
        ------
        TypeError
            If ``topics`` is not a str, a list of str or a ``re.Pattern``, or ``consumed`` is not a ``Consumed``.
        """
        from ._kstream import KStream

        consumed = check("StreamsBuilder.stream", "consumed", CONSUMED, consumed) or Consumed()
        if isinstance(topics, (str, re.Pattern)):
            topicList = [topics]
        elif isinstance(topics, (list, tuple, set, frozenset)) and topics and all(isinstance(t, str) for t in topics):
            topicList = list(topics)
        else:
            raise TypeError(f"StreamsBuilder.stream(): topics must be a topic name, a list of topic names or a "
                            f"re.Pattern, got {type(topics).__name__}")
        name = self._nameOrGenerate(consumed.name, "KSTREAM-SOURCE-")
        self._topology.addSource(
            name, *topicList, keySerde=consumed.keySerde, valueSerde=consumed.valueSerde,
            timestampExtractor=consumed.timestampExtractor, offsetReset=consumed.offsetResetPolicy,
        )
        sourceTopics = set(self._topology._nodes[name].topics)
        return KStream(self, name, sourceTopics, False, consumed.keySerde, consumed.valueSerde)

    def table(self, topic: str, consumed: Consumed | None = None, materialized: Materialized | None = None) -> "KTable":
        """A ``KTable`` holding the latest value per key of ``topic`` (Kafka ``StreamsBuilder#table``;
        forms ``table(topic)``, ``table(topic, Consumed)``, ``table(topic, Materialized)``,
        ``table(topic, Consumed, Materialized)``).

        The table is materialized in a timestamped key-value store named by ``materialized`` or
        ``<topic>-STATE-STORE-<n>``. Null-key records are skipped and counted; a null value is a
        tombstone that deletes the key. Serdes as Kafka's: with ``consumed`` the source and the
        store use ``consumed``'s serdes (also when ``materialized`` gives others); with only
        ``materialized``, its serdes read the topic.

        Raises
        ------
        TypeError
            For an argument that is neither a ``Consumed`` nor a ``Materialized`` in Kafka's order.
        """
        from ._ktable import KTable

        consumed, materialized = bind(
            "StreamsBuilder.table", "table(topic), table(topic, Consumed), table(topic, Materialized), "
            "table(topic, Consumed, Materialized)", (CONSUMED, MATERIALIZED), (consumed, materialized))
        if consumed is None:  # Kafka table(topic, materialized): Consumed.with(materialized's serdes)
            materialized = materialized or Materialized()
            consumed = Consumed.with_(materialized.keySerde, materialized.valueSerde)
        else:  # Kafka: the store always takes consumed's serdes
            materialized = (materialized or Materialized()).with_(consumed.keySerde, consumed.valueSerde)
        storeName = materialized.storeName or self._newStoreName(f"{topic}-")
        # Kafka 4.3 InternalStreamsBuilder.table: Consumed.as_("x") names the source "x-source"
        # (TABLE_SOURCE_SUFFIX) and the KTableSource processor "x"; both still burn a counter value
        sourceName = self._nameOrGenerate(
            None if consumed.name is None else f"{consumed.name}-source", "KSTREAM-SOURCE-")
        tableName = self._nameOrGenerate(consumed.name, "KTABLE-SOURCE-")
        self._tableSources.add(tableName)  # one DSL graph node with its source (KTable._graphChain)
        self._topology.addSource(
            sourceName, topic, keySerde=consumed.keySerde, valueSerde=consumed.valueSerde,
            timestampExtractor=consumed.timestampExtractor, offsetReset=consumed.offsetResetPolicy,
        )
        return KTable._materialize(self, sourceName, tableName, storeName, materialized, {topic},
                                   keySerde=consumed.keySerde, valueSerde=consumed.valueSerde)

    def globalTable(self, topic: str, consumed: Consumed | Materialized | None = None,
                    materialized: Materialized | None = None) -> "GlobalKTable":
        """A ``GlobalKTable`` of all partitions of ``topic`` (Kafka ``StreamsBuilder#globalTable``;
        ``globalTable(topic, materialized)`` works too).

        Naming as Kafka's: store ``materialized``'s name or ``<topic>-STATE-STORE-<n>``; source
        ``KSTREAM-SOURCE-<n>`` and processor ``KTABLE-SOURCE-<n>`` (``<name>-source`` and
        ``<name>`` with ``Consumed.as_(name)``). The store always uses ``consumed``'s serdes
        (default serdes when unset). Null-key records are skipped and counted; a null value
        deletes the key. The store is read-only to other processors, needs no connection, and is
        updated in timestamp order with every task's stream records (see ``GlobalKTable``).
        """
        from ._global_ktable import globalTable

        return globalTable(self, topic, consumed, materialized)

    def addGlobalStore(self, storeBuilder: StoreBuilder, topic: str, consumed: Consumed | None,
                       stateUpdateSupplier) -> "StreamsBuilder":
        """A global store fed by ``stateUpdateSupplier()``'s processor from every partition of
        ``topic`` (Kafka ``StreamsBuilder#addGlobalStore``): source ``KSTREAM-SOURCE-<n>`` and
        processor ``KTABLE-SOURCE-<n>`` unless ``consumed`` names them."""
        consumed = check("StreamsBuilder.addGlobalStore", "consumed", CONSUMED, consumed) or Consumed()
        sourceName = self._newProcessorName("KSTREAM-SOURCE-")
        if consumed.name is not None:
            sourceName = f"{consumed.name}-source"
        processorName = consumed.name or self._newProcessorName("KTABLE-SOURCE-")
        self._topology.addGlobalStore(storeBuilder, sourceName, consumed.keySerde, consumed.valueSerde, topic,
                                      processorName, stateUpdateSupplier, consumed.timestampExtractor)
        return self

    def addStateStore(self, builder: StoreBuilder) -> "StreamsBuilder":
        """Add a store for ``KStream.process(supplier, storeName)`` (Kafka ``StreamsBuilder#addStateStore``)."""
        if not isinstance(builder, StoreBuilder):
            raise TypeError("addStateStore takes a StoreBuilder, e.g. Stores.keyValueStoreBuilder(...)")
        self._topology.addStateStore(builder)
        return self

    def build(self, props: Any = None) -> Topology:
        """Return the topology built so far (Kafka ``StreamsBuilder#build``).

        ``props`` (``StreamsConfig`` or mapping), like Kafka's ``build(Properties)``, may set
        ``kspark.repartition.before.stateful.process``; it is on if set here or in the
        builder's ``topologyConfig``.
        For every ``process``/``processValues`` with state stores whose input key was changed
        upstream without a repartition, this logs a WARNING (flag false, Kafka's topology kept)
        or inserts a repartition topic ``<processor>-stores-repartition`` right before the processor
        (flag true), so records with the same key meet the same store.
        """
        from ..config import StreamsConfig

        key = StreamsConfig.REPARTITION_BEFORE_STATEFUL_PROCESS_CONFIG
        repartition = any(c is not None and c.get(key) for c in (self._config, self._asConfig(props)))
        pending, self._statefulAfterKeyChange = self._statefulAfterKeyChange, []
        for processorName, stores, keyChanger in pending:
            changer = keyChanger or "an upstream key-changing operation"
            if not repartition:
                log.warning(
                    "Processor %s uses state stores %s but its input key was changed by %s and not repartitioned: "
                    "records with the same key can be processed by different tasks, each with its own copy of "
                    "the stores (Kafka Streams does not repartition before process()). Call repartition() "
                    "before it, or set %s=true to let kspark insert a repartition topic.",
                    processorName, list(stores), changer, key,
                )
                continue
            topic = f"{processorName}-stores-repartition"
            filterName = f"{topic}-filter"
            topology = self._topology
            policy = topology._repartitionFilter(filterName)
            topology._insertRepartitionBefore(
                processorName, topic, filterName, lambda policy=policy: RepartitionNullKeyFilter(policy),
                f"{topic}-sink", f"{topic}-source",
            )
            log.info("Repartitioning by key before %s (stores %s, key changed by %s): topic %s",
                     processorName, list(stores), changer, topic)
        self._validateCopartition()
        return self._topology

    def _validateCopartition(self) -> None:
        """Kafka ``InternalTopologyBuilder.validateCopartition`` (run by ``build()``): a
        co-partition group made only of repartition topics with enforced partition counts must
        agree on the count (rule RP-5)."""
        from ..errors import TopologyException
        from ..topology._copartition import _javaMap

        internal = self._topology.internalTopics()
        for group in self._topology.copartitionGroups():
            counts = {t: internal[t] for t in group if internal.get(t) is not None}
            if counts and set(counts) == group and len(set(counts.values())) > 1:
                raise TopologyException(f"Following topics do not have the same number of partitions: [{_javaMap(counts)}]")
