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
