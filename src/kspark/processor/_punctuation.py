from __future__ import annotations

from enum import Enum
from typing import Callable

__all__ = ["Cancellable", "PunctuationType", "Punctuator"]

Punctuator = Callable[[int], None]
"""``punctuator(timestamp)``: called with the current stream time or wall-clock time in ms
(Kafka ``Punctuator#punctuate``, rule P-4)."""


class PunctuationType(Enum):
    """What time drives a punctuator (Kafka ``PunctuationType``, rules P-2, P-3)."""

    STREAM_TIME = "STREAM_TIME"
    WALL_CLOCK_TIME = "WALL_CLOCK_TIME"


class Cancellable:
    """Handle of a scheduled punctuator; ``cancel()`` stops all future firings, also when called
    from inside the punctuator (Kafka ``Cancellable``, rule P-6)."""

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
