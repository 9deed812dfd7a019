"""RADE beside the paper's Tables 3 and 4: Pearson, Spearman and Kendall on the test splits of RADE's three
domains and, zero-shot, on USR Topical-Chat / Persona-Chat with each context's original human response as the
reference (removed from the candidates) and on GRADE's ConvAI2 and DailyDialog coherence ratings (each response
with its dialogue's reference: domains no RADE model here was trained on); the floors on the same items (``length``; ``reference-similarity``, the
cosine of MiniLM sentence embeddings of candidate and reference, which a reference-assisted metric must clearly
beat, with the paired-bootstrap interval of each model's Spearman minus the floor's); and the scoring throughput
of the shipped default relative to its raw forward pass.

    python benchmarks/rade/run.py --data-dir ../shared/data --run emotion-ts=runs/rade-emotion ...

Rows: ``default`` (shipped in the package; what ``hf-dialeval benchmark --metric rade`` scores), each
``--run NAME=PATH`` (a run folder of ``hf-dialeval train rade``), each ``--carry-over NAME`` (a row of the committed
``results/rade.json``, kept as it was measured), and the floors. Writes ``results/rade.json``,
``results/rade.md`` and, per benchmark, the ``hf-dialeval benchmark --output`` record of the default
(``results/<benchmark>.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hf_dialeval import load_benchmark, load_metric
from hf_dialeval.evaluation.meta_evaluation import results_record, write_results
from hf_dialeval.evaluation.statistics import compare_spearman, correlate
from hf_dialeval.metrics.rade.data import encode_posterior
from hf_dialeval.registry import paper_results

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for benchmarks/common/
from benchmarks.common.throughput import scoring_throughput  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DOMAINS = ("rade-chitchat", "rade-emotion", "rade-persona")
USR = ("usr-topical-reference", "usr-persona-reference")
UNSEEN = ("grade-convai2", "grade-dailydialog")
#: The human rating each benchmark is correlated with.
DIMENSIONS = {**{name: "Overall" for name in (*DOMAINS, *USR)}, **{name: "Coherence" for name in UNSEEN}}
FLOORS = ("length", "reference-similarity")
REFERENCE_FLOOR = "reference-similarity"
#: Paper rows printed beside ours (registry keys of hf_dialeval.metrics.rade.scoring.PAPER_RESULTS).
PAPER_ROWS = ("rade", "rade:pt", "rade:no-ranking", "rade:no-generation", "rade:bert-mlp", "rade:bart-mlp", "rade:grade",
              "rade:usr", "rade:bertscore")


def throughput(metric, dataset, repeats: int) -> dict[str, float]:
    """The shipped default's scoring of ``dataset`` against its raw forward pass on the same inputs."""
    contexts, references, candidates = [list(c) for c in dataset["context"]], dataset["reference"], dataset["response"]
    encoding, _ = encode_posterior(metric.tokenizer, contexts, references, candidates, metric.max_seq_length)
    metric.score_dataset(dataset.select(range(8)))  # warm-up
    return scoring_throughput(metric, encoding, lambda: metric.score_dataset(dataset), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--run", action="append", default=[], metavar="NAME=PATH", help="a trained run to add as a row")
    parser.add_argument("--carry-over", nargs="+", default=[], metavar="NAME",
                        help="rows of the committed results/rade.json to keep as they are, unscored (runs whose folders "
                             "are not on this machine; the items and the floors they were compared with are the same)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats of the throughput measurement")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    datasets = {name: load_benchmark(name, args.data_dir) for name in DIMENSIONS}
    rows = {"default": None, **dict(run.split("=", 1) for run in args.run)}
    metrics = {name: load_metric("rade", checkpoint=path, device="cpu") for name, path in rows.items()}
    metrics.update({name: load_metric(name, device="cpu") for name in FLOORS})

    results: dict = {"dimensions": DIMENSIONS, "rows": {}, "checkpoints": {n: p or "default" for n, p in rows.items()}}
    for name, metric in metrics.items():
        results["rows"][name] = {}
        for benchmark, dataset in datasets.items():
            output = metric.score_dataset(dataset)
            results["rows"][name][benchmark] = {"scores": output.overall, "truncated": sum(output.truncated),
                                                **correlate(output.overall, dataset[DIMENSIONS[benchmark]])}
            if name == "default":
                write_results(results_record(output, output.overall, dataset, benchmark, "rade", None),
                              out / f"{benchmark}.json")
            print(name, benchmark, json.dumps({k: results["rows"][name][benchmark][k] for k in ("pearson", "spearman", "kendall")}))
    floor = results["rows"][REFERENCE_FLOOR]
    for name in rows:
        for benchmark, dataset in datasets.items():
            cell = results["rows"][name][benchmark]
            cell["vs_reference_floor"] = compare_spearman(cell["scores"], floor[benchmark]["scores"],
                                                          dataset[DIMENSIONS[benchmark]])
    if args.carry_over:
        committed = json.loads((RESULTS / "rade.json").read_text(encoding="utf-8"))
        missing = [name for name in args.carry_over if name not in committed["rows"]]
        if missing:
            raise SystemExit(f"--carry-over {missing}: not rows of {RESULTS / 'rade.json'} ({list(committed['rows'])})")
        floors = {name: results["rows"].pop(name) for name in FLOORS}
        for name in args.carry_over:
            results["rows"][name] = committed["rows"][name]
            results["checkpoints"][name] = committed["checkpoints"][name]
        results["rows"].update(floors)
    results["paper"] = {row: {b: paper_results(row, b).get(DIMENSIONS[b]) for b in DIMENSIONS if paper_results(row, b)}
                        for row in PAPER_ROWS}
    results["throughput"] = throughput(metrics["default"], datasets["rade-emotion"], args.repeats)
    for row in results["rows"].values():
        for cell in row.values():
            cell.pop("scores", None)
    (out / "rade.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / "rade.md").write_text(format_tables(results), encoding="utf-8")
    print(format_tables(results))


def _triple(cell: dict | None) -> list[str]:
    if not cell:
        return ["", "", ""]
    return [f"{cell[k]:.3f}" if cell.get(k) is not None else "" for k in ("pearson", "spearman", "kendall")]


def format_tables(results: dict) -> str:
    """Table 3 (the three domains' test splits) and Table 4 (USR, zero-shot) as markdown, ours above the paper's."""
    lines = []
    for title, benchmarks in (("Table 3: test splits of RADE's domains (r / ρ / τ)", DOMAINS),
                              ("Table 4: USR, zero-shot, ground truth as the reference (r / ρ / τ)", USR),
                              ("Unseen domains: GRADE coherence ratings with references (r / ρ / τ)", UNSEEN)):
        lines += [f"### {title}", "", "| row | " + " | ".join(f"{b} r | ρ | τ" for b in benchmarks) + " |",
                  "|---|" + "---|---|---|" * len(benchmarks)]
        for name, row in results["rows"].items():
            lines.append(f"| {name} | " + " | ".join(" | ".join(_triple(row[b])) for b in benchmarks) + " |")
        for name, row in results["paper"].items():
            if any(b in row for b in benchmarks):
                lines.append(f"| paper: {name} | " + " | ".join(" | ".join(_triple(row.get(b))) for b in benchmarks) + " |")
        lines += ["", f"Spearman minus the reference floor's ({REFERENCE_FLOOR}), paired bootstrap 95% interval:", "",
                  "| row | " + " | ".join(benchmarks) + " |", "|---|" + "---|" * len(benchmarks)]
        for name, row in results["rows"].items():
            if "vs_reference_floor" in row[benchmarks[0]]:
                cells = [row[b]["vs_reference_floor"] for b in benchmarks]
                lines.append(f"| {name} | " + " | ".join(
                    f"{c['spearman_difference']:+.3f} [{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}]" for c in cells) + " |")
        lines.append("")
    t = results["throughput"]
    lines += [f"Throughput (rade-emotion test, {t['items']} items, batch {t['batch_size']}, {t['torch_threads']} threads): "
              f"raw forward {t['raw_forward_s']} s, score_dataset {t['scoring_s']} s, ratio "
              f"{t['ratio_raw_over_scoring']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
