"""GlobalKTable and the KStream-GlobalKTable join (Kafka ``GlobalKTable``, ``KStreamGlobalKTableJoin``).

Semantics on the hosts (see ``kspark.runtime.global_state``): every task holds a full copy of
each global store and applies the global topic's records (all partitions) in timestamp order
with its own stream records, so a stream record never misses a global update with a smaller
(or equal) timestamp, on TopologyTestDriver and on Spark alike. This is where kspark goes
beyond Kafka Streams, whose global thread updates the store asynchronously (seed 004's race).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from ..errors import TopologyException
from ..state import Stores
from ._overloads import bind
from ._config_objects import CONSUMED, MATERIALIZED, Consumed, Materialized, named as _named
from ._internals.common import arity
from ._internals.ktable import KTableSource
from ._internals.stream_table import KStreamGlobalKTableJoin

if TYPE_CHECKING:
    from ._builder import StreamsBuilder
    from ._kstream import KStream

__all__ = ["GlobalKTable"]

log = logging.getLogger("kspark.dsl")


class GlobalKTable:
    """A table replicated in full to every task: the latest value per key of all partitions of
    its topic (Kafka ``GlobalKTable``). Made by ``StreamsBuilder.globalTable``; used in
    ``KStream.join/leftJoin(globalTable, keySelector, joiner)``.

    When is it "bootstrapped"? Kafka restores a global store to the log end before any stream
    record is processed, then updates it asynchronously. kspark applies global records in
    timestamp order with the stream records of each task instead (rules J-7, J-8 and
    ``kspark.runtime.global_state``): a stream record sees exactly the global records with a
    timestamp <= its own that were in the log when it was fetched, and a task with no stream
    records left applies every global record it has. Reference data therefore needs a record
    timestamp from before the stream records that should see it (e.g. its publication time);
    restoring the whole log first would let an earlier stream record see a later update, the
    seed-004 race in the other direction.
    """

    def __init__(self, builder: "StreamsBuilder", storeName: str, queryable: bool, topic: str) -> None:
        self._builder = builder
        self._storeName = storeName
        self._queryable = queryable
        self._topic = topic

    def queryableStoreName(self) -> str | None:
        """The store name given with ``Materialized.as_``; ``None`` when it was generated (Kafka)."""
        return self._storeName if self._queryable else None


def globalTable(builder: "StreamsBuilder", topic: str, consumed=None, materialized=None) -> GlobalKTable:
    """``StreamsBuilder.globalTable``: see its docstring."""
    consumed, materialized = bind(
        "StreamsBuilder.globalTable", "globalTable(topic), globalTable(topic, Consumed), globalTable(topic, "
        "Materialized), globalTable(topic, Consumed, Materialized)", (CONSUMED, MATERIALIZED), (consumed, materialized))
    materialized = materialized or Materialized()
    if consumed is None:  # Kafka: Consumed.with(materialized's serdes)
        consumed = Consumed.with_(materialized.keySerde, materialized.valueSerde)
    storeName = materialized.storeName or builder._newStoreName(f"{topic}-")
    # Kafka: "<name>-source" (burning an index) and "<name>", or generated names
    sourceName = builder._newProcessorName("KSTREAM-SOURCE-")
    if consumed.name is not None:
        sourceName = f"{consumed.name}-source"
    processorName = consumed.name or builder._newProcessorName("KTABLE-SOURCE-")
    keySerde, valueSerde = consumed.keySerde, consumed.valueSerde  # Kafka: always the serdes of consumed
    builder._topology.addGlobalStore(
        Stores.timestampedKeyValueStoreBuilder(Stores.persistentKeyValueStore(storeName), keySerde, valueSerde),
        sourceName, keySerde, valueSerde, topic, processorName, lambda: KTableSource(storeName),
        timestampExtractor=consumed.timestampExtractor,
    )
    # Kafka's TableSourceNode adds a GlobalKTable's store with reprocessOnRestore=false: a restore
    # puts the topic's records into the store as they are (rawValueToTimestampedValue)
    builder._topology._nodes[processorName].reprocessOnRestore = False
    return GlobalKTable(builder, storeName, materialized.storeName is not None, topic)


def globalTableJoin(stream: "KStream", table: GlobalKTable, keySelector: Callable[[Any, Any], Any],
                    joiner: Callable, named=None, leftJoin: bool = False) -> "KStream":
    """``KStream.join/leftJoin(GlobalKTable, ...)`` (Kafka ``KStreamImpl.globalTableJoin``): no
    repartition, no co-partitioning (J-7); the processor is named ``KSTREAM-LEFTJOIN-<n>`` for
    both joins, as Kafka names it, and is not connected to the store in ``describe()``."""
    from ._kstream import KStream

    if table._builder is not stream._builder:
        raise TopologyException("KStream and GlobalKTable must come from the same StreamsBuilder")
    if not callable(keySelector):
        raise TypeError("keySelector must be a callable (key, value) -> global table key")
    n = arity(joiner)
    if n not in (2, 3):
        raise TypeError("joiner must take (value, tableValue) or (key, value, tableValue)")
    builder = stream._builder
    name = builder._nameOrGenerate(_named("KStream.join", named), "KSTREAM-LEFTJOIN-")  # a name still burns one
    storeName, withKey = table._storeName, n == 3
    builder._topology.addProcessor(
        name, lambda: KStreamGlobalKTableJoin(storeName, keySelector, joiner, withKey, leftJoin), stream._name,
    )
    # Kafka globalTableJoin: this stream's key serde, no value serde for the joined result
    return KStream(builder, name, stream._sourceTopics, stream._repartitionRequired, stream._keySerde, None)
