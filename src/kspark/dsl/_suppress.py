from __future__ import annotations

from ..errors import StreamsException

__all__ = ["EmitStrategy", "Suppressed"]


class EmitStrategy:
    """When a windowed aggregation emits (Kafka ``EmitStrategy``, KIP-825)."""

    ON_WINDOW_UPDATE, ON_WINDOW_CLOSE = "ON_WINDOW_UPDATE", "ON_WINDOW_CLOSE"

    def __init__(self, type: str) -> None:
        self._type = type

    def type(self) -> str:
        return self._type

    @staticmethod
    def onWindowUpdate() -> "EmitStrategy":
        """Every update of a window is forwarded (the default)."""
        return EmitStrategy(EmitStrategy.ON_WINDOW_UPDATE)

    @staticmethod
    def onWindowClose() -> "EmitStrategy":
        """A window is forwarded once, after it closes (rule SA-11)."""
        return EmitStrategy(EmitStrategy.ON_WINDOW_CLOSE)


_UNBOUNDED = (1 << 63) - 1   # Kafka's Long.MAX_VALUE, also in its "buffer exceeded" message


class _BufferConfig:
    """A suppression buffer's bounds and what happens when they are exceeded (Kafka
    ``BufferConfig``: ``EagerBufferConfigImpl`` emits early, ``StrictBufferConfigImpl`` shuts
    down). ``maxRecords`` / ``maxBytes`` are None when unbounded."""

    EMIT, SHUT_DOWN = "EMIT", "SHUT_DOWN"

    def __init__(self, maxRecords: int | None = None, maxBytes: int | None = None, strategy: str = "EMIT") -> None:
        self.maxRecords, self.maxBytes, self.strategy = maxRecords, maxBytes, strategy

    @property
    def strict(self) -> bool:
        """True for a config ``untilWindowCloses`` accepts (Kafka ``StrictBufferConfig``)."""
        return self.strategy == _BufferConfig.SHUT_DOWN

    def withMaxRecords(self, recordLimit: int) -> "_BufferConfig":
        return _BufferConfig(recordLimit, self.maxBytes, self.strategy)

    def withMaxBytes(self, byteLimit: int) -> "_BufferConfig":
        return _BufferConfig(self.maxRecords, byteLimit, self.strategy)

    def withNoBound(self) -> "_BufferConfig":
        """Unbounded and strict (Kafka ``withNoBound``: SHUT_DOWN, which never happens)."""
        return _BufferConfig(None, None, _BufferConfig.SHUT_DOWN)

    def emitEarlyWhenFull(self) -> "_BufferConfig":
        """When over a bound, emit the oldest records (by buffer time) until within bounds."""
        return _BufferConfig(self.maxRecords, self.maxBytes, _BufferConfig.EMIT)

    def shutDownWhenFull(self) -> "_BufferConfig":
        """When over a bound, fail the task with a ``StreamsException`` ("... buffer exceeded its
        max capacity ...")."""
        return _BufferConfig(self.maxRecords, self.maxBytes, _BufferConfig.SHUT_DOWN)

    def withLoggingDisabled(self) -> "_BufferConfig":
        return self

    def withLoggingEnabled(self, config: dict | None = None) -> "_BufferConfig":
        return self


class Suppressed:
    """Suppression of KTable updates (Kafka ``Suppressed``, rules SU-1..SU-5)."""

    class BufferConfig:
        @staticmethod
        def unbounded() -> _BufferConfig:
            """No bound (Kafka ``BufferConfig.unbounded()``, a strict config)."""
            return _BufferConfig(strategy=_BufferConfig.SHUT_DOWN)

        @staticmethod
        def maxRecords(recordLimit: int) -> _BufferConfig:
            """At most ``recordLimit`` keys buffered; emits early when full unless
            ``.shutDownWhenFull()``."""
            return _BufferConfig(maxRecords=recordLimit)

        @staticmethod
        def maxBytes(byteLimit: int) -> _BufferConfig:
            """At most ``byteLimit`` bytes buffered (Kafka's size estimate: 8 + key bytes + value
            bytes + record context); emits early when full unless ``.shutDownWhenFull()``."""
            return _BufferConfig(maxBytes=byteLimit)

    def __init__(self, bufferConfig: _BufferConfig, name: str | None = None, timeLimitMs: int | None = None) -> None:
        self.bufferConfig, self.name, self.timeLimitMs = bufferConfig, name, timeLimitMs

    @staticmethod
    def untilWindowCloses(bufferConfig: _BufferConfig) -> "Suppressed":
        """Emit each window's final result once stream time passes its end + grace (+ gap for
        sessions); tombstones are dropped (rules SU-1..SU-4).

        Raises
        ------
        ValueError
            If ``bufferConfig`` is not strict (``unbounded()`` or ``...shutDownWhenFull()``).
        """
        if not bufferConfig.strict:
            raise ValueError("untilWindowCloses needs a strict buffer config: unbounded() or ...shutDownWhenFull()")
        return Suppressed(bufferConfig)

    @staticmethod
    def untilTimeLimit(timeToWaitForMoreEvents, bufferConfig: _BufferConfig) -> "Suppressed":
        """Hold each key's updates until stream time (the max record timestamp the suppress node
        has seen) reaches the timestamp of the key's *first* buffered update plus
        ``timeToWaitForMoreEvents`` (timedelta or int ms), then forward the latest update, with
        its own timestamp and headers; tombstones are forwarded too (rule SU-5, Kafka
        ``Suppressed.untilTimeLimit`` with ``RecordTimeDefinition``). A duration of 0 forwards
        each update at once. Works on any KTable."""
        from .._duration import toMillis

        return Suppressed(bufferConfig, None, toMillis(timeToWaitForMoreEvents, "timeToWaitForMoreEvents"))

    def withName(self, name: str) -> "Suppressed":
        return Suppressed(self.bufferConfig, name, self.timeLimitMs)


def bufferFull(nodeName: str, records: int, maxRecords: int | None, size: int, maxBytes: int | None) -> StreamsException:
    return StreamsException(
        f"{nodeName} buffer exceeded its max capacity. Currently [{records}/{_UNBOUNDED if maxRecords is None else maxRecords}] "
        f"records and [{size}/{_UNBOUNDED if maxBytes is None else maxBytes}] bytes."
    )
