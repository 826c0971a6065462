from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Headers", "Record", "RecordMetadata"]

Headers = tuple[tuple[str, bytes | None], ...]


class Record:
    """An immutable record flowing through the processor graph (Kafka ``api.Record``).

    Parameters
    ----------
    key, value : Any
        Deserialized key and value (``None`` allowed).
    timestamp : int
        Milliseconds since the epoch; must be >= 0.
    headers : sequence of (str, bytes or None) pairs, optional

    Raises
    ------
    ValueError
        If ``timestamp`` is negative (Kafka: ``StreamsException("Malformed Record")``).
    """

    __slots__ = ("_key", "_value", "_timestamp", "_headers")

    def __init__(self, key: Any, value: Any, timestamp: int, headers: Headers | None = None) -> None:
        if timestamp < 0:
            raise ValueError(f"Malformed Record: timestamp may not be negative. Got: {timestamp}")
        self._key = key
        self._value = value
        self._timestamp = timestamp
        self._headers = tuple(headers) if headers else ()

    def key(self) -> Any:
        return self._key

    def value(self) -> Any:
        return self._value

    def timestamp(self) -> int:
        return self._timestamp

    def headers(self) -> Headers:
        return self._headers

    def withKey(self, key: Any) -> "Record":
        return Record(key, self._value, self._timestamp, self._headers)

    def withValue(self, value: Any) -> "Record":
        return Record(self._key, value, self._timestamp, self._headers)

    def withTimestamp(self, timestamp: int) -> "Record":
        return Record(self._key, self._value, timestamp, self._headers)

    def withHeaders(self, headers: Headers) -> "Record":
        return Record(self._key, self._value, self._timestamp, headers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and (self._key, self._value, self._timestamp, self._headers) == (
            other._key, other._value, other._timestamp, other._headers
        )

    def __repr__(self) -> str:
        return f"Record(key={self._key!r}, value={self._value!r}, timestamp={self._timestamp}, headers={self._headers!r})"


class RecordMetadata(NamedTuple):
    """Where the record being processed came from (Kafka ``api.RecordMetadata``)."""

    topic: str
    partition: int
    offset: int
