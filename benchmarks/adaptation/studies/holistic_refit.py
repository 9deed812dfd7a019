"""The PMI-weight refit that ``train holistic-eval --dialogues`` (and so ``adapt holistic-eval``) now runs after the LM
stage, applied to the LM of an earlier ``adapt`` run that did not have it, so that its benchmarks need not wait for
the LM to be trained again: the weight is refitted (:func:`~hf_dialeval.metrics.holistic_eval.pmi_weight.fit_pmi_weight`)
and the cutoffs fitted for it on the dialogues that run's train stage held out (the same split of the same file, the
same seed), and the folder is copied with its config and record updated. The checklist that ``adapt``'s report runs
(random and generic replies, ``overall``) is run again on the dialogues adapt held out, and ``run.py dialogues --adapted
OUT --record NAME`` then benchmarks the folder.

    python benchmarks/adaptation/studies/holistic_refit.py runs/adaptation/holistic-eval-topical-chat \\
        --dialogues runs/adaptation/topical-chat.jsonl --seed 0 --output-dir runs/adaptation/holistic-eval-refit
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from hf_dialeval.adaptation.workflow import CHECKLIST_PERTURBATIONS, DEFAULT_CHECKLIST_PAIRS, DEFAULT_HELD_OUT_SHARE
from hf_dialeval.data.dialogues import held_out_dialogues, load_dialogues, validation_split
from hf_dialeval.data.tables import rows_sha256
from hf_dialeval.evaluation.checklist import run_checklist
from hf_dialeval.metrics.holistic_eval.data import dialogue_pairs, pair_dataset
from hf_dialeval.metrics.holistic_eval.pmi_weight import fit_pmi_weight
from hf_dialeval.metrics.holistic_eval.scoring import HolisticEvalMetric, fit_pair_cutoffs
from hf_dialeval.modeling.loading import load_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("adapted", help="the folder of an `adapt holistic-eval --dialogues` run")
    parser.add_argument("--dialogues", required=True, help="the file that run adapted on")
    parser.add_argument("--seed", type=int, required=True, help="that run's --seed")
    parser.add_argument("--output-dir", required=True)
    args = parser.parse_args()
    # adapt holds out its share for its report and the train stage a tenth of the rest: the cutoffs' dialogues
    trained_on, report_held = held_out_dialogues(load_dialogues(args.dialogues), DEFAULT_HELD_OUT_SHARE, args.seed)
    trained_record = json.loads((Path(args.adapted) / "training_record.json").read_text())
    if rows_sha256(trained_on) != trained_record["dialogues_sha256"]:
        raise SystemExit(f"{args.dialogues} with --seed {args.seed} does not give the dialogues {args.adapted} "
                         "trained on: give that run's file and seed")
    _, held = validation_split(trained_on, args.seed)
    out = Path(args.output_dir)
    shutil.copytree(args.adapted, out)
    model, tokenizer = load_checkpoint("holistic-eval", str(out))
    refit = fit_pmi_weight(HolisticEvalMetric(model, tokenizer, device="cpu"),
                           [list(dialogue) for dialogue in held["dialogue"]], seed=args.seed)
    cutoffs = fit_pair_cutoffs(model, tokenizer, pair_dataset(dialogue_pairs(held["dialogue"])),
                               f"{args.dialogues} (the adapt run's train stage), {len(held)} held-out dialogues",
                               seed=args.seed)
    model.config.save_pretrained(out)
    record_path = out / "training_record.json"
    record = json.loads(record_path.read_text())
    record.update(pmi_weight_refit=refit, cutoffs=cutoffs)
    rows = run_checklist(HolisticEvalMetric(model, tokenizer, device="cpu"),
                         [list(dialogue) for dialogue in report_held["dialogue"]], DEFAULT_CHECKLIST_PAIRS, args.seed,
                         CHECKLIST_PERTURBATIONS)
    checklist = {row["perturbation"]: {"n": row["n"], **row["wins"]["overall"]} for row in rows}
    record.update(checklist_after_refit=checklist)
    record_path.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({"pmi_weight": refit["pmi_weight"], "win_rates": refit["win_rates"], "cutoffs": cutoffs,
                      "checklist": checklist}))


if __name__ == "__main__":
    main()
