"""Kafka Streams' offset commit metadata (``TopicPartitionMetadata``, format 2), which kspark reads
when it takes a Kafka Streams application over and writes so that one can take kspark's over
(issue 33). The Java side of both is tests/kafka/test_migration.py."""

import base64
import struct

from kspark.topics._kafka import _committedBatch, batchMarker, decodeStreamsMetadata, encodeStreamsMetadata


def test_encode_is_kafkas_layout():
    # TopicPartitionMetadata.encode: [2][partition time: long][processor metadata], base64
    assert encodeStreamsMetadata(1_700_000_000_123, {}) == base64.b64encode(
        b"\x02" + struct.pack(">q", 1_700_000_000_123)).decode()
    # ProcessorMetadata.serialize: [entries: int] then [key length: int][key][value: long]
    assert base64.b64decode(encodeStreamsMetadata(-1, {"ab": 7})) == (
        b"\x02" + struct.pack(">q", -1) + struct.pack(">i", 1) + struct.pack(">i", 2) + b"ab" + struct.pack(">q", 7))


def test_decode_reads_formats_1_and_2_and_nothing_else():
    assert decodeStreamsMetadata(base64.b64encode(b"\x01" + struct.pack(">q", 42)).decode()) == (42, {})
    assert decodeStreamsMetadata(encodeStreamsMetadata(5, {"x": 1, "kspark1:q": 3})) == (5, {"x": 1, "kspark1:q": 3})
    # Kafka's decode: anything else is "unsupported" (partition time unknown)
    for other in (None, "", "kspark1:abc:3", base64.b64encode(b"\x03" + bytes(8)).decode(), "AgAA"):
        assert decodeStreamsMetadata(other) is None, other


def test_a_batch_marker_names_its_checkpoint_and_batch_in_either_form():
    marker = batchMarker("query-1", 12, partitionTime=99)
    assert decodeStreamsMetadata(marker) == (99, {"kspark1:query-1": 12})
    assert _committedBatch(marker, "query-1") == 12
    assert _committedBatch(marker, "query-2") is None
    assert _committedBatch("kspark1:query-1:4", "query-1") == 4  # as kspark committed before issue 33
    assert _committedBatch(encodeStreamsMetadata(99, {}), "query-1") is None  # Kafka Streams' own


def test_metadata_with_bytes_after_its_end_reads_as_without():
    """librdkafka issue #4649: committed metadata can arrive with whatever followed it in memory
    (seen on Kafka Streams' metadata in issue 33's test); both readers stop where the format ends."""
    java = base64.b64encode(b"\x02" + struct.pack(">q", 1_795_000_000_000)).decode()  # 12 characters
    assert decodeStreamsMetadata(java + "\x90\x01é") == (1_795_000_000_000, {})
    marker = batchMarker("query-1", 12, partitionTime=99)
    assert decodeStreamsMetadata(marker + "AAAA\x05") == (99, {"kspark1:query-1": 12})
    assert _committedBatch(marker + "x\x00y", "query-1") == 12


def test_the_metadata_of_a_topic_partition_is_read_from_its_c_field_when_it_is_no_utf8():
    import ctypes

    from confluent_kafka import TopicPartition

    from kspark.topics._kafka import _metadataFieldOffset, _metadataOf

    offset = _metadataFieldOffset()
    assert offset is not None
    tp = TopicPartition("t", 0, 5, metadata="AgAAAZoZtbrw")
    pointer = ctypes.c_void_p.from_address(id(tp) + offset).value
    ctypes.memmove(pointer + 4, b"\x90", 1)  # a byte that is no UTF-8, as librdkafka's garbage can be
    assert _metadataOf(tp) == "AgAA\x90ZoZtbrw"


def test_offsets_are_sent_through_the_producers_own_librdkafka_handle():
    """``sendOffsetsToTransaction`` (exact metadata bytes, no NUL: Kafka Streams reads them; the
    Java check is in tests/kafka/test_migration.py) calls librdkafka on the Producer's handle:
    outside a transaction it fails as confluent-kafka's own call does, with librdkafka's state error."""
    import pytest
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

    from kspark.topics._kafka import _librdkafkaLog, _producerHandle, _rdkafka, sendOffsetsToTransaction

    producer = Producer({"bootstrap.servers": "127.0.0.1:9", "transactional.id": "t", "logger": _librdkafkaLog})
    assert _producerHandle(producer, _rdkafka()) is not None  # found: no fallback to the NUL-appending call
    group = Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "logger": _librdkafkaLog})
    offsets = [TopicPartition("t", 0, 5, encodeStreamsMetadata(7, {}))]
    errors = []
    for send in (sendOffsetsToTransaction, lambda p, o, m, t: p.send_offsets_to_transaction(o, m, t)):
        with pytest.raises(KafkaException) as e:
            send(producer, offsets, group.consumer_group_metadata(), 1.0)
        errors.append((e.value.args[0].code(), e.value.args[0].retriable(), e.value.args[0].txn_requires_abort()))
    assert errors[0] == errors[1] == (KafkaError._STATE, False, False)
    group.close()
