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

    def add(self, name: MetricName, amount: float = 1) -> None:
        self.counters[name] += amount

    def recordDropped(self, taskId: str, node: str | None, reason: str) -> None:
        """Kafka's task-level ``dropped-records-total`` plus kspark's per-node, per-reason breakdown."""
        self.counters[MetricName("dropped-records-total", TASK_GROUP, (("task-id", taskId),))] += 1
        tags = (("task-id", taskId), ("processor-node-id", node or ""), ("reason", reason))
        self.counters[MetricName("dropped-records-total", DROP_REASON_GROUP, tags)] += 1

    def encoded(self) -> dict[str, float]:
        return {k.encode(): v for k, v in self.counters.items()}
