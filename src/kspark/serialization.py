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

__all__ = ["Deserializer", "Serde", "SerializationException", "Serdes", "Serializer"]


class SerializationException(Exception):
    """A value could not be (de)serialized (Kafka ``SerializationException``)."""


class IncompatibleTypeException(SerializationException):
    """A built-in serializer got a value of a type it cannot write: what is a ``ClassCastException``
    in Kafka's serializers (a sink reports it with Kafka's text, ``classCast()`` the Java-like cause)."""

    def __init__(self, message: str, serde: "Serde", data: Any) -> None:
        super().__init__(message)
        self.serde, self.data = serde, data

    def classCast(self) -> TypeError:
        """Java's ``ClassCastException`` message for this value and serializer, then kspark's text."""
        actual, expected = javaTypeName(self.data), getattr(self.serde, "javaType", None)
        text = f"class {actual} cannot be cast to class {expected}"
        if expected is not None:
            where = [("module java.base of loader 'bootstrap'" if n.startswith(("java.", "[")) else
                      "unnamed module of loader 'app'") for n in (actual, expected)]
            text += (f" ({actual} and {expected} are in {where[0]})" if where[0] == where[1] else
                     f" ({actual} is in {where[0]}; {expected} is in {where[1]})")
        return TypeError(f"{text}: {self}")


_JAVA_TYPES = {bool: "java.lang.Boolean", int: "java.lang.Long", float: "java.lang.Double", str: "java.lang.String",
               bytes: "[B", bytearray: "[B", memoryview: "java.nio.HeapByteBuffer", _uuid.UUID: "java.util.UUID",
               list: "java.util.ArrayList", tuple: "java.util.ArrayList", dict: "java.util.HashMap",
               set: "java.util.HashSet"}


def javaTypeName(value: Any) -> str:
    """The Java class Kafka would name for ``value``: a Python int is a ``java.lang.Long`` (the
    type of ``Serdes.Long()``), bytes ``[B``, ...; other types by their Python qualified name."""
    t = type(value)
    name = _JAVA_TYPES.get(t)
    if name is None:
        name = _KAFKA_TYPES.get(t.__name__) or f"{t.__module__}.{t.__qualname__}"
    return name


_KAFKA_TYPES = {"Windowed": "org.apache.kafka.streams.kstream.Windowed",
                "Change": "org.apache.kafka.streams.kstream.internals.Change"}


def javaSerializerName(serde: Any) -> str:
    """The class name Kafka's messages give ``serde``'s serializer: Kafka's own for the built-in
    serdes (``org.apache.kafka.common.serialization.StringSerializer``), else the serde's Python
    class."""
    name = getattr(serde, "javaSerializer", None)
    if name is not None:
        return name
    t = type(serde)
    return f"{t.__module__}.{t.__qualname__}"


_UNSET = object()


class _Closeable:
    """``configure``/``close`` and ``with`` (Java's try-with-resources over a ``Closeable``)."""

    def configure(self, configs: dict, isKey: bool) -> None:
        """Kafka's ``configure(Map configs, boolean isKey)``; the built-in ones need nothing."""

    def close(self) -> None:
        """Kafka's ``close()``: releases nothing for the built-in ones, which stay usable after it
        (as Kafka's do); may be called more than once."""

    def __enter__(self):
        return self

    def __exit__(self, excType, exc, tb) -> bool:
        self.close()
        return False


class Serializer(_Closeable):
    """Kafka ``org.apache.kafka.common.serialization.Serializer``: ``serialize(topic, data)`` or
    ``serialize(topic, headers, data)`` (Java's overloads, told apart by the argument count) give
    ``bytes`` (``None`` for ``None``). ``close()`` and ``with`` as Java's ``Closeable``.
    Subclass it and override ``serialize(topic, data)``."""

    def serialize(self, topic: str | None, data: Any, *headersForm) -> bytes | None:
        raise NotImplementedError


class Deserializer(_Closeable):
    """Kafka ``org.apache.kafka.common.serialization.Deserializer``: ``deserialize(topic, data)``
    or ``deserialize(topic, headers, data)`` (told apart by the argument count) read ``bytes``
    (``None`` gives ``None``). ``close()`` and ``with`` as Java's ``Closeable``. Subclass it and
    override ``deserialize(topic, data)``."""

    def deserialize(self, topic: str | None, data: bytes | None, *headersForm) -> Any:
        raise NotImplementedError


class _SerdeSerializer(Serializer):
    """``serde.serializer()``: the serde's write half."""

    def __init__(self, serde: "Serde") -> None:
        self.serde = serde
        self.javaSerializer = javaSerializerName(serde)

    def __repr__(self) -> str:
        return f"{self.serde!r}.serializer()"

    def serialize(self, topic, data, *headersForm):
        if headersForm:  # serialize(topic, headers, data)
            (data,) = headersForm
        return self.serde.serialize(topic, data)

    def close(self) -> None:
        self.serde.close()


class _SerdeDeserializer(Deserializer):
    """``serde.deserializer()``: the serde's read half."""

    def __init__(self, serde: "Serde") -> None:
        self.serde = serde

    def __repr__(self) -> str:
        return f"{self.serde!r}.deserializer()"

    def deserialize(self, topic, data, *headersForm):
        if headersForm:  # deserialize(topic, headers, data)
            (data,) = headersForm
        return self.serde.deserialize(topic, data)

    def close(self) -> None:
        self.serde.close()


class Serde(_Closeable):
    """A serializer/deserializer pair (Kafka ``Serde``). ``serialize(topic, data)`` /
    ``deserialize(topic, data)``; ``serializer()`` / ``deserializer()`` give the two halves as
    Kafka's ``Serializer`` / ``Deserializer`` (what ``createInputTopic`` / ``createOutputTopic``
    take in ported tests); ``close()`` and ``with`` as Java's ``Closeable``.

    ``None`` maps to ``None`` in both directions (Kafka's null handling).
    """

    name = "Serde"

    def serialize(self, topic: str | None, data: Any) -> bytes | None:
        raise NotImplementedError

    def deserialize(self, topic: str | None, data: bytes | None) -> Any:
        raise NotImplementedError

    def serializer(self) -> Serializer:
        """Kafka ``Serde.serializer()``: a ``Serializer`` whose ``serialize(topic, data)`` is this
        serde's."""
        return _SerdeSerializer(self)

    def deserializer(self) -> Deserializer:
        """Kafka ``Serde.deserializer()``: a ``Deserializer`` whose ``deserialize(topic, bytes)``
        is this serde's."""
        return _SerdeDeserializer(self)

    def __repr__(self) -> str:
        return f"Serdes.{self.name}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def _incompatible(self, topic: str | None, data: Any, expected: str) -> SerializationException:
        return IncompatibleTypeException(
            f"{self!r} cannot serialize a {type(data).__name__} ({data!r:.80}) for topic {topic}: "
            f"expected {expected}. Set a matching serde in Consumed/Produced/Repartitioned or "
            "default.key.serde / default.value.serde.", self, data
        )


def javaUtf8Decode(data: bytes) -> str:
    """``new String(data, UTF_8)`` as Java 17 computes it: each malformed sequence becomes one
    U+FFFD, with Java's (not Python's) idea of how many bytes a malformed sequence spans (a
    UTF-8-encoded surrogate is one replacement, a truncated sequence at the end one; Kafka's
    ``StringDeserializer``). A port of ``java.lang.String.decodeUTF8_UTF16`` with replacement on;
    valid UTF-8 decodes as ``data.decode("utf-8")`` does."""
    out: list[str] = []
    sp, sl = 0, len(data)
    while sp < sl:
        b1 = data[sp]
        sp += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 < 0xE0:  # two bytes
            if sp < sl:
                b2 = data[sp]
                if b2 & 0xC0 != 0x80:
                    out.append("\ufffd")  # b2 is read again
                else:
                    sp += 1
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                continue
            out.append("\ufffd")
            break
        elif 0xE0 <= b1 < 0xF0:  # three bytes
            if sp + 1 < sl:
                b2, b3 = data[sp], data[sp + 1]
                if (b1 == 0xE0 and b2 & 0xE0 == 0x80) or b2 & 0xC0 != 0x80 or b3 & 0xC0 != 0x80:
                    out.append("\ufffd")
                    sp += 0 if (b1 == 0xE0 and b2 & 0xE0 == 0x80) or b2 & 0xC0 != 0x80 else 1
                else:
                    sp += 2
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append("\ufffd" if 0xD800 <= c <= 0xDFFF else chr(c))
                continue
            if sp < sl and ((b1 == 0xE0 and data[sp] & 0xE0 == 0x80) or data[sp] & 0xC0 != 0x80):
                out.append("\ufffd")
                continue
            out.append("\ufffd")
            break
        elif 0xF0 <= b1 < 0xF8:  # four bytes
            if sp + 2 < sl:
                b2, b3, b4 = data[sp], data[sp + 1], data[sp + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if b2 & 0xC0 != 0x80 or b3 & 0xC0 != 0x80 or b4 & 0xC0 != 0x80 or not 0x10000 <= uc <= 0x10FFFF:
                    out.append("\ufffd")  # Java's malformed4: the bytes this sequence spans
                    if (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80)
                            or b2 & 0xC0 != 0x80):
                        sp += 0
                    elif b3 & 0xC0 != 0x80:
                        sp += 1
                    else:
                        sp += 2
                else:
                    sp += 3
                    out.append(chr(uc))
                continue
            if b1 > 0xF4 or (sp < sl and ((b1 == 0xF0 and not 0x90 <= data[sp] <= 0xBF)
                                          or (b1 == 0xF4 and data[sp] & 0xF0 != 0x80) or data[sp] & 0xC0 != 0x80)):
                out.append("\ufffd")
                continue
            sp += 1
            out.append("\ufffd")
            if sp < sl and data[sp] & 0xC0 != 0x80:
                continue
            break
        else:
            out.append("\ufffd")
    return "".join(out)


class _StringSerde(Serde):
    name = "String"

    def serialize(self, topic, data):
        if data is None:
            return None
        if not isinstance(data, str):
            raise self._incompatible(topic, data, "str")
        try:
            return data.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: Java's getBytes(UTF_8) writes '?' for each
            return data.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass").encode(
                "utf-8", "replace")

    def deserialize(self, topic, data):
        if data is None:
            return None
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            return javaUtf8Decode(bytes(data))


class _StructSerde(Serde):
    fmt = ">q"
    types: tuple[type, ...] = (int,)
    deserializerName = "Deserializer"  # as Kafka's size error names it

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
            raise SerializationException(f"Size of data received by {self.deserializerName} is not {size}")
        return struct.unpack(self.fmt, data)[0]


class _LongSerde(_StructSerde):
    name, fmt, deserializerName = "Long", ">q", "LongDeserializer"


class _IntegerSerde(_StructSerde):
    name, fmt, deserializerName = "Integer", ">i", "IntegerDeserializer"


class _ShortSerde(_StructSerde):
    name, fmt, deserializerName = "Short", ">h", "ShortDeserializer"


class _DoubleSerde(_StructSerde):
    name, fmt, types = "Double", ">d", (int, float)


class _FloatSerde(_StructSerde):
    name, fmt, types = "Float", ">f", (int, float)


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
            raise SerializationException("Size of data received by BooleanDeserializer is not 1")
        if data[0] > 1:
            signed = data[0] - 256 if data[0] > 127 else data[0]
            raise SerializationException(f"Unexpected byte received by BooleanDeserializer: {signed}")
        return data[0] == 1


class _VoidSerde(Serde):
    name = "Void"

    def serialize(self, topic, data):
        if data is not None:
            raise SerializationException(f"Data should be null for a VoidSerializer (topic {topic}), got {data!r:.80}")
        return None

    def deserialize(self, topic, data):
        if data is not None:
            raise ValueError("Data should be null for a VoidDeserializer.")  # Kafka: IllegalArgumentException
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

    def __init__(self, serialize, deserialize, serializer=None, deserializer=None) -> None:
        self._serialize, self._deserialize = serialize, deserialize
        self._serializer, self._deserializer = serializer, deserializer  # the objects given, if any

    def serializer(self) -> Serializer:
        """The serializer given to ``serdeFrom`` (Kafka's ``WrapperSerde``), or one calling the function."""
        return self._serializer if self._serializer is not None else _SerdeSerializer(self)

    def deserializer(self) -> Deserializer:
        """The deserializer given to ``serdeFrom``, or one calling the function."""
        return self._deserializer if self._deserializer is not None else _SerdeDeserializer(self)

    def close(self) -> None:
        """Closes the serializer and deserializer given to ``serdeFrom`` (Kafka's ``WrapperSerde.close``)."""
        for part in (self._serializer, self._deserializer):
            close = getattr(part, "close", None)
            if callable(close):
                close()

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


class _BytesSerde(_ByteArraySerde):
    """Kafka ``Serdes.Bytes()`` (``org.apache.kafka.common.utils.Bytes``, a comparable, hashable
    byte array): Python's ``bytes`` is that already."""

    name = "Bytes"


class _ByteBufferSerde(_ByteArraySerde):
    """Kafka ``Serdes.ByteBuffer()``: the buffer's bytes (``bytes``, ``bytearray`` or ``memoryview``)."""

    name = "ByteBuffer"


_FIXED_SIZE = {_ShortSerde: 2, _IntegerSerde: 4, _FloatSerde: 4, _LongSerde: 8, _DoubleSerde: 8, _UUIDSerde: 36}
_NULL_ENTRY = -1


class _ListSerde(Serde):
    """Kafka ``Serdes.ListSerde(listClass, inner)``: a strategy byte (0: the inner serde has a fixed
    size, then the null entries' indexes; 1: each entry prefixed by its length, -1 for null), the
    entry count, the entries (``ListSerializer`` / ``ListDeserializer``)."""

    name = "ListSerde"

    def __init__(self, listClass, inner: Serde) -> None:
        self.listClass, self.inner = listClass, inner
        self._size = _FIXED_SIZE.get(type(inner))

    def __repr__(self) -> str:
        return f"Serdes.ListSerde({getattr(self.listClass, '__name__', self.listClass)}, {self.inner!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is _ListSerde and (self.listClass, self.inner) == (other.listClass, other.inner)

    def __hash__(self) -> int:
        return hash((_ListSerde, self.inner))

    def serialize(self, topic, data):
        if data is None:
            return None
        out = bytearray()
        if self._size is not None:
            nulls = [i for i, entry in enumerate(data) if entry is None]
            out += struct.pack(f">bi{len(nulls)}i", 0, len(nulls), *nulls)
        else:
            out.append(1)
        out += struct.pack(">i", len(data))
        for entry in data:
            if entry is None:
                if self._size is None:
                    out += struct.pack(">i", _NULL_ENTRY)
                continue
            encoded = self.inner.serialize(topic, entry)
            if self._size is None:
                out += struct.pack(">i", len(encoded))
            out += encoded
        return bytes(out)

    def deserialize(self, topic, data):
        if data is None:
            return None
        data = bytes(data)
        pos = 0

        def readInt() -> int:
            nonlocal pos
            if pos + 4 > len(data):  # Java: EOFException, wrapped
                raise SerializationException("Unable to deserialize into a List")
            pos += 4
            return struct.unpack_from(">i", data, pos - 4)[0]

        if not data:
            raise SerializationException("Unable to deserialize into a List")
        flag = data[0] - 256 if data[0] > 127 else data[0]
        pos = 1
        if flag not in (0, 1):
            raise SerializationException("Invalid serialization strategy flag value")
        constant = flag == 0
        nulls = {readInt() for _ in range(readInt())} if constant else set()
        if constant and self._size is None:  # Kafka: an unboxing NullPointerException
            raise SerializationException(f"{self!r} has no fixed entry size for data written with one")
        entries = []
        for i in range(readInt()):
            size = self._size if constant else readInt()
            if size == _NULL_ENTRY or i in nulls:
                entries.append(None)
                continue
            if size > 0 and pos >= len(data):
                raise SerializationException("End of the stream was reached prematurely")
            payload = data[pos:pos + size]  # Java's read() may read less: the rest stays zero
            pos += len(payload)
            entries.append(self.inner.deserialize(topic, payload + bytes(size - len(payload))))
        return entries if self.listClass in (None, list) else self.listClass(entries)


try:
    from orjson import dumps as _orjsonDumps
    from orjson import loads as _orjsonLoads
except ImportError:  # pragma: no cover - a dependency; json alone gives the same values
    _orjsonDumps = _orjsonLoads = None

# The exact types of the values _JsonSerde.serialize gives to orjson (see there)
_ORJSON_SAME_SCALARS = frozenset({str, int, bool, type(None)})
_STR = frozenset({str})


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
        # Fast path: orjson (≈3x faster) for a flat dict with str keys, or a flat list, whose
        # values are all of exact type str, int, bool or None. For those orjson writes the same
        # bytes as the json.dumps below (same key order and separators, ints in decimal, the same
        # string escapes for every code point: tests/unit/test_json_serde.py checks all
        # of them); what it refuses (ints beyond 64 bits, lone surrogates) goes to json.dumps,
        # which gives its own value or error. Floats are left to json (its repr differs from
        # orjson's in exponents: 1e+16 / 1e16) and so are subclasses and every other type.
        t = type(data)
        if _orjsonDumps is not None and (
                (t is dict and _ORJSON_SAME_SCALARS.issuperset(map(type, data.values()))
                 and _STR.issuperset(map(type, data)))
                or (t is list and _ORJSON_SAME_SCALARS.issuperset(map(type, data)))):
            try:
                # copied into a bytes object of its own size: orjson's is a larger allocation
                # shrunk in place, and 400K of them kept (a batch's output) pinned 1.6 GB of RSS
                # and ran 4x slower, all in page faults
                return memoryview(_orjsonDumps(data)).tobytes()
            except TypeError:
                pass
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


# The Kafka serializer class and value class of each built-in serde, for Kafka's error texts
for _serde, _serializer, _javaType in (
        (_StringSerde, "StringSerializer", "java.lang.String"), (_LongSerde, "LongSerializer", "java.lang.Long"),
        (_IntegerSerde, "IntegerSerializer", "java.lang.Integer"), (_ShortSerde, "ShortSerializer", "java.lang.Short"),
        (_DoubleSerde, "DoubleSerializer", "java.lang.Double"), (_FloatSerde, "FloatSerializer", "java.lang.Float"),
        (_BooleanSerde, "BooleanSerializer", "java.lang.Boolean"), (_ByteArraySerde, "ByteArraySerializer", "[B"),
        (_BytesSerde, "BytesSerializer", "org.apache.kafka.common.utils.Bytes"),
        (_ByteBufferSerde, "ByteBufferSerializer", "java.nio.ByteBuffer"), (_UUIDSerde, "UUIDSerializer", "java.util.UUID"),
        (_VoidSerde, "VoidSerializer", "java.lang.Void"), (_ListSerde, "ListSerializer", "java.util.List")):
    _serde.javaSerializer, _serde.javaType = "org.apache.kafka.common.serialization." + _serializer, _javaType


class Serdes:
    """Factory of the built-in serdes (Kafka ``Serdes``).

    ``String`` (UTF-8; invalid input decodes to U+FFFD as Java does), ``Long``, ``Integer``,
    ``Short`` (8-, 4-, 2-byte big-endian), ``Double`` and ``Float`` (IEEE 754 big-endian, 8 and 4
    bytes), ``Boolean`` (one byte), ``ByteArray``, ``Bytes`` and ``ByteBuffer`` (raw bytes),
    ``UUID`` (the UUID's text form in UTF-8), ``Void`` (only null) and ``ListSerde`` are
    byte-compatible with Kafka's. ``JSON`` (UTF-8
    JSON of dicts, lists, str, numbers, bool) and ``Pickle`` (any picklable Python object) are
    kspark's additions for Python values. ``serdeFrom`` builds a serde from a serializer and a
    deserializer, or picks the built-in one for a Python type.
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
        """``int`` values from -32768 to 32767 as 2-byte big-endian (Kafka ``Serdes.Short()``)."""
        return _ShortSerde()

    @staticmethod
    def Boolean() -> Serde:
        """``bool`` values as one byte, 1 or 0 (Kafka ``Serdes.Boolean()``)."""
        return _BooleanSerde()

    @staticmethod
    def Bytes() -> Serde:
        """Raw bytes (Kafka ``Serdes.Bytes()``, whose ``Bytes`` wrapper is Python's ``bytes``)."""
        return _BytesSerde()

    @staticmethod
    def ByteBuffer() -> Serde:
        """Raw bytes (Kafka ``Serdes.ByteBuffer()``); read back as ``bytes``."""
        return _ByteBufferSerde()

    @staticmethod
    def ListSerde(listClass, innerSerde: Serde) -> Serde:
        """Lists of ``innerSerde``'s values in Kafka's ``ListSerializer`` format (Kafka
        ``Serdes.ListSerde(listClass, serde)``): ``listClass`` (``list``, ``tuple``, or any
        callable taking the entries) builds what is read back.

        Raises
        ------
        ValueError
            If ``listClass`` or ``innerSerde`` is None (Kafka: ``IllegalArgumentException``).
        """
        if listClass is None or innerSerde is None:
            raise ValueError('ListDeserializer requires both "listClass" and "innerDeserializer" parameters to '
                             "be provided during initialization")
        if not (hasattr(innerSerde, "serialize") and hasattr(innerSerde, "deserialize")):
            raise TypeError(f"Serdes.ListSerde(): innerSerde must be a Serde, got {type(innerSerde).__name__}")
        return _ListSerde(listClass, innerSerde)

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
                raise ValueError("Unknown class for built-in serializer. Supported types are: str, int, float, bytes, "
                                 f"bool, uuid.UUID, NoneType (got {serializerOrType.__name__})")
            return serde()
        serialize = getattr(serializerOrType, "serialize", serializerOrType)
        deserialize = getattr(deserializer, "deserialize", deserializer)
        if not callable(serialize):
            raise TypeError("serializer must not be null")
        if not callable(deserialize):
            raise TypeError("deserializer must not be null")
        return _FunctionSerde(serialize, deserialize,
                              serializerOrType if serialize is not serializerOrType else None,
                              deserializer if deserialize is not deserializer else None)
