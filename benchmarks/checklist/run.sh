#!/usr/bin/env bash
# The perturbation checklist of every registered metric (shipped defaults, floors included) on the held-out
# dialogues of both corpora, 200 pairs per perturbation, seed 0. Writes results/<metric>-<corpus>.{md,json}.
#   bash benchmarks/checklist/run.sh [DATA_DIR]
set -euo pipefail
data_dir="${1:-../shared/data}"
results="$(dirname "$0")/results"
# rade and reference-similarity score a reply against a reference reply, and the pairs' only human reply is the
# original itself: `checklist` refuses them (it would hand the original the win)
for metric in $(python -c "import hf_dialeval; print(' '.join(hf_dialeval.metric_names()))"); do
  case "$metric" in rade|reference-similarity) continue ;; esac
  for corpus in dailydialog topical-chat; do
    hf-dialeval checklist --metric "$metric" --corpus "$corpus" --data-dir "$data_dir" --pairs 200 --seed 0 \
      --output "$results/$metric-$corpus.json" > "$results/$metric-$corpus.md"
  done
done
