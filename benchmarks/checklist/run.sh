#!/usr/bin/env bash
# The perturbation checklist of every registered metric (shipped defaults, floors included), 200 pairs per
# perturbation, seed 0: the reference-free metrics on the held-out dialogues of DailyDialog and Topical-Chat, the
# reference-assisted ones (rade, reference-similarity) on DailyDialog++ test, whose contexts have several human
# replies (one the original, another the reference). Writes results/<metric>-<corpus>.{md,json}.
#   bash benchmarks/checklist/run.sh [DATA_DIR]
set -euo pipefail
data_dir="${1:-../shared/data}"
results="$(dirname "$0")/results"
for metric in $(python -c "import hf_dialeval; print(' '.join(hf_dialeval.metric_names()))"); do
  case "$metric" in
    rade|reference-similarity) corpora="dailydialog++" ;;
    *) corpora="dailydialog topical-chat" ;;
  esac
  for corpus in $corpora; do
    hf-dialeval checklist --metric "$metric" --corpus "$corpus" --data-dir "$data_dir" --pairs 200 --seed 0 \
      --output "$results/$metric-$corpus.json" > "$results/$metric-$corpus.md"
  done
done
