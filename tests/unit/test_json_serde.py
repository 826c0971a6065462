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
