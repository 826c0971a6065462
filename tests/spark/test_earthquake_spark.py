"""Cross-host: the same 3-partition input gives the same windowed counts and drop counts in
TopologyTestDriver (one driver per partition = per Kafka task) and on Spark (rules T-1, T-5,
T-6, T-8, T-13, T-18), on the real USGS feed replayed in arrival order."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import earthquake_lateness as eq  # noqa: E402
from kspark import LogAndSkipOnInvalidTimestamp, StreamsException  # noqa: E402
from kspark.topics import LocalTopics  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="module")
def topics(tmp_path_factory):
    t = LocalTopics(tmp_path_factory.mktemp("quakes") / "topics")
    eq.loadTopics(t, eq.readFeed(2_000))
    return t


def test_grace_periods_keep_and_drop_the_same_records_on_both_hosts(spark, topics, tmp_path):
    driverOut, driverDropped = eq.runOnDrivers(eq.graceTopology(), topics, "quakes")
    sparkOut, sparkDropped = eq.runOnSpark(eq.graceTopology(), topics, tmp_path, "quake-grace-test", spark=spark)
    assert sparkOut == driverOut
    assert sparkDropped == driverDropped > 0
    kept = [eq.kept(driverOut, f"counts-grace-{label}") for label in eq.GRACES]
    assert kept == sorted(kept) and kept[0] < kept[-1] <= 2_000  # more grace keeps more late events


def test_invalid_timestamp_policies_on_both_hosts(spark, topics, tmp_path):
    driverOut, driverDropped = eq.runOnDrivers(eq.policyTopology(LogAndSkipOnInvalidTimestamp()), topics, "quakes-legacy")
    sparkOut, sparkDropped = eq.runOnSpark(eq.policyTopology(LogAndSkipOnInvalidTimestamp()), topics, tmp_path,
                                           "quake-skip-test", spark=spark)
    assert sparkOut == driverOut and sparkDropped == driverDropped == 2_000 // eq.LEGACY_EVERY
    with pytest.raises(StreamsException, match=r"topic = quakes-legacy, partition = \d, offset = \d+, timestamp = -1"):
        eq.runOnDrivers(eq.policyTopology(None), topics, "quakes-legacy")
    with pytest.raises(StreamsException, match=r"has invalid \(negative\) timestamp"):
        eq.runOnSpark(eq.policyTopology(None), topics, tmp_path, "quake-fail-test", spark=spark)
