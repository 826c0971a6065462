"""The flagship job's topology on TopologyTestDriver with hand-made records (rules J-1, J-4, E-3, T-1)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import valuation_signals as vs  # noqa: E402
from kspark.testing import TestRecord, TopologyTestDriver  # noqa: E402


def price(code, date, ts, close):
    return {"code": code, "name": code, "trade_date": date, "snapshot_ts": ts, "close": str(close)}


def valuation(code, date, per, eps):
    return {"date": date, "code": code, "name": code, "sector": "s", "per": str(per), "pbr": "1", "eps": str(eps), "bps": "100"}


def test_signal_uses_previous_day_valuation_and_fires_once_per_company_per_day():
    with TopologyTestDriver(vs.buildTopology(threshold=0.05)) as d:
        prices, vals = d.createInputTopic("prices"), d.createInputTopic("valuations")
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
        assert [(r.key(), r.value()["snapshot_ts"], r.value()["valuation_date"], r.value()["per_drop_pct"], r.timestamp())
                for r in records] == [
            ("A", "2026-03-09T11:00:00+09:00", "2026-03-06", 6.0, vs.epochMs("2026-03-09T11:00:00+09:00")),
            ("A", "2026-03-10T10:00:00+09:00", "2026-03-09", 5.56, vs.epochMs("2026-03-10T10:00:00+09:00")),
        ]
        assert d.getKeyValueStore(vs.SIGNAL_STORE).get("A") == "2026-03-10"
        assert isinstance(records[0], TestRecord)
