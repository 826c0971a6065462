"""Stream-table joins against versioned tables (KIP-914) and with a grace period (KIP-923),
ported from Kafka 4.3's own tests, each test naming the Java method it ports:

- ``KStreamKTableJoinTest`` (``kstream/internals``): the grace-period checks and buffering cases
  (rule J-5);
- ``StreamTableJoinIntegrationTest`` and ``StreamTableJoinWithGraceIntegrationTest``
  (``integration``; both run on ``TopologyTestDriver`` through ``AbstractJoinIntegrationTest``): the
  shared 23-record input with out-of-order table updates, joined as of each stream record's
  timestamp (rule J-2), without and with a 2 ms grace period.

The Java tests are parameterized over ``withHeaders`` (the DSL store format with headers) or
``cacheEnabled``; kspark has one store format, so ``withHeaders`` cases are ported once, and the
cache cases run with and without ``statestore.cache.max.bytes = 0`` as Kafka's do.
"""

from datetime import timedelta

import pytest

from kspark import Consumed, Joined, Materialized, Serdes, Stores, StreamsBuilder
from kspark.processor import ContextualProcessor
from kspark.testing import TestRecord, TopologyTestDriver


def js(x):
    """Java's String.valueOf for the joiners' inputs."""
    return "null" if x is None else str(x)


def TOSTRING_JOINER(value1, value2):  # noqa: N802 - Kafka's MockValueJoiner.TOSTRING_JOINER
    return f"{js(value1)}+{js(value2)}"


class MockApiProcessor(ContextualProcessor):
    """Kafka's ``MockApiProcessor``: records (key, value, timestamp) of what reaches it."""

    def __init__(self, processed: list) -> None:
        self.processed = processed

    def process(self, record) -> None:
        self.processed.append((record.key(), record.value(), record.timestamp()))


class KStreamKTableJoinTest:
    """Kafka's fixture: ``streamTopic`` joined with ``tableTopic2``, a versioned table (5 min
    history) read through ``Joined.with(Integer, String, String, "Grace", grace)``; Integer keys,
    String values, input topics starting at time 0 with no auto-advance."""

    expectedKeys = [0, 1, 2, 3]

    def __init__(self, grace: timedelta) -> None:
        self.processed: list = []
        builder = StreamsBuilder()
        consumed = Consumed.with_(Serdes.Integer(), Serdes.String())
        stream = builder.stream("streamTopic", consumed)
        table = builder.table("tableTopic2", consumed,
                              Materialized.as_(Stores.persistentVersionedKeyValueStore("V-grace", timedelta(minutes=5))))
        stream.join(table, TOSTRING_JOINER,
                    Joined.with_(Serdes.Integer(), Serdes.String(), Serdes.String(), "Grace", grace)
                    ).process(lambda: MockApiProcessor(self.processed))
        props = {"application.id": "kstream-ktable-join-test",
                 "default.key.serde": Serdes.Integer(), "default.value.serde": Serdes.String()}
        self.driver = TopologyTestDriver(builder.build(), props)
        self.inputStreamTopic = self.driver.createInputTopic("streamTopic", Serdes.Integer(), Serdes.String(), 0, 0)
        self.inputTableTopic = self.driver.createInputTopic("tableTopic2", Serdes.Integer(), Serdes.String(), 0, 0)

    def pushToStream(self, messageCount: int, valuePrefix: str) -> None:
        for i in range(messageCount):
            self.inputStreamTopic.pipeInput(self.expectedKeys[i], valuePrefix + str(self.expectedKeys[i]), i)

    def pushToTableNonRandom(self, messageCount: int, valuePrefix: str) -> None:
        for i in range(messageCount):
            self.inputTableTopic.pipeInput(self.expectedKeys[i], valuePrefix + str(self.expectedKeys[i]), 0)

    def checkAndClearProcessResult(self, *expected) -> None:
        assert self.processed == list(expected)
        self.processed.clear()


@pytest.fixture
def makeJoin():
    opened = []

    def make(grace):
        t = KStreamKTableJoinTest(grace)
        opened.append(t)
        return t

    yield make
    for t in opened:
        t.driver.close()


def test_shouldDelayJoinByGracePeriod(makeJoin):
    """KStreamKTableJoinTest.shouldDelayJoinByGracePeriod (J-5): with a 2 ms grace a stream record
    waits until stream time passes its timestamp by 2 ms, then joins with the table's version as
    of its timestamp -- including a version written after it arrived."""
    t = makeJoin(timedelta(milliseconds=2))
    # push four items to the table. this should not produce any item.
    t.pushToTableNonRandom(4, "Y")
    t.checkAndClearProcessResult()
    # push all four items to the primary stream. this should produce two items.
    t.pushToStream(4, "X")
    t.checkAndClearProcessResult((0, "X0+Y0", 0), (1, "X1+Y1", 1))
    # push all items to the table. this should not produce any item
    t.pushToTableNonRandom(4, "YY")
    t.checkAndClearProcessResult()
    # push all four items to the primary stream. this should produce two items.
    t.pushToStream(4, "X")
    t.checkAndClearProcessResult((0, "X0+YY0", 0), (1, "X1+YY1", 1))
    t.inputStreamTopic.pipeInput(5, "test", 7)
    t.checkAndClearProcessResult((2, "X2+YY2", 2), (2, "X2+YY2", 2), (3, "X3+YY3", 3), (3, "X3+YY3", 3))
    # push all items to the table. this should not produce any item
    t.pushToTableNonRandom(4, "YYY")
    t.checkAndClearProcessResult()


def test_shouldHandleLateJoinsWithGracePeriod(makeJoin):
    """KStreamKTableJoinTest.shouldHandleLateJoinsWithGracePeriod (J-5): a stream record older than
    stream time minus the grace is joined at once and evicts nothing."""
    t = makeJoin(timedelta(milliseconds=2))
    # push four items to the table. this should not produce any item.
    t.pushToTableNonRandom(4, "Y")
    t.checkAndClearProcessResult()
    # push 4 records into the buffer and evict the first two
    t.pushToStream(4, "X")
    t.checkAndClearProcessResult((0, "X0+Y0", 0), (1, "X1+Y1", 1))
    # should be processed immediately and not evict any other records
    t.pushToStream(1, "X")
    t.checkAndClearProcessResult((0, "X0+Y0", 0))


GRACE_ERROR = r"^KTable must be versioned to use a grace period in a stream table join\.$"
RETENTION_ERROR = r"^History retention must be at least grace period\.$"
NO_OPTIMIZATION = {"topology.optimization": "none"}


def test_shouldFailIfTableIsNotVersioned():
    """KStreamKTableJoinTest.shouldFailIfTableIsNotVersioned (J-5): refused when the join is
    declared, with Kafka's IllegalArgumentException text (ValueError)."""
    builder = StreamsBuilder()
    streamA = builder.stream("topic", Consumed.with_(Serdes.String(), Serdes.String()))
    tableB = builder.table("topic2", Consumed.with_(Serdes.String(), Serdes.String()))
    with pytest.raises(ValueError, match=GRACE_ERROR):
        streamA.join(tableB, lambda value1, value2: value1 + value2,
                     Joined.with_(Serdes.String(), Serdes.String(), Serdes.String(), "first-join",
                                  timedelta(milliseconds=6))).to("out-one")


def test_shouldFailIfTableIsNotVersionedButMaterializationIsInherited():
    """KStreamKTableJoinTest.shouldFailIfTableIsNotVersionedButMaterializationIsInherited (J-5):
    a filter of a non-versioned table is refused when the topology is built."""
    builder = StreamsBuilder()
    streamA = builder.stream("topic", Consumed.with_(Serdes.String(), Serdes.String()))
    source = builder.table("topic2", Consumed.with_(Serdes.String(), Serdes.String()),
                           Materialized.as_(Stores.inMemoryKeyValueStore("tableB")))
    tableB = source.filter(lambda k, v: True)
    # the filter operation forces the table materialization to be inherited
    streamA.join(tableB, lambda value1, value2: value1 + value2,
                 Joined.with_(Serdes.String(), Serdes.String(), Serdes.String(), "first-join",
                              timedelta(milliseconds=6))).to("out-one")
    with pytest.raises(ValueError, match=GRACE_ERROR):
        builder.build()


def test_shouldNotFailIfTableIsVersionedButMaterializationIsInherited():
    """KStreamKTableJoinTest.shouldNotFailIfTableIsVersionedButMaterializationIsInherited (J-5):
    a filter of a versioned table is versioned too, so the build succeeds."""
    builder = StreamsBuilder()
    streamA = builder.stream("topic", Consumed.with_(Serdes.String(), Serdes.String()))
    source = builder.table("topic2", Consumed.with_(Serdes.String(), Serdes.String()),
                           Materialized.as_(Stores.persistentVersionedKeyValueStore("tableB", timedelta(minutes=5))))
    tableB = source.filter(lambda k, v: True)
    # the filter operation forces the table materialization to be inherited
    streamA.join(tableB, lambda value1, value2: value1 + value2,
                 Joined.with_(Serdes.String(), Serdes.String(), Serdes.String(), "first-join",
                              timedelta(milliseconds=6))).to("out-one")
    # should not throw an error
    builder.build()


def test_shouldFailIfGracePeriodIsLongerThanHistoryRetention():
    """KStreamKTableJoinTest.shouldFailIfGracePeriodIsLongerThanHistoryRetention (J-5)."""
    builder = StreamsBuilder()
    streamA = builder.stream("topic", Consumed.with_(Serdes.String(), Serdes.String()))
    tableB = builder.table("topic2", Consumed.with_(Serdes.String(), Serdes.String()),
                           Materialized.as_(Stores.persistentVersionedKeyValueStore("tableB", timedelta(minutes=5))))
    streamA.join(tableB, lambda value1, value2: value1 + value2,
                 Joined.with_(Serdes.String(), Serdes.String(), Serdes.String(), "first-join",
                              timedelta(minutes=6))).to("out-one")
    with pytest.raises(ValueError, match=RETENTION_ERROR):
        builder.build(NO_OPTIMIZATION)


def test_shouldFailIfGracePeriodIsLongerThanHistoryRetentionAndInheritedStore():
    """KStreamKTableJoinTest.shouldFailIfGracePeriodIsLongerThanHistoryRetentionAndInheritedStore
    (J-5): the check reads the retention of the store the filtered table inherits."""
    builder = StreamsBuilder()
    streamA = builder.stream("topic", Consumed.with_(Serdes.String(), Serdes.String()))
    source = builder.table("topic2", Consumed.with_(Serdes.String(), Serdes.String()),
                           Materialized.as_(Stores.persistentVersionedKeyValueStore("V-grace", timedelta(minutes=0))))
    tableB = source.filter(lambda k, v: True)
    # the filter operation forces the table materialization to be inherited
    streamA.join(tableB, lambda value1, value2: value1 + value2,
                 Joined.with_(Serdes.String(), Serdes.String(), Serdes.String(), "first-join",
                              timedelta(milliseconds=6))).to("out-one")
    with pytest.raises(ValueError, match=RETENTION_ERROR):
        builder.build(NO_OPTIMIZATION)


# ------------------------------------------------------------ AbstractJoinIntegrationTest's driver
INPUT_TOPIC_LEFT, INPUT_TOPIC_RIGHT, OUTPUT_TOPIC = "inputTopicLeft", "inputTopicRight", "outputTopic"
ANY_UNIQUE_KEY = 0
STORE_NAME = "table-store"
# Kafka's MockTime() starts at the wall clock; any fixed base gives the same relative result
BASE_TIMESTAMP = 1_700_000_000_000

INPUT = [
    (INPUT_TOPIC_LEFT, None, 1),
    (INPUT_TOPIC_RIGHT, None, 2),
    (INPUT_TOPIC_LEFT, "A", 3),
    (INPUT_TOPIC_RIGHT, "a", 4),
    (INPUT_TOPIC_LEFT, "B", 5),
    (INPUT_TOPIC_RIGHT, "b", 6),
    (INPUT_TOPIC_LEFT, None, 7),
    (INPUT_TOPIC_RIGHT, None, 8),
    (INPUT_TOPIC_LEFT, "C", 9),
    (INPUT_TOPIC_RIGHT, "c", 10),
    (INPUT_TOPIC_RIGHT, None, 11),
    (INPUT_TOPIC_LEFT, None, 12),
    (INPUT_TOPIC_RIGHT, None, 13),
    (INPUT_TOPIC_RIGHT, "d", 7),  # out-of-order data with null as latest
    (INPUT_TOPIC_LEFT, "D", 6),
    (INPUT_TOPIC_LEFT, None, 2),
    (INPUT_TOPIC_RIGHT, None, 3),
    (INPUT_TOPIC_RIGHT, "e", 14),
    (INPUT_TOPIC_LEFT, "E", 15),
    (INPUT_TOPIC_LEFT, None, 10),  # out-of-order data with non-null as latest
    (INPUT_TOPIC_RIGHT, None, 9),
    (INPUT_TOPIC_LEFT, "F", 4),
    (INPUT_TOPIC_RIGHT, "f", 3),
]


def setupConfigsAndUtils(cacheEnabled: bool) -> dict:
    config = {"default.key.serde": Serdes.Long(), "default.value.serde": Serdes.String(), "commit.interval.ms": 100}
    if not cacheEnabled:
        config["statestore.cache.max.bytes"] = 0
    return config


def runTestWithDriver(expectedResult: list, streamsConfig: dict, topology) -> None:
    """Kafka's ``AbstractJoinIntegrationTest.runTestWithDriver``: pipes ``INPUT`` one record at a
    time and, after each, reads the output topic and compares it with the next entry of
    ``expectedResult`` (None: nothing), as (value, timestamp) under ``ANY_UNIQUE_KEY``."""
    assert len(expectedResult) == len(INPUT)
    with TopologyTestDriver(topology, streamsConfig) as driver:
        inputs = {t: driver.createInputTopic(t, Serdes.Long(), Serdes.String()) for t in (INPUT_TOPIC_RIGHT, INPUT_TOPIC_LEFT)}
        outputTopic = driver.createOutputTopic(OUTPUT_TOPIC, Serdes.Long(), Serdes.String())
        for (topic, value, timestamp), expected in zip(INPUT, expectedResult):
            inputs[topic].pipeInput(ANY_UNIQUE_KEY, value, BASE_TIMESTAMP + timestamp)
            want = [] if expected is None else [TestRecord(ANY_UNIQUE_KEY, v, BASE_TIMESTAMP + ts) for v, ts in expected]
            assert outputTopic.readRecordsToList() == want, (topic, value, timestamp)


def versionedJoin(cacheEnabled: bool, left: bool, joined=None):
    builder = StreamsBuilder()
    leftStream = builder.stream(INPUT_TOPIC_LEFT)
    rightTable = builder.table(INPUT_TOPIC_RIGHT, Materialized.as_(
        Stores.persistentVersionedKeyValueStore(STORE_NAME, timedelta(minutes=5))))
    streamsConfig = setupConfigsAndUtils(cacheEnabled)
    streamsConfig["application.id"] = "stream-table-join-integration-test" + ("-left" if left else "-inner")
    valueJoiner = lambda value1, value2: f"{js(value1)}-{js(value2)}"  # noqa: E731
    join = leftStream.leftJoin if left else leftStream.join
    (join(rightTable, valueJoiner) if joined is None else join(rightTable, valueJoiner, joined)).to(OUTPUT_TOPIC)
    return streamsConfig, builder.build(streamsConfig)


N = None


@pytest.mark.parametrize("cacheEnabled", [True, False])
def test_StreamTableJoinIntegrationTest_testInnerWithVersionedStore(cacheEnabled):
    """StreamTableJoinIntegrationTest.testInnerWithVersionedStore (J-2): each stream record joins
    the table's version as of its timestamp: ``D`` at 6 sees ``b`` (written at 6), not the later
    out-of-order ``d`` at 7; ``F`` at 4 sees ``a``."""
    streamsConfig, topology = versionedJoin(cacheEnabled, left=False)
    runTestWithDriver([N, N, N, N, [("B-a", 5)], N, N, N, N, N, N, N, N, N, [("D-b", 6)], N, N, N,
                       [("E-e", 15)], N, N, [("F-a", 4)], N], streamsConfig, topology)


@pytest.mark.parametrize("cacheEnabled", [True, False])
def test_StreamTableJoinIntegrationTest_testLeftWithVersionedStore(cacheEnabled):
    """StreamTableJoinIntegrationTest.testLeftWithVersionedStore (J-2, J-4)."""
    streamsConfig, topology = versionedJoin(cacheEnabled, left=True)
    runTestWithDriver([N, N, [("A-null", 3)], N, [("B-a", 5)], N, N, N, [("C-null", 9)], N, N, N, N, N,
                       [("D-b", 6)], N, N, N, [("E-e", 15)], N, N, [("F-a", 4)], N], streamsConfig, topology)


GRACE_JOINED = Joined.with_(Serdes.Long(), Serdes.String(), Serdes.String(), "Grace", timedelta(milliseconds=2))


@pytest.mark.parametrize("cacheEnabled", [True, False])
def test_StreamTableJoinWithGraceIntegrationTest_testInnerWithVersionedStore(cacheEnabled):
    """StreamTableJoinWithGraceIntegrationTest.testInnerWithVersionedStore (J-5): with a 2 ms
    grace ``B`` at 5 is joined when ``C`` at 9 arrives, ``E`` at 15 never (stream time stays
    below 17), and the late ``F`` at 4 at once."""
    streamsConfig, topology = versionedJoin(cacheEnabled, left=False, joined=GRACE_JOINED)
    runTestWithDriver([N, N, N, N, N, N, N, N, [("B-a", 5)], N, N, N, N, N, [("D-b", 6)], N, N, N,
                       N, N, N, [("F-a", 4)], N], streamsConfig, topology)


@pytest.mark.parametrize("cacheEnabled", [True, False])
def test_StreamTableJoinWithGraceIntegrationTest_testLeftWithVersionedStore(cacheEnabled):
    """StreamTableJoinWithGraceIntegrationTest.testLeftWithVersionedStore (J-5, J-4): ``C`` at 9
    leaves the buffer only when ``E`` at 15 arrives, and the table had no value as of 9 (deleted
    at 8): ``C-null``."""
    streamsConfig, topology = versionedJoin(cacheEnabled, left=True, joined=GRACE_JOINED)
    runTestWithDriver([N, N, N, N, [("A-null", 3)], N, N, N, [("B-a", 5)], N, N, N, N, N, [("D-b", 6)], N, N, N,
                       [("C-null", 9)], N, N, [("F-a", 4)], N], streamsConfig, topology)
