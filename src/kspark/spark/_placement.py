"""Which Spark shuffle partition a kspark task lands on (spark-hosting-findings G3b).

``groupBy(col)`` sends a row to ``pmod(murmur3_x86_32(col, seed=42), numShufflePartitions)``. With
task ids used directly as keys, several tasks share a partition while others stay idle; so each
task gets an int key chosen to land on its own partition (task t -> partition t mod N).
"""

from __future__ import annotations

_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def sparkHashInt(value: int, seed: int = 42) -> int:
    """Spark's ``hash(cast(value as int))`` (``Murmur3_x86_32.hashInt``), as a signed int."""
    k1 = (value & _MASK) * 0xCC9E2D51 & _MASK
    k1 = _rotl(k1, 15) * 0x1B873593 & _MASK
    h1 = (seed ^ k1) & _MASK
    h1 = (_rotl(h1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def balancedTaskKeys(numTasks: int, numShufflePartitions: int) -> list[int]:
    """``keys[t]`` = the smallest unused int >= 0 whose Spark partition is ``t % numShufflePartitions``."""
    keys: list[int] = []
    candidate = 0
    for t in range(numTasks):
        target = t % numShufflePartitions
        while sparkHashInt(candidate) % numShufflePartitions != target or candidate in keys:
            candidate += 1
        keys.append(candidate)
        candidate = 0
    return keys
