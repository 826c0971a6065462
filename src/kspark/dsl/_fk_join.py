"""``KTable.join/leftJoin(other, foreignKeyExtractor, joiner, ...)``: the foreign-key join's
nodes, stores and topics, as Kafka's ``KTableImpl.doJoinOnForeignKey`` adds them (the record logic
is in ``_internals/fk_join.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..errors import TopologyException
from ._config_objects import Materialized, TableJoined, isVersioned, keyValueStoreBuilder
from ._internals.common import arity
from ._internals.fk_join import (
    CombinedKeySchema, ForeignTableJoinSupplier, ResponseJoinSupplier, SubscriptionJoinSupplier,
    SubscriptionReceiveSupplier, SubscriptionResponseWrapperSerde, SubscriptionSendSupplier, SubscriptionStoreBuilder,
    SubscriptionWrapperSerde, fkPartitioner, responsePartition,
)
from ._internals.ktable import KTableSourceSupplier

if TYPE_CHECKING:
    from ._ktable import KTable

_FK_JOIN = "KTABLE-FK-JOIN-"
_SUBSCRIPTION_REGISTRATION = _FK_JOIN + "SUBSCRIPTION-REGISTRATION-"
_SUBSCRIPTION_RESPONSE = _FK_JOIN + "SUBSCRIPTION-RESPONSE-"
_SUBSCRIPTION_PROCESSOR = _FK_JOIN + "SUBSCRIPTION-PROCESSOR-"
_RESOLVER = _FK_JOIN + "SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"
_OUTPUT = _FK_JOIN + "OUTPUT-"


def foreignKeyJoin(left: "KTable", other: "KTable", extractor: Callable, joiner: Callable,
                   tableJoined: TableJoined | None, materialized: Materialized | None, leftJoin: bool) -> "KTable":
    """Kafka ``KTableImpl.doJoinOnForeignKey``: ``left`` joined with the entry of ``other`` whose
    key is ``extractor(value)`` (``extractor(key, value)`` for a two-argument function).

    Adds, with Kafka's names (``<TableJoined name>-<suffix>`` when named):

    - ``KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic``, keyed by the foreign key (partitioned
      as ``other``'s topics, with which it is co-partitioned), and
      ``KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-<n>-topic``, keyed by the primary key and written to
      the partition the left record came from (co-partitioned with ``left``'s topics): internal
      topics, created like repartition topics;
    - the subscription store ``KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-<n>`` on the right side;
    - the result table, a ``KTableSource`` ``KTABLE-FK-JOIN-OUTPUT-<n>`` materialized in
      ``materialized``'s store when it is named (``KTABLE-FK-JOIN-OUTPUT-STATE-STORE-<n>`` otherwise),
      cached unless ``materialized`` disables caching (then an inner join's delete of a left entry
      that never joined, or its move to another missing foreign key, gives Kafka's "unnecessary"
      tombstone, which the cache would drop as a delete of a key the store does not hold).

    Output: ``joiner(leftValue, rightValue)`` under the left key when a left entry's foreign key
    has a right value (left join: also ``joiner(leftValue, None)`` when it has none or the foreign
    key is null), a tombstone when a joined entry stops joining; timestamp = max(left update,
    right value) for an answer to a left update, the right update's for a right update. A left
    update with a null foreign key is dropped and counted (inner join); a right null key too; an
    answer to a left value that has changed since is dropped and counted ("hash mismatch"), as
    Kafka drops it. Both tables send old values and are materialized (their stores are read).

    Raises
    ------
    TypeError
        If ``joiner`` is not a function.
    TopologyException
        If the tables come from different builders.
    """
    if other._builder is not left._builder:
        raise TopologyException("Both KTables must come from the same StreamsBuilder")
    if not callable(joiner):
        raise TypeError("joiner must be a callable (value, otherValue) -> result")
    fk = extractor if arity(extractor) == 2 else (lambda key, value: extractor(value))
    tableJoined = tableJoined or TableJoined()
    materialized = materialized or Materialized()
    builder, topology = left._builder, left._builder._topology
    # "Old values are a useful optimization": both sides send old values (Kafka's comments)
    other._enableSendingOldValues(True)
    left._enableSendingOldValues(True)
    base = tableJoined.name

    def named(suffix: str, prefix: str) -> str:  # Kafka NamedInternal.suffixWithOrElseGet
        generated = builder._newProcessorName(prefix)
        return generated if base is None else base + suffix

    subscriptionTopic = named("-subscription-registration", _SUBSCRIPTION_REGISTRATION) + "-topic"
    # pseudo topics the keys and the value hash are serialized for (Kafka decorates them with the application id)
    pkTopic, fkTopic, vhTopic = (f"{subscriptionTopic}-{s}" for s in ("pk", "fk", "vh"))
    topology._addInternalTopic(subscriptionTopic, None)
    fkSerde, wrapperSerde = other._keySerde, SubscriptionWrapperSerde(left._keySerde, pkTopic)
    schema = CombinedKeySchema(fkSerde, fkTopic, left._keySerde, pkTopic)

    sendName = named("-subscription-registration-processor", _SUBSCRIPTION_REGISTRATION)
    send = SubscriptionSendSupplier(fk, fkSerde, left._valueSerde, leftJoin, fkTopic, vhTopic)
    send.useVersionedSemantics = left._isVersioned()
    topology.addProcessor(sendName, send, left._name)
    sinkName = named("-subscription-registration-sink", "KTABLE-SINK-")
    other_ = tableJoined.otherPartitioner
    topology.addSink(sinkName, subscriptionTopic, sendName, keySerde=fkSerde, valueSerde=wrapperSerde,
                     partitioner=None if other_ is None else fkPartitioner(other_))
    sourceName = named("-subscription-registration-source", "KTABLE-SOURCE-")
    topology.addSource(sourceName, subscriptionTopic, keySerde=fkSerde, valueSerde=wrapperSerde)
    topology._copartition(other._sourceTopics | {subscriptionTopic})

    storeName = named("-subscription-store", _FK_JOIN + "SUBSCRIPTION-STATE-STORE-")
    receiveName = named("-subscription-receive", _SUBSCRIPTION_PROCESSOR)
    topology.addProcessor(receiveName, SubscriptionReceiveSupplier(storeName, schema), sourceName)
    topology.addStateStore(SubscriptionStoreBuilder(storeName, wrapperSerde), receiveName)
    foreignView = other._valueGetterSupplier()
    joinName = named("-subscription-join-foreign", _SUBSCRIPTION_PROCESSOR)
    topology.addProcessor(joinName, SubscriptionJoinSupplier(foreignView), receiveName)
    topology.connectProcessorAndStateStores(joinName, *foreignView.storeNames())
    foreignJoinName = named("-foreign-join-subscription", _SUBSCRIPTION_PROCESSOR)
    foreignJoin = ForeignTableJoinSupplier(storeName, schema)
    foreignJoin.useVersionedSemantics = other._isVersioned()
    topology.addProcessor(foreignJoinName, foreignJoin, other._name)
    topology.connectProcessorAndStateStores(foreignJoinName, storeName)

    responseTopic = named("-subscription-response", _SUBSCRIPTION_RESPONSE) + "-topic"
    topology._addInternalTopic(responseTopic, None)
    responseSerde = SubscriptionResponseWrapperSerde(other._valueSerde)
    responseSinkName = named("-subscription-response-sink", "KTABLE-SINK-")
    mine = tableJoined.partitioner
    topology.addSink(responseSinkName, responseTopic, joinName, foreignJoinName, keySerde=left._keySerde,
                     valueSerde=responseSerde, partitioner=responsePartition if mine is None else fkPartitioner(mine))
    responseSourceName = named("-subscription-response-source", "KTABLE-SOURCE-")
    topology.addSource(responseSourceName, responseTopic, keySerde=left._keySerde, valueSerde=responseSerde)
    resultTopics = left._sourceTopics | {responseTopic}
    topology._copartition(resultTopics)

    leftView = left._valueGetterSupplier()
    resolverName = named("-subscription-response-resolver", _RESOLVER)
    topology.addProcessor(resolverName, ResponseJoinSupplier(leftView, left._valueSerde, joiner, leftJoin, vhTopic),
                          responseSourceName)
    topology.connectProcessorAndStateStores(resolverName, *leftView.storeNames())

    resultName = named("-result", _OUTPUT)
    # Kafka MaterializedInternal(materialized, builder, FK_JOIN_OUTPUT_NAME): an unnamed store still burns an index
    resultStore = materialized.storeName or builder._newStoreName(_OUTPUT)
    keyed = materialized.withKeySerde(materialized.keySerde or left._keySerde)

    def storeBuilder():
        return keyValueStoreBuilder("KTable.join", keyed, resultStore, versioned=True)

    supplier = KTableSourceSupplier(topology, resultName, resultStore, None, storeBuilder, materialized.caching)
    topology.addProcessor(resultName, supplier, resolverName)
    if materialized.storeName is not None:
        supplier.materialize()
    from ._ktable import KTable

    table = KTable(builder, resultName, resultStore, resultTopics, supplier, materialized.storeName, left._keySerde,
                   materialized.valueSerde)
    table._outputVersioned = isVersioned(materialized)
    return table
