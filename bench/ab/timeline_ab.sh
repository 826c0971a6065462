#!/bin/sh
# A/B of P4's live phase (bench/timeline.py) across source trees or settings, run in the order given.
# usage: bench/ab/timeline_ab.sh OUT.jsonl label=<src dir>[::<timeline.py args>] ...
#   (EXTRA="--rate 200" etc. passed on to every run; "::<args>" to this run alone, e.g.
#    uds1=src::--conf spark.python.unix.domain.socket.enabled=true)
# Each run: PYTHONPATH=<src dir> bench/timeline.py --label <label>; its JSON appended to OUT as one line.
# Run it under the heavy-work lock: flock /tmp/kspark-heavy.lock bench/ab/timeline_ab.sh ...
bench=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-/work/main/.venv/bin/python}
out=$1; shift
tmp=$(mktemp -d)
for pair in "$@"; do
  label=${pair%%=*}; rest=${pair#*=}
  case $rest in *::*) own=${rest#*::}; rest=${rest%%::*} ;; *) own= ;; esac
  src=$(cd "$rest" && pwd)
  # shellcheck disable=SC2086  # EXTRA and own are word lists
  PYTHONPATH=$src timeout 300 "$python" "$bench/timeline.py" --label "$label" --json "$tmp/$label.json" $EXTRA $own \
    > "$tmp/$label.log" 2>&1 || { echo "$label failed: $tmp/$label.log"; continue; }
  "$python" -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))" "$tmp/$label.json" >> "$out"
  "$python" -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d['latency_ms_p50'], d['latency_ms_p95'], d['median_durationMs'], d.get('load_avg_1m'), d.get('cpu_seconds'))" "$tmp/$label.json" "$label"
done
