"""P3 and P3-tumbling (record at a time, 200K records): best-of-N records per CPU second for the
kspark on ``sys.path``; prints one JSON line. ``p3_best_of.py <label> <N>``."""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
import inputs  # noqa: E402
import run as bench  # noqa: E402

n = int(sys.argv[2])
df = inputs.nasaRequests(200_000)
out = {"variant": sys.argv[1]}
for name, topology, sink in (("P3", bench.sessionCountTopology("requests", "sessions", bench.GAP), "sessions"),
                             ("P3-tumbling", bench.tumblingCountTopology("requests", "windows", bench.GAP), "windows")):
    fn = bench._pipedOneByOne(df, topology, sink)
    best = float("inf")
    for _ in range(n):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    out[name] = round(200_000 / best)
print(json.dumps(out))
