"""FINDINGS F9: the Processor API as a Kafka port uses it: ``RecordMetadata``'s methods,
``FixedKeyProcessor``/``ContextualFixedKeyProcessor``/``FixedKeyRecord`` for ``processValues``,
and mutable ``Headers`` with ``RecordHeader`` (expected records: what Kafka 4.3.1's driver writes
for the same topologies, tests/conformance scenarios ``process.metadata``, ``processValues``,
``process.headers``)."""

import pickle

import pytest

from kspark import (ContextualFixedKeyProcessor, ContextualProcessor, FixedKeyRecord, Record, Serdes, Stores,
                    StreamsBuilder)
from kspark.processor import Headers, RecordHeader, RecordMetadata
from kspark.testing import TestRecord, TopologyTestDriver

STRINGS = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}


def run(build, pipes):
    b = StreamsBuilder()
    build(b)
    with TopologyTestDriver(b.build(), STRINGS) as d:
        topic = d.createInputTopic("in")
        for key, value, ts, headers in pipes:
            topic.pipeInput(TestRecord(key, value, ts, headers))
        return d.createOutputTopic("out").readRecordsToList()


def test_record_metadata_has_kafkas_methods():
    class Metadata(ContextualProcessor):
        def process(self, record):
            md = self.context().recordMetadata()
            self.context().forward(record.withValue(f"{md.topic()}/{md.partition()}/{md.offset()}"))

    out = run(lambda b: b.stream("in").process(Metadata).to("out"), [("a", "x", 5, ()), ("b", "y", 6, ())])
    assert out == [TestRecord("a", "in/0/0", 5), TestRecord("b", "in/0/1", 6)]
    assert RecordMetadata("t", 1, 2) == ("t", 1, 2)  # still unpacks as (topic, partition, offset)
    # a Spark task's checkpoint pickles its cached records' metadata (restoring it failed the task)
    restored = pickle.loads(pickle.dumps(RecordMetadata("t", 1, 2)))
    assert type(restored) is RecordMetadata and (restored.topic(), restored.partition(), restored.offset()) == ("t", 1, 2)


def test_process_values_with_a_contextual_fixed_key_processor():
    class Numbering(ContextualFixedKeyProcessor):
        def init(self, context):
            super().init(context)
            self.store = context.getStateStore("counts")

        def process(self, record):
            assert type(record) is FixedKeyRecord
            n = (self.store.get(record.key()) or 0) + 1
            self.store.put(record.key(), n)
            self.context().forward(record.withValue(f"{record.value()}#{n}"))

    def build(b):
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("counts"), Serdes.String(),
                                                    Serdes.Long()))
        b.stream("in").processValues(Numbering, "counts").to("out")

    out = run(build, [("a", "x", 1, ()), ("a", "y", 2, ()), ("b", "z", 3, ())])
    assert out == [TestRecord("a", "x#1", 1), TestRecord("a", "y#2", 2), TestRecord("b", "z#1", 3)]
    with pytest.raises(AttributeError, match="fixed-key processor may not change the key"):
        FixedKeyRecord._of(Record("a", 1, 0)).withKey("b")


def test_headers_added_to_a_record_are_written_with_it():
    class AddHeader(ContextualProcessor):
        def process(self, record):
            out = record.withHeaders(record.headers())  # a copy: the input keeps its headers
            out.headers().add(RecordHeader("len", str(len(record.value())).encode()))
            assert len(record.headers()) == len(out.headers()) - 1
            self.context().forward(out)

    out = run(lambda b: b.stream("in").process(AddHeader).to("out"),
              [("a", "xyz", 1, (("h", b"\x01"),)), ("b", "", 2, ())])
    assert [(r.value(), r.headers()) for r in out] == [("xyz", (("h", b"\x01"), ("len", b"3"))), ("", (("len", b"0"),))]


def test_headers_api():
    h = Headers([("a", b"1")]).add("b", b"2").add(RecordHeader("a", b"3"))
    assert [(x.key(), x.value()) for x in h] == [("a", b"1"), ("b", b"2"), ("a", b"3")]
    assert h.lastHeader("a") == RecordHeader("a", b"3") and h.lastHeader("z") is None
    assert h.headers("a") == [("a", b"1"), ("a", b"3")]
    h.remove("a")
    assert h == (("b", b"2"),) and len(h) == 1 and h.toArray() == [RecordHeader("b", b"2")]
    r = Record("k", "v", 0, h)
    h.add("c", None)  # the record copied h
    assert r.headers() == (("b", b"2"),)
    r.headers().add("c", None)  # a record's own headers change the record
    assert r.headers() == (("b", b"2"), ("c", None)) and r.withValue("w").headers() == r.headers()
