"""Kafka's default partitioner: rules DP-1..DP-3 with Kafka's own test vectors."""

import pytest

from kspark import Produced, Serdes, StreamsBuilder
from kspark.runtime.partitioner import murmur2, partitionForKey
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
