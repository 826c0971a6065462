"""The one place where durations are converted to milliseconds."""

from __future__ import annotations

from datetime import timedelta

Duration = int | timedelta


def toMillis(duration: Duration, name: str = "duration") -> int:
    """Return ``duration`` in milliseconds.

    Parameters
    ----------
    duration : int or datetime.timedelta
        Milliseconds (int) or a timedelta; sub-millisecond parts of a timedelta are truncated,
        as Java's ``Duration.toMillis`` does.
    name : str
        The parameter name used in error messages.

    Raises
    ------
    TypeError
        If ``duration`` is neither an int nor a timedelta (``bool`` is rejected).
    """
    if isinstance(duration, bool) or not isinstance(duration, (int, timedelta)):
        raise TypeError(
            f"{name} must be an int (milliseconds) or a datetime.timedelta, got {type(duration).__name__}"
        )
    if isinstance(duration, timedelta):
        return duration // timedelta(milliseconds=1)
    return duration


def toEpochMillis(instant, name: str = "time") -> int:
    """A point in time as epoch milliseconds: an int (ms) as it is, a ``datetime`` (Java's
    ``Instant``) converted (a naive one is taken as local time, as ``datetime.timestamp`` does).

    Raises
    ------
    TypeError
        If ``instant`` is neither an int nor a datetime (``bool`` is rejected).
    """
    from datetime import datetime

    if isinstance(instant, datetime):
        return int(instant.timestamp() * 1000)
    if isinstance(instant, bool) or not isinstance(instant, int):
        raise TypeError(f"{name} must be an int (epoch milliseconds) or a datetime, got {type(instant).__name__}")
    return instant
