"""QuantiDCE checkpoints (bi- or cross-encoding) against the similarity floor of their own backbone: Spearman on the
turn-level coherence benchmarks, the paired-bootstrap difference from the floor, and the checklist's coherence
perturbations on both corpora. The bar for a shipped default: above the floor on grade-convai2, not below
it on the others, and every coherence perturbation won at >= 0.90.

grade-dailydialog is included: none of the checkpoints compared here saw its 300 ratings (the DailyDialogEVAL set);
a checkpoint fine-tuned on them (``train quantidce-kd``) must not be judged on it.

    python benchmarks/quantidce/studies/bi_encoder.py --data-dir ../shared/data --checkpoint default=default \\
        --committed-checklists benchmarks/checklist/results [--checkpoint NAME=RUN_FOLDER ...]

Each checkpoint is compared with ``similarity`` over the encoder its config names (``backbone_name_or_path``); the
floors are rows of their own. Writes ``results/bi_encoder.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from hf_dialeval import load_metric
from hf_dialeval.data.perturbations import PERTURBATIONS
from hf_dialeval.evaluation.checklist import load_checklist_corpus, run_checklist
from hf_dialeval.evaluation.statistics import compare_spearman, correlate
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/common/
from benchmarks.common.coherence_comparison import COHERENCE_RATINGS, score_coherence_benchmarks  # noqa: E402

#: The turn-level coherence benchmarks of the bar: those of the floor comparison, and grade-dailydialog.
RATINGS = {"grade-convai2": "Coherence", "grade-dailydialog": "Coherence",
           **{name: rating for name, rating in COHERENCE_RATINGS.items() if name != "grade-convai2"}}
#: The checklist's turn-level perturbations that should lower coherence.
COHERENCE_PERTURBATIONS = [name for name, p in PERTURBATIONS.items() if "coherence" in p.hurts]
CORPORA = ("dailydialog", "topical-chat")
PASS_RATE = 0.90


def signed(value: float | None) -> str:
    """A coefficient, or — where it is undefined (a metric that gave every item the same score)."""
    return "—" if value is None or math.isnan(value) else f"{value:+.3f}"


def floor_name(encoder: str) -> str:
    return f"similarity[{encoder.rsplit('/', 1)[-1]}]"


def committed_rates(directory: Path, metric: str, pairs: int, seed: int) -> dict[str, dict] | None:
    """The coherence win rates of a registered metric's default from ``hf-dialeval checklist``'s committed
    ``<metric>-<corpus>.json`` (``None`` unless both corpora are there with the same pairs and seed): the same
    numbers :func:`checklist_rates` would compute, without scoring ~4,000 pairs again."""
    rates = {}
    for corpus in CORPORA:
        path = directory / f"{metric}-{corpus}.json"
        if not path.is_file():
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
        if (record["pairs_per_perturbation"], record["seed"]) != (pairs, seed):
            return None
        rates[corpus] = {row["perturbation"]: row["wins"]["overall"] for row in record["rows"]
                         if row["perturbation"] in COHERENCE_PERTURBATIONS}
    return rates


def checklist_rates(metric: DialogueMetric, dialogues: dict[str, list], pairs: int, seed: int) -> dict[str, dict]:
    """Per corpus and coherence perturbation: the original's win rate and its interval."""
    return {corpus: {row["perturbation"]: row["wins"]["overall"]
                     for row in run_checklist(metric, corpus_dialogues, pairs, seed, COHERENCE_PERTURBATIONS)}
            for corpus, corpus_dialogues in dialogues.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--checkpoint", action="append", default=[], metavar="NAME=PATH",
                        help="a QuantiDCE checkpoint (repeatable); NAME=default is the shipped one")
    parser.add_argument("--pairs", type=int, default=200,
                        help="checklist pairs per perturbation (0: the benchmarks only, no checklist)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--committed-checklists", default=None, metavar="DIR", help=(
        "read the checklists of the shipped default (NAME=default) and of the MiniLM similarity floor from "
        "hf-dialeval checklist's <metric>-<corpus>.json here (e.g. benchmarks/checklist/results) instead of "
        "scoring them again"))
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results"))
    args = parser.parse_args()
    checkpoints: dict[str, str | None] = {}
    for entry in args.checkpoint:
        name, separator, path = entry.partition("=")
        if not separator or not name or not path:
            raise SystemExit(f"--checkpoint {entry!r}: give NAME=PATH")
        checkpoints[name] = None if path == "default" else path

    metrics: dict[str, DialogueMetric] = {}
    floor_of: dict[str, str] = {}
    for name, path in checkpoints.items():
        metrics[name] = load_metric("quantidce", checkpoint=path, device="cpu")
        encoder = metrics[name].model.config.backbone_name_or_path
        floor_of[name] = floor_name(encoder)
        if floor_of[name] not in metrics:
            metrics[floor_of[name]] = load_metric("similarity", checkpoint=encoder, device="cpu")
    records: dict[str, dict] = {name: {"checkpoint": checkpoints.get(name), "floor": floor_of.get(name),
                                       "benchmarks": {}} for name in metrics}
    for name, path in checkpoints.items():
        record_path = Path(path or "") / "training_record.json"
        if path and record_path.is_file():
            record = json.loads(record_path.read_text(encoding="utf-8"))
            records[name]["validation"] = record.get("validation", {})
            records[name]["arguments"] = {key: record["arguments"].get(key) for key in (
                "backbone", "encoding", "bi_context", "bi_features", "freeze_encoder", "parrot_negatives", "learning_rate",
                "max_contexts", "num_train_epochs", "max_seq_length", "lora_rank", "seed")}

    for benchmark, rating, humans, scores in score_coherence_benchmarks(metrics, args.data_dir, RATINGS):
        for name, values in scores.items():
            entry = {"rating": rating, **correlate(values, humans)}
            if name in checkpoints:
                entry["minus_floor"] = compare_spearman(values, scores[floor_of[name]], humans)
            records[name]["benchmarks"][benchmark] = entry
        print(benchmark, {name: signed(records[name]["benchmarks"][benchmark]["spearman"]) for name in metrics},
              flush=True)

    registered = {name: "quantidce" for name, path in checkpoints.items() if path is None}
    registered[floor_name(MINILM_HUB_ID)] = "similarity"
    dialogues = {corpus: load_checklist_corpus(corpus, args.data_dir) for corpus in CORPORA} if args.pairs else {}
    for name, metric in metrics.items():
        if not args.pairs:
            records[name]["checklist"], records[name]["checklist_source"] = {}, "not scored (--pairs 0)"
            continue
        committed = None
        if args.committed_checklists and name in registered:
            committed = committed_rates(Path(args.committed_checklists), registered[name], args.pairs, args.seed)
        records[name]["checklist"] = committed or checklist_rates(metric, dialogues, args.pairs, args.seed)
        records[name]["checklist_source"] = "committed hf-dialeval checklist results" if committed else "scored here"
        print(name, {corpus: {p: rate["win_rate"] for p, rate in rates.items()}
                     for corpus, rates in records[name]["checklist"].items()}, flush=True)

    for name, record in records.items():
        benchmarks = record["benchmarks"]
        # an undefined correlation (constant scores) counts as 0: the metric told the items apart no better than chance
        record["mean_spearman"] = sum(entry["spearman"] or 0.0 for entry in benchmarks.values()) / len(benchmarks)
        rates = [rate["win_rate"] for corpus in record["checklist"].values() for rate in corpus.values()]
        record["min_coherence_win_rate"] = min(rates) if rates else None
        if name in checkpoints:
            differences = {b: entry["minus_floor"] for b, entry in benchmarks.items()}
            record["meets_bar"] = {
                "beats_floor_on_grade_convai2": differences["grade-convai2"]["spearman_difference"] > 0,
                "significantly": differences["grade-convai2"]["ci95"][0] > 0,
                "not_significantly_below_elsewhere": all(d["ci95"][1] >= 0 for d in differences.values()),
                f"coherence_perturbations_at_least_{PASS_RATE}": min(rates) >= PASS_RATE if rates else None,
            }

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = {"pairs": args.pairs, "seed": args.seed, "perturbations": COHERENCE_PERTURBATIONS, "ratings": RATINGS}
    (out / "bi_encoder.json").write_text(json.dumps({"settings": settings, "rows": records}, indent=2) + "\n",
                                         encoding="utf-8")
    (out / "bi_encoder.md").write_text(markdown(records, checkpoints), encoding="utf-8")
    print(markdown(records, checkpoints))


def markdown(records: dict[str, dict], checkpoints: dict[str, str | None]) -> str:
    """Two tables: Spearman per benchmark (a checkpoint's paired difference from its floor beneath it), and the
    checklist's coherence win rates."""
    benchmarks = list(RATINGS)
    lines = ["Spearman with each benchmark's coherence rating; under a checkpoint, its paired-bootstrap difference "
             "from its own backbone's similarity floor [95% interval].", "",
             "| row | " + " | ".join(f"{b} ({RATINGS[b]})" for b in benchmarks) + " | mean | DD++ level acc. |",
             "|---|" + "---|" * (len(benchmarks) + 2)]
    for name, record in records.items():
        accuracy = record.get("validation", {}).get("eval_pair_accuracy")
        cells = [signed(record["benchmarks"][b]["spearman"]) for b in benchmarks]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {record['mean_spearman']:+.3f} | "
                     + (f"{accuracy:.3f}" if accuracy is not None else "—") + " |")
        if name in checkpoints:
            differences = [record["benchmarks"][b]["minus_floor"] for b in benchmarks]
            cells = [f"{signed(d['spearman_difference'])} [{signed(d['ci95'][0])}, {signed(d['ci95'][1])}]"
                     for d in differences]
            lines.append(f"| − {record['floor']} | " + " | ".join(cells) + " | | |")
    if not any(record["checklist"] for record in records.values()):
        return "\n".join(lines) + "\n"
    lines += ["", f"Checklist: share of pairs the original reply wins (ties half), coherence perturbations; bar "
              f"{PASS_RATE}.", "",
              "| row | " + " | ".join(f"{c[:2].upper()} {p}" for c in CORPORA for p in COHERENCE_PERTURBATIONS)
              + " | min |", "|---|" + "---|" * (len(CORPORA) * len(COHERENCE_PERTURBATIONS) + 1)]
    for name, record in records.items():
        cells = [f"{record['checklist'][c][p]['win_rate']:.2f}" for c in CORPORA for p in COHERENCE_PERTURBATIONS]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {record['min_coherence_win_rate']:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
