"""A dialogue-level member: FineD-Eval joining the panel where the item is a whole dialogue. FED's 125 dialogues are
the one rated dialogue-level benchmark, so nothing here is fitted or chosen on ratings: the form was fixed before any
FED number of it was computed. A dialogue scores the equal-weight mean of two CDF values, each CDF fitted on unrated
human-human dialogues (``REFERENCE``: DailyDialog's and Topical-Chat's validation dialogues): the panel's own dialogue
score (the mean of its scores of the system turns) and FineD-Eval's ``overall``.

The panel is the one that leave-one-release-out chose and fitted without FED's release, FineD-Eval joining it as the
shipped panel's does, built from the score cache with the command the README gives
(``runs/panel-without-fed-dialogue``), so that FED stays held out for the turn-level part; FineD-Eval's shipped recipe
read FED as a check (``benchmarks/fined_eval/README.md``), so its part is not. The form computed here apart, from the
members' scores, is checked against what that panel's own code (``PanelModel.dialogue_forward``) gives.

    python benchmarks/panel/studies/dialogue_member.py [--data-dir DIR] [--panel runs/panel-without-fed-dialogue]

Scores through the score cache (what is missing is scored, one member at a time) and writes
``results/dialogue_member.json`` and ``results/held_out_dialogue_scores.json`` (the panel's held-out scores of FED's
dialogues, as ``hf-dialeval leaderboard --held-out`` reads them).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from hf_dialeval.data.benchmarks import load_benchmark
from hf_dialeval.evaluation.statistics import compare_spearman, correlate
from hf_dialeval.freed_memory import trim_freed_memory
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.metrics.panel.reference_dialogues import dialogue_items, reference_dialogues, system_turn_items
from hf_dialeval.metrics.panel.scoring import PanelMetric
from hf_dialeval.metrics.panel.train import headline

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/panel/
from benchmarks.panel.run import RESULTS, cdf_values, dialogue_means

#: Unrated dialogues the two CDFs are fitted on, drawn from each of the reference corpora (DailyDialog validation,
#: Topical-Chat valid_freq): enough for a CDF of 257 knots, few enough to score in minutes.
REFERENCE_DIALOGUES = 200


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--panel", default="runs/panel-without-fed-dialogue",
                        help="the panel fitted without FED's release, FineD-Eval scoring whole dialogues (README)")
    args = parser.parse_args()
    fed = load_benchmark("fed-dialogue", args.data_dir)
    sets = {"fed-dialogue": (list(map(list, fed["dialogue"])), [s or None for s in fed["speakers"]])}
    for name, dialogues in reference_dialogues(args.data_dir, REFERENCE_DIALOGUES).items():
        sets[name] = (dialogues, [None] * REFERENCE_DIALOGUES)

    cache = ScoreCache()
    panel = PanelMetric.load(args.panel)
    # FED's system turns under run.py's cache name: the panel's members may have scored them there already
    turns = {name: system_turn_items(dialogues, speakers) for name, (dialogues, speakers) in sets.items()}
    # member by member, each loaded once for every set (set by set, the study peaked at 3.73 GiB)
    cache.fill(panel, [(items, f"{name}-turns") for name, (items, _) in turns.items()])
    turn_means = {name: np.array(dialogue_means(cache.scores(panel, items, f"{name}-turns")[0].overall, counts))
                  for name, (items, counts) in turns.items()}
    model = panel.model
    if model.config.dialogue_member_names != ["fined-eval"]:
        raise SystemExit(f"{args.panel}: FineD-Eval does not score its dialogues (train it with --dialogue-features "
                         "fined-eval.overall, README)")
    quantile_count = model.config.quantile_count
    panel.release()
    del panel
    trim_freed_memory()
    fined = load_metric("fined-eval")
    fined_scores = {}
    for name, (dialogues, speakers) in sets.items():
        items = dialogue_items(dialogues, speakers)
        fined_scores[name] = np.array(cache.scores(fined, items, f"{name}-dialogues")[0].overall, dtype=float)

    reference = [name for name in sets if name != "fed-dialogue"]
    parts = {"panel": turn_means, "fined-eval": fined_scores}
    normalised = {part: cdf_values(scores["fed-dialogue"], np.concatenate([scores[n] for n in reference]),
                                   quantile_count) for part, scores in parts.items()}
    combined = (normalised["panel"] + normalised["fined-eval"]) / 2
    with torch.inference_mode():
        shipped = model.dialogue_forward(
            torch.tensor(turn_means["fed-dialogue"], dtype=torch.float32),
            torch.tensor(fined_scores["fed-dialogue"], dtype=torch.float32).unsqueeze(1),
            torch.ones(len(model.config.features), dtype=torch.bool)).scores.double().numpy()
    ratings = [None if r is None or r != r else float(r) for r in fed[headline(fed)]]
    held_out = json.loads((RESULTS / "held_out_scores.json").read_text())["benchmarks"]["fed-dialogue"]
    record = {
        "reference": {name: len(sets[name][0]) for name in reference},
        "panel": args.panel,
        "turn_means_match_held_out_scores": bool(np.allclose(turn_means["fed-dialogue"], held_out, atol=1e-5)),
        "the_panels_own_dialogue_scores_match": bool(np.allclose(shipped, combined, atol=1e-5)),
        "share_of_fed_outside_the_reference_range": {
            part: float(np.mean((normalised[part] <= 0) | (normalised[part] >= 1))) for part in parts},
        "spearman": {label: correlate(list(scores), ratings) for label, scores in (
            ("panel (turn mean)", turn_means["fed-dialogue"]), ("fined-eval", fined_scores["fed-dialogue"]),
            ("panel + fined-eval (equal-weight CDF mean)", combined))},
        "difference_from_panel": compare_spearman(list(combined), list(turn_means["fed-dialogue"]), ratings),
        "difference_from_fined_eval": compare_spearman(list(combined), list(fined_scores["fed-dialogue"]), ratings),
    }
    for label, found in record["spearman"].items():
        low, high = found["spearman_ci95"]
        print(f"{label}: {found['spearman']:+.3f} [{low:+.3f}, {high:+.3f}] (n={found['n']})")
    for key in ("difference_from_panel", "difference_from_fined_eval"):
        low, high = record[key]["ci95"]
        print(f"{key}: {record[key]['spearman_difference']:+.3f} [{low:+.3f}, {high:+.3f}]")
    print("turn means match held_out_scores.json:", record["turn_means_match_held_out_scores"])
    print("share of FED outside the reference range:", record["share_of_fed_outside_the_reference_range"])
    print("the panel's own dialogue scores match:", record["the_panels_own_dialogue_scores_match"])
    (RESULTS / "dialogue_member.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "held_out_dialogue_scores.json").write_text(json.dumps({
        "metric": "panel", "procedure": "FED's dialogues scored by the panel fitted without FED's release, FineD-Eval "
        "scoring whole dialogues beside it (its recipe read FED as a check: that part is not held out; "
        "studies/dialogue_member.py)", "benchmarks": {"fed-dialogue": [float(v) for v in shipped]}}) + "\n",
        encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
