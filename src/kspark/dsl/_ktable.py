from __future__ import annotations

from typing import TYPE_CHECKING

from ..state import Stores
from ._config_objects import Consumed, Materialized, nameOf
from ._internals.processors import KTableSource, KTableToStream

if TYPE_CHECKING:
    from ._builder import StreamsBuilder
    from ._kstream import KStream

__all__ = ["KTable"]


class KTable:
    """A changelog stream seen as a table: the latest value per key (Kafka ``KTable``).

    Every kspark KTable is materialized in a timestamped key-value store (``queryableStoreName()``).
    """

    def __init__(self, builder: "StreamsBuilder", name: str, storeName: str, sourceTopics: set[str]) -> None:
        self._builder = builder
        self._name = name
        self._storeName = storeName
        self._sourceTopics = sourceTopics

    @staticmethod
    def _materialize(builder, parentName, tableName, storeName, materialized: Materialized, sourceTopics, consumed: Consumed | None = None) -> "KTable":
        topology = builder._topology
        topology.addProcessor(tableName, lambda: KTableSource(storeName), parentName)
        keySerde = materialized.keySerde or (consumed.keySerde if consumed else None)
        valueSerde = materialized.valueSerde or (consumed.valueSerde if consumed else None)
        topology.addStateStore(
            Stores.timestampedKeyValueStoreBuilder(Stores.persistentKeyValueStore(storeName), keySerde, valueSerde),
            tableName,
        )
        return KTable(builder, tableName, storeName, set(sourceTopics))

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
        from ..errors import TopologyException
        from ._internals.processors import KTableSuppress

        untilWindowCloses = suppressed.timeLimitMs is None
        if untilWindowCloses and self._windowCloseDuration is None:
            raise TopologyException(f"Window close time is only defined for windowed computations. Got [{self._name}].")
        name = suppressed.name or self._builder._newProcessorName("KTABLE-SUPPRESS-")
        duration = self._windowCloseDuration if untilWindowCloses else suppressed.timeLimitMs
        config, storeName = suppressed.bufferConfig, self._storeName
        self._builder._topology.addProcessor(
            name, lambda: KTableSuppress(duration, config, name, untilWindowCloses, untilWindowCloses, storeName), self._name)
        return KTable(self._builder, name, self._storeName, self._sourceTopics)

    def queryableStoreName(self) -> str:
        return self._storeName

    def toStream(self, named=None) -> "KStream":
        """The table's updates as a stream; a tombstone becomes a record with a null value (Kafka ``KTable#toStream``)."""
        from ._kstream import KStream

        name = nameOf(named) or self._builder._newProcessorName("KTABLE-TOSTREAM-")
        self._builder._topology.addProcessor(name, KTableToStream, self._name)
        return KStream(self._builder, name, self._sourceTopics, repartitionRequired=False)
