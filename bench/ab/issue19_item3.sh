#!/bin/bash
# A/B of a change's cost on P3 and P1, interleaved in one run (issue 19 item 3 used it):
#   git archive <commit before> src | tar -x -C /tmp/before
#   flock /tmp/kspark-heavy.lock bench/ab/issue19_item3.sh /tmp/before/src
# P3 / P3-tumbling: best of 5 in-process runs (records per CPU second), 3 rounds; P1: bench/run.py, 2 rounds.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BEFORE=$1
PY=$ROOT/.venv/bin/python
echo "load $(cat /proc/loadavg)"
for round in 1 2 3; do
  for t in before after; do
    if [ $t = before ]; then P=$BEFORE; else P=$ROOT/src; fi
    (cd /tmp && PYTHONPATH=$P $PY "$ROOT/bench/ab/p3_best_of.py" $t 5 2>/dev/null)
  done
done
for round in 1 2; do
  for t in before after; do
    if [ $t = before ]; then P=$BEFORE; else P=$ROOT/src; fi
    (cd "$ROOT" && PYTHONPATH=$P $PY bench/run.py --only p1 --work /tmp/ab-p1-$t 2>/dev/null) \
      | python3 -c "import sys,json; [print('$round $t', d['benchmark'][:40], d['records'], d['seconds'], d['records_per_s'], 'load', d['load_avg_1m']) for d in (json.loads(l) for l in sys.stdin if l.startswith('{'))]"
  done
done
echo "load $(cat /proc/loadavg)"
