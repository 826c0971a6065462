from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..state import StoreBuilder
from ..topology import Topology
from ._config_objects import Consumed, Materialized

if TYPE_CHECKING:
    from ._global_ktable import GlobalKTable
    from ._kstream import KStream
    from ._ktable import KTable

__all__ = ["StreamsBuilder"]


class StreamsBuilder:
    """Builds a ``Topology`` with the DSL (Kafka ``StreamsBuilder``).

    Generated names follow Kafka's: ``KSTREAM-SOURCE-0000000000``, ``KSTREAM-FILTER-0000000001``,
    one counter shared by processors and stores.
    """

    def __init__(self) -> None:
        self._topology = Topology()
        self._index = 0
        self._built = False

    # -- naming (Kafka InternalStreamsBuilder.newProcessorName / newStoreName)
    def _newProcessorName(self, prefix: str) -> str:
        name = f"{prefix}{self._index:010d}"
        self._index += 1
        return name

    def _newStoreName(self, prefix: str) -> str:
        return self._newProcessorName(f"{prefix}STATE-STORE-")

    def stream(self, topics: str | list[str], consumed: Consumed | None = None) -> "KStream":
        """A ``KStream`` of the records of ``topics`` (Kafka ``StreamsBuilder#stream``).

        Keys and values are deserialized with ``consumed``'s serdes (default ``default.key.serde``
        / ``default.value.serde``); event time comes from its timestamp extractor (default
        ``default.timestamp.extractor``).
        """
        from ._kstream import KStream

        consumed = consumed or Consumed()
        topicList = [topics] if isinstance(topics, str) else list(topics)
        name = consumed.name or self._newProcessorName("KSTREAM-SOURCE-")
        self._topology.addSource(
            name, *topicList, keySerde=consumed.keySerde, valueSerde=consumed.valueSerde,
            timestampExtractor=consumed.timestampExtractor,
        )
        return KStream(self, name, set(topicList), repartitionRequired=False)

    def table(self, topic: str, consumed: Consumed | None = None, materialized: Materialized | None = None) -> "KTable":
        """A ``KTable`` holding the latest value per key of ``topic`` (Kafka ``StreamsBuilder#table``).

        The table is materialized in a timestamped key-value store named by ``materialized`` or
        ``<topic>-STATE-STORE-<n>``. Null-key records are skipped and counted; a null value is a
        tombstone that deletes the key.
        """
        from ._ktable import KTable

        consumed = consumed or Consumed()
        materialized = materialized or Materialized()
        storeName = materialized.storeName or self._newStoreName(f"{topic}-")
        sourceName = consumed.name or self._newProcessorName("KSTREAM-SOURCE-")
        tableName = self._newProcessorName("KTABLE-SOURCE-")
        self._topology.addSource(
            sourceName, topic, keySerde=consumed.keySerde, valueSerde=consumed.valueSerde,
            timestampExtractor=consumed.timestampExtractor,
        )
        return KTable._materialize(self, sourceName, tableName, storeName, materialized, {topic}, consumed)

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
        consumed = consumed or Consumed()
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
        """Return the topology built so far (Kafka ``StreamsBuilder#build``)."""
        return self._topology


