"""Every catalogue scenario on Kafka Streams' TopologyTestDriver and on kspark's, with the same
seeded input bytes: the records (topic, key and value bytes, timestamp, headers) read after each
input, the first error (class and message) and the store contents must be equal
(``test_conformance``, per scenario, variant and seed), and so must ``describe()``
(``test_describe``, once per scenario: it does not depend on the input).

A test marked xfail(strict) fails today for the reason it names (an issue 19 item or a
FINDINGS.md entry); once that is fixed it passes, XPASS fails the run, and the mark goes.
"""

from __future__ import annotations

import pytest

from .catalogue import CATALOGUE
from .conftest import OUTCOMES, conformanceSeeds
from .harness import compare, compareDescribe, runKspark


def _xfail(reason):
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


def _cases():
    for scenario in CATALOGUE.values():
        for variant in scenario.variants():
            yield pytest.param((scenario.name, variant), id=f"{scenario.name}-{variant}",
                               marks=_xfail(scenario.xfailReason(variant)))


@pytest.mark.parametrize("conformanceCase", list(_cases()))
def test_conformance(conformanceCase, kafkaResults):
    name, variant = conformanceCase
    scenario = CATALOGUE[name]
    failures, aspects = [], set()
    seeds = conformanceSeeds()
    for seed in seeds:
        request = scenario.request(variant, seed)
        diffs = compare(kafkaResults[request["id"]], runKspark(scenario, request), request["steps"])
        if diffs:
            aspects.update(diffs)
            failures.append((seed, diffs))
    OUTCOMES[(scenario.family, name, variant)] = {
        "scenario": name, "runs": len(seeds), "matched": len(seeds) - len(failures), "aspects": aspects,
        "xfail": scenario.xfailReason(variant)}
    if failures:
        seed, diffs = failures[0]
        detail = "\n".join(diffs[a] for a in ("error", "records", "stores", "files") if a in diffs)
        pytest.fail(f"{name} [{variant}]: {len(failures)}/{len(seeds)} seeds differ from Kafka Streams "
                    f"({', '.join(sorted(aspects))}); seed {seed}:\n{detail}", pytrace=False)


@pytest.mark.parametrize("conformanceDescribe", [
    pytest.param(s.name, id=s.name, marks=_xfail(s.xfailDescribe)) for s in CATALOGUE.values()])
def test_describe(conformanceDescribe, kafkaResults):
    scenario = CATALOGUE[conformanceDescribe]
    request = scenario.describeRequest()
    diff = compareDescribe(kafkaResults[request["id"]], runKspark(scenario, {**request, "steps": []}))
    OUTCOMES[("describe", scenario.name, "-")] = {
        "scenario": scenario.name, "runs": 1, "matched": int(diff is None), "aspects": {"describe"} if diff else set(),
        "xfail": scenario.xfailDescribe}
    if diff:
        pytest.fail(f"{scenario.name}: {diff}", pytrace=False)
