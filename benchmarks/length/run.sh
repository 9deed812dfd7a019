#!/usr/bin/env bash
# The `length` floor on every canonical benchmark: the number each learned metric has to beat.
#   bash benchmarks/length/run.sh [DATA_DIR]      (default data dir: ../shared/data, from the repository root)
set -euo pipefail
data_dir="${1:-../shared/data}"
results="$(dirname "$0")/results"
for benchmark in fed-dialogue fed-turn usr-topical usr-persona predictive-engage holistic-context \
                 holistic-fluency grade-convai2 grade-dailydialog rade-chitchat rade-emotion rade-persona; do
  hf-dialeval benchmark --metric length --benchmark "$benchmark" --data-dir "$data_dir" \
    --output "$results/$benchmark.json" > "$results/$benchmark.md"
done
