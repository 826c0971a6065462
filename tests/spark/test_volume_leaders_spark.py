"""examples/volume_leaders.py (issue 20's example: seed 004 with two streams): the price ticks
joined with the volume-leader feed within 5 minutes give the same falling-leader counts per
stock and day on TopologyTestDriver (one per partition) and on Spark, on two days of KRX data."""

import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import volume_leaders as vl  # noqa: E402
from kspark.topics import LocalTopics  # noqa: E402


def test_falling_volume_leaders_on_both_hosts(spark, tmp_path):
    prices, leaders = vl.readFeeds(days=2)
    topics = LocalTopics(tmp_path / "topics")
    vl.loadTopics(topics, prices, leaders)
    driver = vl.runOnDrivers(prices, leaders, 3.0)
    assert vl.runOnSpark(topics, tmp_path, 3.0, spark=spark) == driver
    perDay = {}
    for (code, start), n in driver.items():
        day = str(datetime.fromtimestamp(start / 1000, timezone.utc).date())
        stocks, ticks = perDay.get(day, (0, 0))
        perDay[day] = (stocks + 1, ticks + n)
    assert perDay == {"2026-03-09": (27, 275), "2026-03-10": (6, 74)}
