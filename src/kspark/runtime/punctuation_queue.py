"""Punctuation schedules and their queue (Kafka ``PunctuationSchedule``, ``PunctuationQueue``)."""

from __future__ import annotations

import heapq
from itertools import count

from ..processor import Cancellable

__all__ = ["PunctuationQueue", "PunctuationSchedule"]


class PunctuationSchedule:
    """One punctuator of one node: next fire time ``timestamp`` (ms) on a grid of ``interval`` ms.

    ``cancellable`` is shared by the schedule and all its successors (rule P-6).
    """

    __slots__ = ("node", "timestamp", "interval", "punctuator", "cancellable", "key")

    def __init__(self, node, timestamp: int, interval: int, punctuator, cancellable: Cancellable, key: tuple) -> None:
        self.node, self.timestamp, self.interval = node, timestamp, interval
        self.punctuator, self.cancellable, self.key = punctuator, cancellable, key

    def next(self, now: int) -> "PunctuationSchedule":
        """The successor: one interval later, or, if ``now`` is past that, the first grid point
        after ``now`` (missed punctuations are skipped; rule P-5)."""
        nextTime = self.timestamp + self.interval
        if now >= nextTime:
            nextTime = self.timestamp + ((now - self.timestamp) // self.interval + 1) * self.interval
        return PunctuationSchedule(self.node, nextTime, self.interval, self.punctuator, self.cancellable, self.key)


class PunctuationQueue:
    """Min-heap of schedules by fire time (ties: registration order).

    ``mayPunctuate(now, fire)`` pops every schedule due at ``now`` (timestamp <= now), calls
    ``fire(schedule, now)`` unless it is cancelled, and re-queues its successor unless it was
    cancelled during the call; so each schedule fires at most once per check (rule P-4).
    """

    def __init__(self) -> None:
        self._heap: list = []
        self._seq = count()

    def schedule(self, sched: PunctuationSchedule) -> None:
        heapq.heappush(self._heap, (sched.timestamp, next(self._seq), sched))

    def mayPunctuate(self, now: int, fire) -> bool:
        punctuated = False
        while self._heap and self._heap[0][0] <= now:
            sched = heapq.heappop(self._heap)[2]
            if sched.cancellable.cancelled:
                continue
            fire(sched, now)
            punctuated = True
            if not sched.cancellable.cancelled:
                self.schedule(sched.next(now))
        return punctuated

    def schedules(self) -> list[PunctuationSchedule]:
        """Live (not cancelled) schedules in fire order."""
        return [s for _, _, s in sorted(self._heap, key=lambda e: e[:2]) if not s.cancellable.cancelled]
