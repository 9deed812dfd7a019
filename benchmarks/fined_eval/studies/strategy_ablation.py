"""FineD-Eval training recipes side by side: FED Overall (each head and the overall score) and the perturbation
checklist's win rates on the perturbations the three dimensions cover, plus ``negate``, which no strategy trains
(a degradation the model has never seen). Rows are checkpoints: runs of ``hf-dialeval train fined-eval`` (their
recipe comes from the run's ``training_record.json``) or any FineD-Eval folder, such as an earlier default
(``git show <commit>:src/hf_dialeval/metrics/fined_eval/defaults/<file>`` into a folder), or the weight average of some of
a run's kept checkpoints (``RUN@100,200,300``: what ``--average-last`` gives a run that stops at the last step).

    python benchmarks/fined_eval/studies/strategy_ablation.py --data-dir ../shared/data \\
        --run previous-default=runs/previous-default --run additions=runs/fe-cl2-s43 ...

Writes ``results/strategy_ablation.{json,md}`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import datasets
from transformers import AutoTokenizer

from hf_dialeval import load_benchmark, load_metric
from hf_dialeval.data.perturbations import PERTURBATIONS
from hf_dialeval.evaluation.checklist import CORPORA, load_checklist_corpus, run_checklist
from hf_dialeval.evaluation.statistics import correlate
from hf_dialeval.metrics.fined_eval import FineDEvalModel
from hf_dialeval.metrics.fined_eval.scoring import FineDEvalMetric
from hf_dialeval.training.checkpoint_averaging import average_checkpoints
from hf_dialeval.training.options import TRAINING_RECORD

#: perturbation -> the heads it must lower: the issue's targets (what the checklist says each perturbation hurts),
#: and ``negate``, held out of every recipe, on the coherence head
TARGETS = {name: PERTURBATIONS[name].hurts for name in ("generic", "random", "echo", "repeat", "shuffle")}
TARGETS["negate"] = ("coherence",)
#: the TrainingArguments that tell recipes apart
RECIPE_KEYS = ("strategies", "pair_with_original", "length_matched_pairs", "max_steps", "average_last",
               "learning_rate", "per_device_train_batch_size", "seed")


def fed_overall(metric, fed: datasets.Dataset) -> dict[str, float]:
    """Spearman of the overall score and of each head with FED's Overall rating."""
    output = metric.score_dataset(fed)
    scores = {"overall": output.overall, **output.scores}
    return {key: correlate(values, fed["Overall"])["spearman"] for key, values in scores.items()}


def checklist_targets(metric, dialogues: dict[str, list[list[str]]], pairs: int
                      ) -> dict[str, dict[str, dict[str, float]]]:
    """Corpus -> perturbation -> score key -> win rate (with its interval) on the target perturbations."""
    results = {}
    for corpus, corpus_dialogues in dialogues.items():
        rows = run_checklist(metric, corpus_dialogues, pairs, seed=0, perturbations=list(TARGETS))
        results[corpus] = {row["perturbation"]: row["wins"] for row in rows}
    return results


def load_row_metric(spec: str):
    """The metric of a folder, or of ``RUN@STEP,STEP,...``: the weight average of those checkpoints of RUN."""
    run, separator, steps = spec.partition("@")
    if not separator:
        return load_metric("fined-eval", checkpoint=spec, device="cpu")
    folders = [Path(run) / f"checkpoint-{step}" for step in steps.split(",")]
    model = FineDEvalModel.from_pretrained(str(folders[-1]))
    average_checkpoints(model, folders)
    return FineDEvalMetric([model.eval()], [AutoTokenizer.from_pretrained(str(folders[-1]))])


def recipe(path: str) -> dict:
    """The recipe of a training run's folder (``{}`` for a folder without a training record)."""
    record_path = Path(path.partition("@")[0]) / TRAINING_RECORD
    if not record_path.is_file():
        return {}
    record = json.loads(record_path.read_text(encoding="utf-8"))
    return {key: record["arguments"].get(key) for key in RECIPE_KEYS} | {"validation": record["validation"]}


def markdown(rows: dict[str, dict], corpora: list[str]) -> str:
    columns = [(p, head) for p, heads in TARGETS.items() for head in heads]
    header = " | ".join(f"{p} ({head[:3]})" for p, head in columns)
    lines = []
    for corpus in corpora:
        lines += [f"{corpus}: win rate of the original on the head the perturbation should hurt", "",
                  "| run | FED Overall | coh | lik | top | " + header + " |",
                  "|---|---|---|---|---|" + "---|" * len(columns)]
        for name, row in rows.items():
            fed = row["fed_overall"]
            wins = [row["checklist"][corpus][p][head]["win_rate"] for p, head in columns]
            lines.append(f"| {name} | {fed['overall']:.3f} | {fed['coherence']:.3f} | {fed['likability']:.3f} | "
                         f"{fed['topic_depth']:.3f} | " + " | ".join(f"{w:.2f}" for w in wins) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--run", action="append", default=[], metavar="NAME=PATH[@STEPS]",
                        help="a checkpoint folder (a training run's output or any FineD-Eval folder), or RUN@100,200 "
                             "for the average of those kept checkpoints of RUN; repeatable")
    parser.add_argument("--pairs", type=int, default=200, help="pairs per perturbation")
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=list(CORPORA), help="checklist corpora")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results"))
    args = parser.parse_args()
    runs: dict[str, str] = {}
    for entry in args.run:
        name, separator, path = entry.partition("=")
        if not separator or not name or not path:
            raise SystemExit(f"--run {entry!r}: give NAME=PATH")
        runs[name] = path
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)  # before the slow scoring, not after it
    fed = load_benchmark("fed-dialogue", data_dir=args.data_dir)
    dialogues = {corpus: load_checklist_corpus(corpus, args.data_dir) for corpus in args.corpora}
    rows = {}
    for name, path in runs.items():
        metric = load_row_metric(path)
        rows[name] = {"checkpoint": path, "recipe": recipe(path), "fed_overall": fed_overall(metric, fed),
                      "checklist": checklist_targets(metric, dialogues, args.pairs)}
        print(name, json.dumps(rows[name]["fed_overall"]), flush=True)
    (out / "strategy_ablation.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    (out / "strategy_ablation.md").write_text(markdown(rows, args.corpora), encoding="utf-8")
    print(markdown(rows, args.corpora))


if __name__ == "__main__":
    main()
