#!/bin/bash
# alternating A/B under the lock: base (a12a9fb, blob state) vs main (local stores)
# P1 and P2 as round 17's final run (10M records / 3M prices, one batch); P1-kafka in P4's shape (1M per batch)
set -u
out=/tmp/ab-results.jsonl
for round in 1 2; do
  for tree in base main; do
    dir=/work/wt-$tree; [ $tree = main ] && dir=/work/main
    cd $dir
    flock /tmp/kspark-heavy.lock bash -c ".venv/bin/python bench/run.py --only p1,p2 --records 10000000 --batch-records 10000000 --p2-records 3000000 --work /tmp/ab-work-$tree; .venv/bin/python bench/run.py --only p1-kafka --records 10000000 --batch-records 1000000 --work /tmp/ab-work-$tree; rm -rf /tmp/ab-work-$tree" 2>/tmp/ab-$tree-$round.err | grep '^{' | sed "s/^/{\"tree\": \"$tree\", \"round\": $round, \"r\": /; s/\$/}/" >> $out
  done
done
echo done >> $out
