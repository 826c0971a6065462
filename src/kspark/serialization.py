"""Serializers and deserializers (Kafka ``org.apache.kafka.common.serialization.Serdes``).

Topics and repartition topics carry bytes; a ``Serde`` turns keys and values into bytes and
back. Partitioning hashes the *serialized* key (rule DP-1), so ``Serdes.String()`` gives the
same partitions as Kafka's ``StringSerializer``.
"""

from __future__ import annotations

import json
import pickle
import struct
import uuid as _uuid
from typing import Any

__all__ = ["Serde", "SerializationException", "Serdes"]


class SerializationException(Exception):
    """A value could not be (de)serialized (Kafka ``SerializationException``)."""


class Serde:
    """A serializer/deserializer pair. ``serialize(topic, data)`` / ``deserialize(topic, data)``.

    ``None`` maps to ``None`` in both directions (Kafka's null handling).
    """

    name = "Serde"

    def serialize(self, topic: str | None, data: Any) -> bytes | None:
        raise NotImplementedError

    def deserialize(self, topic: str | None, data: bytes | None) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"Serdes.{self.name}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def _incompatible(self, topic: str | None, data: Any, expected: str) -> SerializationException:
        return SerializationException(
            f"{self!r} cannot serialize a {type(data).__name__} ({data!r:.80}) for topic {topic}: "
            f"expected {expected}. Set a matching serde in Consumed/Produced/Repartitioned or "
            "default.key.serde / default.value.serde."
        )


class _StringSerde(Serde):
    name = "String"

    def serialize(self, topic, data):
        if data is None:
            return None
        if not isinstance(data, str):
            raise self._incompatible(topic, data, "str")
        return data.encode("utf-8")

    def deserialize(self, topic, data):
        return None if data is None else bytes(data).decode("utf-8")


class _StructSerde(Serde):
    fmt = ">q"
    types: tuple[type, ...] = (int,)

    def serialize(self, topic, data):
        if data is None:
            return None
        if isinstance(data, bool) or not isinstance(data, self.types):
            raise self._incompatible(topic, data, " or ".join(t.__name__ for t in self.types))
        try:
            return struct.pack(self.fmt, data)
        except struct.error as e:
            raise SerializationException(f"{self!r} cannot serialize {data!r} for topic {topic}: {e}") from e

    def deserialize(self, topic, data):
        if data is None:
            return None
        size = struct.calcsize(self.fmt)
        if len(data) != size:
            raise SerializationException(
                f"Size of data received by {self!r} is not {size}"  # Kafka LongDeserializer wording
            )
        return struct.unpack(self.fmt, data)[0]


class _LongSerde(_StructSerde):
    name, fmt = "Long", ">q"


class _IntegerSerde(_StructSerde):
    name, fmt = "Integer", ">i"


class _DoubleSerde(_StructSerde):
    name, fmt, types = "Double", ">d", (int, float)


class _FloatSerde(_StructSerde):
    name, fmt, types = "Float", ">f", (int, float)


class _ShortSerde(_StructSerde):
    name, fmt = "Short", ">h"


class _BooleanSerde(Serde):
    name = "Boolean"

    def serialize(self, topic, data):
        if data is None:
            return None
        if not isinstance(data, bool):
            raise self._incompatible(topic, data, "bool")
        return b"\x01" if data else b"\x00"

    def deserialize(self, topic, data):
        if data is None:
            return None
        if len(data) != 1:
            raise SerializationException(f"Size of data received by {self!r} is not 1")
        return data[0] == 1  # Kafka BooleanDeserializer: any byte but 1 is false


class _VoidSerde(Serde):
    name = "Void"

    def serialize(self, topic, data):
        if data is not None:
            raise SerializationException(f"Data should be null for a VoidSerializer (topic {topic}), got {data!r:.80}")
        return None

    def deserialize(self, topic, data):
        if data is not None:
            raise SerializationException(f"Data should be null for a VoidDeserializer (topic {topic}).")
        return None


class _UUIDSerde(Serde):
    name = "UUID"

    def serialize(self, topic, data):
        if data is None:
            return None
        if not isinstance(data, _uuid.UUID):
            raise self._incompatible(topic, data, "uuid.UUID")
        return str(data).encode("ascii")  # Kafka UUIDSerializer: UUID.toString() in UTF-8

    def deserialize(self, topic, data):
        if data is None:
            return None
        try:
            return _uuid.UUID(bytes(data).decode("ascii"))
        except ValueError as e:
            raise SerializationException(f"Error parsing data into UUID (topic {topic}): {e}") from e


class _FunctionSerde(Serde):
    """``Serdes.serdeFrom(serializer, deserializer)``."""

    name = "serdeFrom"

    def __init__(self, serialize, deserialize) -> None:
        self._serialize, self._deserialize = serialize, deserialize

    def __repr__(self) -> str:
        return f"Serdes.serdeFrom({self._serialize!r}, {self._deserialize!r})"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def serialize(self, topic, data):
        return self._serialize(topic, data)

    def deserialize(self, topic, data):
        return self._deserialize(topic, data)


class _ByteArraySerde(Serde):
    name = "ByteArray"

    def serialize(self, topic, data):
        if data is None:
            return None
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise self._incompatible(topic, data, "bytes")
        return bytes(data)

    def deserialize(self, topic, data):
        return None if data is None else bytes(data)


try:
    from orjson import loads as _orjsonLoads
except ImportError:  # pragma: no cover - a dependency; json alone gives the same values
    _orjsonLoads = None


def _holdsHugeFloat(value) -> bool:
    """Whether a parsed JSON value holds a float with magnitude >= 2**63 (orjson's reading of an
    integer literal beyond 64 bits, which json.loads reads as an int)."""
    t = type(value)
    if t is float:
        return not -9.223372036854775e18 < value < 9.223372036854775e18
    if t is dict:
        value = value.values()
    elif t is not list:
        return False
    for v in value:
        t = type(v)
        if t is not str and t is not int and v is not None and t is not bool and _holdsHugeFloat(v):
            return True
    return False


class _JsonSerde(Serde):
    name = "JSON"

    def serialize(self, topic, data):
        if data is None:
            return None
        try:
            return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise SerializationException(f"{self!r} cannot serialize {data!r:.80} for topic {topic}: {e}") from e

    def deserialize(self, topic, data):
        if data is None:
            return None
        # orjson (≈5x faster) where its result is json.loads' own: it fails on everything json
        # reads differently (BOM, lone surrogates, NaN, overflowing floats) and json then runs, but
        # it turns integers beyond 64 bits into floats, so a result holding a float of that
        # magnitude is read again by json.
        if _orjsonLoads is not None:
            try:
                value = _orjsonLoads(data)
            except ValueError:
                pass
            else:
                if not _holdsHugeFloat(value):
                    return value
        try:
            return json.loads(bytes(data))
        except ValueError as e:
            raise SerializationException(f"{self!r} cannot deserialize data for topic {topic}: {e}") from e


class _PickleSerde(Serde):
    name = "Pickle"

    def serialize(self, topic, data):
        return None if data is None else pickle.dumps(data, protocol=5)

    def deserialize(self, topic, data):
        return None if data is None else pickle.loads(data)


class Serdes:
    """Factory of the built-in serdes (Kafka ``Serdes``).

    ``String`` (UTF-8), ``Long``, ``Integer`` and ``Short`` (8, 4 and 2-byte big-endian), ``Double``
    and ``Float`` (IEEE 754 big-endian, 8 and 4 bytes), ``Boolean`` (one byte, 1 = true),
    ``ByteArray``, ``UUID`` (the UUID's text form in UTF-8) and ``Void`` (only null) are
    byte-compatible with Kafka's. ``JSON`` (UTF-8 JSON of dicts, lists, str, numbers, bool) and
    ``Pickle`` (any picklable Python object) are kspark's additions for Python values.
    ``serdeFrom`` builds a serde from a serializer and a deserializer, or picks the built-in one
    for a Python type.
    """

    @staticmethod
    def String() -> Serde:
        return _StringSerde()

    @staticmethod
    def Long() -> Serde:
        return _LongSerde()

    @staticmethod
    def Integer() -> Serde:
        return _IntegerSerde()

    @staticmethod
    def Double() -> Serde:
        return _DoubleSerde()

    @staticmethod
    def ByteArray() -> Serde:
        return _ByteArraySerde()

    @staticmethod
    def JSON() -> Serde:
        return _JsonSerde()

    @staticmethod
    def Pickle() -> Serde:
        return _PickleSerde()

    @staticmethod
    def Float() -> Serde:
        return _FloatSerde()

    @staticmethod
    def Short() -> Serde:
        """``int`` values in -32768..32767 as 2 bytes big-endian (Kafka ``Serdes.Short()``)."""
        return _ShortSerde()

    @staticmethod
    def Boolean() -> Serde:
        """``bool`` values as one byte, 1 or 0 (Kafka ``Serdes.Boolean()``; reading, any byte but 1
        is false, as Kafka's ``BooleanDeserializer`` reads it)."""
        return _BooleanSerde()

    @staticmethod
    def UUID() -> Serde:
        """``uuid.UUID`` values as their 36-character text (Kafka ``Serdes.UUID()``)."""
        return _UUIDSerde()

    @staticmethod
    def Void() -> Serde:
        """Only null keys or values (Kafka ``Serdes.Void()``); anything else raises ``SerializationException``."""
        return _VoidSerde()

    @staticmethod
    def serdeFrom(serializerOrType, deserializer=None) -> Serde:
        """Kafka ``Serdes.serdeFrom``: ``serdeFrom(serializer, deserializer)`` (objects with
        ``serialize(topic, data)`` / ``deserialize(topic, data)``, or such functions), or
        ``serdeFrom(type)``: the built-in serde of ``str``, ``int`` (Long), ``float`` (Double),
        ``bytes``, ``bool``, ``uuid.UUID`` or ``type(None)`` (Void).

        Raises
        ------
        TypeError
            If the serializer or deserializer is missing or not usable.
        ValueError
            For a type without a built-in serde (Kafka: ``IllegalArgumentException``).
        """
        if deserializer is None and isinstance(serializerOrType, type):
            serde = {str: _StringSerde, int: _LongSerde, float: _DoubleSerde, bytes: _ByteArraySerde, bool: _BooleanSerde,
                     _uuid.UUID: _UUIDSerde, type(None): _VoidSerde}.get(serializerOrType)
            if serde is None:
                raise ValueError(f"Unknown class for built-in serializer: {serializerOrType.__name__}. Supported types "
                                 "are: str, int, float, bytes, bool, uuid.UUID, NoneType")
            return serde()
        serialize = getattr(serializerOrType, "serialize", serializerOrType)
        deserialize = getattr(deserializer, "deserialize", deserializer)
        if not callable(serialize):
            raise TypeError("serializer must not be null")
        if not callable(deserialize):
            raise TypeError("deserializer must not be null")
        return _FunctionSerde(serialize, deserialize)
