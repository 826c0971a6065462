"""Fixtures of the differential harness: Kafka's results for every selected scenario, computed
by one JVM run per session, and the catalogue summary printed at the end of the run."""

from __future__ import annotations

import os
from collections import defaultdict

import pytest

from .catalogue import CATALOGUE

DEFAULT_SEEDS = 3


def conformanceSeeds() -> list[int]:
    """Seeds per scenario variant: ``KSPARK_CONFORMANCE_SEEDS`` (default 3)."""
    value = os.environ.get("KSPARK_CONFORMANCE_SEEDS", str(DEFAULT_SEEDS))
    try:
        n = int(value)
    except ValueError:
        raise pytest.UsageError(f"KSPARK_CONFORMANCE_SEEDS must be an integer, got {value!r}") from None
    return list(range(n))


# (family, scenario, variant) -> {"runs", "matched", "aspects": set, "xfail": reason | None}
OUTCOMES: dict[tuple[str, str, str], dict] = {}


@pytest.fixture(scope="session")
def kafkaResults(request) -> dict[str, dict]:
    """Kafka Streams' results for every request of the selected conformance tests (one JVM)."""
    from .harness import runKafka

    requests = []
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "conformanceCase" in params:
            name, variant = params["conformanceCase"]
            scenario = CATALOGUE[name]
            requests.extend(scenario.request(variant, seed) for seed in conformanceSeeds())
        elif "conformanceDescribe" in params:
            requests.append(CATALOGUE[params["conformanceDescribe"]].describeRequest())
    unique = {r["id"]: r for r in requests}
    return runKafka([CATALOGUE[r["id"].split("|")[0]].java_request(r) for r in unique.values()])


def summaryRows() -> list[tuple]:
    """(family, scenarios, variants, runs, runs equal, variants equal, xfail variants, other
    variants) per family, ``describe`` last: the numbers ``pytest_terminal_summary`` prints."""
    families: dict[str, list] = defaultdict(list)
    for (family, _, _), outcome in OUTCOMES.items():
        families[family].append(outcome)
    rows = []
    for family in sorted(families, key=lambda f: (f == "describe", f)):
        outcomes = families[family]
        failing = [o for o in outcomes if o["runs"] != o["matched"]]
        rows.append((family, len({o["scenario"] for o in outcomes}), len(outcomes), sum(o["runs"] for o in outcomes),
                     sum(o["matched"] for o in outcomes), len(outcomes) - len(failing),
                     sum(o["xfail"] is not None for o in failing), sum(o["xfail"] is None for o in failing)))
    return rows


def pytest_terminal_summary(terminalreporter):
    rows = summaryRows()
    if not rows:
        return
    tr = terminalreporter
    tr.section("kspark conformance catalogue: Kafka Streams 4.3 TopologyTestDriver vs kspark")
    tr.write_line(f"{'family':<16}{'scenarios':>10}{'variants':>9}{'runs':>7}{'equal':>7}{'rate':>6}"
                  f"{'variants equal':>15}{'xfail':>7}{'other':>7}")

    def line(row):
        family, scenarios, variants, runs, equal, full, xfail, other = row
        tr.write_line(f"{family:<16}{scenarios:>10}{variants:>9}{runs:>7}{equal:>7}{equal / max(runs, 1):>6.0%}"
                      f"{full:>15}{xfail:>7}{other:>7}")

    behaviour = [r for r in rows if r[0] != "describe"]
    for row in behaviour:
        line(row)
    if behaviour:
        line(("total",) + tuple(sum(r[i] for r in behaviour) for i in range(1, 8)))
    for row in rows:
        if row[0] == "describe":
            line(row)
    tr.write_line(f"seeds per variant: {len(conformanceSeeds())} (KSPARK_CONFORMANCE_SEEDS); a run = one variant "
                  "(cache on/off) and seed; equal = records after each input, errors and stores all as Kafka's; "
                  "describe = describe() once per scenario; xfail = variants failing for a known reason (FINDINGS.md), "
                  "other = failing for no known reason")
