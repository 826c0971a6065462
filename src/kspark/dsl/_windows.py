from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from .._duration import Duration, toMillis
from ..serialization import Serde
from ..state._window import SessionWindow, TimeWindow, Window, Windowed

_END_START = struct.Struct(">qq")  # SessionKeySchema suffix: 8-byte end, 8-byte start, big-endian

__all__ = ["JoinWindows", "SessionWindow", "SessionWindows", "SlidingWindows", "TimeWindow", "TimeWindows", "Window",
           "Windowed", "WindowedSerdes", "Windows"]


class SessionWindows:
    """Sessions of a key split by ``inactivityGap`` of silence, with a grace period (Kafka ``SessionWindows``).

    Two records of a key are in the same session iff their timestamps differ by at most
    ``inactivityGap`` (inclusive), possibly through records in between; one record may merge
    several sessions. A record whose merged session ends before ``streamTime - grace - gap`` is
    dropped and counted. Rules SW-1..SW-3, SA-4..SA-7.

    Raises
    ------
    ValueError
        ``"Gap time cannot be negative."`` / ``"Grace period cannot be negative."`` (Kafka 4.3's
        ``IllegalArgumentException``; a zero gap is valid: a session holds records of one
        timestamp. Rule SW-3 quotes 4.0, which refused a zero gap).
    """

    def __init__(self, gapMs: int, graceMs: int) -> None:
        if gapMs < 0:
            raise ValueError("Gap time cannot be negative.")
        if graceMs < 0:
            raise ValueError("Grace period cannot be negative.")
        self._gapMs, self._graceMs = gapMs, graceMs

    @staticmethod
    def ofInactivityGapWithNoGrace(inactivityGap: Duration) -> "SessionWindows":
        """Sessions split by ``inactivityGap`` (ms or timedelta), grace 0 (SW-1)."""
        return SessionWindows(toMillis(inactivityGap, "inactivityGap"), 0)

    @staticmethod
    def ofInactivityGapAndGrace(inactivityGap: Duration, afterWindowEnd: Duration) -> "SessionWindows":
        """Sessions split by ``inactivityGap`` that admit out-of-order records for ``afterWindowEnd`` (SW-2)."""
        return SessionWindows(toMillis(inactivityGap, "inactivityGap"), toMillis(afterWindowEnd, "afterWindowEnd"))

    def inactivityGap(self) -> int:
        return self._gapMs

    def gracePeriodMs(self) -> int:
        return self._graceMs

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionWindows) and (self._gapMs, self._graceMs) == (other._gapMs, other._graceMs)

    def __hash__(self) -> int:
        return hash((self._gapMs, self._graceMs))

    def __repr__(self) -> str:
        return f"SessionWindows{{gapMs={self._gapMs}, graceMs={self._graceMs}}}"


class Windows(ABC):
    """The windows of a time-windowed aggregation (Kafka ``Windows<W>``): subclass it for custom
    windows and pass an instance to ``KGroupedStream.windowedBy``.

    A subclass implements ``windowsFor(timestamp) -> {start: TimeWindow}`` (every window a
    record at ``timestamp`` (ms) belongs to, by start), ``size()`` (ms: the window store's window
    size; a windowed key's end is its start + ``size()``, as in Kafka's window store) and
    ``gracePeriodMs()``. A window ``[start, end)`` accepts records until stream time passes ``end
    + grace``; later records are dropped for it and counted. ``TimeWindows`` is the built-in one.

    Examples
    --------
    >>> class EvenHours(Windows):  # one window per two hours, starting at even hours
    ...     def windowsFor(self, timestamp):
    ...         start = timestamp - timestamp % 7_200_000
    ...         return {start: TimeWindow(start, start + 7_200_000)}
    ...     def size(self):
    ...         return 7_200_000
    ...     def gracePeriodMs(self):
    ...         return 0
    >>> EvenHours().windowsFor(3_600_001)
    {0: TimeWindow{startMs=0, endMs=7200000}}
    """

    @abstractmethod
    def windowsFor(self, timestamp: int) -> dict[int, TimeWindow]:
        """The windows containing ``timestamp`` (ms), by start."""

    @abstractmethod
    def size(self) -> int:
        """The window size in ms."""

    @abstractmethod
    def gracePeriodMs(self) -> int:
        """How long (ms) after its end a window still accepts records."""


class TimeWindows(Windows):
    """Fixed-size windows, tumbling or hopping, with a grace period (Kafka ``TimeWindows``).

    A record at ``t`` belongs to every window ``[start, start + size)`` with ``start`` a
    multiple of ``advance`` and ``start <= t < start + size``. A window accepts records until
    stream time passes ``end + grace``: a record whose window has ``end <= streamTime - grace``
    is dropped for that window and counted (``dropped-records``).
    """

    def __init__(self, sizeMs: int, advanceMs: int, graceMs: int) -> None:
        if sizeMs <= 0:
            raise ValueError("Window size (sizeMs) must be larger than zero.")
        if advanceMs <= 0 or advanceMs > sizeMs:
            raise ValueError(
                "Window advancement interval should be more than zero and less than window duration which is "
                f"{sizeMs} ms, but given advancement interval is: {advanceMs} ms"
            )
        if graceMs < 0:
            raise ValueError("Grace period must not be negative.")
        self.sizeMs, self.advanceMs, self._graceMs = sizeMs, advanceMs, graceMs

    @staticmethod
    def ofSizeWithNoGrace(size: Duration) -> "TimeWindows":
        """Tumbling windows of ``size`` (ms or timedelta) with no grace period."""
        ms = toMillis(size, "size")
        return TimeWindows(ms, ms, 0)

    @staticmethod
    def ofSizeAndGrace(size: Duration, afterWindowEnd: Duration) -> "TimeWindows":
        """Tumbling windows of ``size`` accepting out-of-order records for ``afterWindowEnd`` after their end."""
        ms = toMillis(size, "size")
        return TimeWindows(ms, ms, toMillis(afterWindowEnd, "afterWindowEnd"))

    def advanceBy(self, advance: Duration) -> "TimeWindows":
        """Hopping windows: a new window every ``advance`` (0 < advance <= size)."""
        return TimeWindows(self.sizeMs, toMillis(advance, "advance"), self._graceMs)

    def size(self) -> int:
        return self.sizeMs

    def gracePeriodMs(self) -> int:
        return self._graceMs

    def windowsFor(self, timestamp: int) -> dict[int, TimeWindow]:
        """Windows containing ``timestamp``, by start (Kafka ``TimeWindows#windowsFor``)."""
        start = (max(0, timestamp - self.sizeMs + self.advanceMs) // self.advanceMs) * self.advanceMs
        windows = {}
        while start <= timestamp:
            windows[start] = TimeWindow(start, start + self.sizeMs)
            start += self.advanceMs
        return windows

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimeWindows) and (self.sizeMs, self.advanceMs, self._graceMs) == (
            other.sizeMs, other.advanceMs, other._graceMs)

    def __repr__(self) -> str:
        return f"TimeWindows{{sizeMs={self.sizeMs}, advanceMs={self.advanceMs}, graceMs={self._graceMs}}}"


class SlidingWindows:
    """Windows of a fixed time difference that slide with the records (Kafka ``SlidingWindows``,
    KIP-450), for ``KGroupedStream.windowedBy``.

    Two records of a key are in a common window iff their timestamps differ by at most
    ``timeDifference`` (both bounds inclusive). Each record at ``t`` has a window ``[t - d, t]``
    ending at it and, when later records follow within ``d``, one ``[t + 1, t + 1 + d]`` starting
    right after it, so there is one window per distinct set of records within ``d``; windowed
    keys show them as ``TimeWindow(start, start + d)``. A window accepts records until stream time
    passes ``end + grace``; later records are dropped and counted.

    ``count()`` with ``ofTimeDifferenceWithNoGrace(10)``, one key, what each record forwards:

    ======  ==========================  =======================================================
    record  forwarded (window: count@t)  why
    ======  ==========================  =======================================================
    k@5     [0,10]: 1@5                 before ``d`` the records share one window ``[0, d]``
    k@12    [6,16]: 1@12, [2,12]: 2@12  5's right window (after 5, holds 12); 12's left window
    k@30    [20,30]: 1@30               nothing within 10 ms
    ======  ==========================  =======================================================

    Raises
    ------
    ValueError
        ``"Window time difference must not be negative."`` / ``"Window grace period must not be
        negative."`` (Kafka's ``IllegalArgumentException``).
    """

    def __init__(self, timeDifferenceMs: int, graceMs: int) -> None:
        if timeDifferenceMs < 0:
            raise ValueError("Window time difference must not be negative.")
        if graceMs < 0:
            raise ValueError("Window grace period must not be negative.")
        self._timeDifferenceMs, self._graceMs = timeDifferenceMs, graceMs

    @staticmethod
    def ofTimeDifferenceWithNoGrace(timeDifference: Duration) -> "SlidingWindows":
        """Records within ``timeDifference`` (ms or timedelta) of each other share windows; grace 0."""
        return SlidingWindows(toMillis(timeDifference, "timeDifference"), 0)

    @staticmethod
    def ofTimeDifferenceAndGrace(timeDifference: Duration, afterWindowEnd: Duration) -> "SlidingWindows":
        """As ``ofTimeDifferenceWithNoGrace``; out-of-order records are accepted until
        ``afterWindowEnd`` after a window's end."""
        return SlidingWindows(toMillis(timeDifference, "timeDifference"), toMillis(afterWindowEnd, "afterWindowEnd"))

    def timeDifferenceMs(self) -> int:
        return self._timeDifferenceMs

    def gracePeriodMs(self) -> int:
        return self._graceMs

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SlidingWindows) and (self._timeDifferenceMs, self._graceMs) == (
            other._timeDifferenceMs, other._graceMs)

    def __hash__(self) -> int:
        return hash((self._timeDifferenceMs, self._graceMs))

    def __repr__(self) -> str:
        return f"SlidingWindows{{, sizeMs={self._timeDifferenceMs}, graceMs={self._graceMs}}}"  # Kafka's toString


_DEPRECATED_DEFAULT_24_HR_GRACE_PERIOD = 24 * 3600 * 1000


class JoinWindows(Windows):
    """How far apart in time two records of the same key may be to join in a KStream-KStream join
    (Kafka ``JoinWindows``).

    A left record at ``t`` joins a right record at ``t'`` iff ``t - before <= t' <= t + after``.
    ``ofTimeDifference*`` set ``before = after = timeDifference``; ``before(d)`` / ``after(d)``
    change one bound (a negative bound is allowed while ``before + after >= 0``). The window size
    is ``before + after``; the join's window stores keep records ``size + grace`` ms.

    With ``ofTimeDifferenceWithNoGrace`` / ``ofTimeDifferenceAndGrace`` a left or outer join
    forwards a non-joined record only after its window closes: a left record at ``t`` when stream
    time passes ``t + after + grace``, a right one when it passes ``t + before + grace`` (KIP-633).
    ``of`` (deprecated) forwards it at once, as Kafka before 3.1 did.

    ``leftJoin`` with ``ofTimeDifferenceAndGrace(100, 50)`` and ``joiner = left + "+" + right``:

    ====  =====  ===========  ===========================================  ================
    step  side   key:value@t  what happens                                 forwarded
    ====  =====  ===========  ===========================================  ================
    1     left   k:A@0        no right record within 100 ms: ``A`` kept
    2     right  k:a@60       joins ``A`` (``60 - 0 <= 100``)              k:A+a@60
    3     left   k:B@300      ``a`` is 240 ms before: ``B`` kept
    4     left   j:C@500      ``B``'s window closed (300 + 100 + 50 < 500)  k:B+null@300
    ====  =====  ===========  ===========================================  ================

    Raises
    ------
    ValueError
        ``"Window interval (ie, beforeMs+afterMs) must not be negative."`` /
        ``"Grace period must not be negative."`` (Kafka's ``IllegalArgumentException``).
    """

    def __init__(self, beforeMs: int, afterMs: int, graceMs: int, spuriousResultFix: bool) -> None:
        if beforeMs + afterMs < 0:
            raise ValueError("Window interval (ie, beforeMs+afterMs) must not be negative.")
        if graceMs < 0:
            raise ValueError("Grace period must not be negative.")
        self.beforeMs, self.afterMs, self._graceMs = beforeMs, afterMs, graceMs
        self._spuriousResultFix = spuriousResultFix

    @staticmethod
    def ofTimeDifferenceWithNoGrace(timeDifference: Duration) -> "JoinWindows":
        """Records join within ``timeDifference`` (ms or timedelta) of each other; grace 0."""
        ms = toMillis(timeDifference, "timeDifference")
        return JoinWindows(ms, ms, 0, True)

    @staticmethod
    def ofTimeDifferenceAndGrace(timeDifference: Duration, afterWindowEnd: Duration) -> "JoinWindows":
        """Records join within ``timeDifference`` of each other; out-of-order records are accepted
        until ``afterWindowEnd`` after the window's end."""
        ms = toMillis(timeDifference, "timeDifference")
        return JoinWindows(ms, ms, toMillis(afterWindowEnd, "afterWindowEnd"), True)

    @staticmethod
    def of(timeDifference: Duration) -> "JoinWindows":
        """Deprecated in Kafka 3.0: grace ``max(24 h - 2 * timeDifference, 0)`` and non-joined
        results of left/outer joins forwarded at once (no spurious-result fix)."""
        ms = toMillis(timeDifference, "timeDifference")
        return JoinWindows(ms, ms, max(_DEPRECATED_DEFAULT_24_HR_GRACE_PERIOD - ms * 2, 0), False)

    def before(self, timeDifference: Duration) -> "JoinWindows":
        """A copy whose lower bound is ``timeDifference`` before the record (may be negative)."""
        return JoinWindows(toMillis(timeDifference, "timeDifference"), self.afterMs, self._graceMs,
                           self._spuriousResultFix)

    def after(self, timeDifference: Duration) -> "JoinWindows":
        """A copy whose upper bound is ``timeDifference`` after the record (may be negative)."""
        return JoinWindows(self.beforeMs, toMillis(timeDifference, "timeDifference"), self._graceMs,
                           self._spuriousResultFix)

    def grace(self, afterWindowEnd: Duration) -> "JoinWindows":
        """Deprecated in Kafka 3.0: a copy of ``of(...)`` windows with grace ``afterWindowEnd``.

        Raises
        ------
        RuntimeError
            After ``ofTimeDifference*`` (Kafka's ``IllegalStateException``).
        """
        if self._spuriousResultFix:
            raise RuntimeError("Cannot call grace() after setting grace value via ofTimeDifferenceAndGrace or "
                               "ofTimeDifferenceWithNoGrace.")
        return JoinWindows(self.beforeMs, self.afterMs, toMillis(afterWindowEnd, "afterWindowEnd"), False)

    def windowsFor(self, timestamp: int) -> dict:
        """Not supported (Kafka: ``UnsupportedOperationException``).

        Raises
        ------
        NotImplementedError
            Always.
        """
        raise NotImplementedError("windowsFor() is not supported by JoinWindows.")

    def size(self) -> int:
        return self.beforeMs + self.afterMs

    def gracePeriodMs(self) -> int:
        return self._graceMs

    def __eq__(self, other: object) -> bool:
        return type(other) is JoinWindows and (self.beforeMs, self.afterMs, self._graceMs) == (
            other.beforeMs, other.afterMs, other._graceMs)

    def __hash__(self) -> int:
        return hash((self.beforeMs, self.afterMs, self._graceMs))

    def __repr__(self) -> str:
        return f"JoinWindows{{beforeMs={self.beforeMs}, afterMs={self.afterMs}, graceMs={self._graceMs}}}"


class _TimeWindowedSerde(Serde):
    name = "TimeWindowed"
    javaSerializer = "org.apache.kafka.streams.kstream.TimeWindowedSerializer"
    javaType = "org.apache.kafka.streams.kstream.Windowed"

    def __init__(self, inner: Serde, windowSize: int) -> None:
        self.inner, self.windowSize = inner, windowSize

    def __repr__(self) -> str:
        return f"WindowedSerdes.timeWindowedSerdeFrom({self.inner!r}, {self.windowSize})"

    def serialize(self, topic, data):
        if data is None:
            return None
        if not isinstance(data, Windowed):
            raise self._incompatible(topic, data, "a Windowed key")
        return self.inner.serialize(topic, data.key()) + data.window().start().to_bytes(8, "big", signed=True)

    def deserialize(self, topic, data):
        if data is None:
            return None
        start = int.from_bytes(data[-8:], "big", signed=True)
        return Windowed(self.inner.deserialize(topic, bytes(data[:-8])), TimeWindow(start, start + self.windowSize))

    def baseKeyBytes(self, data: bytes) -> bytes:
        """The serialized inner key: what a windowed sink hashes (rule DP-1)."""
        return data[:-8]


class _SessionWindowedSerde(Serde):
    name = "SessionWindowed"
    javaSerializer = "org.apache.kafka.streams.kstream.SessionWindowedSerializer"
    javaType = "org.apache.kafka.streams.kstream.Windowed"

    def __init__(self, inner: Serde) -> None:
        self.inner = inner

    def __repr__(self) -> str:
        return f"WindowedSerdes.sessionWindowedSerdeFrom({self.inner!r})"

    def serialize(self, topic, data):
        if data is None:
            return None
        if not isinstance(data, Windowed):
            raise self._incompatible(topic, data, "a Windowed key")
        w = data.window()
        return self.inner.serialize(topic, data.key()) + _END_START.pack(w.end(), w.start())

    def deserialize(self, topic, data):
        if data is None:
            return None
        end = int.from_bytes(data[-16:-8], "big", signed=True)
        start = int.from_bytes(data[-8:], "big", signed=True)
        return Windowed(self.inner.deserialize(topic, bytes(data[:-16])), SessionWindow(start, end))

    def baseKeyBytes(self, data: bytes) -> bytes:
        return data[:-16]


def _innerSerde(method: str, typeOrSerde) -> Serde:
    """Kafka's ``Class<T> type`` argument (``Serdes.serdeFrom(type)``), or a Serde (the form of
    Kafka's ``TimeWindowedSerde(Serde inner, ...)`` constructors)."""
    from ..serialization import Serdes

    if isinstance(typeOrSerde, type):
        return Serdes.serdeFrom(typeOrSerde)
    if hasattr(typeOrSerde, "serialize") and hasattr(typeOrSerde, "deserialize"):
        return typeOrSerde
    raise TypeError(f"WindowedSerdes.{method}(): the key type must be a class (str, int, ...) or a Serde, got "
                    f"{type(typeOrSerde).__name__}")


class WindowedSerdes:
    """Serdes for ``Windowed`` keys (Kafka ``WindowedSerdes``): the inner key's bytes, then the
    8-byte window start (time windows) or the 8-byte end and start (session windows).

    The inner key serde is given as Kafka gives it, by class (``timeWindowedSerdeFrom(str, 1000)``
    is Kafka's ``timeWindowedSerdeFrom(String.class, 1000)``: ``Serdes.serdeFrom(str)``), or as a
    Serde.
    """

    TimeWindowedSerde = _TimeWindowedSerde
    SessionWindowedSerde = _SessionWindowedSerde

    @staticmethod
    def timeWindowedSerdeFrom(type_, windowSize: Duration) -> Serde:
        """``Windowed`` keys of time windows of ``windowSize`` (ms or timedelta; a read key's
        window end is its start + ``windowSize``) whose inner keys are of class ``type_`` (or
        use the Serde ``type_``).

        Raises
        ------
        ValueError
            For a class without a built-in serde (Kafka's ``IllegalArgumentException``).
        TypeError
            For something that is neither a class nor a Serde.
        """
        return _TimeWindowedSerde(_innerSerde("timeWindowedSerdeFrom", type_), toMillis(windowSize, "windowSize"))

    @staticmethod
    def sessionWindowedSerdeFrom(type_) -> Serde:
        """``Windowed`` keys of session windows whose inner keys are of class ``type_`` (or use
        the Serde ``type_``): inner key bytes + 8-byte end + 8-byte start (Kafka's
        ``SessionKeySchema`` layout). Raises as ``timeWindowedSerdeFrom``."""
        return _SessionWindowedSerde(_innerSerde("sessionWindowedSerdeFrom", type_))
