"""Kafka's default partitioner: rules DP-1..DP-3 with Kafka's own test vectors."""

import pytest

from kspark import Consumed, Produced, Serdes, StreamsBuilder, StreamsException
from kspark.runtime.partitioner import murmur2, partitionForKey, partitionsForKeys
from kspark.runtime.stream_task import StreamTask
from kspark.config import StreamsConfig

# DP-3: (key, murmur2 as Java int, partition of 5) for StringSerializer keys.
VECTORS = [
    ("", 275646681, 1), ("a", -1563381124, 4), ("b", -1853091852, 1), ("c", -1877468854, 4),
    ("A", 1592744578, 3), ("key", -1079937367, 1), ("key1", 28543940, 0), ("key2", 1674751211, 1),
    ("key3", -1745673403, 0), ("alice", 1951417749, 4), ("bob", -2048144690, 3), ("user-1", 1404122828, 3),
    ("user-2", -324981792, 1), ("k1", 1684045097, 2), ("k2", 380483553, 3), ("foobar", -790332482, 1),
    ("21", -973932308, 0),
]


@pytest.mark.parametrize("key,hashed,partition", VECTORS)
def test_dp3_string_key_vectors(key, hashed, partition):
    data = key.encode()
    assert murmur2(data) == hashed
    assert partitionForKey(data, 5) == partition


def test_dp3_string_key_vectors_in_one_call():
    """The column-at-a-time runs' partitions of many keys at once: the same vectors."""
    assert partitionsForKeys([key.encode() for key, _, _ in VECTORS], 5).tolist() == [p for _, _, p in VECTORS]


def test_dp3_integer_serializer_keys():
    parts = {k: partitionForKey(Serdes.Integer().serialize("t", k), 5) for k in (0, 1, 2, 3, 42)}
    assert parts == {0: 0, 1: 0, 2: 3, 3: 1, 42: 4}


def test_kafka_utils_test_murmur2_vectors():
    # UtilsTest.testMurmur2 in apache/kafka: byte arrays and their expected hashes.
    cases = {
        b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829, b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        bytes([ord("a"), ord("b"), ord("c")]): 479470107,
    }
    for data, expected in cases.items():
        assert murmur2(data) == expected


def _sinkTask(numPartitions):
    b = StreamsBuilder()
    b.stream("in").to("out", Produced.with_(Serdes.String(), Serdes.String()))
    sub = b.build().subtopologies()[0]
    return StreamTask("0_0", sub, {}, StreamsConfig(), 0, lambda t: t, lambda t: numPartitions)


def test_dp1_sink_partitions_by_serialized_key_and_spreads_null_keys():
    from kspark.runtime.record_queue import RawRecord

    task = _sinkTask(5)
    recs = [RawRecord(i, 10 + i, None if k is None else k.encode(), b'"v"') for i, k in
            enumerate(["a", "b", "alice", None, None])]
    task.addRecords("in", recs)
    task.initialize()
    task.processAll(0)
    out = task.drainProduced()
    assert [(r.key, r.partition, r.timestamp) for r in out] == [
        (b"a", 4, 10), (b"b", 1, 11), (b"alice", 4, 12), (None, 0, 13), (None, 1, 14)
    ]


def test_murmur2_of_bytes_like_data_is_that_of_its_bytes():
    assert murmur2(bytearray(b"foobar")) == murmur2(memoryview(b"foobar")) == -790332482


def _partitionedBy(partitioner, numPartitions=4):
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).to("out", Produced.with_(Serdes.String(), Serdes.String(), partitioner))
    task = StreamTask("0_0", b.build().subtopologies()[0], {}, StreamsConfig(), 0, lambda t: t,
                      lambda t: numPartitions)
    from kspark.runtime.record_queue import RawRecord

    task.addRecords("in", [RawRecord(0, 7, b"a", b"x"), RawRecord(1, 8, b"b", b"y")])
    task.initialize()
    task.processAll(0)
    dropped = {(m.tag("processor-node-id"), m.tag("reason")): v for m, v in task.metrics.all().items()
               if m.group == "kspark-dropped-records"}
    return [(r.key, r.partition, r.timestamp) for r in task.drainProduced()], dropped


def test_dp1_kafka4_stream_partitioner_returns_a_set_of_partitions():
    """FINDINGS F18: Kafka 4's StreamPartitioner.partitions() returns Optional<Set<Integer>>: a set
    multicasts (KIP-837), empty drops and counts the record, None (Optional.empty) is the default."""
    out, dropped = _partitionedBy(lambda topic, key, value, n: {3, 1} if key == "a" else None)
    assert out == [(b"a", 1, 7), (b"a", 3, 7), (b"b", 0, 8)]  # "b": 294391796 % 4 = 0 (DP-3)
    assert dropped == {}

    class OnlyA:  # an object with Kafka 4's method
        def partitions(self, topic, key, value, numPartitions):
            return {0} if key == "a" else set()

    out, dropped = _partitionedBy(OnlyA())
    assert out == [(b"a", 0, 7)]
    assert dropped == {("KSTREAM-SINK-0000000001", "partitioner returned no partition"): 1}


def test_a_partition_out_of_range_fails_the_task_naming_the_sink():
    with pytest.raises(StreamsException, match="returned partition 4 for topic out with 4 partitions"):
        _partitionedBy(lambda topic, key, value, n: {4})
