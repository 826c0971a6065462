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


class _BufferConfig:
    def __init__(self, maxRecords: int | None = None, maxBytes: int | None = None, strict: bool = False) -> None:
        self.maxRecords, self.maxBytes, self.strict = maxRecords, maxBytes, strict

    def shutDownWhenFull(self) -> "_BufferConfig":
        return _BufferConfig(self.maxRecords, self.maxBytes, True)


class Suppressed:
    """Suppression of KTable updates (Kafka ``Suppressed``); only final results of windows for now."""

    class BufferConfig:
        @staticmethod
        def unbounded() -> _BufferConfig:
            return _BufferConfig(strict=True)

        @staticmethod
        def maxRecords(recordLimit: int) -> _BufferConfig:
            return _BufferConfig(maxRecords=recordLimit)

        @staticmethod
        def maxBytes(byteLimit: int) -> _BufferConfig:
            return _BufferConfig(maxBytes=byteLimit)

    def __init__(self, bufferConfig: _BufferConfig, name: str | None = None) -> None:
        self.bufferConfig, self.name = bufferConfig, name

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

    def withName(self, name: str) -> "Suppressed":
        return Suppressed(self.bufferConfig, name)


def bufferFull(nodeName: str, records: int, maxRecords: int | None, size: int, maxBytes: int | None) -> StreamsException:
    return StreamsException(
        f"{nodeName} buffer exceeded its max capacity. Currently [{records}/{maxRecords if maxRecords is not None else 'unbounded'}] "
        f"records and [{size}/{maxBytes if maxBytes is not None else 'unbounded'}] bytes."
    )
