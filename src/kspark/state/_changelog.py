"""Kafka Streams' changelog records and changelog topic configs, byte for byte (Kafka Streams 4.3).

Every logged store writes its changes to the topic ``<application.id>-<storeName>-changelog``
(``ProcessorStateManager.storeChangelogTopic``; semantics rule E-4), one partition per task. This
module builds and parses those records for every store kind kspark has, so that Kafka tools and
Java Kafka Streams applications can read, and restore from, kspark's changelogs, and kspark can
restore from Java's. It holds pure functions over bytes: stores pass serialized keys and values.

All integers are big-endian (Java ``ByteBuffer``/``DataOutputStream``); ``long`` is 8 bytes, ``int``
4, signed. Verified against Kafka Streams 4.3.1's ``TopologyTestDriver`` by
``tests/unit/test_changelog_layouts.py`` (the Java side: ``tests/unit/java/changelog``).

Per store kind (``kind`` of ``changelogTopicConfig``), what one change is logged as:

====================== ========================= ============================ ======================== ==========
kind                   key                        value                        record timestamp         headers
====================== ========================= ============================ ======================== ==========
keyValue               key                        value                        context's (1)            none (2)
timestampedKeyValue    key                        value *without* timestamp    the value's timestamp;   none (2)
                                                                               a delete: context's (1)
window                 [key][start][seqnum]       value                        context's (1)            none (2)
timestampedWindow      [key][start][seqnum]       value *without* timestamp    the value's; delete:     none (2)
                                                                               context's (1)
session                [key][end][start]          value                        context's (1)            none (2)
versioned              key                        value                        the version's validFrom  none (2)
streamJoinWindow       [key][ts][seqnum >= 1]     value                        context's (1)            none (2)
outerJoin              [ts][side][key]            the key's whole list         context's (1)            none (2)
suppressionBuffer      key                        BufferValue v3 + bufferTime  none (3)                 v=0x03 (4)
streamTableJoinBuffer  [0x00][ts][key][seqnum]    BufferValue + 8 zero bytes   none (3)                 none
subscription           [len fk][fk][pk]           SubscriptionWrapper          as timestampedKeyValue   none (2)
====================== ========================= ============================ ======================== ==========

(1) ``ProcessorContext.timestamp()``: the timestamp of the record being processed (a punctuation's
time during a punctuation), ``ChangeLogging*BytesStore`` → ``ProcessorContextImpl.logChange``.
(2) With the internal config ``internal.iq.consistency.offset.vector.enabled=true`` every record
of ``logChange`` carries ``[("v", b"\\x00"), ("c", encodePosition(position))]`` instead
(``positionHeaders``). (3) The buffers send with a null timestamp: the producer stamps the record
with its wall clock at send time (``TopologyTestDriver`` shows null). (4) Tombstones have no
headers.

Timestamped stores (every DSL ``KTable`` and aggregation store, the FK-join subscription store)
keep ``ValueAndTimestamp`` bytes (``encodeValueAndTimestamp``) in the store, but their changelog
holds the plain value with the timestamp as the *record* timestamp; restoring prefixes the record
timestamp again (``RecordConverters.rawValueToTimestampedValue``: ``restoreValueAndTimestamp``).
"""

from __future__ import annotations

import struct
from typing import Any, Iterable, Mapping, NamedTuple

__all__ = [
    "CHANGELOG_SUFFIX", "ChangelogRecord", "RecordContext", "STORE_KINDS", "SUPPRESSION_BUFFER_HEADERS",
    "changelogTopic", "changelogTopicConfig", "decodeBufferValue", "decodeCombinedKey", "decodeLeftOrRightValue",
    "decodeListValue", "decodePosition", "decodeRecordContext", "decodeSessionKey", "decodeStreamTableJoinBufferRecord",
    "decodeSubscriptionRecord", "decodeSuppressionBufferRecord", "decodeTimeFirstWindowKey",
    "decodeTimestampedKeyAndJoinSide", "decodeValueAndTimestamp", "decodeWindowKey", "encodeBufferValue",
    "encodeCombinedKey", "encodeLeftOrRightValue", "encodeListValue", "encodePosition", "encodeRecordContext",
    "encodeSessionKey", "encodeTimeFirstWindowKey", "encodeTimestampedKeyAndJoinSide", "encodeValueAndTimestamp",
    "encodeWindowKey", "keyValueRecord", "nextSeqnum", "outerJoinRecord", "positionHeaders", "restoreValueAndTimestamp",
    "sessionRecord", "streamTableJoinBufferRecord", "streamTableJoinBufferTombstone", "subscriptionRecord",
    "suppressionBufferRecord", "suppressionBufferTombstone", "timestampedKeyValueRecord", "timestampedWindowRecord",
    "topicPrefixConfigs", "versionedRecord", "windowRecord",
]

CHANGELOG_SUFFIX = "-changelog"
_LONG, _INT = struct.Struct(">q"), struct.Struct(">i")
_LONG_MAX = (1 << 63) - 1
_SEQNUM_MASK = 0x7FFFFFFF
_NULL = -1  # BufferValue.NULL_VALUE_SENTINEL, ListSerde.NULL_ENTRY_VALUE, a null header value
_OLD_IS_PRIOR = -2  # BufferValue.OLD_PREV_DUPLICATE_VALUE_SENTINEL

Headers = tuple[tuple[str, bytes | None], ...]


class ChangelogRecord(NamedTuple):
    """One record of a changelog topic: ``value`` None is a tombstone; ``timestamp`` None means
    Kafka gives none (the producer stamps it with its wall clock at send time)."""

    key: bytes
    value: bytes | None
    timestamp: int | None
    headers: Headers = ()


class RecordContext(NamedTuple):
    """Kafka ``ProcessorRecordContext``: the record a buffered change came from."""

    timestamp: int
    offset: int
    topic: str
    partition: int
    headers: Headers = ()


def changelogTopic(applicationId: str, storeName: str) -> str:
    """``<application.id>-<storeName>-changelog`` (Kafka ``ProcessorStateManager.storeChangelogTopic``
    for an unnamed topology; rule E-4)."""
    return f"{applicationId}-{storeName}{CHANGELOG_SUFFIX}"


# ---------------------------------------------------------------------------- timestamped values
def encodeValueAndTimestamp(value: bytes | None, timestamp: int) -> bytes | None:
    """Kafka ``ValueAndTimestampSerializer.serialize``: ``[timestamp: long][value bytes]`` (8 + n
    bytes); None for a null value. The *store* format of timestamped stores; their changelog holds
    the plain value (``timestampedKeyValueRecord``)."""
    return None if value is None else _LONG.pack(timestamp) + value


def decodeValueAndTimestamp(data: bytes | None) -> tuple[bytes, int] | None:
    """Kafka ``ValueAndTimestampDeserializer``: ``(value bytes, timestamp)`` of
    ``encodeValueAndTimestamp``'s bytes; None for None."""
    if data is None:
        return None
    return bytes(data[8:]), _LONG.unpack_from(data)[0]


def restoreValueAndTimestamp(record: ChangelogRecord) -> bytes | None:
    """What a timestamped store restores a changelog record as (Kafka
    ``RecordConverters.rawValueToTimestampedValue``): ``[record timestamp: long][value]``, None
    for a tombstone."""
    if record.value is None:
        return None
    if record.timestamp is None:
        raise ValueError("a timestamped store's changelog record needs a timestamp")
    return encodeValueAndTimestamp(record.value, record.timestamp)


# ---------------------------------------------------------------------------- key-value stores
def keyValueRecord(key: bytes, value: bytes | None, contextTimestamp: int) -> ChangelogRecord:
    """A key-value store's put (delete: ``value`` None): Kafka ``ChangeLoggingKeyValueBytesStore``
    logs the key and value bytes as they are, with the processor context's timestamp. Also the
    change of ``Stores.lruMap`` (an eviction logs a tombstone)."""
    return ChangelogRecord(key, value, contextTimestamp)


def timestampedKeyValueRecord(key: bytes, value: bytes | None, timestamp: int | None,
                              contextTimestamp: int) -> ChangelogRecord:
    """A timestamped key-value store's put of ``ValueAndTimestamp(value, timestamp)`` (delete:
    ``value`` None): Kafka ``ChangeLoggingTimestampedKeyValueBytesStore.put`` logs
    ``rawValue(valueAndTimestamp)``, the value bytes *without* the timestamp, with record
    timestamp ``timestamp``; a delete is a tombstone with the context's timestamp. Restore with
    ``restoreValueAndTimestamp``."""
    if value is None:
        return ChangelogRecord(key, None, contextTimestamp)
    return ChangelogRecord(key, value, timestamp)


def versionedRecord(key: bytes, value: bytes | None, validFrom: int) -> ChangelogRecord:
    """A versioned store's ``put(key, value, validFrom)`` or ``delete(key, validFrom)`` (``value``
    None): Kafka ``ChangeLoggingVersionedKeyValueBytesStore`` logs the plain value (a tombstone
    for a delete) with record timestamp = the version's ``validFrom``, which restore reads back
    (``RocksDBVersionedStore.restoreBatch`` puts at ``record.timestamp()``). Logged even when the
    store drops the put as older than its history retention."""
    return ChangelogRecord(key, value, validFrom)


# ---------------------------------------------------------------------------- window stores
def encodeWindowKey(key: bytes, windowStart: int, seqnum: int) -> bytes:
    """Kafka ``WindowKeySchema.toStoreKeyBinary(key, windowStart, seqnum)``:
    ``[key bytes][windowStart: long][seqnum: int]`` (n + 12 bytes)."""
    return key + _LONG.pack(windowStart) + _INT.pack(seqnum)


def decodeWindowKey(data: bytes) -> tuple[bytes, int, int]:
    """``(key bytes, windowStart, seqnum)`` of ``encodeWindowKey``'s bytes (Kafka
    ``WindowKeySchema.extractStoreKeyBytes/extractStoreTimestamp/extractStoreSequence``)."""
    if len(data) < 12:
        raise ValueError(f"a window store key has at least 12 bytes, got {len(data)}")
    return bytes(data[:-12]), _LONG.unpack_from(data, len(data) - 12)[0], _INT.unpack_from(data, len(data) - 4)[0]


def nextSeqnum(seqnum: int, retainDuplicates: bool) -> int:
    """The sequence number of a window store's next logged put, given the last one (0 before the
    first), as Kafka ``ChangeLoggingWindowBytesStore.maybeUpdateSeqnumForDups``: always 0 for a
    store without duplicates (every DSL windowed aggregation store); for ``retainDuplicates``
    stores (stream-stream join stores, ``Stores.*WindowStore(..., true)``) a per-store-instance
    counter incremented before every put, null puts included, ``(seqnum + 1) & 0x7FFFFFFF``: 1, 2,
    ... It is not persisted: after a restart it counts from 1 again."""
    return (seqnum + 1) & _SEQNUM_MASK if retainDuplicates else seqnum


def windowRecord(key: bytes, windowStart: int, seqnum: int, value: bytes | None,
                 contextTimestamp: int) -> ChangelogRecord:
    """A (plain) window store's ``put(key, value, windowStart)``, ``value`` None a delete: Kafka
    ``ChangeLoggingWindowBytesStore`` logs key ``encodeWindowKey(key, windowStart, seqnum)`` and the
    value bytes, with the context's timestamp. ``seqnum`` from ``nextSeqnum``. Also each put into
    a stream-stream join's window stores (``KSTREAM-JOINTHIS/JOINOTHER/OUTERTHIS/OUTEROTHER-<n>-store``)."""
    return ChangelogRecord(encodeWindowKey(key, windowStart, seqnum), value, contextTimestamp)


def timestampedWindowRecord(key: bytes, windowStart: int, seqnum: int, value: bytes | None, timestamp: int | None,
                            contextTimestamp: int) -> ChangelogRecord:
    """A timestamped window store's put of ``ValueAndTimestamp(value, timestamp)`` (time, sliding
    and emit-final windowed aggregations): Kafka ``ChangeLoggingTimestampedWindowBytesStore``
    logs key ``encodeWindowKey(key, windowStart, seqnum)`` (also for the time-ordered emit-final
    store) and the value *without* timestamp, record timestamp ``timestamp``; a delete is a
    tombstone with the context's timestamp. Restore with ``restoreValueAndTimestamp``."""
    if value is None:
        return ChangelogRecord(encodeWindowKey(key, windowStart, seqnum), None, contextTimestamp)
    return ChangelogRecord(encodeWindowKey(key, windowStart, seqnum), value, timestamp)


# ---------------------------------------------------------------------------- session stores
def encodeSessionKey(key: bytes, start: int, end: int) -> bytes:
    """Kafka ``SessionKeySchema.toBinary(key, start, end)``: ``[key bytes][end: long][start: long]``
    (n + 16 bytes; end first). Also the key of the time-ordered (emit-final) session store's changelog."""
    return key + _LONG.pack(end) + _LONG.pack(start)


def decodeSessionKey(data: bytes) -> tuple[bytes, int, int]:
    """``(key bytes, start, end)`` of ``encodeSessionKey``'s bytes (Kafka ``SessionKeySchema.from``)."""
    if len(data) < 16:
        raise ValueError(f"a session store key has at least 16 bytes, got {len(data)}")
    n = len(data)
    return bytes(data[:-16]), _LONG.unpack_from(data, n - 8)[0], _LONG.unpack_from(data, n - 16)[0]


def sessionRecord(key: bytes, start: int, end: int, value: bytes | None, contextTimestamp: int) -> ChangelogRecord:
    """A session store's ``put(Windowed(key, [start, end]), value)`` or ``remove`` (``value`` None):
    Kafka ``ChangeLoggingSessionBytesStore`` logs ``encodeSessionKey`` and the value bytes (session
    stores are not timestamped) with the context's timestamp."""
    return ChangelogRecord(encodeSessionKey(key, start, end), value, contextTimestamp)


# ---------------------------------------------------------------------------- outer stream-stream join store
def encodeTimestampedKeyAndJoinSide(key: bytes, timestamp: int, leftSide: bool) -> bytes:
    """Kafka ``TimestampedKeyAndJoinSideSerializer``: ``[timestamp: long][side: 1 byte, 1 left, 0
    right][key bytes]`` (9 + n bytes)."""
    return _LONG.pack(timestamp) + (b"\x01" if leftSide else b"\x00") + key


def decodeTimestampedKeyAndJoinSide(data: bytes) -> tuple[bytes, int, bool]:
    """``(key bytes, timestamp, leftSide)`` of ``encodeTimestampedKeyAndJoinSide``'s bytes."""
    return bytes(data[9:]), _LONG.unpack_from(data)[0], data[8] == 1


def encodeLeftOrRightValue(value: bytes, leftSide: bool) -> bytes:
    """Kafka ``LeftOrRightValueSerializer``: ``[side: 1 byte, 1 left, 0 right][value bytes]``."""
    return (b"\x01" if leftSide else b"\x00") + value


def decodeLeftOrRightValue(data: bytes) -> tuple[bytes, bool]:
    """``(value bytes, leftSide)`` of ``encodeLeftOrRightValue``'s bytes."""
    return bytes(data[1:]), data[0] == 1


def encodeListValue(items: Iterable[bytes | None]) -> bytes:
    """Kafka ``Serdes.ListSerde(ArrayList.class, Serdes.ByteArray())`` (``ListValueStore``'s value):
    ``[strategy: 1 byte, 1 = VARIABLE_SIZE][count: int]`` then per item ``[length: int][bytes]``
    (length -1 and no bytes for a null item)."""
    items = list(items)
    out = [b"\x01", _INT.pack(len(items))]
    for item in items:
        out.append(_INT.pack(_NULL) if item is None else _INT.pack(len(item)) + item)
    return b"".join(out)


def decodeListValue(data: bytes) -> list[bytes | None]:
    """The items of ``encodeListValue``'s bytes (Kafka ``ListDeserializer``, variable-size items).

    Raises
    ------
    ValueError
        For the constant-size strategy (flag 0: fixed-size inner serdes, never a store's list).
    """
    if data[0] != 1:
        raise ValueError(f"only the variable-size list layout (flag 1) is a ListValueStore's, got flag {data[0]}")
    (count,), pos, items = _INT.unpack_from(data, 1), 5, []
    for _ in range(count):
        (n,), pos = _INT.unpack_from(data, pos), pos + 4
        if n == _NULL:
            items.append(None)
            continue
        if pos + n > len(data):
            raise ValueError("End of the stream was reached prematurely")
        items.append(bytes(data[pos:pos + n]))
        pos += n
    return items


def outerJoinRecord(key: bytes, timestamp: int, leftSide: bool, values: list[bytes] | None,
                    contextTimestamp: int) -> ChangelogRecord:
    """A change of the outer join store (``KSTREAM-OUTERSHARED-<n>-store``, Kafka ``ListValueStore``
    of ``TimestampedKeyAndJoinSide`` → ``LeftOrRightValue``): ``values`` are the serialized values
    now listed under (key, timestamp, side), in put order; None when the list is removed (the
    join emitted or matched it). Kafka ``ChangeLoggingListValueBytesStore.put`` logs the *whole*
    list after each append (``encodeListValue`` of ``encodeLeftOrRightValue`` items), a tombstone
    on removal, with the context's timestamp."""
    k = encodeTimestampedKeyAndJoinSide(key, timestamp, leftSide)
    if values is None:
        return ChangelogRecord(k, None, contextTimestamp)
    return ChangelogRecord(k, encodeListValue(encodeLeftOrRightValue(v, leftSide) for v in values), contextTimestamp)


# ---------------------------------------------------------------------------- buffers: record context, BufferValue
def _sizedBytes(b: bytes | None) -> bytes:
    return _INT.pack(_NULL) if b is None else _INT.pack(len(b)) + b


def _readSized(data: bytes, pos: int) -> tuple[bytes | None, int]:
    (n,), pos = _INT.unpack_from(data, pos), pos + 4
    if n == _NULL:
        return None, pos
    if n < 0 or pos + n > len(data):
        raise ValueError(f"bad length {n} at byte {pos - 4}")
    return bytes(data[pos:pos + n]), pos + n


def encodeRecordContext(context: RecordContext) -> bytes:
    """Kafka ``ProcessorRecordContext.serialize``: ``[timestamp: long][offset: long][topic length:
    int][topic UTF-8][partition: int][header count: int]`` then per header ``[key length: int][key
    UTF-8][value length: int, -1 for null][value]``.

    Raises
    ------
    ValueError
        If the topic is None (a record forwarded by a punctuator; Kafka: NullPointerException).
    """
    if context.topic is None:
        raise ValueError("a buffered record's context needs a topic (Kafka: NullPointerException)")
    topic = context.topic.encode()
    out = [_LONG.pack(context.timestamp), _LONG.pack(context.offset), _INT.pack(len(topic)), topic,
           _INT.pack(context.partition), _INT.pack(len(context.headers))]
    for name, value in context.headers:
        out.append(_sizedBytes(name.encode()))
        out.append(_sizedBytes(value))
    return b"".join(out)


def decodeRecordContext(data: bytes, pos: int = 0) -> tuple[RecordContext, int]:
    """``(RecordContext, position after it)`` of ``encodeRecordContext``'s bytes at ``pos`` (Kafka
    ``ProcessorRecordContext.deserialize``; a header count of -1 reads as no headers)."""
    timestamp, offset = struct.unpack_from(">qq", data, pos)
    topic, pos = _readSized(data, pos + 16)
    partition, count = struct.unpack_from(">ii", data, pos)
    pos += 8
    headers = []
    for _ in range(max(count, 0)):
        name, pos = _readSized(data, pos)
        value, pos = _readSized(data, pos)
        headers.append((name.decode(), value))
    return RecordContext(timestamp, offset, topic.decode(), partition, tuple(headers)), pos


def encodeBufferValue(context: RecordContext, priorValue: bytes | None, oldValue: bytes | None,
                      newValue: bytes | None) -> bytes:
    """Kafka ``BufferValue.serialize(0)``: ``encodeRecordContext`` then ``[prior length: int][prior]``,
    ``[old length: int][old]``, ``[new length: int][new]``; a length of -1 is a null value and an
    old-value length of -2 means "the old value is the prior value" (written whenever both are
    non-null and equal: ``BufferValue``'s constructor de-duplicates them)."""
    if oldValue is None:
        old = _INT.pack(_NULL)
    elif priorValue is not None and bytes(oldValue) == bytes(priorValue):
        old = _INT.pack(_OLD_IS_PRIOR)
    else:
        old = _INT.pack(len(oldValue)) + oldValue
    return encodeRecordContext(context) + _sizedBytes(priorValue) + old + _sizedBytes(newValue)


def decodeBufferValue(data: bytes, pos: int = 0) -> tuple[RecordContext, bytes | None, bytes | None, bytes | None, int]:
    """``(context, prior, old, new, position after)`` of ``encodeBufferValue``'s bytes (Kafka
    ``BufferValue.deserialize``)."""
    context, pos = decodeRecordContext(data, pos)
    prior, pos = _readSized(data, pos)
    (n,) = _INT.unpack_from(data, pos)
    if n == _OLD_IS_PRIOR:
        old, pos = prior, pos + 4
    else:
        old, pos = _readSized(data, pos)
    new, pos = _readSized(data, pos)
    return context, prior, old, new, pos


# ---------------------------------------------------------------------------- suppression buffer
SUPPRESSION_BUFFER_HEADERS: Headers = (("v", b"\x03"),)


def suppressionBufferRecord(key: bytes, bufferTime: int, context: RecordContext, priorValue: bytes | None,
                            oldValue: bytes | None, newValue: bytes | None) -> ChangelogRecord:
    """A ``KTable.suppress`` buffer's entry for ``key`` (the suppressed table's serialized key:
    for windowed tables the windowed serde's ``[key][window start: long]``), as Kafka
    ``InMemoryTimeOrderedKeyValueChangeBuffer.logValue`` writes it at each flush (commit) for
    every key changed since the last flush (its latest state; one record per key however many
    updates): value ``encodeBufferValue(context, prior, old, new)`` + ``[bufferTime: long]``
    (changelog format version 3), header ``v`` = ``0x03``, no timestamp.

    ``priorValue`` is the old value of the key's first update since it was last emitted (what
    the buffer's ``priorValueForBuffered`` returns), ``oldValue``/``newValue`` those of its latest
    update, serialized with the table's value serde; ``bufferTime`` is the time the entry is kept
    by (``untilWindowCloses``: the window end; ``untilTimeLimit``: the first buffered update's
    record timestamp: a key's buffer time does not move while it stays buffered); ``context`` is
    the latest update's record context."""
    value = encodeBufferValue(context, priorValue, oldValue, newValue) + _LONG.pack(bufferTime)
    return ChangelogRecord(key, value, None, SUPPRESSION_BUFFER_HEADERS)


def suppressionBufferTombstone(key: bytes) -> ChangelogRecord:
    """Kafka ``InMemoryTimeOrderedKeyValueChangeBuffer.logTombstone``: the key was emitted (evicted)
    since the last flush: no value, no timestamp, no headers."""
    return ChangelogRecord(key, None, None)


def decodeSuppressionBufferRecord(record: ChangelogRecord) -> tuple[int, RecordContext, bytes | None, bytes | None, bytes | None] | None:
    """``(bufferTime, context, prior, old, new)`` of a suppression buffer changelog record, None
    for a tombstone (Kafka ``InMemoryTimeOrderedKeyValueChangeBuffer.restoreBatch``, format 3).

    Raises
    ------
    ValueError
        For a record without the ``v`` = 3 header: formats 0-2 (Kafka < 2.6, or 2.4.0-2.5.0's
        format 3 flagged 2) are not read.
    """
    if record.value is None:
        return None
    version = [v for k, v in record.headers if k == "v"]
    if not version or version[-1] != b"\x03":
        raise ValueError(f"only suppression buffer changelog format 3 is read, got header v={version[-1:] or None}")
    context, prior, old, new, pos = decodeBufferValue(record.value)
    return _LONG.unpack_from(record.value, pos)[0], context, prior, old, new


# ---------------------------------------------------------------------------- stream-table join buffer
def encodeTimeFirstWindowKey(key: bytes, timestamp: int, seqnum: int) -> bytes:
    """Kafka ``PrefixedWindowKeySchemas.TimeFirstWindowKeySchema.toStoreKeyBinary``:
    ``[prefix 0x00][timestamp: long][key bytes][seqnum: int]`` (13 + n bytes)."""
    return b"\x00" + _LONG.pack(timestamp) + key + _INT.pack(seqnum)


def decodeTimeFirstWindowKey(data: bytes) -> tuple[bytes, int, int]:
    """``(key bytes, timestamp, seqnum)`` of ``encodeTimeFirstWindowKey``'s bytes."""
    if len(data) < 13 or data[0] != 0:
        raise ValueError("not a time-first window key (prefix 0x00, at least 13 bytes)")
    return bytes(data[9:-4]), _LONG.unpack_from(data, 1)[0], _INT.unpack_from(data, len(data) - 4)[0]


def streamTableJoinBufferRecord(key: bytes, timestamp: int, seqnum: int, context: RecordContext,
                                value: bytes) -> ChangelogRecord:
    """A stream record put into a stream-table join's grace buffer (store
    ``<join processor name>-Buffer``, Kafka ``RocksDBTimeOrderedKeyValueBuffer.put``), logged at
    once: key ``encodeTimeFirstWindowKey(key, timestamp, seqnum)`` where ``seqnum`` counts the
    buffer's accepted puts from 1 (``nextSeqnum(..., True)``), value ``encodeBufferValue(context,
    None, None, value)`` + 8 zero bytes (``logValue`` appends the buffer time of a
    ``BufferKey(0L, ...)``), no timestamp, no headers. ``key``/``value`` are serialized with the
    join's ``Joined`` serdes, the application's defaults where unset (``setSerdesIfNull``).

    Note: Kafka 4.3.1's restore of this changelog (``RocksDBTimeOrderedKeyValueBytesStore.
    getWriteBatches``) parses the key as a key-first window key (``WindowKeySchema.
    extractStoreTimestamp``, ``fromNonPrefixWindowKey``), not the time-first key it writes."""
    body = encodeBufferValue(context, None, None, value) + _LONG.pack(0)
    return ChangelogRecord(encodeTimeFirstWindowKey(key, timestamp, seqnum), body, None)


def streamTableJoinBufferTombstone(key: bytes, timestamp: int, seqnum: int) -> ChangelogRecord:
    """The buffer evicted (joined) the record put as (key, timestamp, seqnum): Kafka
    ``RocksDBTimeOrderedKeyValueBuffer.logTombstone``, logged at once, no timestamp, no headers."""
    return ChangelogRecord(encodeTimeFirstWindowKey(key, timestamp, seqnum), None, None)


def decodeStreamTableJoinBufferRecord(record: ChangelogRecord) -> tuple[bytes, int, int, RecordContext | None, bytes | None]:
    """``(key bytes, timestamp, seqnum, context, value)`` of a stream-table join buffer changelog
    record; context and value None for a tombstone."""
    key, timestamp, seqnum = decodeTimeFirstWindowKey(record.key)
    if record.value is None:
        return key, timestamp, seqnum, None, None
    context, _, _, value, _ = decodeBufferValue(record.value)
    return key, timestamp, seqnum, context, value


# ---------------------------------------------------------------------------- FK-join subscription store
def encodeCombinedKey(foreignKey: bytes, primaryKey: bytes) -> bytes:
    """Kafka ``CombinedKeySchema.toBytes``: ``[foreign key length: int][foreign key][primary key]``."""
    return _INT.pack(len(foreignKey)) + foreignKey + primaryKey


def decodeCombinedKey(data: bytes) -> tuple[bytes, bytes]:
    """``(foreign key bytes, primary key bytes)`` of ``encodeCombinedKey``'s bytes."""
    (n,) = _INT.unpack_from(data)
    return bytes(data[4:4 + n]), bytes(data[4 + n:])


def subscriptionRecord(foreignKey: bytes, primaryKey: bytes, wrapper: Any, wrapperSerde: Any, timestamp: int | None,
                       contextTimestamp: int) -> ChangelogRecord:
    """A change of a foreign-key join's subscription store
    (``KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-<n>``, a timestamped key-value store of
    ``encodeCombinedKey`` → ``ValueAndTimestamp<SubscriptionWrapper>``): as
    ``timestampedKeyValueRecord``, the value is the bare ``SubscriptionWrapperSerde`` bytes
    (``{hash is null bit, version 7 bits}{instruction}{16-byte hash}{primary key}{partition: int}``)
    with the subscription's timestamp; ``wrapper`` None (a delete instruction) is a tombstone with
    the context's timestamp. ``wrapper``/``wrapperSerde``: the FK join's ``SubscriptionWrapper`` and
    ``SubscriptionWrapperSerde`` (``kspark.dsl._internals.fk_join``; state/ does not import the DSL)."""
    value = None if wrapper is None else wrapperSerde.serialize(None, wrapper)
    return timestampedKeyValueRecord(encodeCombinedKey(foreignKey, primaryKey), value, timestamp, contextTimestamp)


def decodeSubscriptionRecord(record: ChangelogRecord, wrapperSerde: Any) -> tuple[bytes, bytes, Any, int | None]:
    """``(foreign key bytes, primary key bytes, wrapper or None, record timestamp)`` of a
    subscription store changelog record."""
    fk, pk = decodeCombinedKey(record.key)
    wrapper = None if record.value is None else wrapperSerde.deserialize(None, record.value)
    return fk, pk, wrapper, record.timestamp


# ---------------------------------------------------------------------------- position headers
def encodePosition(position: Mapping[str, Mapping[int, int]]) -> bytes:
    """Kafka ``PositionSerde.serialize(position).array()``, the ``c`` header of a changelog record
    when ``internal.iq.consistency.offset.vector.enabled``: ``[version 0: 1 byte][topic count:
    int]`` then per topic ``[length: int][topic UTF-8][partition count: int]`` and per partition
    ``[partition: int][offset: long]``, in the mapping's order (Kafka's: its hash maps' order),
    followed by zero bytes up to the size Kafka allocates: it adds ``Byte.SIZE``/``Integer.SIZE``/
    ``Long.SIZE`` (bits, not bytes) = 8 + 32 + per topic (32 + topic bytes + 32 + 96 per
    partition) and sends the whole backing array."""
    size = 8 + 32
    body = [b"\x00", _INT.pack(len(position))]
    for topic, partitions in position.items():
        t = topic.encode()
        size += 32 + len(t) + 32 + 96 * len(partitions)
        body += [_INT.pack(len(t)), t, _INT.pack(len(partitions))]
        body += [_INT.pack(p) + _LONG.pack(o) for p, o in partitions.items()]
    data = b"".join(body)
    return data + bytes(size - len(data))


def decodePosition(data: bytes) -> dict[str, dict[int, int]]:
    """The position (topic → partition → offset) of ``encodePosition``'s bytes (Kafka
    ``PositionSerde.deserialize``; the trailing zero bytes are ignored)."""
    if data[0] != 0:
        raise ValueError(f"unknown position format version {data[0]}")
    (topics,), pos, out = _INT.unpack_from(data, 1), 5, {}
    for _ in range(topics):
        t, pos = _readSized(data, pos)
        (n,), pos = _INT.unpack_from(data, pos), pos + 4
        partitions = out.setdefault(t.decode(), {})
        for _ in range(n):
            p, o = struct.unpack_from(">iq", data, pos)
            partitions[p], pos = o, pos + 12
    return out


def positionHeaders(position: Mapping[str, Mapping[int, int]]) -> Headers:
    """The headers Kafka ``ProcessorContextImpl.logChange`` puts on every changelog record of a
    store when ``internal.iq.consistency.offset.vector.enabled`` is true (the buffers' records
    excepted): ``v`` = 0x00 and ``c`` = ``encodePosition`` of the store's position (per input
    topic and partition, the offset of the last record the store saw)."""
    return (("v", b"\x00"), ("c", encodePosition(position)))


# ---------------------------------------------------------------------------- topic configs
class StoreKind(NamedTuple):
    """How Kafka configures a store kind's changelog topic: its ``InternalTopicConfig`` class and
    whether its store retains duplicates."""

    topicConfigClass: str
    retainDuplicates: bool = False


STORE_KINDS: dict[str, StoreKind] = {
    "keyValue": StoreKind("UnwindowedUnversionedChangelogTopicConfig"),
    "timestampedKeyValue": StoreKind("UnwindowedUnversionedChangelogTopicConfig"),
    "window": StoreKind("WindowedChangelogTopicConfig"),
    "timestampedWindow": StoreKind("WindowedChangelogTopicConfig"),
    "session": StoreKind("WindowedChangelogTopicConfig"),
    "versioned": StoreKind("VersionedChangelogTopicConfig"),
    "streamJoinWindow": StoreKind("WindowedChangelogTopicConfig", True),
    "outerJoin": StoreKind("UnwindowedUnversionedChangelogTopicConfig"),
    "suppressionBuffer": StoreKind("UnwindowedUnversionedChangelogTopicConfig"),
    "streamTableJoinBuffer": StoreKind("UnwindowedUnversionedChangelogTopicConfig"),
    "subscription": StoreKind("UnwindowedUnversionedChangelogTopicConfig"),
}
_VERSIONED_ADDITIONAL_COMPACTION_LAG_MS = 24 * 60 * 60 * 1000


def _javaString(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def topicPrefixConfigs(appConfig: Mapping[str, Any]) -> dict[str, str]:
    """The application's ``topic.``-prefixed configs with the prefix removed and values as Java's
    ``toString`` (``StreamsConfig.originalsWithPrefix(TOPIC_PREFIX)``, read by
    ``InternalTopicManager``; None values skipped): the ``topicConfigs`` of ``changelogTopicConfig``."""
    return {k[len("topic."):]: _javaString(v) for k, v in appConfig.items()
            if k.startswith("topic.") and v is not None}


def changelogTopicConfig(kind: str, *, retentionMs: int | None = None, historyRetentionMs: int | None = None,
                         retainDuplicates: bool = False, logConfig: Mapping[str, Any] | None = None,
                         topicConfigs: Mapping[str, Any] | None = None,
                         additionalRetentionMs: int = 86_400_000) -> dict[str, str]:
    """The configs Kafka Streams creates a store's changelog topic with (``InternalTopicManager.
    makeReady`` → ``InternalTopicConfig.properties(topicConfigs, additionalRetentionMs)`` of the
    config ``InternalTopologyBuilder.createChangelogTopicConfig`` picks for the store).

    Arguments
    ---------
    kind
        A key of ``STORE_KINDS``: ``window``/``timestampedWindow``/``session``/``streamJoinWindow``
        get ``WindowedChangelogTopicConfig``, ``versioned`` ``VersionedChangelogTopicConfig``, the
        rest ``UnwindowedUnversionedChangelogTopicConfig``.
    retentionMs
        Windowed kinds: the store's retention (DSL: ``Materialized.withRetention``, else time
        windows ``size + grace``, sliding windows ``2 * timeDifference + grace``, session windows
        ``gap + grace``, stream-stream join stores ``before + after + grace``).
    historyRetentionMs
        ``versioned``: the store's history retention.
    retainDuplicates
        A ``window`` store built with ``retainDuplicates`` (Kafka ``WindowStoreBuilder`` then puts
        ``cleanup.policy=delete`` in the store's log config, before ``logConfig``; a
        ``timestampedWindow`` store does not). ``streamJoinWindow`` stores always get ``delete``,
        after ``logConfig`` (``StreamJoinedStoreFactory``).
    logConfig
        The store's own configs (``withLoggingEnabled(config)``, ``Materialized``/``StreamJoined``).
    topicConfigs
        The application's ``topic.*`` configs without the prefix (``topicPrefixConfigs``).
    additionalRetentionMs
        ``windowstore.changelog.additional.retention.ms`` (default one day).

    Returns
    -------
    dict[str, str]
        Library defaults ``message.timestamp.type=CreateTime`` and ``cleanup.policy`` (``compact``,
        windowed ``compact,delete``), overridden by ``topicConfigs``, overridden by the store's log
        config; then windowed: ``retention.ms`` = ``retentionMs + additionalRetentionMs`` (Java
        ``Long.MAX_VALUE`` on overflow) unless the *store's* log config sets it (an application
        ``topic.retention.ms`` is overridden); versioned: ``min.compaction.lag.ms`` =
        ``historyRetentionMs`` + one day (fixed, not ``additionalRetentionMs``) unless the store's
        log config sets it. Kafka sets nothing else (partitions: the task count; replication:
        ``replication.factor``).

    Raises
    ------
    ValueError
        For an unknown kind, or a windowed/versioned kind without its retention.
    """
    if kind not in STORE_KINDS:
        raise ValueError(f"unknown store kind {kind!r}: one of {sorted(STORE_KINDS)}")
    configClass = STORE_KINDS[kind].topicConfigClass
    store = {k: _javaString(v) for k, v in (logConfig or {}).items()}
    if kind == "streamJoinWindow":
        store["cleanup.policy"] = "delete"
    elif retainDuplicates and kind == "window":
        store = {"cleanup.policy": "delete", **store}
    windowed = configClass == "WindowedChangelogTopicConfig"
    config = {"message.timestamp.type": "CreateTime", "cleanup.policy": "compact,delete" if windowed else "compact"}
    config.update((k, _javaString(v)) for k, v in (topicConfigs or {}).items())
    config.update(store)
    if windowed and "retention.ms" not in store:
        if retentionMs is None:
            raise ValueError(f"a {kind} store's changelog config needs its retentionMs")
        total = retentionMs + additionalRetentionMs
        config["retention.ms"] = str(total if total <= _LONG_MAX else _LONG_MAX)
    if configClass == "VersionedChangelogTopicConfig" and "min.compaction.lag.ms" not in store:
        if historyRetentionMs is None:
            raise ValueError("a versioned store's changelog config needs its historyRetentionMs")
        total = historyRetentionMs + _VERSIONED_ADDITIONAL_COMPACTION_LAG_MS
        config["min.compaction.lag.ms"] = str(total if total <= _LONG_MAX else _LONG_MAX)
    return config
