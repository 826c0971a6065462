"""Benchmark inputs generated on the fly from the real data in ``../shared/data`` (never committed).

- :func:`nasaRequests`: the NASA HTTP log replicated with shifted hosts and days, time-ordered.
- :func:`krxInputs`: KRX price snapshots and daily valuations replicated with shifted codes.
- :func:`nexmark`: a small Nexmark-style person/auction/bid generator (Q3 and Q11 shapes).
"""

from __future__ import annotations

import csv
import gzip
import random
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
NASA = DATA / "nasa_http_19950801.tsv"
KRX_PRICES = DATA / "krx_kospi_intraday_snapshots_2026-03-09_20.csv.gz"
KRX_VALUATIONS = DATA / "kospi_valuation_daily_2026-03.csv"
COPIES_PER_DAY = 50


def nasaRequests(n: int, copiesPerDay: int = COPIES_PER_DAY) -> pd.DataFrame:
    """``n`` requests: columns ``host`` (str) and ``ts`` (ms), sorted by ``ts``.

    The log covers one day (30,969 requests, 2,365 hosts). Copy ``i`` suffixes every host with
    ``#<i % 50>`` and shifts times by ``i // 50`` days, so a day holds up to 50 interleaved
    copies (about 118K live hosts) and later copies start new days: the number of live keys is
    bounded whatever ``n``. Sorted by time (stable), as a real log with more hosts would be;
    copies following each other unsorted would make every later copy of a day late data.
    """
    base = pd.read_csv(NASA, sep="\t", usecols=["host", "time"])
    copies = -(-n // len(base))
    hosts = base["host"].to_numpy(dtype=object)
    times = base["time"].to_numpy(dtype=np.int64)
    frames = [pd.DataFrame({"host": hosts + f"#{i % copiesPerDay}",
                            "ts": (times + 86_400 * (i // copiesPerDay)) * 1000})
              for i in range(copies)]
    return pd.concat(frames, ignore_index=True).sort_values("ts", kind="stable", ignore_index=True).head(n)


def krxInputs(nPrices: int) -> tuple[list[dict], list[dict]]:
    """About ``nPrices`` price snapshots and the matching valuations, codes suffixed per copy.

    Copy ``i`` renames code ``c`` to ``c + "-" + i`` in both files, so every copy joins like the
    original; rows are interleaved copy by copy, keeping each file's time order.
    """
    with gzip.open(KRX_PRICES, "rt", encoding="utf-8") as f:
        prices = list(csv.DictReader(f))
    with open(KRX_VALUATIONS, encoding="utf-8") as f:
        valuations = sorted(csv.DictReader(f), key=lambda r: r["source_commit_time"])
    copies = -(-nPrices // len(prices))
    return withCodeCopies(prices, copies)[:nPrices], withCodeCopies(valuations, copies)


def withCodeCopies(rows: list[dict], copies: int) -> list[dict]:
    """Every row ``copies`` times in a row, its ``code`` suffixed ``-0``, ``-1``, ..."""
    return [{**row, "code": f"{row['code']}-{i}"} for row in rows for i in range(copies)]


def nexmark(n: int, seed: int = 7) -> dict[str, list[tuple]]:
    """``n`` Nexmark-style events, 1 person : 3 auctions : 46 bids per 50 (Nexmark's mix).

    Returns ``{"persons": [(id, name, state, ts)], "auctions": [(id, seller, category, ts)],
    "bids": [(auction, bidder, price, ts)]}``; event time advances 1 ms per event (ts in ms
    from 2026-01-01). Bidders and sellers are drawn from the persons created so far, favouring
    recent ones as Nexmark's generator does, so sessions per bidder form and close.
    """
    rng = random.Random(seed)
    states = ["OR", "ID", "CA", "WA", "AZ", "NY", "TX", "FL"]
    base = 1_767_225_600_000
    persons, auctions, bids = [], [], []
    for i in range(n):
        ts = base + i
        kind = i % 50
        if kind == 0 or not persons:
            pid = len(persons)
            persons.append((pid, f"person-{pid}", states[rng.randrange(len(states))], ts))
        elif kind <= 3:
            seller = max(0, len(persons) - 1 - int(rng.expovariate(1 / 20)))
            auctions.append((len(auctions), seller, rng.randrange(1, 20), ts))
        else:
            bidder = max(0, len(persons) - 1 - int(rng.expovariate(1 / 50)))
            auction = max(0, len(auctions) - 1 - int(rng.expovariate(1 / 30))) if auctions else 0
            bids.append((auction, bidder, 100 + rng.randrange(10_000), ts))
    return {"persons": persons, "auctions": auctions, "bids": bids}
