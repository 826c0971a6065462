"""Kafka's default partitioner: ``(murmur2(keyBytes) & 0x7fffffff) % numPartitions`` (rules DP-1..DP-3).

Mirrors ``org.apache.kafka.common.utils.Utils.murmur2`` and
``BuiltInPartitioner.partitionForKey``; verified against Kafka's test vectors.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["murmur2", "partitionForKey", "toPositive"]

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 of ``data`` (seed ``0x9747b28c``), returned as a Java ``int``."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    n4 = length - (length & 3)
    for i in range(0, n4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rem = length & 3
    if rem == 3:
        h ^= data[n4 + 2] << 16
    if rem >= 2:
        h ^= data[n4 + 1] << 8
    if rem >= 1:
        h ^= data[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def toPositive(number: int) -> int:
    """``number & 0x7fffffff`` (Kafka ``Utils.toPositive``; not ``abs``)."""
    return number & 0x7FFFFFFF


@lru_cache(maxsize=1 << 16)
def partitionForKey(keyBytes: bytes, numPartitions: int) -> int:
    """The partition Kafka's producer picks for a non-null serialized key (rule DP-2).

    Memoised for the most recent 65,536 (key, partition count) pairs: keys repeat in streams."""
    return toPositive(murmur2(keyBytes)) % numPartitions
