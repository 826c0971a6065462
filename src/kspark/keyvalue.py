from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["KeyValue"]


class KeyValue(NamedTuple):
    """A key-value pair (Kafka ``KeyValue``); equal to the tuple ``(key, value)``."""

    key: Any
    value: Any

    @staticmethod
    def pair(key: Any, value: Any) -> "KeyValue":
        return KeyValue(key, value)
