"""The window types of windowed keys and stores (Kafka ``kstream.Window``, ``kstream.Windowed``,
``kstream.internals.TimeWindow`` / ``SessionWindow``).

They live below ``state`` because window and session stores hand them out (``fetchAll``,
``findSessions``); the DSL (``kspark.dsl``) re-exports them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SessionWindow", "TimeWindow", "Window", "Windowed"]


class Window:
    """A time interval in ms (Kafka ``Window``): ``start()``, ``end()``.

    Raises
    ------
    ValueError
        If ``start < 0`` or ``end < start`` (Kafka's messages, rule SW-8).
    """

    __slots__ = ("_start", "_end")

    def __init__(self, startMs: int, endMs: int) -> None:
        if startMs < 0:
            raise ValueError("Window startMs time cannot be negative.")
        if endMs < startMs:
            raise ValueError("Window endMs time cannot be smaller than window startMs time.")
        self._start, self._end = startMs, endMs

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and (self._start, self._end) == (other._start, other._end)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self._start, self._end))  # windows of other types are unequal (__eq__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}{{startMs={self._start}, endMs={self._end}}}"


class TimeWindow(Window):
    """A half-open window ``[start, end)`` of time-window aggregations (Kafka ``TimeWindow``).

    Raises
    ------
    ValueError
        If ``start < 0``, ``end < start`` or ``end == start`` ("Window endMs must be greater than
        window startMs.", Kafka's ``IllegalArgumentException``).
    """

    __slots__ = ()

    def __init__(self, startMs: int, endMs: int) -> None:
        super().__init__(startMs, endMs)
        if startMs == endMs:
            raise ValueError("Window endMs must be greater than window startMs.")


class SessionWindow(Window):
    """A session window ``[start, end]``, both bounds inclusive (Kafka ``SessionWindow``, rule SW-7).

    ``start`` and ``end`` are the timestamps of the session's first and last record.
    """

    def overlap(self, other: "SessionWindow") -> bool:
        """True unless one ends before the other starts; touching windows overlap (rule SW-9)."""
        if not isinstance(other, SessionWindow):
            raise ValueError(f"Cannot compare windows of different type. Other window must be of type SessionWindow but got {type(other).__name__}")
        return not (other._end < self._start or self._end < other._start)


class Windowed:
    """A key with the window it was aggregated in (Kafka ``Windowed``): ``key()``, ``window()``.

    ``str()`` renders Kafka's ``[key@start/end]``.
    """

    __slots__ = ("_key", "_window")

    def __init__(self, key: Any, window: Window) -> None:
        self._key, self._window = key, window

    def key(self) -> Any:
        return self._key

    def window(self) -> Window:
        return self._window

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Windowed):
            return False
        w, o = self._window, other._window  # Window.__eq__, inlined: windowed keys are cache and dict keys
        return self._key == other._key and w._start == o._start and w._end == o._end and type(w) is type(o)

    def __hash__(self) -> int:
        w = self._window
        try:
            return hash((self._key, w._start, w._end))
        except TypeError:  # an unhashable key (a dict, a list): equal Windowed keys still hash alike
            return hash((w._start, w._end))

    def __str__(self) -> str:
        return f"[{self._key}@{self._window.start()}/{self._window.end()}]"

    __repr__ = __str__
