"""The flagship job's topology on TopologyTestDriver with hand-made records (rules J-1, J-4, J-7,
E-3, T-1, TTD-4)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import valuation_signals as vs  # noqa: E402
from kspark.testing import TestRecord, TopologyTestDriver  # noqa: E402


def price(code, date, ts, close):
    return {"code": code, "name": code, "trade_date": date, "snapshot_ts": ts, "close": str(close)}


def valuation(code, date, per, eps):
    return {"date": date, "code": code, "name": code, "sector": "s", "per": str(per), "pbr": "1", "eps": str(eps), "bps": "100"}


def company(code, name, sector):
    return {"code": code, "name": name, "sector": sector}


def test_signal_uses_previous_day_valuation_and_fires_once_per_company_per_day():
    with TopologyTestDriver(vs.buildTopology(threshold=0.05)) as d:
        prices, vals = d.createInputTopic("prices"), d.createInputTopic("valuations")
        d.createInputTopic("companies").pipeInput("A", company("A", "Alpha", "IT"), 0)
        out = d.createOutputTopic("signals")
        day1_close = vs.epochMs("2026-03-06T18:45:00+09:00")
        vals.pipeInput("A", valuation("A", "2026-03-06", 10.0, 100), day1_close)
        prices.pipeInput("A", price("A", "2026-03-09", "2026-03-09T10:00:00+09:00", 960), 0)   # PER 9.6: -4 %
        prices.pipeInput("A", price("A", "2026-03-09", "2026-03-09T11:00:00+09:00", 940), 0)   # PER 9.4: signal
        prices.pipeInput("A", price("A", "2026-03-09", "2026-03-09T12:00:00+09:00", 900), 0)   # same day: no
        prices.pipeInput("B", price("B", "2026-03-09", "2026-03-09T12:00:00+09:00", 1), 0)     # no valuation
        vals.pipeInput("A", valuation("A", "2026-03-09", 9.0, 100), vs.epochMs("2026-03-09T18:45:00+09:00"))
        prices.pipeInput("A", price("A", "2026-03-10", "2026-03-10T10:00:00+09:00", 850), 0)   # PER 8.5 vs 9.0: signal
        records = out.readRecordsToList()
        assert [(r.key(), r.value()["snapshot_ts"], r.value()["valuation_date"], r.value()["per_drop_pct"],
                 r.value()["name"], r.value()["sector"], r.timestamp()) for r in records] == [
            ("A", "2026-03-09T11:00:00+09:00", "2026-03-06", 6.0, "Alpha", "IT", vs.epochMs("2026-03-09T11:00:00+09:00")),
            ("A", "2026-03-10T10:00:00+09:00", "2026-03-09", 5.56, "Alpha", "IT", vs.epochMs("2026-03-10T10:00:00+09:00")),
        ]
        assert d.getKeyValueStore(vs.SIGNAL_STORE).get("A") == "2026-03-10"
        assert isinstance(records[0], TestRecord)


def test_company_master_update_60ms_before_a_price_is_seen_by_it_seed_004():
    """The seed's GlobalKTable race: the master changes A's sector at T, a price comes at T+60 ms;
    its signal carries the new sector. A code missing from the master gets no signal (inner join)."""
    with TopologyTestDriver(vs.buildTopology(threshold=0.05)) as d:
        prices, vals, companies = (d.createInputTopic(t) for t in ("prices", "valuations", "companies"))
        companies.pipeInput("A", company("A", "Alpha", "IT"), 0)
        vals.pipeInput("A", valuation("A", "2026-03-06", 10.0, 100), vs.epochMs("2026-03-06T18:45:00+09:00"))
        vals.pipeInput("B", valuation("B", "2026-03-06", 10.0, 100), vs.epochMs("2026-03-06T18:45:00+09:00"))
        t = vs.epochMs("2026-03-09T10:00:00+09:00")
        companies.pipeInput("A", company("A", "Alpha Holdings", "Holding companies"), t)
        prices.pipeInput("A", price("A", "2026-03-09", "2026-03-09T10:00:00.060000+09:00", 900), 0)
        prices.pipeInput("B", price("B", "2026-03-09", "2026-03-09T10:00:00.060000+09:00", 900), 0)
        [signal] = d.createOutputTopic("signals").readRecordsToList()
        assert (signal.key(), signal.value()["name"], signal.value()["sector"], signal.timestamp()) == (
            "A", "Alpha Holdings", "Holding companies", t + 60)
        assert d.getKeyValueStore(vs.COMPANY_STORE).get("A") == company("A", "Alpha Holdings", "Holding companies")


def test_sector_report_counts_signals_per_sector_per_day():
    signals = [{"sector": s, "trade_date": d} for s, d in
               [("IT", "2026-03-09"), ("IT", "2026-03-09"), ("Banks", "2026-03-09"), ("Banks", "2026-03-10"),
                ("Banks", "2026-03-10"), ("Steel", "2026-03-10")]]
    report = vs.sectorReport(signals)
    assert report.to_dict("index") == {
        "Banks": {"2026-03-09": 1, "2026-03-10": 2, "total": 3},
        "IT": {"2026-03-09": 2, "2026-03-10": 0, "total": 2},
        "Steel": {"2026-03-09": 0, "2026-03-10": 1, "total": 1},
        "total": {"2026-03-09": 3, "2026-03-10": 3, "total": 6},
    }
    assert list(report.index) == ["Banks", "IT", "Steel", "total"]


def test_company_master_is_latest_name_and_sector_per_code_at_first_publication():
    rows = [{"code": "A", "name": "Alpha", "sector": "IT", "source_commit_time": "2026-03-05T09:48:27+00:00"},
            {"code": "B", "name": "Beta", "sector": "Banks", "source_commit_time": "2026-03-06T09:50:00+00:00"},
            {"code": "A", "name": "Alpha2", "sector": "IT2", "source_commit_time": "2026-03-06T09:50:00+00:00"}]
    assert vs.companyRecords(rows) == [
        ("A", company("A", "Alpha2", "IT2"), vs.epochMs("2026-03-05T09:48:27+00:00")),
        ("B", company("B", "Beta", "Banks"), vs.epochMs("2026-03-06T09:50:00+00:00")),
    ]
