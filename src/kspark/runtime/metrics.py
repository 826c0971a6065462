"""Counters the runtime keeps, named like Kafka Streams' metrics.

A ``MetricName`` is (name, group, tags). The hosts expose them: ``TopologyTestDriver.metrics()``
and the Spark run's summary.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

__all__ = ["MetricName", "Metrics"]

TASK_GROUP = "stream-task-metrics"
NODE_GROUP = "stream-processor-node-metrics"
DROP_REASON_GROUP = "kspark-dropped-records"


class MetricName(NamedTuple):
    name: str
    group: str
    tags: tuple[tuple[str, str], ...]

    def tag(self, key: str) -> str | None:
        return dict(self.tags).get(key)

    def encode(self) -> str:
        return "|".join([self.name, self.group] + [f"{k}={v}" for k, v in self.tags])

    @staticmethod
    def decode(text: str) -> "MetricName":
        name, group, *tags = text.split("|")
        return MetricName(name, group, tuple(tuple(t.split("=", 1)) for t in tags))  # type: ignore[misc]


class Metrics:
    """Monotonic counters of one task (or one driver)."""

    def __init__(self) -> None:
        self.counters: defaultdict[MetricName, float] = defaultdict(float)
        # hot counters kept as plain int attributes of their owners (a processor node's
        # ``processed``), read here: no MetricName hashing per record
        self._sources: list = []

    def addSource(self, owner) -> None:
        """Count ``owner.processed`` as metric ``owner.processCounter`` (kspark internal)."""
        self._sources.append(owner)

    def all(self) -> dict[MetricName, float]:
        """Every counter with a value, as ``MetricName -> value``."""
        out = dict(self.counters)
        for s in self._sources:
            if s.processed:
                out[s.processCounter] = out.get(s.processCounter, 0) + s.processed
        return out

    def clear(self) -> None:
        """Reset every counter to zero (the Spark host reports per-batch deltas)."""
        self.counters.clear()
        for s in self._sources:
            s.processed = 0

    def add(self, name: MetricName, amount: float = 1) -> None:
        self.counters[name] += amount

    def recordDropped(self, taskId: str, node: str | None, reason: str) -> None:
        """Kafka's task-level ``dropped-records-total`` plus kspark's per-node, per-reason breakdown."""
        self.counters[MetricName("dropped-records-total", TASK_GROUP, (("task-id", taskId),))] += 1
        tags = (("task-id", taskId), ("processor-node-id", node or ""), ("reason", reason))
        self.counters[MetricName("dropped-records-total", DROP_REASON_GROUP, tags)] += 1

    def recordSkipped(self, taskId: str, node: str | None, reason: str) -> None:
        """A record an operator skips silently in Kafka (a versioned table's out-of-order update
        below ``groupBy``): kspark's per-node, per-reason breakdown only, so it is visible without
        changing Kafka's task-level ``dropped-records-total``."""
        tags = (("task-id", taskId), ("processor-node-id", node or ""), ("reason", reason))
        self.counters[MetricName("dropped-records-total", DROP_REASON_GROUP, tags)] += 1

    def encoded(self) -> dict[str, float]:
        return {k.encode(): v for k, v in self.all().items()}
