"""The benchmark input generators (bench/inputs.py) produce the record shapes the benchmarks need."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
inputs = pytest.importorskip("inputs")


def test_nasa_replication_shifts_hosts_and_days_and_stays_time_ordered():
    df = inputs.nasaRequests(30_969 * 2 + 3, copiesPerDay=2)  # one day of 2 copies, 3 requests of day 2
    assert list(df.columns) == ["host", "ts"]
    assert len(df) == 30_969 * 2 + 3
    assert df["ts"].is_monotonic_increasing
    # the log's first requests: pppa006.compuserve.com at 807256800, vcc7.langara.bc.ca at +4 s
    assert df.head(4).values.tolist() == [
        ["pppa006.compuserve.com#0", 807_256_800_000], ["pppa006.compuserve.com#1", 807_256_800_000],
        ["vcc7.langara.bc.ca#0", 807_256_804_000], ["vcc7.langara.bc.ca#1", 807_256_804_000]]
    # copy 2 starts day 2 with suffix #0 again
    assert df.tail(3).values.tolist() == [
        ["pppa006.compuserve.com#0", 807_343_200_000], ["vcc7.langara.bc.ca#0", 807_343_204_000],
        ["pppa006.compuserve.com#0", 807_343_206_000]]


def test_krx_replication_renames_codes_keeping_time_order():
    rows = [{"code": "005930", "snapshot_ts": "t1"}, {"code": "000660", "snapshot_ts": "t2"}]
    assert inputs.withCodeCopies(rows, 2) == [
        {"code": "005930-0", "snapshot_ts": "t1"}, {"code": "005930-1", "snapshot_ts": "t1"},
        {"code": "000660-0", "snapshot_ts": "t2"}, {"code": "000660-1", "snapshot_ts": "t2"}]


def test_nexmark_mix_and_shapes():
    events = inputs.nexmark(1_000)
    assert (len(events["persons"]), len(events["auctions"]), len(events["bids"])) == (20, 60, 920)
    person, auction, bid = events["persons"][0], events["auctions"][0], events["bids"][0]
    assert person[:1] == (0,) and person[2] in ("OR", "ID", "CA", "WA", "AZ", "NY", "TX", "FL")
    assert auction[0] == 0 and 0 <= auction[1] < 20 and 1 <= auction[2] < 20
    assert bid[1] < 20 and 100 <= bid[2] < 10_100
    timestamps = [e[-1] for kind in events.values() for e in kind]
    assert sorted(timestamps) == list(range(1_767_225_600_000, 1_767_225_600_000 + 1_000))
