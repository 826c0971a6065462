"""A source topic's own offset reset policy (Kafka 4's ``org.apache.kafka.streams.AutoOffsetReset``, KIP-1106)."""

from __future__ import annotations

from ._duration import Duration, toMillis

__all__ = ["AutoOffsetReset"]


class AutoOffsetReset:
    """Where a source topic is read from when the application has no position for it (no
    checkpoint and no committed offset of the group ``application.id``), or its position is no
    longer in the log: ``earliest()``, ``latest()``, ``none()`` (fail) or ``byDuration(d)`` (the
    first record whose timestamp is at least ``now - d``, else the log end).

    Given with ``Consumed.with_(AutoOffsetReset)`` / ``Consumed.withOffsetResetPolicy`` or
    ``Topology.addSource(AutoOffsetReset, name, *topics)``, it overrides the config key
    ``auto.offset.reset`` (default ``earliest``) for that source's topics, on Kafka topics and on
    local ones. ``TopologyTestDriver`` reads every piped record and ignores it, as Kafka's does.
    """

    __slots__ = ("_type", "_durationMs")

    def __init__(self, type_: str, durationMs: int | None = None) -> None:
        self._type, self._durationMs = type_, durationMs

    @classmethod
    def earliest(cls) -> "AutoOffsetReset":
        return cls("earliest")

    @classmethod
    def latest(cls) -> "AutoOffsetReset":
        return cls("latest")

    @classmethod
    def none(cls) -> "AutoOffsetReset":
        return cls("none")

    @classmethod
    def byDuration(cls, duration: Duration) -> "AutoOffsetReset":
        """Raises ``ValueError`` ("Duration cannot be negative", Kafka's IllegalArgumentException)."""
        ms = toMillis(duration, "duration")
        if ms < 0:
            raise ValueError("Duration cannot be negative")
        return cls("by_duration", ms)

    def policy(self) -> str:
        """The policy as the Spark host's reader takes it: ``earliest``, ``latest``, ``none`` or
        ``by_duration:<ms>``."""
        return self._type if self._durationMs is None else f"{self._type}:{self._durationMs}"

    def __eq__(self, other) -> bool:
        return isinstance(other, AutoOffsetReset) and self.policy() == other.policy()

    def __hash__(self) -> int:
        return hash(self.policy())

    def __repr__(self) -> str:
        return f"AutoOffsetReset.{self._type if self._type != 'by_duration' else 'byDuration'}" + (
            f"({self._durationMs} ms)" if self._durationMs is not None else "()")
