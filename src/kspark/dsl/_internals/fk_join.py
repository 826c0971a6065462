"""Foreign-key table-table joins (KIP-213), as Kafka's ``kstream/internals/foreignkeyjoin``.

``left.join(right, foreignKeyExtractor, joiner)`` runs in two sub-topologies connected by two
internal topics:

1. ``SubscriptionSend`` (left side): each left update sends a ``SubscriptionWrapper`` (murmur3 hash
   of the new left value's bytes, an instruction, the primary key, the left record's partition) to
   the *subscription topic*, keyed by the foreign key: partitioned like the right table.
2. ``SubscriptionReceive`` keeps the subscriptions in a store keyed by ``CombinedKey`` bytes
   (``{int32 len(fk)}{fk}{pk}``); ``SubscriptionJoin`` looks the right value up and answers on the
   *response topic*, keyed by the primary key and partitioned back to the left record's partition.
   A right update prefix-scans the store for its foreign key (``ForeignTableJoin``) and answers
   every subscriber.
3. ``ResponseJoin`` (left side) drops a response whose hash is not the hash of the left value it
   holds now (a stale answer to an older left value) and otherwise forwards ``joiner(left, right)``
   or a tombstone, into a ``KTableSource``: the join's result table.

Byte formats are Kafka's (``SubscriptionWrapperSerde`` v1, ``SubscriptionResponseWrapperSerde``
v0), so the internal topics interoperate with a Java application's.
"""

from __future__ import annotations

import logging
import struct
from enum import IntEnum
from typing import Any, NamedTuple

import mmh3

from ...errors import StreamsException
from ...processor import ContextualProcessor, Record
from ...serialization import Serde, Serdes
from ...state import StoreBuilder, TimestampedKeyValueStore, ValueAndTimestamp
from ...state._stores import KeyValueBytesStoreSupplier
from .common import Change, dropped

log = logging.getLogger("kspark.dsl")

__all__ = [
    "CombinedKey", "Instruction", "SubscriptionResponseWrapper", "SubscriptionResponseWrapperSerde",
    "SubscriptionWrapper", "SubscriptionWrapperSerde", "murmur3Hash128",
]

_SEED = 104729  # Kafka Murmur3.DEFAULT_SEED


def murmur3Hash128(data: bytes) -> tuple[int, int]:
    """Kafka ``Murmur3.hash128(byte[])``: MurmurHash3 x64 128-bit with seed 104729, as two signed
    64-bit ints (Java's ``long[2]``)."""
    return mmh3.hash64(data, _SEED, True, True)


class Instruction(IntEnum):
    """Kafka ``SubscriptionWrapper.Instruction``: what the right side answers a subscription with."""

    DELETE_KEY_NO_PROPAGATE = 0  # forget the subscription, answer nothing
    DELETE_KEY_AND_PROPAGATE = 1  # forget it, answer (pk, null)
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2  # answer the right value, or null if there is none
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3  # answer the right value only if there is one


class SubscriptionWrapper(NamedTuple):
    """A subscription (Kafka ``SubscriptionWrapper``, version 1): hash of the left value (None for
    a delete), instruction, primary key, partition of the left record."""

    hash: tuple[int, int] | None
    instruction: int
    primaryKey: Any
    primaryPartition: int | None
    version: int = 1


class SubscriptionResponseWrapper(NamedTuple):
    """An answer (Kafka ``SubscriptionResponseWrapper``, version 0): the hash the subscription
    carried, the right value (None: no value), the partition to answer to (not serialized)."""

    originalValueHash: tuple[int, int] | None
    foreignValue: Any
    primaryPartition: int | None
    version: int = 0


class CombinedKey(NamedTuple):
    """Kafka ``CombinedKey``: the foreign key and the primary key of a subscription."""

    foreignKey: Any
    primaryKey: Any


def _hashBytes(h: tuple[int, int]) -> bytes:
    return struct.pack(">qq", h[0], h[1])


def pseudoTopic(context, topic: str) -> str:
    """A foreign-key join's pseudo topic (``<subscription topic>-pk``/``-fk``/``-vh``) as its serdes
    see it: with the application id, as Kafka's ``decoratePseudoTopic`` (FINDINGS F19)."""
    return f"{context.applicationId()}-{topic}"


class SubscriptionWrapperSerde(Serde):
    """Kafka ``SubscriptionWrapperSerde``:
    ``{1 bit hash is null}{7 bits version}{instruction}{16 bytes hash, if any}{primary key}{int32 partition}``
    (version 0 has no partition). The primary key goes through ``primaryKeySerde`` (the left
    table's key serde, else ``default.key.serde``) with the pseudo topic ``<subscription topic>-pk``.

    Raises
    ------
    StreamsException
        When deserializing a version newer than 1 or an unknown instruction.
    """

    name = "SubscriptionWrapper"

    def __init__(self, primaryKeySerde: Serde | None, pseudoTopic: str, applicationId: str | None = None) -> None:
        self.primaryKeySerde, self.pseudoTopic, self.applicationId = primaryKeySerde, pseudoTopic, applicationId
        self._topic = pseudoTopic if applicationId is None else f"{applicationId}-{pseudoTopic}"

    def withDefaults(self, defaultKey: Serde, defaultValue: Serde) -> "SubscriptionWrapperSerde":
        return self if self.primaryKeySerde is not None else SubscriptionWrapperSerde(
            defaultKey, self.pseudoTopic, self.applicationId)

    def withApplicationId(self, applicationId: str) -> "SubscriptionWrapperSerde":
        """This serde for a task of ``applicationId``: the pseudo topic is decorated as Kafka's
        ``InternalTopologyBuilder.decoratePseudoTopic`` does at run time."""
        return SubscriptionWrapperSerde(self.primaryKeySerde, self.pseudoTopic, applicationId)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SubscriptionWrapperSerde) and other.primaryKeySerde == self.primaryKeySerde
                and other._topic == self._topic)

    def __hash__(self) -> int:
        return hash((SubscriptionWrapperSerde, self.primaryKeySerde, self._topic))

    def serialize(self, topic, data: SubscriptionWrapper) -> bytes:
        pk = self.primaryKeySerde.serialize(self._topic, data.primaryKey)
        version = data.version
        head = bytes([version if data.hash is not None else version | 0x80, int(data.instruction)])
        body = head + (b"" if data.hash is None else _hashBytes(data.hash)) + pk
        return body if version == 0 else body + struct.pack(">i", data.primaryPartition)

    def deserialize(self, topic, data: bytes | None) -> SubscriptionWrapper | None:
        if data is None:
            return None
        data = bytes(data)
        version, hashIsNull = data[0] & 0x7F, bool(data[0] & 0x80)
        if data[1] > 3:
            raise ValueError(f"Unknown instruction byte value = {data[1]}")
        pos, h = 2, None
        if not hashIsNull:
            h, pos = struct.unpack_from(">qq", data, 2), 18
        end = len(data) - 4 if version > 0 else len(data)
        pk = self.primaryKeySerde.deserialize(self._topic, data[pos:end])
        partition = struct.unpack_from(">i", data, end)[0] if version > 0 else None
        if version > 1:
            raise StreamsException(f"SubscriptionWrapper does not support version {version}")
        return SubscriptionWrapper(h, Instruction(data[1]), pk, partition, version)


class SubscriptionResponseWrapperSerde(Serde):
    """Kafka ``SubscriptionResponseWrapperSerde``:
    ``{1 bit hash is null}{7 bits version}{16 bytes hash, if any}{right value's bytes}``. As in
    Kafka, a right value that serializes to no bytes (an empty string) is read back as null."""

    name = "SubscriptionResponseWrapper"

    def __init__(self, foreignValueSerde: Serde | None) -> None:
        self.foreignValueSerde = foreignValueSerde

    def withDefaults(self, defaultKey: Serde, defaultValue: Serde) -> "SubscriptionResponseWrapperSerde":
        return self if self.foreignValueSerde is not None else SubscriptionResponseWrapperSerde(defaultValue)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SubscriptionResponseWrapperSerde) and other.foreignValueSerde == self.foreignValueSerde

    def __hash__(self) -> int:
        return hash((SubscriptionResponseWrapperSerde, self.foreignValueSerde))

    def serialize(self, topic, data: SubscriptionResponseWrapper) -> bytes:
        value = b"" if data.foreignValue is None else self.foreignValueSerde.serialize(topic, data.foreignValue) or b""
        if data.originalValueHash is None:
            return bytes([data.version | 0x80]) + value
        return bytes([data.version]) + _hashBytes(data.originalValueHash) + value

    def deserialize(self, topic, data: bytes | None) -> SubscriptionResponseWrapper | None:
        if data is None:
            return None
        data = bytes(data)
        version, pos, h = data[0] & 0x7F, 1, None
        if not data[0] & 0x80:
            h, pos = struct.unpack_from(">qq", data, 1), 17
        value = self.foreignValueSerde.deserialize(topic, data[pos:]) if len(data) > pos else None
        return SubscriptionResponseWrapper(h, value, None, version)


class CombinedKeySchema:
    """Kafka ``CombinedKeySchema``: a subscription's store key ``{int32 len(fk)}{fk}{pk}`` and the
    prefix ``{int32 len(fk)}{fk}`` a right update scans for. Serdes unset fall back to
    ``default.key.serde`` at ``init``."""

    def __init__(self, foreignKeySerde: Serde | None, fkTopic: str, primaryKeySerde: Serde | None, pkTopic: str) -> None:
        self.foreignKeySerde, self.fkTopic = foreignKeySerde, fkTopic
        self.primaryKeySerde, self.pkTopic = primaryKeySerde, pkTopic

    def init(self, context) -> "CombinedKeySchema":
        default = context.keySerde()
        return CombinedKeySchema(self.foreignKeySerde or default, pseudoTopic(context, self.fkTopic),
                                 self.primaryKeySerde or default, pseudoTopic(context, self.pkTopic))

    def prefixBytes(self, foreignKey) -> bytes:
        fk = self.foreignKeySerde.serialize(self.fkTopic, foreignKey)
        return struct.pack(">i", len(fk)) + fk

    def toBytes(self, foreignKey, primaryKey) -> bytes:
        return self.prefixBytes(foreignKey) + self.primaryKeySerde.serialize(self.pkTopic, primaryKey)

    def fromBytes(self, data: bytes) -> CombinedKey:
        (n,) = struct.unpack_from(">i", data)
        return CombinedKey(self.foreignKeySerde.deserialize(self.fkTopic, data[4:4 + n]),
                           self.primaryKeySerde.deserialize(self.pkTopic, data[4 + n:]))


class SubscriptionStoreBuilder(StoreBuilder):
    """Kafka ``SubscriptionStoreFactory``: the subscription store, a timestamped key-value store of
    ``CombinedKey`` bytes -> ``SubscriptionWrapper``, never cached."""

    def __init__(self, name: str, wrapperSerde: SubscriptionWrapperSerde) -> None:
        super().__init__(KeyValueBytesStoreSupplier(name, persistent=True, timestamped=True), Serdes.ByteArray(),
                         wrapperSerde)

    def build(self, defaultKeySerde: Serde | None = None, defaultValueSerde: Serde | None = None):
        serde = self._valueSerde.withDefaults(defaultKeySerde or Serdes.String(), defaultValueSerde)
        return TimestampedKeyValueStore(self.name(), Serdes.ByteArray(), serde, True)


# ---------------------------------------------------------------------------- processors
def _partitionOf(context) -> int:
    meta = context.recordMetadata()
    if meta is None:  # Kafka: context().recordMetadata().get() throws outside record processing
        raise StreamsException("A foreign-key join's subscription needs the partition of the record being processed; "
                               "there is none (a punctuation forwarded into the join)")
    return meta[1]


def _droppedOutOfOrder(context) -> None:
    log.info("Skipping out-of-order record from versioned table while performing table-table join.")
    context.metrics().recordDropped(context.taskId(), context.currentNode.name, "out-of-order versioned record")


class SubscriptionSendSupplier:
    """Kafka ``SubscriptionSendProcessorSupplier`` (left side): turns a left ``Change`` into
    subscriptions keyed by the foreign key. Inner join: a new value subscribes to its foreign key
    (``PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE`` for an insert or an unchanged foreign key,
    ``PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE`` after a foreign-key change, whose old subscription
    is deleted first without an answer); a delete, or a new value whose foreign key is null
    (dropped and counted), deletes the old subscription with ``DELETE_KEY_AND_PROPAGATE``. Left
    join: every update subscribes with ``PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE`` (a null foreign key
    included), after deleting a changed one. Foreign keys are compared by their bytes.
    With ``useVersionedSemantics`` (a versioned left table) out-of-order updates are dropped."""

    def __init__(self, extractor, foreignKeySerde, valueSerde, leftJoin: bool, fkTopic: str, vhTopic: str) -> None:
        self.extractor, self.foreignKeySerde, self.valueSerde = extractor, foreignKeySerde, valueSerde
        self.leftJoin, self.fkTopic, self.vhTopic = leftJoin, fkTopic, vhTopic
        self.useVersionedSemantics = False

    def __call__(self):
        return SubscriptionSendProcessor(self)


class SubscriptionSendProcessor(ContextualProcessor):
    def __init__(self, s: SubscriptionSendSupplier) -> None:
        self.s = s

    def init(self, context) -> None:
        super().init(context)
        self.fkSerde = self.s.foreignKeySerde or context.keySerde()
        self.valueSerde = self.s.valueSerde or context.valueSerde()
        self.fkTopic, self.vhTopic = pseudoTopic(context, self.s.fkTopic), pseudoTopic(context, self.s.vhTopic)

    def process(self, record: Record) -> None:
        s, change = self.s, record.value()
        if s.useVersionedSemantics and not change.isLatest:
            _droppedOutOfOrder(self.context())
            return
        key, oldValue, newValue = record.key(), change.oldValue, change.newValue
        h = None if newValue is None else murmur3Hash128(self.valueSerde.serialize(self.vhTopic, newValue))
        oldFk = None if oldValue is None else s.extractor(key, oldValue)
        if s.leftJoin:
            if oldValue is None and newValue is None:
                return  # no output for idempotent left hand side deletes
            newFk = None if newValue is None else s.extractor(key, newValue)
            if oldFk is not None and self._changed(newFk, oldFk):
                self._send(record, oldFk, h, Instruction.DELETE_KEY_NO_PROPAGATE)
            self._send(record, newFk, h, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            return
        if newValue is not None:
            newFk = s.extractor(key, newValue)
            if newFk is None:
                dropped(self.context(), "null foreign key", "Skipping record due to null foreign key.")
                if oldFk is not None:
                    self._send(record, oldFk, h, Instruction.DELETE_KEY_AND_PROPAGATE)
            elif oldFk is None:
                self._send(record, newFk, h, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
            elif self._changed(newFk, oldFk):
                self._send(record, oldFk, h, Instruction.DELETE_KEY_NO_PROPAGATE)
                self._send(record, newFk, h, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            else:
                self._send(record, newFk, h, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
        elif oldFk is not None:
            self._send(record, oldFk, h, Instruction.DELETE_KEY_AND_PROPAGATE)

    def _changed(self, newFk, oldFk) -> bool:
        serialize, topic = self.fkSerde.serialize, self.fkTopic
        return serialize(topic, newFk) != serialize(topic, oldFk)

    def _send(self, record: Record, foreignKey, h, instruction: Instruction) -> None:
        wrapper = SubscriptionWrapper(h, instruction, record.key(), _partitionOf(self.context()))
        self.context().forward(record.withKey(foreignKey).withValue(wrapper))


class SubscriptionReceiveSupplier:
    """Kafka ``SubscriptionReceiveProcessorSupplier`` (right side): keeps (a delete instruction:
    removes) each subscription in the subscription store and forwards ``Change(new, old)`` of it
    under its ``CombinedKey``. A subscription with a null foreign key is dropped and counted unless
    it asks for an answer anyway (a left join's delete)."""

    def __init__(self, storeName: str, keySchema: CombinedKeySchema) -> None:
        self.storeName, self.keySchema = storeName, keySchema

    def __call__(self):
        return SubscriptionReceiveProcessor(self)


class SubscriptionReceiveProcessor(ContextualProcessor):
    def __init__(self, s: SubscriptionReceiveSupplier) -> None:
        self.s = s

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.s.storeName)
        self.schema = self.s.keySchema.init(context)

    def process(self, record: Record) -> None:
        fk, wrapper = record.key(), record.value()
        if fk is None and wrapper.instruction != Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            dropped(self.context(), "null foreign key", "Skipping record due to null foreign key.")
            return
        if wrapper.version > 1:
            raise StreamsException("SubscriptionWrapper is of an incompatible version.")
        new = ValueAndTimestamp(wrapper, record.timestamp())
        if fk is None:
            change = Change(new, None)
        else:
            keyBytes = self.schema.toBytes(fk, wrapper.primaryKey)
            old = self.store.get(keyBytes)
            if wrapper.instruction in (Instruction.DELETE_KEY_AND_PROPAGATE, Instruction.DELETE_KEY_NO_PROPAGATE):
                self.store.delete(keyBytes)
            else:
                self.store.put(keyBytes, new)
            change = Change(new, old)
        self.context().forward(record.withKey(CombinedKey(fk, wrapper.primaryKey)).withValue(change))


class SubscriptionJoinSupplier:
    """Kafka ``SubscriptionJoinProcessorSupplier``: answers a subscription with the right table's
    value for its foreign key, keyed by the primary key; timestamp = max(subscription, right
    value) (the subscription's when there is no right value)."""

    def __init__(self, foreignView) -> None:
        self.foreignView = foreignView

    def __call__(self):
        return SubscriptionJoinProcessor(self.foreignView.get())


class SubscriptionJoinProcessor(ContextualProcessor):
    def __init__(self, getter) -> None:
        self.getter = getter

    def init(self, context) -> None:
        super().init(context)
        self.getter.init(context)

    def process(self, record: Record) -> None:
        combined, vt = record.key(), record.value().newValue
        wrapper = vt.value
        if wrapper.version > 1:
            raise StreamsException("SubscriptionWrapper is of an incompatible version.")
        foreign = None if combined.foreignKey is None else self.getter.get(combined.foreignKey)
        ts = vt.timestamp if foreign is None else max(vt.timestamp, foreign.timestamp)
        instruction = wrapper.instruction
        if instruction == Instruction.DELETE_KEY_NO_PROPAGATE:
            return
        if instruction == Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE and foreign is None:
            return
        value = None if instruction == Instruction.DELETE_KEY_AND_PROPAGATE or foreign is None else foreign.value
        response = SubscriptionResponseWrapper(wrapper.hash, value, wrapper.primaryPartition)
        self.context().forward(record.withKey(combined.primaryKey).withValue(response).withTimestamp(ts))


class ForeignTableJoinSupplier:
    """Kafka ``ForeignTableJoinProcessorSupplier`` (right side): a right update answers every
    subscription to its key (a prefix scan of the subscription store, in ``CombinedKey`` byte
    order) with the new right value, at the update's timestamp. Null keys are dropped and counted;
    with ``useVersionedSemantics`` (a versioned right table) so are out-of-order updates."""

    def __init__(self, storeName: str, keySchema: CombinedKeySchema) -> None:
        self.storeName, self.keySchema = storeName, keySchema
        self.useVersionedSemantics = False

    def __call__(self):
        return ForeignTableJoinProcessor(self)


class ForeignTableJoinProcessor(ContextualProcessor):
    def __init__(self, s: ForeignTableJoinSupplier) -> None:
        self.s = s

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.s.storeName)
        self.schema = self.s.keySchema.init(context)

    def process(self, record: Record) -> None:
        key, change = record.key(), record.value()
        if key is None:
            dropped(self.context(), "null key", "Skipping record due to null key.")
            return
        if self.s.useVersionedSemantics and not change.isLatest:
            _droppedOutOfOrder(self.context())
            return
        forward, schema = self.context().forward, self.schema
        for kv in self.store.prefixScanBytes(schema.prefixBytes(key)):
            wrapper = kv.value.value
            response = SubscriptionResponseWrapper(wrapper.hash, change.newValue, wrapper.primaryPartition)
            forward(record.withKey(schema.fromBytes(kv.key).primaryKey).withValue(response))


class ResponseJoinSupplier:
    """Kafka ``ResponseJoinProcessorSupplier`` (left side): a response counts only if its hash is
    the hash of the left value held now (else it answers an older left value: dropped and counted,
    "hash mismatch"); then a missing right value gives a tombstone (inner join, or no left value),
    else ``joiner(leftValue, rightValue)`` with the response's timestamp."""

    def __init__(self, leftView, valueSerde, joiner, leftJoin: bool, vhTopic: str) -> None:
        self.leftView, self.valueSerde, self.joiner, self.leftJoin, self.vhTopic = (
            leftView, valueSerde, joiner, leftJoin, vhTopic)

    def __call__(self):
        return ResponseJoinProcessor(self, self.leftView.get())


class ResponseJoinProcessor(ContextualProcessor):
    def __init__(self, s: ResponseJoinSupplier, getter) -> None:
        self.s, self.getter = s, getter

    def init(self, context) -> None:
        super().init(context)
        self.getter.init(context)
        self.valueSerde = self.s.valueSerde or context.valueSerde()
        self.vhTopic = pseudoTopic(context, self.s.vhTopic)

    def process(self, record: Record) -> None:
        response = record.value()
        if response.version != 0:
            raise StreamsException("SubscriptionResponseWrapper is of an incompatible version.")
        current = self.getter.get(record.key())
        currentHash = None if current is None else murmur3Hash128(self.valueSerde.serialize(self.vhTopic, current.value))
        if response.originalValueHash != currentHash:
            log.debug("Dropping FK-join response due to hash mismatch. Expected %s. Actual %s",
                      response.originalValueHash, currentHash)
            context = self.context()
            context.metrics().recordDropped(context.taskId(), context.currentNode.name, "hash mismatch")
            return
        if response.foreignValue is None and (not self.s.leftJoin or current is None):
            result = None
        else:
            result = self.s.joiner(None if current is None else current.value, response.foreignValue)
        self.context().forward(record.withValue(result))


def fkPartitioner(partitioner):
    """A ``TableJoined`` partitioner (``StreamPartitioner<K, Void>``) as the sink calls it: asked
    with a null value; Kafka 4's multicast form must answer one partition ("The partitions returned
    by StreamPartitioner#partitions method when used for FK join should be a singleton set")."""

    def partition(topic, key, value, numPartitions):
        result = partitioner(topic, key, None, numPartitions)
        if result is None or isinstance(result, int):
            return result
        result = list(result)
        if len(result) != 1:
            raise ValueError("The partitions returned by StreamPartitioner#partitions method when used for FK join "
                             "should be a singleton set")
        return result[0]

    return partition


def responsePartition(topic, key, value: SubscriptionResponseWrapper, numPartitions):
    """The response topic's default partitioner: back to the partition of the left record that
    subscribed (Kafka ``defaultForeignResponseSinkPartitioner``)."""
    return value.primaryPartition
