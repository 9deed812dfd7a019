"""Could HolisticEval refit the weight ``β`` of its PMI context coherence, ``c_raw(r|q) − β · f_raw(r)``, on a new
domain's own dialogues, without ratings? For each checkpoint given, on the Topical-Chat conversations that
``run.py dialogues`` holds out (``adapt``'s 20% share, ``--seed``), the share of 200 checklist pairs in which the human
reply beats a random and a generic one at each weight of 0, 0.1, …, 1, beside what no label-free rule may see: the
Spearman of the weighted score with USR-Topical's ratings (Maintains Context, Overall). Every item's two raw scores are
computed once per checkpoint; each weight is then arithmetic.

    python benchmarks/adaptation/studies/holistic_pmi_weight.py \\
        src/hf_dialeval/metrics/holistic_eval/defaults/holistic-eval-dailydialog --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hf_dialeval import load_benchmark
from hf_dialeval.adaptation.workflow import DEFAULT_HELD_OUT_SHARE
from hf_dialeval.data.corpora import load_topical_chat_for_training
from hf_dialeval.data.dialogues import held_out_dialogues
from hf_dialeval.data.perturbations import PERTURBATIONS
from hf_dialeval.evaluation.checklist import build_pairs
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric
from hf_dialeval.modeling.loading import load_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/holistic_eval/
from benchmarks.holistic_eval.studies.coherence_measure import pair_raw_scores, weighted_win_rate  # noqa: E402
from benchmarks.holistic_eval.studies.pmi_weight import WEIGHTS, dataset_raw_scores, weighted_spearman  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
RATINGS = ("Maintains Context", "Overall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", default="bf16")
    args = parser.parse_args()
    _, held = held_out_dialogues(load_topical_chat_for_training(args.data_dir).select_columns(["dialogue"]),
                                 DEFAULT_HELD_OUT_SHARE, args.seed)
    dialogues = [list(dialogue) for dialogue in held["dialogue"]]
    pairs = {name: build_pairs(PERTURBATIONS[name], dialogues, "turn", args.pairs, args.seed)
             for name in ("random", "generic")}
    usr = load_benchmark("usr-topical", args.data_dir)
    record: dict = {"weights": list(WEIGHTS), "held_out_dialogues": len(dialogues), "seed": args.seed,
                    "checkpoints": {}}
    for checkpoint in args.checkpoints:
        model, tokenizer = load_checkpoint("holistic-eval", checkpoint)
        metric = HolisticEvalMetric(model, tokenizer, device="cpu", dtype=args.dtype)
        wins = {name: [weighted_win_rate(raw, weight) for weight in WEIGHTS]
                for name, raw in ((name, pair_raw_scores(metric, kept)) for name, kept in pairs.items())}
        raw = dataset_raw_scores(metric, usr)
        spearman = {rating: [weighted_spearman(raw, usr[rating], weight) for weight in WEIGHTS] for rating in RATINGS}
        record["checkpoints"][checkpoint] = {"wins": wins, "usr_topical": spearman,
                                             "shipped_weight": model.config.pmi_weight}
        print(f"{checkpoint} (shipped weight {model.config.pmi_weight}): win rates on {len(dialogues)} held-out "
              "Topical-Chat conversations; Spearman with USR-Topical (not seen by the rule)")
        print("weight    random  generic  " + "  ".join(RATINGS))
        for index, weight in enumerate(WEIGHTS):
            print(f"{weight:6.1f}  {wins['random'][index]:8.3f} {wins['generic'][index]:8.3f}  " +
                  "  ".join(f"{spearman[rating][index]:{len(rating)}.3f}" for rating in RATINGS), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"holistic-pmi-weight-topical-chat-seed{args.seed}.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
