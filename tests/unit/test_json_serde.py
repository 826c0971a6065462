"""``Serdes.JSON()`` reads with orjson for speed (issue 7) but must return exactly what
``json.loads`` returns, and fail where it fails (SerializationException, rule E-1 handlers)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Serdes
from kspark.serialization import SerializationException

JSON = Serdes.JSON()

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(value=values, compact=st.booleans(), ascii=st.booleans())
def test_deserialize_equals_json_loads(value, compact, ascii):
    text = json.dumps(value, separators=(",", ":") if compact else None, ensure_ascii=ascii).encode("utf-8")
    # repr: tells 1 from 1.0, -0.0 from 0.0, nan from None
    assert repr(JSON.deserialize("t", text)) == repr(json.loads(text))


@pytest.mark.parametrize("text, expected", [
    (b"18446744073709551616", 18446744073709551616),            # beyond 64 bits stays an int
    (b"-9223372036854775809", -9223372036854775809),
    (b'{"a":"x","b":18446744073709551616}', {"a": "x", "b": 18446744073709551616}),  # in a flat dict
    (b'["x",[1,-9223372036854775809]]', ["x", [1, -9223372036854775809]]),          # nested
    (b"[1e400, NaN]", "[inf, nan]"),                             # orjson refuses, json reads
    (b"\xef\xbb\xbf{\"a\": 1}", {"a": 1}),                      # UTF-8 BOM
    (b"\"\\ud800\"", "\ud800"),                                 # lone surrogate escape
])
def test_inputs_orjson_reads_differently_get_json_loads_values(text, expected):
    value = JSON.deserialize("t", text)
    assert (repr(value) if isinstance(expected, str) and expected.startswith("[") else value) == expected


def test_invalid_json_raises_serialization_exception_naming_the_topic():
    with pytest.raises(SerializationException, match="cannot deserialize data for topic prices"):
        JSON.deserialize("prices", b"{bad")


# -- serialize: orjson's fast path for flat values of str, int, bool and None (_JsonSerde.serialize)
def jsonDumps(value) -> bytes:
    """What the serde wrote before its fast path, and still writes for everything else."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def test_serialize_escapes_every_code_point_as_json_dumps():
    # the fast path's condition: orjson escapes each character as json.dumps(ensure_ascii=False)
    # does (keys and values); checked for all of Unicode but the surrogates, 4,096 at a time
    codePoints = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for i in range(0, len(codePoints), 4096):
        text = "".join(map(chr, codePoints[i:i + 4096]))
        for value in ({text: text, "n": 1}, [text, None, True]):
            assert JSON.serialize("t", value) == jsonDumps(value), hex(codePoints[i])


scalars = st.none() | st.booleans() | st.integers() | st.text()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(value=st.dictionaries(st.text(max_size=8), scalars, max_size=8) | st.lists(scalars, max_size=8) | values)
def test_serialize_writes_the_bytes_json_dumps_writes(value):
    # flat dicts and lists take the fast path (integers beyond 64 bits and lone surrogates fall
    # back to json inside it); nested values, floats and NaN do not
    if value is None:  # null: no bytes (Kafka's serializers)
        assert JSON.serialize("t", value) is None
        return
    try:
        expected = jsonDumps(value)
    except UnicodeEncodeError:  # a lone surrogate: both fail the same way
        with pytest.raises(SerializationException):
            JSON.serialize("t", value)
        return
    assert JSON.serialize("t", value) == expected


@pytest.mark.parametrize("value", [
    {"big": 2**64}, {"small": -2**63 - 1}, [2**70],       # orjson refuses: json writes them
    {1: "int key"}, {None: 1, True: 2},                     # keys json converts, orjson refuses
    {"f": 1e16}, {"f": 1e-7}, [float("nan"), float("inf")],  # floats stay with json (1e+16, NaN)
    (1, "tuple"), {"sub": True.__class__(1)},
])
def test_serialize_values_outside_the_fast_path(value):
    assert JSON.serialize("t", value) == jsonDumps(value)


def test_serialize_fails_as_json_does():
    from enum import Enum
    from uuid import UUID

    class Colour(Enum):
        RED = "red"

    for value in ({"s": "\ud800"}, {"u": UUID(int=1)}, [Colour.RED], {"o": object()}):
        with pytest.raises(SerializationException):
            JSON.serialize("t", value)  # orjson writes a UUID and an Enum; json refuses them
