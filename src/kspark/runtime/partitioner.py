"""Kafka's default partitioner: ``(murmur2(keyBytes) & 0x7fffffff) % numPartitions`` (rules DP-1..DP-3).

Mirrors ``org.apache.kafka.common.utils.Utils.murmur2`` (32-bit MurmurHash2, seed
``0x9747b28c``) and ``BuiltInPartitioner.partitionForKey``; the hash is the ``murmurhash2``
package's (compiled), checked against Kafka's test vectors.
"""

from __future__ import annotations

from functools import lru_cache

from murmurhash2 import murmurhash2 as _murmurhash2

__all__ = ["murmur2", "partitionForKey", "partitionsForKeys", "toPositive"]

_SEED = 0x9747B28C


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 of ``data`` (any bytes-like object; seed ``0x9747b28c``), returned
    as a Java ``int``."""
    h = _murmurhash2(data if type(data) is bytes else bytes(data), _SEED)
    return h - (1 << 32) if h & 0x80000000 else h


def toPositive(number: int) -> int:
    """``number & 0x7fffffff`` (Kafka ``Utils.toPositive``; not ``abs``)."""
    return number & 0x7FFFFFFF


@lru_cache(maxsize=1 << 16)
def partitionForKey(keyBytes: bytes, numPartitions: int) -> int:
    """The partition Kafka's producer picks for a non-null serialized key (``bytes``; rule DP-2).

    Memoised for the most recent 65,536 (key, partition count) pairs: keys repeat in streams,
    and a cache hit costs half a call of the compiled hash."""
    return (_murmurhash2(keyBytes, _SEED) & 0x7FFFFFFF) % numPartitions


def partitionsForKeys(keys: list, numPartitions: int):
    """``partitionForKey`` of each serialized key (non-null ``bytes``), as an int64 numpy array:
    the hash alone, without the memo, for keys known to be distinct (a run's keys; a memo that
    misses costs more than the hash)."""
    import numpy as np

    return np.fromiter(((_murmurhash2(k, _SEED) & 0x7FFFFFFF) % numPartitions for k in keys), np.int64, len(keys))
