"""Foreign-key table-table joins (KIP-213): scenarios ported from Kafka's
``KTableKTableForeignKeyJoinScenarioTest`` (Kafka Streams 4.3, ``streams/src/test/java/org/apache/
kafka/streams/kstream/internals``), one test per Java method, each naming the method it ports.

The Java tests are parameterized over ``withHeaders`` (the DSL store format with headers,
``StreamsTestUtils.maybeSetDslStoreFormatHeaders``); kspark has one store format, so each case is
ported once. The spec has no rule id for FK joins; the output timestamps follow T-19 and are not
asserted by these Java tests (they read ``readKeyValuesToMap``).
"""

import pytest

from kspark import Consumed, Materialized, Produced, Serdes, StreamsBuilder
from kspark.serialization import Serde
from kspark.testing import TopologyTestDriver

LEFT_TABLE = "left_table"
RIGHT_TABLE = "right_table"
OUTPUT = "output-topic"


def validateTopologyCanProcessData(builder: StreamsBuilder) -> None:
    """Kafka's ``validateTopologyCanProcessData``: Integer keys and String values by default, the
    left entry ``1 -> "999-alpha"`` and the right entry ``999 -> "beta"`` give the two-level join
    result under key 1."""
    config = {"default.key.serde": Serdes.Integer(), "default.value.serde": Serdes.String()}
    with TopologyTestDriver(builder.build(), config) as driver:
        aTopic = driver.createInputTopic("A", Serdes.Integer(), Serdes.String())
        bTopic = driver.createInputTopic("B", Serdes.Integer(), Serdes.String())
        output = driver.createOutputTopic("output", Serdes.Integer(), Serdes.String())
        aTopic.pipeInput(1, "999-alpha")
        bTopic.pipeInput(999, "beta")
        assert output.readKeyValuesToMap() == {1: "(999-alpha,(999-alpha,beta))"}


def fkThenEquiJoin(aTable, bTable, fkMaterialized, equiMaterialized=None):
    """The topology all the ``shouldWorkWithDefault*`` tests share: ``aTable`` FK-joined with
    ``bTable`` on the number before the first ``-``, then equi-joined with ``aTable`` again."""
    fkJoinResult = aTable.join(bTable, lambda value: int(value.split("-")[0]),
                               lambda aVal, bVal: f"({aVal},{bVal})", fkMaterialized)
    joiner = lambda aVal, fkJoinVal: f"({aVal},{fkJoinVal})"  # noqa: E731
    if equiMaterialized is None:
        return aTable.join(fkJoinResult, joiner)
    return aTable.join(fkJoinResult, joiner, equiMaterialized)


def test_shouldWorkWithDefaultSerdes():
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithDefaultSerdes: no serde anywhere, the
    default serdes serve the source tables, the subscription and response topics and the stores."""
    builder = StreamsBuilder()
    aTable = builder.table("A")
    bTable = builder.table("B")
    finalJoinResult = fkThenEquiJoin(aTable, bTable, Materialized.as_("asdf"))
    finalJoinResult.toStream().to("output")
    validateTopologyCanProcessData(builder)


def test_shouldWorkWithDefaultAndConsumedSerdes():
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithDefaultAndConsumedSerdes."""
    builder = StreamsBuilder()
    aTable = builder.table("A", Consumed.with_(Serdes.Integer(), Serdes.String()))
    bTable = builder.table("B")
    finalJoinResult = fkThenEquiJoin(aTable, bTable, Materialized.as_("asdf"))
    finalJoinResult.toStream().to("output")
    validateTopologyCanProcessData(builder)


def test_shouldWorkWithDefaultAndJoinResultSerdes():
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithDefaultAndJoinResultSerdes."""
    builder = StreamsBuilder()
    aTable = builder.table("A")
    bTable = builder.table("B")
    finalJoinResult = fkThenEquiJoin(
        aTable, bTable, Materialized.as_("asdf").withKeySerde(Serdes.Integer()).withValueSerde(Serdes.String()))
    finalJoinResult.toStream().to("output")
    validateTopologyCanProcessData(builder)


def test_shouldWorkWithDefaultAndEquiJoinResultSerdes():
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithDefaultAndEquiJoinResultSerdes."""
    builder = StreamsBuilder()
    aTable = builder.table("A")
    bTable = builder.table("B")
    finalJoinResult = fkThenEquiJoin(aTable, bTable, Materialized.as_("asdf"),
                                     Materialized.with_(Serdes.Integer(), Serdes.String()))
    finalJoinResult.toStream().to("output")
    validateTopologyCanProcessData(builder)


def test_shouldWorkWithDefaultAndProducedSerdes():
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithDefaultAndProducedSerdes."""
    builder = StreamsBuilder()
    aTable = builder.table("A")
    bTable = builder.table("B")
    finalJoinResult = fkThenEquiJoin(aTable, bTable, Materialized.as_("asdf"))
    finalJoinResult.toStream().to("output", Produced.with_(Serdes.Integer(), Serdes.String()))
    validateTopologyCanProcessData(builder)


class UniqueTopicSerdeScope:
    """Kafka's ``org.apache.kafka.streams.utils.UniqueTopicSerdeScope``: serdes that record the
    topic (``<topic>--key`` / ``<topic>--value``) of every serialization of a non-null value and
    check that each topic always carries one type."""

    def __init__(self) -> None:
        self.topicTypeRegistry: dict[str, type] = {}

    def decorateSerde(self, delegate: Serde, isKey: bool) -> Serde:
        scope = self

        class UniqueTopicSerdeDecorator(Serde):
            name = delegate.name

            def serialize(self, topic, data):
                if data is not None:
                    key = topic + ("--key" if isKey else "--value")
                    registered = scope.topicTypeRegistry.setdefault(key, type(data))
                    assert registered is type(data), f"key[{key}] data[{data}][{type(data)}]"
                return delegate.serialize(topic, data)

            def deserialize(self, topic, data):
                return delegate.deserialize(topic, data)

        return UniqueTopicSerdeDecorator()

    def registeredTopics(self) -> set[str]:
        return set(self.topicTypeRegistry)


def test_shouldUseExpectedTopicsWithSerde():
    """KTableKTableForeignKeyJoinScenarioTest.shouldUseExpectedTopicsWithSerde: the user's serdes
    are called for the subscription topic, its three pseudo-topics (``-pk``, ``-fk``, ``-vh``), the
    response topic, the two source changelogs and the output topic, and for no other topic; the
    internal names carry the application id."""
    applicationId = "ktable-ktable-joinOnForeignKey"
    streamsConfig = {"application.id": applicationId}
    serdeScope = UniqueTopicSerdeScope()
    builder = StreamsBuilder()
    left = builder.table(LEFT_TABLE, Consumed.with_(serdeScope.decorateSerde(Serdes.Integer(), True),
                                                    serdeScope.decorateSerde(Serdes.String(), False)))
    right = builder.table(RIGHT_TABLE, Consumed.with_(serdeScope.decorateSerde(Serdes.Integer(), True),
                                                      serdeScope.decorateSerde(Serdes.String(), False)))
    left.join(
        right,
        lambda value: int(value.split("|")[1]),
        lambda value1, value2: f"({value1},{value2})",
        Materialized.with_(None, serdeScope.decorateSerde(Serdes.String(), False)),
    ).toStream().to(OUTPUT)

    topology = builder.build(streamsConfig)
    with TopologyTestDriver(topology, streamsConfig) as driver:
        leftInput = driver.createInputTopic(LEFT_TABLE, Serdes.Integer(), Serdes.String())
        rightInput = driver.createInputTopic(RIGHT_TABLE, Serdes.Integer(), Serdes.String())
        leftInput.pipeInput(2, "lhsValue1|1")
        rightInput.pipeInput(1, "rhsValue1")
    assert serdeScope.registeredTopics() == {
        # expected pseudo-topics
        applicationId + "-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic-fk--key",
        applicationId + "-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic-pk--key",
        applicationId + "-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic-vh--value",
        # internal topics
        applicationId + "-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic--key",
        applicationId + "-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic--key",
        applicationId + "-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic--value",
        applicationId + "-left_table-STATE-STORE-0000000000-changelog--key",
        applicationId + "-left_table-STATE-STORE-0000000000-changelog--value",
        applicationId + "-right_table-STATE-STORE-0000000003-changelog--key",
        applicationId + "-right_table-STATE-STORE-0000000003-changelog--value",
        # output topics
        "output-topic--key",
        "output-topic--value",
    }


def createTopologyTestDriver(builder: StreamsBuilder) -> TopologyTestDriver:
    """Kafka's ``createTopologyTestDriver``: String keys and values by default."""
    config = {"application.id": "test-app", "bootstrap.servers": "dummy:1234",
              "default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
    return TopologyTestDriver(builder.build(), config)


def compositeKeyJoin(foreignKeyExtractor, leftValues):
    """The two ``shouldWorkWithCompositeKey*`` tests: a left table keyed ``producerId:productId``
    FK-joined with a right table keyed ``producerId``; returns the output as a map."""
    builder = StreamsBuilder()
    # Left table keyed by <producer_id, product_id>
    leftTable = builder.table("left_table", Consumed.with_(Serdes.String(), Serdes.String()))
    # Right table keyed by producer_id
    rightTable = builder.table("right_table", Consumed.with_(Serdes.String(), Serdes.String()))
    joined = leftTable.join(rightTable, foreignKeyExtractor,
                            lambda leftValue, rightValue: f"({leftValue},{rightValue})", Materialized.as_("store"))
    joined.toStream().to("output")
    with createTopologyTestDriver(builder) as driver:
        leftInput = driver.createInputTopic("left_table", Serdes.String(), Serdes.String())
        rightInput = driver.createInputTopic("right_table", Serdes.String(), Serdes.String())
        output = driver.createOutputTopic("output", Serdes.String(), Serdes.String())
        for key, value in leftValues:
            leftInput.pipeInput(key, value)
        rightInput.pipeInput("producer1", "producer1-data")
        rightInput.pipeInput("producer2", "producer2-data")
        return output.readKeyValuesToMap()


def test_shouldWorkWithCompositeKeyAndProducerIdInValue():
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithCompositeKeyAndProducerIdInValue: the
    one-argument extractor reads the foreign key from the value."""
    # Key format: "producerId:productId"; left value format: "producerId|productData"
    result = compositeKeyJoin(lambda value: value.split("|")[0], [
        ("producer1:product1", "producer1|product1-data"),
        ("producer1:product2", "producer1|product2-data"),
        ("producer2:product1", "producer2|product1-data"),
    ])
    assert result == {
        "producer1:product1": "(producer1|product1-data,producer1-data)",
        "producer1:product2": "(producer1|product2-data,producer1-data)",
        "producer2:product1": "(producer2|product1-data,producer2-data)",
    }


def test_shouldWorkWithCompositeKeyAndBiFunctionExtractor():
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithCompositeKeyAndBiFunctionExtractor:
    the two-argument extractor (Kafka's ``BiFunction``, KIP-1104) reads it from the key."""
    result = compositeKeyJoin(lambda key, value: key.split(":")[0], [
        ("producer1:product1", "product1-data"),
        ("producer1:product2", "product2-data"),
        ("producer2:product1", "product1-data"),
    ])
    assert result == {
        "producer1:product1": "(product1-data,producer1-data)",
        "producer1:product2": "(product2-data,producer1-data)",
        "producer2:product1": "(product1-data,producer2-data)",
    }
