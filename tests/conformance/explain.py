"""Run catalogue scenarios on both drivers and print every difference in full.

    .venv/bin/python tests/conformance/explain.py NAME_GLOB [--variant cache|nocache|default] [--seeds N] [--json]

``NAME_GLOB`` matches scenario names (``fnmatch``: ``'table.*'``, ``'serde.produced[[]Long]'``).
One JVM run for all of them. Heavy: run it under ``flock /tmp/kspark-heavy.lock``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, so that `conformance` imports

from conformance.catalogue import CATALOGUE  # noqa: E402
from conformance.harness import compare, compareDescribe, runKafka, runKspark  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name")
    parser.add_argument("--variant")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="also print both raw results")
    args = parser.parse_args()
    cases = [(s, v) for s in CATALOGUE.values() if fnmatch.fnmatchcase(s.name, args.name)
             for v in s.variants() if args.variant in (None, v)]
    if not cases:
        print(f"no scenario matches {args.name!r}", file=sys.stderr)
        return 2
    requests = [(s, s.request(v, seed)) for s, v in cases for seed in range(args.seeds)]
    kafka = runKafka([s.java_request(r) for s, r in requests])
    differing = 0
    for scenario, request in requests:
        ours = runKspark(scenario, request)
        diffs = compare(kafka[request["id"]], ours, request["steps"])
        describe = compareDescribe(kafka[request["id"]], ours)
        if describe:
            diffs["describe"] = describe
        differing += bool(diffs)
        print(f"=== {request['id']}: {'EQUAL' if not diffs else 'DIFFERS (' + ', '.join(sorted(diffs)) + ')'}"
              f"{'  [xfail: ' + scenario.xfailReason(request['id'].split('|')[1]) + ']' if scenario.xfailReason(request['id'].split('|')[1]) else ''}")
        for aspect in ("error", "records", "stores", "files", "describe"):
            if aspect in diffs:
                print(diffs[aspect])
        if args.json:
            print("--- Kafka", json.dumps(kafka[request["id"]]))
            print("--- kspark", json.dumps(ours))
    print(f"{differing}/{len(requests)} runs differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
