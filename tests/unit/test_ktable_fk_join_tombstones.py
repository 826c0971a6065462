"""Foreign-key joins' "unnecessary" tombstones (issue 36 item 1): ported from Kafka's
``KTableKTableForeignKeyJoinIntegrationTest`` (Kafka Streams 4.3, ``streams/src/test/java/org/
apache/kafka/streams/integration``) ``shouldEmitTombstoneWhenDeletingNonJoiningRecords``,
``shouldNotEmitTombstonesWhenDeletingNonExistingRecords`` and
``joinShouldProduceNullsWhenValueHasNonMatchingForeignKey``, over the test's inner/left,
materialized and rejoin parameters (not its versioned ones, nor optimization: they do not change
these records).

Kafka's ``getTopology`` disables caching on the join's result (``withCachingDisabled``: "the
cache suppresses some of the unnecessary tombstones we want to make assertions about"), so a
left record that never joined and is deleted, or moves to another missing foreign key, gives
``(key, null)`` for an inner join, as Kafka cannot know whether a result was emitted before.
Rule E-5 (caching: a materialized result with caching disabled forwards every update, a delete
of a key it does not hold included). Checked against Kafka Streams 4.3 in the conformance
catalogue: ``fk.*.uncached*`` (tests/conformance/catalogue_issue36.py).
"""

import pytest

from kspark import Materialized, Serdes, Stores, StreamsBuilder
from kspark.testing import TopologyTestDriver

LEFT_TABLE, RIGHT_TABLE, OUTPUT, REJOIN_OUTPUT = "left_table", "right_table", "output-topic", "rejoin-output-topic"
BASE = 1000
CASES = [pytest.param(leftJoin, materialized, rejoin, id=f"{'left' if leftJoin else 'inner'}"
                      f"-{'materialized' if materialized else 'plain'}{'-rejoin' if rejoin else ''}")
         for leftJoin in (False, True) for materialized in (True, False) for rejoin in (True, False)]


def js(v) -> str:
    """``v`` as Java's string concatenation renders it."""
    return "null" if v is None else v


def getTopology(queryableStoreName, leftJoin: bool, rejoin: bool):
    """Kafka's ``getTopology(streamsConfig, queryableStoreName, leftJoin, rejoin, false, false)``."""
    builder = StreamsBuilder()
    left, right = builder.table(LEFT_TABLE), builder.table(RIGHT_TABLE)
    joiner = lambda value1, value2: f"({js(value1)},{js(value2)})"  # noqa: E731 - Java's lambda
    rejoiner = lambda value1, value2: f"rejoin({js(value1)},{js(value2)})"  # noqa: E731
    if queryableStoreName is None:
        mainMaterialized = Materialized.with_(None, Serdes.String()).withCachingDisabled()
        rejoinMaterialized = Materialized.with_(None, Serdes.String())
    else:
        mainMaterialized = (Materialized.as_(Stores.inMemoryKeyValueStore(queryableStoreName))
                            .withValueSerde(Serdes.String()).withCachingDisabled())
        rejoinMaterialized = (Materialized.as_(Stores.inMemoryKeyValueStore(queryableStoreName + "-rejoin"))
                              .withValueSerde(Serdes.String()).withCachingDisabled())
    extractor = lambda value: value.split("|")[1]  # noqa: E731
    if leftJoin:
        fkJoin = left.leftJoin(right, extractor, joiner, mainMaterialized)
        fkJoin.toStream().to(OUTPUT)
        if rejoin:
            fkJoin.leftJoin(left, rejoiner, rejoinMaterialized).toStream().to(REJOIN_OUTPUT)
    else:
        fkJoin = left.join(right, extractor, joiner, mainMaterialized)
        fkJoin.toStream().to(OUTPUT)
        if rejoin:
            fkJoin.join(left, rejoiner, rejoinMaterialized).toStream().to(REJOIN_OUTPUT)
    return builder.build()


CONFIG = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}


def asMap(store) -> dict:
    return {kv.key: kv.value for kv in store.all()}


@pytest.mark.parametrize("leftJoin, materialized, rejoin", CASES)
def test_shouldEmitTombstoneWhenDeletingNonJoiningRecords(leftJoin, materialized, rejoin):
    with TopologyTestDriver(getTopology("store" if materialized else None, leftJoin, rejoin), CONFIG) as driver:
        left = driver.createInputTopic(LEFT_TABLE, Serdes.String(), Serdes.String())
        outputTopic = driver.createOutputTopic(OUTPUT, Serdes.String(), Serdes.String())
        store = driver.getKeyValueStore("store")

        left.pipeInput("lhs1", "lhsValue1|rhs1", BASE)
        expected = {"lhs1": "(lhsValue1|rhs1,null)"} if leftJoin else {}
        assert outputTopic.readKeyValuesToMap() == expected
        if materialized:
            assert asMap(store) == expected

        # "Deleting a non-joining record produces an unnecessary tombstone for inner joins, because
        # it's not possible to know whether a result was previously emitted."
        left.pipeInput("lhs1", None, BASE + 1)
        assert outputTopic.readKeyValuesToMap() == {"lhs1": None}
        if materialized:
            assert asMap(store) == {}

        # "Deleting a non-existing record is idempotent"
        left.pipeInput("lhs1", None, BASE + 2)
        assert outputTopic.readKeyValuesToMap() == {}
        if materialized:
            assert asMap(store) == {}


@pytest.mark.parametrize("leftJoin, materialized, rejoin", CASES)
def test_shouldNotEmitTombstonesWhenDeletingNonExistingRecords(leftJoin, materialized, rejoin):
    with TopologyTestDriver(getTopology("store" if materialized else None, leftJoin, rejoin), CONFIG) as driver:
        left = driver.createInputTopic(LEFT_TABLE, Serdes.String(), Serdes.String())
        outputTopic = driver.createOutputTopic(OUTPUT, Serdes.String(), Serdes.String())
        left.pipeInput("lhs1", None, BASE)
        assert outputTopic.readKeyValuesToMap() == {}
        if materialized:
            assert asMap(driver.getKeyValueStore("store")) == {}


@pytest.mark.parametrize("leftJoin, materialized, rejoin", CASES)
def test_joinShouldProduceNullsWhenValueHasNonMatchingForeignKey(leftJoin, materialized, rejoin):
    with TopologyTestDriver(getTopology("store" if materialized else None, leftJoin, rejoin), CONFIG) as driver:
        right = driver.createInputTopic(RIGHT_TABLE, Serdes.String(), Serdes.String())
        left = driver.createInputTopic(LEFT_TABLE, Serdes.String(), Serdes.String())
        outputTopic = driver.createOutputTopic(OUTPUT, Serdes.String(), Serdes.String())
        store = driver.getKeyValueStore("store")

        def check(output: dict, stored: dict) -> None:
            assert outputTopic.readKeyValuesToMap() == output
            if materialized:
                assert asMap(store) == stored

        left.pipeInput("lhs1", "lhsValue1|rhs1", BASE)
        half = {"lhs1": "(lhsValue1|rhs1,null)"} if leftJoin else {}
        check(half, half)
        # "moving" to another non-existent FK: an unnecessary tombstone for the inner join
        left.pipeInput("lhs1", "lhsValue1|rhs2", BASE + 1)
        check({"lhs1": "(lhsValue1|rhs2,null)" if leftJoin else None},
              {"lhs1": "(lhsValue1|rhs2,null)"} if leftJoin else {})
        left.pipeInput("lhs1", "lhsValue1|rhs3", BASE + 2)
        check({"lhs1": "(lhsValue1|rhs3,null)" if leftJoin else None},
              {"lhs1": "(lhsValue1|rhs3,null)"} if leftJoin else {})
        # a right record for a key no longer referenced changes nothing
        right.pipeInput("rhs1", "rhsValue1", BASE + 3)
        check({}, {"lhs1": "(lhsValue1|rhs3,null)"} if leftJoin else {})
        # moving to a foreign key that exists completes the join
        left.pipeInput("lhs1", "lhsValue1|rhs1", BASE + 4)
        check({"lhs1": "(lhsValue1|rhs1,rhsValue1)"}, {"lhs1": "(lhsValue1|rhs1,rhsValue1)"})
        # and moving away again gives a tombstone (inner) or the half-joined update (left)
        left.pipeInput("lhs1", "lhsValue1|rhs2", BASE + 5)
        check({"lhs1": "(lhsValue1|rhs2,null)" if leftJoin else None},
              {"lhs1": "(lhsValue1|rhs2,null)"} if leftJoin else {})
