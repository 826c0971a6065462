from __future__ import annotations

from typing import Any, Iterable, Iterator

__all__ = ["FixedKeyRecord", "Header", "Headers", "Record", "RecordHeader", "RecordHeaders", "RecordMetadata"]


class RecordHeader(tuple):
    """One header (Kafka ``Header`` / ``RecordHeader``): ``key()`` (str) and ``value()`` (bytes or
    None); a ``(key, value)`` pair, so it unpacks and compares as one."""

    __slots__ = ()

    def __new__(cls, key: str, value: bytes | None) -> "RecordHeader":
        if key is None:
            raise TypeError("Null header keys are not permitted")  # Kafka: NullPointerException
        return tuple.__new__(cls, (key, None if value is None else bytes(value)))

    def __getnewargs__(self) -> tuple:  # pickle, copy (a task's checkpoint holds buffered records' headers)
        return tuple(self)

    def key(self) -> str:
        return self[0]

    def value(self) -> bytes | None:
        return self[1]

    def __repr__(self) -> str:
        return f"RecordHeader(key = {self[0]}, value = {self[1]!r})"


Header = RecordHeader


class Headers:
    """A record's headers, in order, mutable (Kafka ``Headers`` / ``RecordHeaders``):
    ``add(header)`` or ``add(key, value)``, ``remove(key)``, ``lastHeader(key)``,
    ``headers(key)``, ``toArray()``; iterating gives ``RecordHeader`` (key, value) pairs.

    ``Headers(pairs)`` builds a free-standing one (Kafka ``new RecordHeaders(...)``);
    ``Record.headers()`` returns the record's own, whose changes are the record's (as in Kafka,
    where a forwarded record carries what its processor added).
    """

    __slots__ = ("_record", "_own")

    def __init__(self, headers: Iterable | None = None) -> None:
        self._record = None
        self._own = _headerTuple(headers)

    @classmethod
    def _of(cls, record: "Record") -> "Headers":
        view = cls.__new__(cls)
        view._record, view._own = record, None
        return view

    def _get(self) -> tuple:
        return self._own if self._record is None else self._record._headers

    def _set(self, headers: tuple) -> None:
        if self._record is None:
            self._own = headers
        else:
            self._record._headers = headers

    def add(self, header, value: Any = ...) -> "Headers":
        """Append ``header`` (a ``RecordHeader`` or (key, value) pair), or ``add(key, value)``; returns self."""
        new = RecordHeader(*header) if value is ... else RecordHeader(header, value)
        self._set(self._get() + (new,))
        return self

    def remove(self, key: str) -> "Headers":
        """Remove every header named ``key``; returns self."""
        self._set(tuple(h for h in self._get() if h[0] != key))
        return self

    def lastHeader(self, key: str) -> RecordHeader | None:
        """The last header named ``key``, or None."""
        for h in reversed(self._get()):
            if h[0] == key:
                return RecordHeader(*h)
        return None

    def headers(self, key: str) -> list[RecordHeader]:
        """Every header named ``key``, in order."""
        return [RecordHeader(*h) for h in self._get() if h[0] == key]

    def toArray(self) -> list[RecordHeader]:
        return list(self)

    def __iter__(self) -> Iterator[RecordHeader]:
        return (h if type(h) is RecordHeader else RecordHeader(*h) for h in self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Headers):
            other = other._get()
        elif not isinstance(other, (tuple, list)):
            return NotImplemented
        return tuple(map(tuple, self._get())) == tuple(map(tuple, other))

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return f"RecordHeaders(headers = {list(self)})"


RecordHeaders = Headers


def _headerTuple(headers) -> tuple:
    """``headers`` (pairs, ``RecordHeader``s or ``Headers``) as the tuple a record keeps."""
    if not headers:
        return ()
    if isinstance(headers, Headers):
        return headers._get()
    return tuple(headers)


class Record:
    """A record flowing through the processor graph (Kafka ``api.Record``): key, value and
    timestamp are fixed (``withX`` makes a copy); ``headers()`` is the record's own mutable
    ``Headers``, copied by the constructor and the ``withX`` methods, as in Kafka.

    Parameters
    ----------
    key, value : Any
        Deserialized key and value (``None`` allowed).
    timestamp : int
        Milliseconds since the epoch; must be >= 0.
    headers : Headers or sequence of (str, bytes or None) pairs, optional

    Raises
    ------
    ValueError
        If ``timestamp`` is negative (Kafka: ``StreamsException("Malformed Record")``).
    """

    __slots__ = ("_key", "_value", "_timestamp", "_headers")

    def __init__(self, key: Any, value: Any, timestamp: int, headers: Any = None) -> None:
        if timestamp < 0:
            raise ValueError(f"Malformed Record: timestamp may not be negative. Got: {timestamp}")
        self._key = key
        self._value = value
        self._timestamp = timestamp
        # kspark's own code reads _headers, a tuple of (key, value) pairs; headers() is the user's view
        self._headers = headers if type(headers) is tuple else _headerTuple(headers)

    def key(self) -> Any:
        return self._key

    def value(self) -> Any:
        return self._value

    def timestamp(self) -> int:
        return self._timestamp

    def headers(self) -> Headers:
        """This record's headers (mutable: ``add``/``remove`` change this record's)."""
        return Headers._of(self)

    def withKey(self, key: Any) -> "Record":
        return Record(key, self._value, self._timestamp, self._headers)

    def withValue(self, value: Any) -> "Record":
        return Record(self._key, value, self._timestamp, self._headers)

    def withTimestamp(self, timestamp: int) -> "Record":
        return Record(self._key, self._value, timestamp, self._headers)

    def withHeaders(self, headers: Any) -> "Record":
        return Record(self._key, self._value, self._timestamp, headers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and (self._key, self._value, self._timestamp, self._headers) == (
            other._key, other._value, other._timestamp, other._headers
        )

    def __repr__(self) -> str:
        return f"Record(key={self._key!r}, value={self._value!r}, timestamp={self._timestamp}, headers={self._headers!r})"


class FixedKeyRecord(Record):
    """The record a ``processValues`` processor gets (Kafka ``api.FixedKeyRecord``): a ``Record``
    whose key cannot change (``withValue``, ``withTimestamp``, ``withHeaders`` keep it; there is
    no ``withKey``), so forwarding it keeps the input's key. Made by kspark, not by users."""

    __slots__ = ()

    @classmethod
    def _of(cls, record: Record) -> "FixedKeyRecord":
        fixed = cls.__new__(cls)
        fixed._key, fixed._value, fixed._timestamp, fixed._headers = (
            record._key, record._value, record._timestamp, record._headers)
        return fixed

    def withKey(self, key: Any) -> "Record":
        raise AttributeError("a FixedKeyRecord has no withKey(): a fixed-key processor may not change the key "
                             "(use process() to change keys)")

    def withValue(self, value: Any) -> "FixedKeyRecord":
        return FixedKeyRecord._of(Record(self._key, value, self._timestamp, self._headers))

    def withTimestamp(self, timestamp: int) -> "FixedKeyRecord":
        return FixedKeyRecord._of(Record(self._key, self._value, timestamp, self._headers))

    def withHeaders(self, headers: Any) -> "FixedKeyRecord":
        return FixedKeyRecord._of(Record(self._key, self._value, self._timestamp, headers))

    def __repr__(self) -> str:
        return "Fixed" + super().__repr__()


class RecordMetadata(tuple):
    """Where the record being processed came from (Kafka ``api.RecordMetadata``): ``topic()``,
    ``partition()``, ``offset()``. A ``(topic, partition, offset)`` tuple (so it unpacks and
    compares as one)."""

    __slots__ = ()

    def __new__(cls, topic: str, partition: int, offset: int) -> "RecordMetadata":
        return tuple.__new__(cls, (topic, partition, offset))

    def __getnewargs__(self) -> tuple:  # pickle (a task's checkpoint holds cached records' metadata)
        return tuple(self)

    def topic(self) -> str:
        return self[0]

    def partition(self) -> int:
        return self[1]

    def offset(self) -> int:
        return self[2]

    def __repr__(self) -> str:
        return f"RecordMetadata(topic={self[0]!r}, partition={self[1]}, offset={self[2]})"
