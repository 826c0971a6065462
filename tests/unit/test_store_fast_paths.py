"""Fast paths of a store's reads and of a KTable source's writes give what the general path
gives (rule E-2: ``get`` returns the value put, never an alias of it; E-5: the record cache).

- ``_StoreBase._deserializeFrozen`` keeps the JSON serde's value of stored bytes that decode to
  a flat dict or list and returns a shallow copy of it on later reads, in place of decoding the
  bytes again; ``_thaw`` inlines that read for ``ValueAndTimestamp`` values.
- ``_StoreBase._keyBytes`` encodes a str key itself where the key serde is ``Serdes.String()``.
- ``KTableSource`` with the record cache serializes an update once, for the store and the cache.
"""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Consumed, Materialized, Produced, Serdes, StreamsBuilder, ValueAndTimestamp
from kspark.serialization import Serde
from kspark.state._stores import KeyValueStore, TimestampedKeyValueStore
from kspark.testing import TopologyTestDriver

jsonValues = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=10,
)


def store(cls=KeyValueStore, valueSerde=None):
    return cls("s", Serdes.String(), valueSerde or Serdes.JSON(), True)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(value=jsonValues, timestamped=st.booleans())
def test_every_read_returns_a_new_value_equal_to_a_decoding_of_the_bytes(value, timestamped):
    s = store(TimestampedKeyValueStore if timestamped else KeyValueStore)
    s.put("k", ValueAndTimestamp(value, 7) if timestamped else value)
    expected = json.loads(json.dumps(value))  # what decoding the stored bytes gives
    reads = [s.get("k") for _ in range(3)]  # the first decodes, the others may use the memo
    for read in reads:
        got = read.value if timestamped else read
        assert repr(got) == repr(expected)
        if timestamped:
            assert read.timestamp == 7
    values = [r.value if timestamped else r for r in reads]
    if isinstance(expected, (dict, list)):
        assert len({id(v) for v in values}) == 3  # never the same object twice
        values[0].clear() if isinstance(values[0], dict) else values[0].append("changed")
        assert repr(values[1]) == repr(expected)  # a change to one read is not in another
        after = s.get("k")
        assert repr(after.value if timestamped else after) == repr(expected)


def test_a_flat_value_is_decoded_once_and_copied_after():
    s = store()
    s.put("k", {"code": "005930", "eps": "6564", "n": 1, "ok": True, "none": None})
    first = s.get("k")
    assert s._thawed is not None and list(s._thawed.values()) == [first]
    second = s.get("k")
    assert second == first and second is not first
    second["eps"] = "0"
    assert s.get("k")["eps"] == "6564"
    s.put("k", {"code": "005930", "eps": "7000"})  # new bytes: decoded again
    assert s.get("k") == {"code": "005930", "eps": "7000"}


def test_nested_values_are_decoded_at_every_read():
    s = store()
    s.put("k", {"inner": {"a": [1]}})
    first = s.get("k")
    first["inner"]["a"].append(2)
    assert s.get("k") == {"inner": {"a": [1]}}
    assert not s._thawed  # nothing kept: a shallow copy would share "inner"


class CountingJson(Serde):
    """A JSON serde of the user's: deserialize may have effects, so every read calls it."""

    def __init__(self):
        self.reads = 0
        self.writes = 0

    def serialize(self, topic, data):
        self.writes += 1
        return Serdes.JSON().serialize(topic, data)

    def deserialize(self, topic, data):
        self.reads += 1
        return Serdes.JSON().deserialize(topic, data)


def test_only_the_built_in_json_serde_is_read_from_the_memo():
    serde = CountingJson()
    s = store(valueSerde=serde)
    s.put("k", {"a": "b"})
    assert [s.get("k") for _ in range(3)] == [{"a": "b"}] * 3
    assert serde.reads == 3 and s._thawed is None


def test_string_keys_are_the_string_serdes_bytes():
    s = store()
    for key in ("plain", "삼성전자", "", "lone \ud800 surrogate"):
        assert s._keyBytes(key) == Serdes.String().serialize("s", key)
        s.put(key, {"key": key.encode("utf-8", "surrogatepass").hex()})
        assert s.get(key) == {"key": key.encode("utf-8", "surrogatepass").hex()}
    assert s._keyBytes("lone \ud800 surrogate") == b"lone ? surrogate"  # Java's getBytes(UTF_8)


def table(cacheBytes: int, serde) -> tuple[list, list]:
    """A cached KTable source (its store read by a stream-table join): the join's output and the
    store's content, with the value serde's writes."""
    b = StreamsBuilder()
    t = b.table("valuations", Consumed.with_(Serdes.String(), serde), Materialized.as_("in-force"))
    b.stream("prices", Consumed.with_(Serdes.String(), Serdes.JSON())).join(t, lambda p, v: {**p, **v}).to("out")
    t.toStream().to("changes", Produced.with_(Serdes.String(), Serdes.JSON()))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": cacheBytes}) as d:
        json = Serdes.JSON()
        valuations = d.createInputTopic("valuations", Serdes.String(), json)
        prices = d.createInputTopic("prices", Serdes.String(), json)
        valuations.pipeInput("a", {"eps": "1"}, 1)
        prices.pipeInput("a", {"close": "10"}, 2)
        valuations.pipeInput("a", {"eps": "2"}, 3)
        valuations.pipeInput("b", {"eps": "3"}, 3)
        prices.pipeInput("a", {"close": "11"}, 4)
        out = d.createOutputTopic("out").readKeyValuesToList()
        changes = d.createOutputTopic("changes").readKeyValuesToList()
        stored = sorted((kv.key, kv.value) for kv in d.getTimestampedKeyValueStore("in-force").all())
    return out, changes, stored


def test_a_cached_ktable_source_serializes_each_update_once():
    # E-5: TTD commits after every record, so each cached update is flushed and forwarded
    expected = [("a", {"close": "10", "eps": "1"}), ("a", {"close": "11", "eps": "2"})]
    for cacheBytes in (10_000_000, 0):
        serde = CountingJson()
        out, changes, stored = table(cacheBytes, serde)
        assert [(kv.key, kv.value) for kv in out] == expected
        assert [(kv.key, kv.value) for kv in changes] == [("a", {"eps": "1"}), ("a", {"eps": "2"}), ("b", {"eps": "3"})]
        assert stored == [("a", ValueAndTimestamp({"eps": "2"}, 3)), ("b", ValueAndTimestamp({"eps": "3"}, 3))]
        # one serialization per update, what the store and the cache hold (the cache serialized
        # the same value again before: 6 with the cache)
        assert serde.writes == 3, (cacheBytes, serde.writes)


def test_the_kept_values_are_bounded_by_the_store_size_or_4096():
    from kspark.state._stores import _THAWED_ENTRIES

    s = store()  # one key whose value changes: the values of the past are let go
    for i in range(_THAWED_ENTRIES + 10):
        s.put("k", {"i": i})
        assert s.get("k") == {"i": i}
    assert 0 < len(s._thawed) <= _THAWED_ENTRIES
    many = store()  # more keys than 4,096, each read again and again: all of them kept
    n = _THAWED_ENTRIES + 100
    for i in range(n):
        many.put(f"k{i}", {"i": i})
    for _ in range(2):
        assert [many.get(f"k{i}") for i in range(n)] == [{"i": i} for i in range(n)]
    assert len(many._thawed) == n


def test_get_value_is_get_then_value():
    # TimestampedKeyValueStore._getValue, the fused stream-table joins' read
    s = store(TimestampedKeyValueStore)
    s.put("flat", ValueAndTimestamp({"eps": "1", "n": 2}, 5))
    s.put("nested", ValueAndTimestamp({"inner": [1, {"a": None}]}, 6))
    s.put("text", ValueAndTimestamp("plain", 7))
    for key in ("flat", "nested", "text", "absent", "flat"):
        found = s.get(key)
        got = s._getValue(key)
        assert got == (None if found is None else found.value)
        if isinstance(got, dict):
            got.clear()  # a new object: the store and later reads keep the value
            assert s._getValue(key) == found.value
