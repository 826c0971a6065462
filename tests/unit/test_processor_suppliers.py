"""Issue 19 item 9: processor suppliers as Kafka has them (``get()``, ``stores()`` =
ConnectedStoreProvider, rule E-1) and ``MockProcessorContext`` for unit tests of one processor."""

import pytest

from kspark import ContextualProcessor, KeyValue, PunctuationType, Record, Stores, StreamsBuilder, Topology
from kspark.testing import MockProcessorContext, TestRecord, TopologyTestDriver


class Dedup(ContextualProcessor):
    def init(self, context):
        super().init(context)
        self.seen = context.getStateStore("seen")

    def process(self, record):
        if self.seen.get(record.value()) is None:
            self.seen.put(record.value(), record.timestamp())
            self.context().forward(record)


class DedupSupplier:
    """A Kafka ``ProcessorSupplier`` that is also a ``ConnectedStoreProvider``."""

    def get(self):
        return Dedup()

    def stores(self):
        return [Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("seen"))]


def test_process_takes_a_supplier_object_and_connects_its_stores():
    b = StreamsBuilder()
    b.stream("in").process(DedupSupplier()).to("out")
    topology = b.build()
    assert "Processor: KSTREAM-PROCESSOR-0000000001 (stores: [seen])" in str(topology.describe())
    with TopologyTestDriver(topology) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", "x"), ("b", "x"), ("c", "y")], 1, 1)
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("a", "x", 1), TestRecord("c", "y", 3)]
        assert list(d.getKeyValueStore("seen").all()) == [KeyValue("x", 1), KeyValue("y", 3)]


def test_topology_add_processor_takes_a_supplier_object():
    topology = Topology().addSource("src", "in").addProcessor("dedup", DedupSupplier(), "src").addSink("sink", "out", "dedup")
    with TopologyTestDriver(topology) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", "x"), ("b", "x")], 1, 1)
        assert d.createOutputTopic("out").readKeyValuesToList() == [KeyValue("a", "x")]


def test_a_supplier_returning_the_same_processor_twice_is_refused():
    shared = Dedup()
    with pytest.raises(TypeError, match="must return a new object each time it is called"):
        StreamsBuilder().stream("in").process(lambda: shared)


def test_mock_processor_context_captures_forwards_punctuators_and_stores():
    class Counter(ContextualProcessor):
        def init(self, context):
            super().init(context)
            self.store = context.getStateStore("counts")
            context.schedule(1000, PunctuationType.WALL_CLOCK_TIME, self.flush)

        def process(self, record):
            self.store.put(record.key(), (self.store.get(record.key()) or 0) + 1)

        def flush(self, timestamp):
            for kv in self.store.all():
                self.context().forward(Record(kv.key, kv.value, timestamp), "sink")
            self.context().commit()

    context = MockProcessorContext()
    store = Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("counts")).withLoggingDisabled().build()
    store.init(context.getStateStoreContext(), store)
    context.addStateStore(store)
    processor = Counter()
    processor.init(context)
    context.setRecordMetadata("in", 0, 7)
    processor.process(Record("a", "x", 1))
    processor.process(Record("a", "y", 2))
    assert context.forwarded() == [] and not context.committed()
    [punctuator] = context.scheduledPunctuators()
    assert (punctuator.getIntervalMs(), punctuator.getType(), punctuator.cancelled()) == (
        1000, PunctuationType.WALL_CLOCK_TIME, False)
    punctuator.getPunctuator()(5000)
    assert [(f.record(), f.childName()) for f in context.forwarded("sink")] == [(Record("a", 2, 5000), "sink")]
    assert context.forwarded("other") == [] and context.committed()
    assert context.recordMetadata() == ("in", 0, 7) and context.applicationId() == "dummy-application-id"
    context.resetForwards()
    assert context.forwarded() == []
