"""KStream-KStream joins: join, leftJoin, outerJoin, with JoinWindows and StreamJoined.

Concrete-record tests ported from Kafka's own tests (``KStreamKStreamJoinTest``,
``KStreamKStreamLeftJoinTest``, ``KStreamKStreamOuterJoinTest``, ``KStreamKStreamSelfJoinTest``;
each test names the one it ports): Integer keys, String values (Long on the right in the outer
join tests) and Kafka's ``MockValueJoiner.TOSTRING_JOINER`` (``value1 + "+" + value2``, null
printed as "null"). Every expected record was also checked against Kafka 4.3.1's
TopologyTestDriver. Rule ids: RP-1..RP-3 (repartitioning), J-6 (co-partitioning), TTD-2 (emit
interval 0).
"""

import logging

import pytest

from kspark import (Consumed, JoinWindows, KeyValue, Produced, Serdes, StreamJoined, Stores, StreamsBuilder,
                    StreamsException, TopologyException)
from kspark.runtime.metrics import MetricName
from kspark.testing import TestRecord, TopologyTestDriver

KEYS = [0, 1, 2, 3]
PROPS = {"application.id": "join-test", "default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}


def js(x):
    """Java's String.valueOf for the joiner's inputs."""
    return "null" if x is None else str(x)


def TOSTRING_JOINER(value1, value2):  # noqa: N802 - Kafka's MockValueJoiner.TOSTRING_JOINER
    return f"{js(value1)}+{js(value2)}"


class Join:
    """``topic1`` (Integer, String) ``<kind>`` ``topic2`` (Integer, String or Long) into ``out``."""

    def __init__(self, kind: str, windows, streamJoined=None, otherValues=None, props=None) -> None:
        otherValues = otherValues or Serdes.String()
        b = StreamsBuilder()
        s1 = b.stream("topic1", Consumed.with_(Serdes.Integer(), Serdes.String()))
        s2 = b.stream("topic2", Consumed.with_(Serdes.Integer(), otherValues))
        if streamJoined is None:
            streamJoined = StreamJoined.with_(Serdes.Integer(), Serdes.String(), otherValues)
        getattr(s1, kind)(s2, TOSTRING_JOINER, windows, streamJoined).to("out", Produced.with_(Serdes.Integer(), Serdes.String()))
        self.topology = b.build()
        self.driver = TopologyTestDriver(self.topology, props or PROPS)
        # as Kafka's tests: createInputTopic(topic, ..., Instant.ofEpochMilli(0L), Duration.ZERO)
        self.in1, self.in2 = (self.driver.createInputTopic(t, None, None, 0, 0) for t in ("topic1", "topic2"))
        self.out = self.driver.createOutputTopic("out")

    def pipe(self, topic, prefix, keys, time=None, step=0):
        """Pipe ``(k, prefix + k)`` for each key at ``time + i * step`` (None: the topic's time, 0)."""
        t = self.in1 if topic == 1 else self.in2
        for i, k in enumerate(keys):
            value = f"{prefix}{k}" if isinstance(prefix, str) else prefix + k  # Long values: 10 + k
            if time is None:
                t.pipeInput(k, value)
            else:
                t.pipeInput(k, value, time + i * step)
        return self.results()

    def results(self):
        return [(r.key(), r.value(), r.timestamp()) for r in self.out.readRecordsToList()]

    def close(self):
        self.driver.close()


@pytest.fixture
def joins():
    opened = []

    def make(*args, **kwargs):
        j = Join(*args, **kwargs)
        opened.append(j)
        return j

    yield make
    for j in opened:
        j.close()


# ---------------------------------------------------------------------------------- KStreamKStreamJoinTest
def test_join_KStreamKStreamJoinTest_testJoin(joins):
    j = joins("join", JoinWindows.ofTimeDifferenceWithNoGrace(100))
    assert j.topology.copartitionGroups() == [{"topic1", "topic2"}]  # J-6
    assert j.pipe(1, "A", KEYS[:2]) == []
    assert j.pipe(2, "a", KEYS[:2]) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]
    assert j.pipe(1, "B", KEYS) == [(0, "B0+a0", 0), (1, "B1+a1", 0)]
    assert j.pipe(2, "b", KEYS) == [(0, "A0+b0", 0), (0, "B0+b0", 0), (1, "A1+b1", 0), (1, "B1+b1", 0),
                                    (2, "B2+b2", 0), (3, "B3+b3", 0)]
    assert j.pipe(1, "C", KEYS) == [(0, "C0+a0", 0), (0, "C0+b0", 0), (1, "C1+a1", 0), (1, "C1+b1", 0),
                                    (2, "C2+b2", 0), (3, "C3+b3", 0)]
    assert j.pipe(2, "c", KEYS[:2]) == [(0, "A0+c0", 0), (0, "B0+c0", 0), (0, "C0+c0", 0), (1, "A1+c1", 0),
                                        (1, "B1+c1", 0), (1, "C1+c1", 0)]


def test_outer_join_within_grace_equals_inner_join_KStreamKStreamJoinTest_testOuterJoin(joins):
    """A 24 h grace keeps every non-joined record waiting: the outputs are the joined ones."""
    j = joins("outerJoin", JoinWindows.ofTimeDifferenceAndGrace(100, 24 * 3600 * 1000))
    assert j.pipe(1, "A", KEYS[:2]) == []
    assert j.pipe(2, "a", KEYS[:2]) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]
    assert j.pipe(1, "B", KEYS) == [(0, "B0+a0", 0), (1, "B1+a1", 0)]
    assert j.pipe(2, "b", KEYS) == [(0, "A0+b0", 0), (0, "B0+b0", 0), (1, "A1+b1", 0), (1, "B1+b1", 0),
                                    (2, "B2+b2", 0), (3, "B3+b3", 0)]


def test_windowing_KStreamKStreamJoinTest_testWindowing(joins):
    j = joins("join", JoinWindows.ofTimeDifferenceWithNoGrace(100))
    assert j.pipe(1, "A", KEYS[:2], 0) == []
    assert j.pipe(2, "a", KEYS[:2], 0) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]
    assert j.pipe(1, "B", KEYS, 1000, 1) == []  # B0..B3 at 1000..1003
    # the other stream, after the B records: each joins the B records at most 100 ms before it
    assert j.pipe(2, "b", KEYS, 1100) == [(k, f"B{k}+b{k}", 1100) for k in KEYS]
    assert j.pipe(2, "c", KEYS, 1101) == [(k, f"B{k}+c{k}", 1101) for k in (1, 2, 3)]
    assert j.pipe(2, "d", KEYS, 1102) == [(k, f"B{k}+d{k}", 1102) for k in (2, 3)]
    assert j.pipe(2, "e", KEYS, 1103) == [(3, "B3+e3", 1103)]
    assert j.pipe(2, "f", KEYS, 1104) == []
    # ... and before them: each joins the B records at most 100 ms after it
    assert j.pipe(2, "g", KEYS, 899) == []
    assert j.pipe(2, "h", KEYS, 900) == [(0, "B0+h0", 1000)]
    assert j.pipe(2, "i", KEYS, 901) == [(0, "B0+i0", 1000), (1, "B1+i1", 1001)]
    assert j.pipe(2, "j", KEYS, 902) == [(0, "B0+j0", 1000), (1, "B1+j1", 1001), (2, "B2+j2", 1002)]
    assert j.pipe(2, "k", KEYS, 903) == [(k, f"B{k}+k{k}", 1000 + k) for k in KEYS]
    # the same from the other side
    assert j.pipe(2, "l", KEYS, 2000, 1) == []
    assert j.pipe(1, "C", KEYS, 2100) == [(k, f"C{k}+l{k}", 2100) for k in KEYS]
    assert j.pipe(1, "D", KEYS, 2101) == [(k, f"D{k}+l{k}", 2101) for k in (1, 2, 3)]
    assert j.pipe(1, "E", KEYS, 2102) == [(k, f"E{k}+l{k}", 2102) for k in (2, 3)]
    assert j.pipe(1, "F", KEYS, 2103) == [(3, "F3+l3", 2103)]
    assert j.pipe(1, "G", KEYS, 2104) == []
    assert j.pipe(1, "H", KEYS, 1899) == []
    assert j.pipe(1, "I", KEYS, 1900) == [(0, "I0+l0", 2000)]
    assert j.pipe(1, "J", KEYS, 1901) == [(0, "J0+l0", 2000), (1, "J1+l1", 2001)]
    assert j.pipe(1, "K", KEYS, 1902) == [(0, "K0+l0", 2000), (1, "K1+l1", 2001), (2, "K2+l2", 2002)]
    assert j.pipe(1, "L", KEYS, 1903) == [(k, f"L{k}+l{k}", 2000 + k) for k in KEYS]


def test_asymmetric_after_KStreamKStreamJoinTest_testAsymmetricWindowingAfter(joins):
    j = joins("join", JoinWindows.ofTimeDifferenceWithNoGrace(0).after(100))
    assert j.pipe(1, "A", KEYS, 1000, 1) == []
    assert j.pipe(2, "a", KEYS, 999) == []
    assert j.pipe(2, "b", KEYS, 1000) == [(0, "A0+b0", 1000)]
    assert j.pipe(2, "c", KEYS, 1001) == [(k, f"A{k}+c{k}", 1001) for k in (0, 1)]
    assert j.pipe(2, "d", KEYS, 1002) == [(k, f"A{k}+d{k}", 1002) for k in (0, 1, 2)]
    assert j.pipe(2, "e", KEYS, 1003) == [(k, f"A{k}+e{k}", 1003) for k in KEYS]
    assert j.pipe(2, "f", KEYS, 1100) == [(k, f"A{k}+f{k}", 1100) for k in KEYS]
    assert j.pipe(2, "g", KEYS, 1101) == [(k, f"A{k}+g{k}", 1101) for k in (1, 2, 3)]
    assert j.pipe(2, "h", KEYS, 1102) == [(k, f"A{k}+h{k}", 1102) for k in (2, 3)]
    assert j.pipe(2, "i", KEYS, 1103) == [(3, "A3+i3", 1103)]
    assert j.pipe(2, "j", KEYS, 1104) == []


def test_asymmetric_before_KStreamKStreamJoinTest_testAsymmetricWindowingBefore(joins):
    j = joins("join", JoinWindows.ofTimeDifferenceWithNoGrace(0).before(100))
    assert j.pipe(1, "A", KEYS, 1000, 1) == []
    assert j.pipe(2, "a", KEYS, 899) == []
    assert j.pipe(2, "b", KEYS, 900) == [(0, "A0+b0", 1000)]
    assert j.pipe(2, "c", KEYS, 901) == [(0, "A0+c0", 1000), (1, "A1+c1", 1001)]
    assert j.pipe(2, "d", KEYS, 902) == [(k, f"A{k}+d{k}", 1000 + k) for k in (0, 1, 2)]
    assert j.pipe(2, "e", KEYS, 903) == [(k, f"A{k}+e{k}", 1000 + k) for k in KEYS]
    assert j.pipe(2, "f", KEYS, 1000) == [(k, f"A{k}+f{k}", 1000 + k) for k in KEYS]
    assert j.pipe(2, "g", KEYS, 1001) == [(k, f"A{k}+g{k}", 1000 + k) for k in (1, 2, 3)]
    assert j.pipe(2, "h", KEYS, 1002) == [(k, f"A{k}+h{k}", 1000 + k) for k in (2, 3)]
    assert j.pipe(2, "i", KEYS, 1003) == [(3, "A3+i3", 1003)]
    assert j.pipe(2, "j", KEYS, 1004) == []


def _stringJoin(streamJoined, windows, kind="join"):
    b = StreamsBuilder()
    left = b.stream("left", Consumed.with_(Serdes.String(), Serdes.Integer()))
    right = b.stream("right", Consumed.with_(Serdes.String(), Serdes.Integer()))
    getattr(left, kind)(right, lambda a, c: a + c, windows, streamJoined).to("out", Produced.with_(Serdes.String(), Serdes.Integer()))
    return b


def _runJoin(streamJoined, windows):
    """Kafka ``KStreamKStreamJoinTest.runJoin``: A:1+1 and B:1+2 join at 1 and 2."""
    with TopologyTestDriver(_stringJoin(streamJoined, windows).build(), PROPS) as d:
        left, right, out = d.createInputTopic("left"), d.createInputTopic("right"), d.createOutputTopic("out")
        left.pipeInput("A", 1, 1)
        left.pipeInput("B", 1, 2)
        right.pipeInput("A", 1, 1)
        right.pipeInput("B", 2, 2)
        assert out.readKeyValuesToList() == [KeyValue("A", 2), KeyValue("B", 3)]


def test_custom_store_suppliers_KStreamKStreamJoinTest_shouldJoinWithCustomStoreSuppliers():
    windows = JoinWindows.ofTimeDifferenceWithNoGrace(100)
    retention, size = windows.size() + windows.gracePeriodMs(), windows.size()
    this = Stores.inMemoryWindowStore("in-memory-join-store", retention, size, True)
    other = Stores.inMemoryWindowStore("in-memory-join-store-other", retention, size, True)
    sj = StreamJoined.with_(Serdes.String(), Serdes.Integer(), Serdes.Integer())
    _runJoin(sj.withThisStoreSupplier(this).withOtherStoreSupplier(other), windows)
    _runJoin(sj.withThisStoreSupplier(this), windows)
    _runJoin(sj.withOtherStoreSupplier(other), windows)
    _runJoin(StreamJoined.with_(this, other).withKeySerde(Serdes.String()).withValueSerde(Serdes.Integer())
             .withOtherValueSerde(Serdes.Integer()), windows)


@pytest.mark.parametrize("this, other, message", [
    # KStreamKStreamJoinTest.shouldThrowExceptionThisStoreSupplierRetentionDoNotMatchWindowsSizeAndGrace
    ((500, 100, True), (150, 100, True), "Window settings mismatch. WindowBytesStoreSupplier settings"),
    # ...ThisStoreSupplierWindowSizeDoesNotMatchJoinWindowsWindowSize
    ((150, 150, True), (150, 100, True), "Window settings mismatch. WindowBytesStoreSupplier settings"),
    # ...WhenThisJoinStoreSetsRetainDuplicatesFalse
    ((150, 100, False), (150, 100, True), "The StoreSupplier must set retainDuplicates=true, found retainDuplicates=false"),
    # ...OtherStoreSupplierRetentionDoNotMatchWindowsSizeAndGrace
    ((150, 100, True), (500, 100, True), "Window settings mismatch. WindowBytesStoreSupplier settings"),
    # ...OtherStoreSupplierWindowSizeDoesNotMatchJoinWindowsWindowSize
    ((150, 100, True), (150, 150, True), "Window settings mismatch. WindowBytesStoreSupplier settings"),
    # ...WhenOtherJoinStoreSetsRetainDuplicatesFalse
    ((150, 100, True), (150, 100, False), "The StoreSupplier must set retainDuplicates=true, found retainDuplicates=false"),
])
def test_store_supplier_settings_are_checked_KStreamKStreamJoinTest(this, other, message):
    windows = JoinWindows.ofTimeDifferenceAndGrace(50, 50)
    sj = StreamJoined.with_(Serdes.String(), Serdes.Integer(), Serdes.Integer()) \
        .withThisStoreSupplier(Stores.inMemoryWindowStore("in-memory-join-store", *this)) \
        .withOtherStoreSupplier(Stores.inMemoryWindowStore("in-memory-join-store-other", *other))
    with pytest.raises(StreamsException) as e:
        _stringJoin(sj, windows)
    assert str(e.value).startswith(message)


def test_matching_store_suppliers_build_KStreamKStreamJoinTest_shouldBuildJoinWithCustomStoresAndCorrectWindowSettings():
    windows = JoinWindows.ofTimeDifferenceAndGrace(50, 50)
    sj = StreamJoined.with_(Serdes.String(), Serdes.Integer(), Serdes.Integer()) \
        .withThisStoreSupplier(Stores.inMemoryWindowStore("in-memory-join-store", 150, 100, True)) \
        .withOtherStoreSupplier(Stores.inMemoryWindowStore("in-memory-join-store-other", 150, 100, True))
    stores = _stringJoin(sj, windows).build().storeBuilders()
    assert sorted(stores) == ["in-memory-join-store", "in-memory-join-store-other"]


def test_store_suppliers_need_unique_names_KStreamKStreamJoinTest_shouldExceptionWhenJoinStoresDoNotHaveUniqueNames():
    windows = JoinWindows.ofTimeDifferenceAndGrace(100, 50)
    sj = StreamJoined.with_(Serdes.String(), Serdes.Integer(), Serdes.Integer()) \
        .withThisStoreSupplier(Stores.inMemoryWindowStore("in-memory-join-store", 150, 100, True)) \
        .withOtherStoreSupplier(Stores.inMemoryWindowStore("in-memory-join-store", 150, 100, True))
    with pytest.raises(StreamsException, match="Both StoreSuppliers have the same name.  StoreSuppliers must provide unique names"):
        _stringJoin(sj, windows)


def test_store_names_and_logging_KStreamKStreamJoinTest_shouldDisableLoggingOnStreamJoined():
    windows = JoinWindows.ofTimeDifferenceAndGrace(100, 50)
    sj = StreamJoined.with_(Serdes.String(), Serdes.Integer(), Serdes.Integer()).withStoreName("store")
    stores = _stringJoin(sj.withLoggingDisabled(), windows).build().storeBuilders()
    assert sorted(stores) == ["store-other-join-store", "store-this-join-store"]
    assert not stores["store-this-join-store"].loggingEnabled() and not stores["store-other-join-store"].loggingEnabled()
    stores = _stringJoin(sj.withLoggingEnabled({"test": "property"}), windows).build().storeBuilders()
    assert stores["store-this-join-store"].loggingEnabled() and stores["store-other-join-store"].loggingEnabled()
    # a left join's outer-join store is named after the store name too; an outer join's "-outer-" ones
    assert sorted(_stringJoin(sj, windows, "leftJoin").build().storeBuilders()) == [
        "store-left-shared-join-store", "store-outer-other-join-store", "store-this-join-store"]
    assert sorted(_stringJoin(sj, windows, "outerJoin").build().storeBuilders()) == [
        "store-outer-other-join-store", "store-outer-shared-join-store", "store-outer-this-join-store"]


def test_null_value_is_skipped_logged_and_counted_KStreamKStreamJoinTest_shouldLogAndMeterOnSkippedRecordsWithNullValue(caplog):
    windows = JoinWindows.ofTimeDifferenceWithNoGrace(100)
    with TopologyTestDriver(_stringJoin(StreamJoined.with_(Serdes.String(), Serdes.Integer(), Serdes.Integer()),
                                        windows).build(), PROPS) as d:
        with caplog.at_level(logging.WARNING, logger="kspark.dsl"):
            d.createInputTopic("left").pipeInput("A", None)
        assert "Skipping record due to null key or value. topic=[left] partition=[0] offset=[0]" in caplog.text
        assert d.metrics()[MetricName("dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0")))] == 1


def _twoJoinsAfterMap(streamJoined=None):
    b = StreamsBuilder()
    s1 = b.stream("topic", Consumed.with_(Serdes.String(), Serdes.String()))
    s2 = b.stream("topic2", Consumed.with_(Serdes.String(), Serdes.String()))
    s3 = b.stream("topic3", Consumed.with_(Serdes.String(), Serdes.String()))
    mapped = s1.map(lambda k, v: KeyValue(v, k))
    windows = JoinWindows.ofTimeDifferenceWithNoGrace(100)
    first = (streamJoined,) if streamJoined is None else (streamJoined.withName("first-join"),)
    second = (streamJoined,) if streamJoined is None else (streamJoined.withName("second-join"),)
    mapped.join(s2, lambda a, c: a + c, windows, *first).to("out-one")
    mapped.join(s3, lambda a, c: a + c, windows, *second).to("out-to" if streamJoined is None else "out-two")
    return b.build()


def test_describe_reuses_generated_repartition_topic_KStreamKStreamJoinTest_shouldReuseRepartitionTopicWithGeneratedName(caplog):
    """RP-1: the second join of the mapped stream reads the first one's repartition topic (and, as
    in Kafka, that reused topic is not co-partitioned with topic3: logged)."""
    with caplog.at_level(logging.WARNING, logger="kspark.dsl"):
        topology = _twoJoinsAfterMap()
    assert str(topology.describe()) == EXPECTED_TOPOLOGY_WITH_GENERATED_REPARTITION_TOPIC
    assert "reuses repartition topic" in caplog.text


def test_describe_names_repartition_topics_after_the_join_KStreamKStreamJoinTest_shouldCreateRepartitionTopicsWithUserProvidedName():
    topology = _twoJoinsAfterMap(StreamJoined.with_(Serdes.String(), Serdes.String(), Serdes.String()))
    assert str(topology.describe()) == EXPECTED_TOPOLOGY_WITH_USER_NAMED_REPARTITION_TOPICS
    assert topology.internalTopics() == {"first-join-left-repartition": None, "second-join-left-repartition": None}


# ---------------------------------------------------------------------------------- KStreamKStreamLeftJoinTest
def test_left_join_without_fix_emits_at_once_KStreamKStreamLeftJoinTest_testLeftJoinWithSpuriousResultFixDisabledOldApi(joins):
    """``JoinWindows.of`` (deprecated): no outer-join store, non-joined results forwarded at once."""
    j = joins("leftJoin", JoinWindows.of(100))
    assert len(j.driver.getAllStateStores()) == 2
    assert j.pipe(1, "A", KEYS[:2]) == [(0, "A0+null", 0), (1, "A1+null", 0)]
    assert j.pipe(2, "a", KEYS[:2]) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]


def test_left_join_duplicates_without_fix_KStreamKStreamLeftJoinTest_testLeftJoinDuplicatesWithSpuriousResultFixDisabledOldApi(joins):
    j = joins("leftJoin", JoinWindows.of(100).grace(10))
    assert len(j.driver.getAllStateStores()) == 2
    j.in1.pipeInput(0, "A0", 0)
    j.in1.pipeInput(0, "A0-0", 0)
    j.in2.pipeInput(0, "a0", 0)
    assert j.results() == [(0, "A0+null", 0), (0, "A0-0+null", 0), (0, "A0+a0", 0), (0, "A0-0+a0", 0)]


def test_left_join_duplicates_KStreamKStreamLeftJoinTest_testLeftJoinDuplicates(joins):
    """Two left records at one timestamp are both kept in the outer-join store and both emitted."""
    j = joins("leftJoin", JoinWindows.ofTimeDifferenceAndGrace(100, 10))
    j.in1.pipeInput(0, "A0", 0)
    j.in1.pipeInput(0, "A0-0", 0)
    j.in2.pipeInput(1, "a0", 111)
    j.in2.pipeInput(2, "dummy", 500)
    assert j.results() == [(0, "A0+null", 0), (0, "A0-0+null", 0)]
    j.in1.pipeInput(2, "A2", 1000)
    j.in1.pipeInput(2, "A2-0", 1000)
    j.in2.pipeInput(2, "a2", 1001)
    assert j.results() == [(2, "A2+a2", 1001), (2, "A2-0+a2", 1001)]
    j.in2.pipeInput(3, "a3", 315)  # late: nothing
    assert j.results() == []


@pytest.mark.parametrize("closer", [1, 2])
def test_left_expired_non_joined_records_are_emitted_by_either_processor_KStreamKStreamLeftJoinTest(joins, closer):
    """testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor (closer 1) / ...ByTheRightProcessor (2)."""
    j = joins("leftJoin", JoinWindows.ofTimeDifferenceAndGrace(100, 0))
    j.in1.pipeInput(0, "A0", 1)
    j.in1.pipeInput(1, "A1", 2)
    j.in1.pipeInput(0, "A0-0", 3)
    assert j.results() == []
    j.in2.pipeInput(1, "a1", 3)
    assert j.results() == [(1, "A1+a1", 3)]
    (j.in1 if closer == 1 else j.in2).pipeInput(2, "dummy", 401)
    assert j.results() == [(0, "A0+null", 1), (0, "A0-0+null", 3)]
    (j.in2 if closer == 1 else j.in1).pipeInput(2, "dummy", 401 if closer == 1 else 402)
    assert j.results() == [(2, "dummy+dummy", 401 if closer == 1 else 402)]


@pytest.mark.parametrize("windows", [JoinWindows.ofTimeDifferenceAndGrace(100, 0), JoinWindows.ofTimeDifferenceWithNoGrace(100)])
def test_right_non_joined_records_are_never_emitted_KStreamKStreamLeftJoinTest(joins, windows):
    """testRightNonJoinedRecordsAreNeverEmittedByTheLeftProcessor / ...ByTheRightProcessor."""
    j = joins("leftJoin", windows)
    j.in2.pipeInput(0, "A0", 1)
    j.in2.pipeInput(1, "A1", 2)
    j.in2.pipeInput(0, "A0-0", 3)
    j.in1.pipeInput(1, "a1", 3)
    assert j.results() == [(1, "a1+A1", 3)]
    j.in1.pipeInput(2, "dummy", 401)
    assert j.results() == []
    j.in2.pipeInput(2, "dummy", 402)
    assert j.results() == [(2, "dummy+dummy", 402)]


def test_left_records_with_zero_after_KStreamKStreamLeftJoinTest_testLeftJoinedRecordsWithZeroAfterAreEmitted(joins):
    """With ``after(0)`` a left record's window ends at its own time: one ms later it closes."""
    j = joins("leftJoin", JoinWindows.ofTimeDifferenceWithNoGrace(100).after(0))
    assert j.pipe(1, "A", KEYS, 1000, 1) == [(0, "A0+null", 1000), (1, "A1+null", 1001), (2, "A2+null", 1002)]
    assert j.pipe(2, "a", KEYS, 999) == [(k, f"A{k}+a{k}", 1000 + k) for k in KEYS]
    assert j.pipe(2, "b", KEYS, 1000) == [(k, f"A{k}+b{k}", 1000 + k) for k in KEYS]
    assert j.pipe(2, "c", KEYS, 1001) == [(k, f"A{k}+c{k}", 1000 + k) for k in (1, 2, 3)]
    assert j.pipe(2, "d", KEYS, 1002) == [(k, f"A{k}+d{k}", 1000 + k) for k in (2, 3)]
    assert j.pipe(2, "e", KEYS, 1003) == [(3, "A3+e3", 1003)]
    assert j.pipe(2, "f", KEYS, 1100) == []


@pytest.mark.parametrize("inMemory", [True, False])
def test_left_join_with_suppliers_KStreamKStreamLeftJoinTest_runLeftJoin(joins, inMemory):
    """testLeftJoinWithInMemoryCustomSuppliers (True) / testLeftJoinWithDefaultSuppliers (False)."""
    windows = JoinWindows.ofTimeDifferenceAndGrace(100, 0)
    sj = StreamJoined.with_(Serdes.Integer(), Serdes.String(), Serdes.String())
    if inMemory:
        retention, size = windows.size() + windows.gracePeriodMs(), windows.size()
        sj = sj.withThisStoreSupplier(Stores.inMemoryWindowStore("in-memory-join-store", retention, size, True)) \
            .withOtherStoreSupplier(Stores.inMemoryWindowStore("in-memory-join-store-other", retention, size, True))
    j = joins("leftJoin", windows, sj)
    assert len(j.driver.getAllStateStores()) == 3
    if inMemory:  # the outer-join store follows the this-side supplier's kind and name
        assert not j.driver.getAllStateStores()["in-memory-join-store-left-shared-join-store"].persistent()
    assert j.pipe(1, "A", KEYS[:2]) == []
    assert j.pipe(2, "a", KEYS[:2]) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]
    assert j.pipe(1, "B", KEYS[:3]) == [(0, "B0+a0", 0), (1, "B1+a1", 0)]
    assert j.pipe(2, "b", KEYS) == [(0, "A0+b0", 0), (0, "B0+b0", 0), (1, "A1+b1", 0), (1, "B1+b1", 0), (2, "B2+b2", 0)]
    assert j.pipe(1, "C", KEYS) == [(0, "C0+a0", 0), (0, "C0+b0", 0), (1, "C1+a1", 0), (1, "C1+b1", 0),
                                    (2, "C2+b2", 0), (3, "C3+b3", 0)]
    j.in1.pipeInput(0, "dummy", 1000)
    assert j.results() == []


def test_ordering_KStreamKStreamLeftJoinTest_testOrdering(joins):
    """A non-joined record whose window closed is emitted before the in-order record's own join."""
    j = joins("leftJoin", JoinWindows.ofTimeDifferenceWithNoGrace(100))
    j.in1.pipeInput(0, "A0", 0)
    j.in1.pipeInput(1, "A1", 100)
    assert j.results() == []
    j.in2.pipeInput(1, "a1", 110)
    assert j.results() == [(0, "A0+null", 0), (1, "A1+a1", 110)]


def test_grace_period_KStreamKStreamLeftJoinTest_testGracePeriod(joins):
    j = joins("leftJoin", JoinWindows.ofTimeDifferenceAndGrace(100, 10))
    assert j.pipe(1, "A", KEYS[:2], 0) == []
    assert j.pipe(2, "a", KEYS, 101) == []
    j.in2.pipeInput(0, "dummy", 1201)
    assert j.results() == [(0, "A0+null", 0), (1, "A1+null", 0)]


def test_windowing_KStreamKStreamLeftJoinTest_testWindowing(joins):
    """Upper and lower window bounds of a left join (testUpperWindowBound, testLowerWindowBound):
    a left record out of the window of every right record is kept, then emitted once its window
    closes; a late one (window already closed) is forwarded at once."""
    j = joins("leftJoin", JoinWindows.ofTimeDifferenceWithNoGrace(100))
    assert j.pipe(1, "A", KEYS[:2], 0) == []
    assert j.pipe(2, "a", KEYS, 0) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]
    # upper bound
    assert j.pipe(2, "b", KEYS, 1000, 1) == []
    assert j.pipe(1, "B", KEYS, 1100) == [(k, f"B{k}+b{k}", 1100) for k in KEYS]
    assert j.pipe(1, "C", KEYS, 1101) == [(k, f"C{k}+b{k}", 1101) for k in (1, 2, 3)]
    assert j.pipe(1, "D", KEYS, 1102) == [(k, f"D{k}+b{k}", 1102) for k in (2, 3)]
    assert j.pipe(1, "E", KEYS, 1103) == [(3, "E3+b3", 1103)]
    assert j.pipe(1, "F", KEYS, 1104) == []
    j.in1.pipeInput(0, "dummy", 1405)
    assert j.results() == [(0, "C0+null", 1101), (0, "D0+null", 1102), (1, "D1+null", 1102),
                           (0, "E0+null", 1103), (1, "E1+null", 1103), (2, "E2+null", 1103),
                           (0, "F0+null", 1104), (1, "F1+null", 1104), (2, "F2+null", 1104), (3, "F3+null", 1104)]
    # lower bound: these left records are late (their window closed before stream time 1405)
    assert j.pipe(1, "G", KEYS, 899) == [(k, f"G{k}+null", 899) for k in KEYS]
    assert j.pipe(1, "H", KEYS, 900) == [(0, "H0+b0", 1000), (1, "H1+null", 900), (2, "H2+null", 900), (3, "H3+null", 900)]
    assert j.pipe(1, "I", KEYS, 901) == [(0, "I0+b0", 1000), (1, "I1+b1", 1001), (2, "I2+null", 901), (3, "I3+null", 901)]
    assert j.pipe(1, "J", KEYS, 902) == [(0, "J0+b0", 1000), (1, "J1+b1", 1001), (2, "J2+b2", 1002), (3, "J3+null", 902)]
    assert j.pipe(1, "K", KEYS, 903) == [(k, f"K{k}+b{k}", 1000 + k) for k in KEYS]
    j.in1.pipeInput(0, "dummy", 1203)
    assert j.results() == [(0, "dummy+null", 1203)]


def test_asymmetric_window_KStreamKStreamLeftJoinTest_shouldNotEmitLeftJoinResultForAsymmetricWindow(joins):
    j = joins("leftJoin", JoinWindows.ofTimeDifferenceWithNoGrace(100).before(0))
    assert j.pipe(1, "A", KEYS[:2], 0, 1) == []
    j.in2.pipeInput(0, "a0", 100)
    assert j.results() == [(0, "A0+a0", 100)]
    j.in2.pipeInput(1, "a1", 102)
    assert j.results() == [(1, "A1+null", 1)]


def test_left_join_forwards_a_null_key_record_at_once_and_drops_a_null_value(joins):
    """KIP-962: the left side of a left join forwards a null-key record with a value at once as
    non-joined; a null value, or a null key on the right side, is skipped and counted."""
    j = joins("leftJoin", JoinWindows.ofTimeDifferenceWithNoGrace(100))
    j.in1.pipeInput(None, "A", 5)
    assert j.results() == [(None, "A+null", 5)]
    j.in1.pipeInput(1, None, 6)
    j.in2.pipeInput(None, "a", 7)
    assert j.results() == []
    assert j.driver.metrics()[MetricName("dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0")))] == 2


def test_late_left_record_beyond_its_window_is_forwarded_at_once(joins):
    """A left record whose window ``ts + after`` already lies before stream time is not kept: it
    is forwarded at once as non-joined (Kafka's ``timeTo < streamTime``), even within the grace."""
    j = joins("leftJoin", JoinWindows.ofTimeDifferenceAndGrace(10, 1000))
    j.in1.pipeInput(0, "A0", 100)
    j.in1.pipeInput(1, "late", 50)  # 50 + 10 < 100
    assert j.results() == [(1, "late+null", 50)]
    j.in2.pipeInput(1, "x", 55)     # still within the grace: the late record joins again
    assert j.results() == [(1, "late+x", 55)]


# ---------------------------------------------------------------------------------- KStreamKStreamOuterJoinTest
def _outer(joins, windows, streamJoined=None):
    if streamJoined is None:
        streamJoined = StreamJoined.with_(Serdes.Integer(), Serdes.String(), Serdes.Long())
    return joins("outerJoin", windows, streamJoined, otherValues=Serdes.Long())


def test_outer_join_duplicates_without_fix_KStreamKStreamOuterJoinTest_testOuterJoinDuplicatesWithFixDisabledOldApi(joins):
    j = _outer(joins, JoinWindows.of(100).grace(10))
    assert len(j.driver.getAllStateStores()) == 2
    j.in1.pipeInput(0, "A0", 0)
    j.in1.pipeInput(0, "A0-0", 0)
    j.in2.pipeInput(0, 10, 0)
    j.in2.pipeInput(1, 21, 0)
    assert j.results() == [(0, "A0+null", 0), (0, "A0-0+null", 0), (0, "A0+10", 0), (0, "A0-0+10", 0), (1, "null+21", 0)]


def test_outer_join_duplicates_KStreamKStreamOuterJoinTest_testOuterJoinDuplicates(joins):
    """Kept records leave the outer-join store in its order: by timestamp, right side first."""
    j = _outer(joins, JoinWindows.ofTimeDifferenceAndGrace(100, 10))
    j.in1.pipeInput(0, "A0", 0)
    j.in1.pipeInput(0, "A0-0", 0)
    j.in2.pipeInput(1, 11, 0)
    j.in2.pipeInput(1, 12, 0)
    j.in2.pipeInput(1, 10, 111)
    j.in2.pipeInput(3, 100, 211)
    assert j.results() == [(1, "null+11", 0), (1, "null+12", 0), (0, "A0+null", 0), (0, "A0-0+null", 0)]
    j.in1.pipeInput(2, "A2", 200)
    j.in1.pipeInput(2, "A2-0", 200)
    j.in2.pipeInput(2, 13, 201)
    j.in2.pipeInput(2, 14, 201)
    assert j.results() == [(2, "A2+13", 201), (2, "A2-0+13", 201), (2, "A2+14", 201), (2, "A2-0+14", 201)]
    j.in2.pipeInput(3, 100, 1500)
    assert j.results() == [(1, "null+10", 111), (3, "null+100", 211)]


@pytest.mark.parametrize("grace, closer", [(None, 1), (0, 2)])
def test_left_expired_non_joined_records_KStreamKStreamOuterJoinTest(joins, grace, closer):
    """testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor / ...ByTheRightProcessor."""
    windows = JoinWindows.ofTimeDifferenceWithNoGrace(100) if grace is None else JoinWindows.ofTimeDifferenceAndGrace(100, grace)
    j = _outer(joins, windows)
    j.in1.pipeInput(0, "A0", 1)
    j.in1.pipeInput(1, "A1", 2)
    j.in1.pipeInput(0, "A0-0", 3)
    j.in2.pipeInput(1, 11, 3)
    assert j.results() == [(1, "A1+11", 3)]
    if closer == 1:
        j.in1.pipeInput(2, "dummy", 401)
    else:
        j.in2.pipeInput(2, 100, 401)
    assert j.results() == [(0, "A0+null", 1), (0, "A0-0+null", 3)]
    if closer == 1:
        j.in2.pipeInput(2, 100, 401)
    else:
        j.in1.pipeInput(2, "dummy", 402)
    assert j.results() == [(2, "dummy+100", 401 if closer == 1 else 402)]


@pytest.mark.parametrize("grace, closer", [(None, 1), (0, 2)])
def test_right_expired_non_joined_records_KStreamKStreamOuterJoinTest(joins, grace, closer):
    """testRightExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor / ...ByTheRightProcessor."""
    windows = JoinWindows.ofTimeDifferenceWithNoGrace(100) if grace is None else JoinWindows.ofTimeDifferenceAndGrace(100, grace)
    j = _outer(joins, windows)
    j.in2.pipeInput(0, 10, 1)
    j.in2.pipeInput(1, 11, 2)
    j.in2.pipeInput(0, 12, 3)
    j.in1.pipeInput(1, "A1", 3)
    assert j.results() == [(1, "A1+11", 3)]
    if closer == 1:
        j.in1.pipeInput(2, "dummy", 401)
    else:
        j.in2.pipeInput(2, 100, 401)
    assert j.results() == [(0, "null+10", 1), (0, "null+12", 3)]
    if closer == 1:
        j.in2.pipeInput(2, 100, 402)
    else:
        j.in1.pipeInput(2, "dummy", 402)
    assert j.results() == [(2, "dummy+100", 402)]


def test_ordering_KStreamKStreamOuterJoinTest_testOrdering(joins):
    j = _outer(joins, JoinWindows.ofTimeDifferenceWithNoGrace(100))
    j.in1.pipeInput(0, "A0", 0)
    j.in1.pipeInput(1, "A1", 100)
    j.in2.pipeInput(1, 11, 110)
    assert j.results() == [(0, "A0+null", 0), (1, "A1+11", 110)]


def test_grace_period_KStreamKStreamOuterJoinTest_testGracePeriod(joins):
    j = _outer(joins, JoinWindows.ofTimeDifferenceAndGrace(100, 10))
    j.in1.pipeInput(0, "A0", 0)
    j.in2.pipeInput(1, 11, 0)
    j.in1.pipeInput(1, "A1", 101)
    j.in2.pipeInput(0, 10, 101)
    assert j.results() == []
    j.in2.pipeInput(0, 100, 112)
    assert j.results() == [(1, "null+11", 0), (0, "A0+null", 0)]


def test_asymmetric_window_emits_all_KStreamKStreamOuterJoinTest_testEmitAllNonJoinedResultsForAsymmetricWindow(joins):
    """A right record's window closes ``before`` (5) after it, a left one's ``after`` (20) after it."""
    j = _outer(joins, JoinWindows.ofTimeDifferenceWithNoGrace(5).after(20))
    for topic, key, value, ts, expected in [
        (1, 0, "A0", 29, []), (1, 1, "A1", 30, []), (2, 2, 12, 31, []), (2, 3, 13, 36, []),
        (2, 4, 14, 37, [(2, "null+12", 31)]),
        (2, 5, 15, 50, [(0, "A0+null", 29), (3, "null+13", 36), (4, "null+14", 37)]),
    ]:
        (j.in1 if topic == 1 else j.in2).pipeInput(key, value, ts)
        assert j.results() == expected, (key, ts)


@pytest.mark.parametrize("inMemory", [True, False])
def test_outer_join_with_suppliers_KStreamKStreamOuterJoinTest_runOuterJoin(joins, inMemory):
    """testOuterJoinWithInMemoryCustomSuppliers (True) / testOuterJoinWithDefaultSuppliers (False)."""
    windows = JoinWindows.ofTimeDifferenceWithNoGrace(100)
    sj = StreamJoined.with_(Serdes.Integer(), Serdes.String(), Serdes.Long())
    if inMemory:
        sj = sj.withThisStoreSupplier(Stores.inMemoryWindowStore("in-memory-join-store", 200, 200, True)) \
            .withOtherStoreSupplier(Stores.inMemoryWindowStore("in-memory-join-store-other", 200, 200, True))
    j = _outer(joins, windows, sj)
    assert len(j.driver.getAllStateStores()) == 3
    assert j.pipe(1, "A", KEYS[:2]) == []
    assert j.pipe(2, 10, KEYS[:2]) == [(0, "A0+10", 0), (1, "A1+11", 0)]
    assert j.pipe(1, "B", KEYS[:3]) == [(0, "B0+10", 0), (1, "B1+11", 0)]
    assert j.pipe(2, 20, KEYS) == [(0, "A0+20", 0), (0, "B0+20", 0), (1, "A1+21", 0), (1, "B1+21", 0), (2, "B2+22", 0)]
    assert j.pipe(1, "C", KEYS) == [(0, "C0+10", 0), (0, "C0+20", 0), (1, "C1+11", 0), (1, "C1+21", 0),
                                    (2, "C2+22", 0), (3, "C3+23", 0)]
    j.in1.pipeInput(0, "dummy", 400)
    assert j.results() == []


def test_asymmetric_before_KStreamKStreamOuterJoinTest_testShouldNotEmitLeftJoinResultForAsymmetricBeforeWindow(joins):
    j = _outer(joins, JoinWindows.ofTimeDifferenceWithNoGrace(100).before(0))
    assert j.pipe(1, "A", KEYS[:2], 0, 1) == []
    j.in2.pipeInput(0, 10, 100)
    assert j.results() == [(0, "A0+10", 100)]
    j.in2.pipeInput(1, 11, 102)
    assert j.results() == [(1, "A1+null", 1)]
    j.in2.pipeInput(2, 12, 103)
    assert j.results() == [(1, "null+11", 102)]
    j.in1.pipeInput(2, "A2", 103)
    assert j.results() == [(2, "A2+12", 103)]


def test_asymmetric_after_KStreamKStreamOuterJoinTest_testShouldNotEmitLeftJoinResultForAsymmetricAfterWindow(joins):
    j = _outer(joins, JoinWindows.ofTimeDifferenceWithNoGrace(100).after(0))
    assert j.pipe(1, "A", KEYS[:2], 0, 1) == [(0, "A0+null", 0)]
    j.in2.pipeInput(1, 11, 1)
    assert j.results() == [(1, "A1+11", 1)]
    j.in2.pipeInput(2, 12, 101)
    j.in2.pipeInput(3, 13, 101)
    assert j.results() == []
    j.in1.pipeInput(2, "A2", 201)
    assert j.results() == [(2, "A2+12", 201)]


def test_non_joined_results_carry_the_current_headers_KStreamKStreamOuterJoinTest_testShouldForwardCurrentHeaders(joins):
    j = _outer(joins, JoinWindows.ofTimeDifferenceAndGrace(100, 10))
    j.in1.pipeInput(TestRecord(0, "A0", 0, (("h", b"\x01"),)))
    j.in2.pipeInput(TestRecord(1, 10, 0, (("h", b"\x02"),)))
    j.in2.pipeInput(TestRecord(3, 100, 211, (("h", b"\x03"),)))
    assert [(r.key(), r.value(), r.timestamp(), r.headers()) for r in j.out.readRecordsToList()] == [
        (1, "null+10", 0, (("h", b"\x03"),)), (0, "A0+null", 0, (("h", b"\x03"),))]


def test_outer_join_forwards_null_key_records_of_both_sides_at_once(joins):
    """KIP-962 on both sides of an outer join."""
    j = _outer(joins, JoinWindows.ofTimeDifferenceWithNoGrace(100))
    j.in1.pipeInput(None, "A", 5)
    j.in2.pipeInput(None, 7, 6)
    assert j.results() == [(None, "A+null", 5), (None, "null+7", 6)]


# ---------------------------------------------------------------------------------- KStreamKStreamSelfJoinTest
def _selfJoin(windows, kind="join"):
    b = StreamsBuilder()
    s = b.stream("topic1", Consumed.with_(Serdes.String(), Serdes.String()))
    getattr(s, kind)(s, TOSTRING_JOINER, windows, StreamJoined.with_(Serdes.String(), Serdes.String(), Serdes.String())).to("out")
    return TopologyTestDriver(b.build(), PROPS)


def test_self_join_KStreamKStreamSelfJoinTest_shouldMatchInnerJoinWithSelfJoinWithSingleStream():
    """A record meets itself once (through the right side: it is looked up before it is stored)."""
    with _selfJoin(JoinWindows.ofTimeDifferenceWithNoGrace(100)) as d:
        inp, out = d.createInputTopic("topic1"), d.createOutputTopic("out")
        expected = [
            ("A", "1", 1, [("A", "1+1", 1)]),
            ("B", "1", 2, [("B", "1+1", 2)]),
            ("A", "2", 3, [("A", "2+1", 3), ("A", "1+2", 3), ("A", "2+2", 3)]),
            ("B", "2", 4, [("B", "2+1", 4), ("B", "1+2", 4), ("B", "2+2", 4)]),
            ("B", "3", 5, [("B", "3+1", 5), ("B", "3+2", 5), ("B", "1+3", 5), ("B", "2+3", 5), ("B", "3+3", 5)]),
        ]
        for key, value, ts, records in expected:
            inp.pipeInput(key, value, ts)
            assert [(r.key(), r.value(), r.timestamp()) for r in out.readRecordsToList()] == records


def test_self_join_with_grace_KStreamKStreamSelfJoinTest_shouldMatchInnerJoinWithSelfJoinDifferentBeforeAfterWindows():
    with _selfJoin(JoinWindows.ofTimeDifferenceAndGrace(11000, 10000)) as d:
        inp, out = d.createInputTopic("topic1"), d.createOutputTopic("out")
        expected = [
            ("A", "1", 0, [("A", "1+1", 0)]),
            ("A", "2", 11000, [("A", "2+1", 11000), ("A", "1+2", 11000), ("A", "2+2", 11000)]),
            ("B", "1", 12000, [("B", "1+1", 12000)]),
            ("A", "3", 13000, [("A", "3+2", 13000), ("A", "2+3", 13000), ("A", "3+3", 13000)]),
            ("A", "4", 15000, [("A", "4+2", 15000), ("A", "4+3", 15000), ("A", "2+4", 15000), ("A", "3+4", 15000),
                               ("A", "4+4", 15000)]),
            ("C", "1", 16000, [("C", "1+1", 16000)]),
            ("D", "1", 17000, [("D", "1+1", 17000)]),
            ("A", "5", 30000, [("A", "5+5", 30000)]),
        ]
        for key, value, ts, records in expected:
            inp.pipeInput(key, value, ts)
            assert [(r.key(), r.value(), r.timestamp()) for r in out.readRecordsToList()] == records


def test_self_left_join_keeps_nothing_a_record_joins_itself():
    with _selfJoin(JoinWindows.ofTimeDifferenceWithNoGrace(100), "leftJoin") as d:
        inp, out = d.createInputTopic("topic1"), d.createOutputTopic("out")
        inp.pipeInput("A", "1", 1)
        inp.pipeInput("B", "1", 2)
        inp.pipeInput("A", "2", 300)
        assert [(r.key(), r.value(), r.timestamp()) for r in out.readRecordsToList()] == [
            ("A", "1+1", 1), ("B", "1+1", 2), ("A", "2+2", 300)]


# ---------------------------------------------------------------------------------- API
def test_join_windows_api_and_errors():
    w = JoinWindows.ofTimeDifferenceAndGrace(100, 50)
    assert (w.beforeMs, w.afterMs, w.size(), w.gracePeriodMs()) == (100, 100, 200, 50)
    assert (w.before(20).beforeMs, w.after(-20).afterMs, w.after(-20).size()) == (20, -20, 80)
    assert repr(w) == "JoinWindows{beforeMs=100, afterMs=100, graceMs=50}"
    assert JoinWindows.of(100).gracePeriodMs() == 24 * 3600 * 1000 - 200
    with pytest.raises(ValueError, match=r"Window interval \(ie, beforeMs\+afterMs\) must not be negative."):
        JoinWindows.ofTimeDifferenceWithNoGrace(-1)
    with pytest.raises(ValueError, match="Grace period must not be negative."):
        JoinWindows.ofTimeDifferenceAndGrace(1, -1)
    with pytest.raises(RuntimeError, match=r"Cannot call grace\(\) after setting grace value"):
        w.grace(10)
    with pytest.raises(NotImplementedError, match=r"windowsFor\(\) is not supported by JoinWindows."):
        w.windowsFor(0)
    b = StreamsBuilder()
    s, t = b.stream("a"), b.stream("b")
    with pytest.raises(TypeError, match="windows must be JoinWindows"):
        s.join(t, TOSTRING_JOINER, 100)
    with pytest.raises(TypeError, match="streamJoined must be StreamJoined"):
        s.join(t, TOSTRING_JOINER, w, Produced.with_(Serdes.String(), Serdes.String()))
    with pytest.raises(TopologyException, match="same StreamsBuilder"):
        s.join(StreamsBuilder().stream("c"), TOSTRING_JOINER, w)


def test_joiner_with_key_and_named_processors():
    """A three-argument joiner gets the key (Kafka's ValueJoinerWithKey); StreamJoined.withName
    names every processor of the join."""
    b = StreamsBuilder()
    s, t = b.stream("a"), b.stream("b")
    s.outerJoin(t, lambda k, v1, v2: f"{k}:{js(v1)}:{js(v2)}", JoinWindows.ofTimeDifferenceWithNoGrace(5),
                StreamJoined.as_("st").withName("j")).to("out")
    topology = b.build()
    names = [n.name for sub in topology.subtopologies() for n in sub.nodes]
    assert names == ["KSTREAM-SOURCE-0000000000", "KSTREAM-SOURCE-0000000001", "j-this-windowed", "j-other-windowed",
                     "j-outer-this-join", "j-outer-other-join", "j-merge", "KSTREAM-SINK-0000000007"]
    assert sorted(topology.storeBuilders()) == ["st-outer-other-join-store", "st-outer-shared-join-store",
                                                "st-outer-this-join-store"]
    with TopologyTestDriver(topology, PROPS) as d:
        d.createInputTopic("a").pipeInput("k", "v", 1)
        d.createInputTopic("b").pipeInput("k", "w", 3)
        assert d.createOutputTopic("out").readKeyValuesToList() == [KeyValue("k", "k:v:w")]


EXPECTED_TOPOLOGY_WITH_USER_NAMED_REPARTITION_TOPICS = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])
      --> KSTREAM-MAP-0000000003
    Processor: KSTREAM-MAP-0000000003 (stores: [])
      --> second-join-left-repartition-filter, first-join-left-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: first-join-left-repartition-filter (stores: [])
      --> first-join-left-repartition-sink
      <-- KSTREAM-MAP-0000000003
    Processor: second-join-left-repartition-filter (stores: [])
      --> second-join-left-repartition-sink
      <-- KSTREAM-MAP-0000000003
    Sink: first-join-left-repartition-sink (topic: first-join-left-repartition)
      <-- first-join-left-repartition-filter
    Sink: second-join-left-repartition-sink (topic: second-join-left-repartition)
      <-- second-join-left-repartition-filter

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000001 (topics: [topic2])
      --> first-join-other-windowed
    Source: first-join-left-repartition-source (topics: [first-join-left-repartition])
      --> first-join-this-windowed
    Processor: first-join-other-windowed (stores: [KSTREAM-JOINOTHER-0000000010-store])
      --> first-join-other-join
      <-- KSTREAM-SOURCE-0000000001
    Processor: first-join-this-windowed (stores: [KSTREAM-JOINTHIS-0000000009-store])
      --> first-join-this-join
      <-- first-join-left-repartition-source
    Processor: first-join-other-join (stores: [KSTREAM-JOINTHIS-0000000009-store])
      --> first-join-merge
      <-- first-join-other-windowed
    Processor: first-join-this-join (stores: [KSTREAM-JOINOTHER-0000000010-store])
      --> first-join-merge
      <-- first-join-this-windowed
    Processor: first-join-merge (stores: [])
      --> KSTREAM-SINK-0000000012
      <-- first-join-this-join, first-join-other-join
    Sink: KSTREAM-SINK-0000000012 (topic: out-one)
      <-- first-join-merge

  Sub-topology: 2
    Source: KSTREAM-SOURCE-0000000002 (topics: [topic3])
      --> second-join-other-windowed
    Source: second-join-left-repartition-source (topics: [second-join-left-repartition])
      --> second-join-this-windowed
    Processor: second-join-other-windowed (stores: [KSTREAM-JOINOTHER-0000000019-store])
      --> second-join-other-join
      <-- KSTREAM-SOURCE-0000000002
    Processor: second-join-this-windowed (stores: [KSTREAM-JOINTHIS-0000000018-store])
      --> second-join-this-join
      <-- second-join-left-repartition-source
    Processor: second-join-other-join (stores: [KSTREAM-JOINTHIS-0000000018-store])
      --> second-join-merge
      <-- second-join-other-windowed
    Processor: second-join-this-join (stores: [KSTREAM-JOINOTHER-0000000019-store])
      --> second-join-merge
      <-- second-join-this-windowed
    Processor: second-join-merge (stores: [])
      --> KSTREAM-SINK-0000000021
      <-- second-join-this-join, second-join-other-join
    Sink: KSTREAM-SINK-0000000021 (topic: out-two)
      <-- second-join-merge

"""

EXPECTED_TOPOLOGY_WITH_GENERATED_REPARTITION_TOPIC = """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])
      --> KSTREAM-MAP-0000000003
    Processor: KSTREAM-MAP-0000000003 (stores: [])
      --> KSTREAM-FILTER-0000000005
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-MAP-0000000003
    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-MAP-0000000003-repartition)
      <-- KSTREAM-FILTER-0000000005

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-MAP-0000000003-repartition])
      --> KSTREAM-WINDOWED-0000000007, KSTREAM-WINDOWED-0000000016
    Source: KSTREAM-SOURCE-0000000001 (topics: [topic2])
      --> KSTREAM-WINDOWED-0000000008
    Source: KSTREAM-SOURCE-0000000002 (topics: [topic3])
      --> KSTREAM-WINDOWED-0000000017
    Processor: KSTREAM-WINDOWED-0000000007 (stores: [KSTREAM-JOINTHIS-0000000009-store])
      --> KSTREAM-JOINTHIS-0000000009
      <-- KSTREAM-SOURCE-0000000006
    Processor: KSTREAM-WINDOWED-0000000008 (stores: [KSTREAM-JOINOTHER-0000000010-store])
      --> KSTREAM-JOINOTHER-0000000010
      <-- KSTREAM-SOURCE-0000000001
    Processor: KSTREAM-WINDOWED-0000000016 (stores: [KSTREAM-JOINTHIS-0000000018-store])
      --> KSTREAM-JOINTHIS-0000000018
      <-- KSTREAM-SOURCE-0000000006
    Processor: KSTREAM-WINDOWED-0000000017 (stores: [KSTREAM-JOINOTHER-0000000019-store])
      --> KSTREAM-JOINOTHER-0000000019
      <-- KSTREAM-SOURCE-0000000002
    Processor: KSTREAM-JOINOTHER-0000000010 (stores: [KSTREAM-JOINTHIS-0000000009-store])
      --> KSTREAM-MERGE-0000000011
      <-- KSTREAM-WINDOWED-0000000008
    Processor: KSTREAM-JOINOTHER-0000000019 (stores: [KSTREAM-JOINTHIS-0000000018-store])
      --> KSTREAM-MERGE-0000000020
      <-- KSTREAM-WINDOWED-0000000017
    Processor: KSTREAM-JOINTHIS-0000000009 (stores: [KSTREAM-JOINOTHER-0000000010-store])
      --> KSTREAM-MERGE-0000000011
      <-- KSTREAM-WINDOWED-0000000007
    Processor: KSTREAM-JOINTHIS-0000000018 (stores: [KSTREAM-JOINOTHER-0000000019-store])
      --> KSTREAM-MERGE-0000000020
      <-- KSTREAM-WINDOWED-0000000016
    Processor: KSTREAM-MERGE-0000000011 (stores: [])
      --> KSTREAM-SINK-0000000012
      <-- KSTREAM-JOINTHIS-0000000009, KSTREAM-JOINOTHER-0000000010
    Processor: KSTREAM-MERGE-0000000020 (stores: [])
      --> KSTREAM-SINK-0000000021
      <-- KSTREAM-JOINTHIS-0000000018, KSTREAM-JOINOTHER-0000000019
    Sink: KSTREAM-SINK-0000000012 (topic: out-one)
      <-- KSTREAM-MERGE-0000000011
    Sink: KSTREAM-SINK-0000000021 (topic: out-to)
      <-- KSTREAM-MERGE-0000000020

"""


# ---------------------------------------------------------------------------------- the stores
@pytest.mark.parametrize("persistent", [True, False])
def test_window_store_retaining_duplicates(persistent):
    """``Stores.*WindowStore(..., retainDuplicates=True)``: every put kept, read by time then put
    order, reads clamped to ``observed - retention + 1``; an expired put is dropped and counted
    (persistent: by 60 s segment; in memory: ``ts <= observed - retention``); a null put is
    ignored, but advances the in-memory store's observed time (Kafka's ``InMemoryWindowStore``)."""
    make = Stores.persistentWindowStore if persistent else Stores.inMemoryWindowStore
    store = Stores.windowStoreBuilder(make("w", 100, 50, True), Serdes.String(), Serdes.String()).build()
    drops = []
    store.droppedCounter = lambda: drops.append(1)
    store.put("k", "a", 10)
    store.put("k", "b", 5)
    store.put("k", "c", 10)
    store.put("j", "x", 7)
    assert [(kv.key, kv.value) for kv in store.fetch("k", 0, 20)] == [(5, "b"), (10, "a"), (10, "c")]
    assert [str(kv.key) for kv in store.fetchAll(0, 20)] == ["[k@5/55]", "[j@7/57]", "[k@10/60]", "[k@10/60]"]
    store.put("k", None, 200)  # ignored; in memory: observed 200, so [101, ...] stays visible
    assert [kv.value for kv in store.fetch("k", 0, 300)] == (["b", "a", "c"] if persistent else [])
    store.put("k", "d", 1000)
    assert [kv.value for kv in store.fetch("k", 0, 2000)] == ["d"]
    store.put("k", "e", 800)  # older than retention: dropped, and counted where Kafka counts it
    assert drops == ([] if persistent else [1])
    assert [kv.value for kv in store.fetch("k", 0, 2000)] == ["d"]
    store.put("k", "f", 200_000)
    store.put("k", "g", 1000)  # a persistent store drops it by segment: 1000 // 60000 < (200000 - 100) // 60000
    assert len(drops) == (1 if persistent else 2)


def test_outer_join_store_lists_values_in_key_order():
    from kspark.state._join_stores import LeftOrRightValue, OuterJoinStoreBuilder, TimestampedKeyAndJoinSide as K
    from kspark.state import KeyValueBytesStoreSupplier

    store = OuterJoinStoreBuilder(KeyValueBytesStoreSupplier("o", True), Serdes.String(), Serdes.String(),
                                  Serdes.Long()).build()
    store.put(K(True, "b", 5), LeftOrRightValue("B", None))
    store.put(K(False, "b", 5), LeftOrRightValue(None, 1))
    store.put(K(True, "a", 5), LeftOrRightValue("A", None))
    store.put(K(True, "a", 5), LeftOrRightValue("A2", None))
    store.put(K(False, "z", 3), LeftOrRightValue(None, 2))
    # by timestamp, then right side (0) before left (1), then key bytes; a key's values in put order
    assert [(str(kv.key), kv.value) for kv in store.all()] == [
        ("<right,z:3>", (None, 2)), ("<right,b:5>", (None, 1)), ("<left,a:5>", ("A", None)),
        ("<left,a:5>", ("A2", None)), ("<left,b:5>", ("B", None))]
    store.putIfAbsent(K(True, "a", 5), None)  # deletes the key's whole list
    store.putIfAbsent(K(True, "q", 5), None)  # absent: nothing
    assert [str(kv.key) for kv in store.all()] == ["<right,z:3>", "<right,b:5>", "<left,b:5>"]


def test_driver_reads_a_join_window_store(joins):
    """``getWindowStore`` of a join's store: every record kept, by time then arrival."""
    j = joins("join", JoinWindows.ofTimeDifferenceWithNoGrace(100))
    j.in1.pipeInput(0, "A", 5)
    j.in1.pipeInput(0, "B", 5)
    j.in1.pipeInput(1, "C", 3)
    store = j.driver.getWindowStore("KSTREAM-JOINTHIS-0000000004-store")
    assert [(kv.key, kv.value) for kv in store.fetch(0, 0, 10)] == [(5, "A"), (5, "B")]
    assert [(str(kv.key), kv.value) for kv in store.all()] == [("[1@3/203]", "C"), ("[0@5/205]", "A"), ("[0@5/205]", "B")]
