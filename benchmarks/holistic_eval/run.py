"""HolisticEval beside the paper's Tables 3 and 4: Pearson, Spearman and Kendall of context coherence on
``holistic-context`` and of fluency on ``holistic-fluency``, for the shipped default, each ``--run`` (a run folder
of ``hf-dialeval train holistic-eval``) and each language model without fine-tuning (``--untuned``, in the layout
chosen on validation data, its cutoffs fitted the same way); every LM with the pointwise mutual information of
context coherence (``pmi``: the response's mean log-probability given the query minus without it) and, with
``--other-reduction``, the other token reduction; the floors on the same items (``length``, ``similarity``); each
LM's DailyDialog test perplexity (per word of the responses given their queries); context coherence on the
coherence-like ratings of other domains' turn-level benchmarks (never trained on) beside the similarity floor;
scatter plots like the paper's Figures 1–2 (human ratings normalised to [0, 1] with N(0, 0.05²) jitter); and the
default's scoring throughput relative to its raw forward pass.

    python benchmarks/holistic_eval/run.py --data-dir ../shared/data --run gemma3=runs/he-gemma3/adapter \\
        --untuned smollm2=HuggingFaceTB/SmolLM2-135M-Instruct --untuned gemma3=google/gemma-3-270m

Writes ``results/holistic_eval.json``, ``results/holistic_eval.md``, the figures, and per benchmark the
``hf-dialeval benchmark --output`` record of the default (``results/<benchmark>.json``).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import numpy as np

from hf_dialeval import load_benchmark, load_metric
from hf_dialeval.data.transcripts import Layout
from hf_dialeval.evaluation.meta_evaluation import results_record, write_results
from hf_dialeval.evaluation.statistics import compare_spearman, correlate
from hf_dialeval.metrics.holistic_eval.configuration_holistic_eval import TOKEN_REDUCTIONS
from hf_dialeval.metrics.holistic_eval.data import dailydialog_pairs, encode_scoring_inputs
from hf_dialeval.metrics.holistic_eval.modeling_holistic_eval import HolisticEvalModel
from hf_dialeval.metrics.holistic_eval.scoring import (
    HolisticEvalMetric,
    fit_dailydialog_cutoffs,
    language_model_perplexity,
    pointwise_mutual_information,
)
from hf_dialeval.registry import paper_results

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for benchmarks/common/
from benchmarks.common.coherence_comparison import COHERENCE_RATINGS  # noqa: E402
from benchmarks.common.throughput import scoring_throughput  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
#: benchmark -> (human rating, the score of ours the paper correlates with it)
PAPER_BENCHMARKS = {"holistic-context": ("Coherence", "context_coherence"), "holistic-fluency": ("Fluency", "fluency")}
OTHER_DOMAINS = {name: rating for name, rating in COHERENCE_RATINGS.items() if name not in PAPER_BENCHMARKS}
#: DailyDialog coherence ratings that are neither of the paper's benchmarks: where the token reduction and the PMI
#: weight are chosen.
DEV = {"grade-dailydialog": "Coherence"}
FLOORS = ("length", "similarity")
UNTUNED = "no-fine-tuning"
SEED = 42
PAPER_ROWS = ("holistic-eval", "holistic-eval:no-fine-tuning", "holistic-eval:ruber-bert")
JITTER = 0.05


def refitted(model: HolisticEvalModel, tokenizer, reduction: str, pairs: int, data_dir: str | None
             ) -> HolisticEvalMetric:
    """A copy of ``model`` scoring with ``reduction``, its cutoffs fitted for it on the DailyDialog validation pairs
    that ``hf-dialeval train holistic-eval`` fits on."""
    model = copy.deepcopy(model)
    model.config.token_reduction = reduction
    fit_dailydialog_cutoffs(model, tokenizer, pairs=pairs, seed=SEED, data_dir=data_dir)
    return HolisticEvalMetric(model, tokenizer, device="cpu")


def untuned_model(backbone: str, prompt_format: str, detokenize: bool):
    """``backbone`` as a causal LM without any training (the paper's GPT-2 without fine-tuning), reading
    ``prompt_format`` and scoring in the shipped default's precision (bf16 where the CPU has it), and its tokenizer."""
    from transformers import AutoTokenizer

    from hf_dialeval.modeling.checkpoint_sources import resolve_backbone_path

    model = HolisticEvalModel.from_backbone(backbone, prompt_format=prompt_format, detokenize=detokenize,
                                            scoring_dtype="bf16").eval()
    return model, AutoTokenizer.from_pretrained(resolve_backbone_path(backbone))


def pmi_scores(metric: HolisticEvalMetric, dataset) -> list[float]:
    """Pointwise mutual information of each response and its query: ``c_raw(r|q) − f_raw(r)`` (mean reduction)."""
    raw = metric.raw_scores([list(c) for c in dataset["context"]], dataset["response"])
    return pointwise_mutual_information(raw.coherence, raw.fluency_of_coherence_tokens)


def throughput(metric: HolisticEvalMetric, dataset, repeats: int) -> dict[str, float]:
    """The default's scoring of ``dataset`` against its model's raw forward pass on the same padded batches."""
    contexts, responses = [list(c) for c in dataset["context"]], dataset["response"]
    encoding, _, _ = encode_scoring_inputs(metric.tokenizer, contexts, responses, metric.max_seq_length,
                                           Layout.of_config(metric.tokenizer, metric.model.config))
    batches = [batch for _, batch in metric.row_batches(encoding)]
    metric.score_dataset(dataset.select(range(8)))  # warm-up
    return scoring_throughput(metric, encoding, lambda: metric.score_dataset(dataset), repeats, batches=batches)


def scatter(results: dict, scores: dict, datasets: dict, rows: list[str], out: Path) -> list[Path]:
    """Figures 1–2: per paper benchmark, one panel per row, the score against the normalised mean human rating
    plus N(0, 0.05²) jitter (as the paper draws them, so that equal ratings do not overlap)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    written = []
    for figure_number, (benchmark, (rating, score)) in enumerate(PAPER_BENCHMARKS.items(), start=1):
        humans = (np.array(datasets[benchmark][rating], dtype=float) - 1.0) / 4.0
        figure, axes = plt.subplots(1, len(rows), figsize=(4 * len(rows), 3.8), squeeze=False)
        for axis, row in zip(axes[0], rows):
            axis.scatter(humans + rng.normal(0.0, JITTER, len(humans)), scores[row][benchmark], s=10, alpha=0.6)
            cell = results["rows"][row][benchmark]
            axis.set_title(f"{row}: r = {cell['pearson']:.2f}, ρ = {cell['spearman']:.2f}", fontsize=9)
            axis.set_xlabel(f"human {rating.lower()} (normalised, jittered)")
            axis.set_ylabel(score)
        figure.suptitle(f"Figure {figure_number} analogue: {benchmark}", fontsize=10)
        figure.tight_layout()
        path = out / f"figure{figure_number}_{benchmark}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--run", action="append", default=[], metavar="NAME=PATH", help="a trained run to add as a row")
    parser.add_argument("--untuned", action="append", default=[], metavar="NAME=BACKBONE",
                        help="a language model to add without fine-tuning, as a row")
    parser.add_argument("--untuned-prompt-format", default="speaker-tags",
                        help="the layout the --untuned LMs read "
                             "(chosen on validation data by studies/prompt_format.py)")
    parser.add_argument("--untuned-raw-text", action="store_true",
                        help="give the --untuned LMs the tokenised text as released (default: detokenised)")
    parser.add_argument("--pairs", type=int, default=None, help="DailyDialog test pairs for the perplexity (all)")
    parser.add_argument("--other-reduction", action="store_true",
                        help="add each LM with the other token reduction (sum or mean), its cutoffs refitted")
    parser.add_argument("--other-domains", action=argparse.BooleanOptionalAction, default=True,
                        help="score the other domains' benchmarks too")
    parser.add_argument("--cutoff-pairs", type=int, default=2000,
                        help="DailyDialog validation pairs the refitted rows' cutoffs are fitted on")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats of the throughput measurement")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    names = [*PAPER_BENCHMARKS, *DEV, *(OTHER_DOMAINS if args.other_domains else {})]
    datasets = {name: load_benchmark(name, args.data_dir) for name in names}
    checkpoints = {"default": None, **dict(run.split("=", 1) for run in args.run)}
    metrics = {}
    for name, path in checkpoints.items():
        metrics[name] = load_metric("holistic-eval", checkpoint=path, device="cpu")
        if args.other_reduction:  # cutoffs refitted for it
            other = next(r for r in TOKEN_REDUCTIONS if r != metrics[name].model.config.token_reduction)
            metrics[f"{name}:{other}"] = refitted(metrics[name].model, metrics[name].tokenizer, other,
                                                 args.cutoff_pairs, args.data_dir)
    untuned = dict(item.split("=", 1) for item in args.untuned)
    for lm, backbone in untuned.items():
        model, tokenizer = untuned_model(backbone, args.untuned_prompt_format, not args.untuned_raw_text)
        for reduction in TOKEN_REDUCTIONS if args.other_reduction else ("mean",):
            metrics[f"{lm}-{UNTUNED}" + ("" if reduction == "mean" else f":{reduction}")] = refitted(
                model, tokenizer, reduction, args.cutoff_pairs, args.data_dir)
    lm_rows = list(metrics)
    metrics.update({name: load_metric(name, device="cpu") for name in FLOORS})

    test = dailydialog_pairs("test", args.pairs, SEED, args.data_dir)
    results: dict = {"benchmarks": {**{b: r for b, (r, _) in PAPER_BENCHMARKS.items()}, **DEV, **OTHER_DOMAINS},
                     "checkpoints": {n: p or "default" for n, p in checkpoints.items()}, "rows": {}, "perplexity": {},
                     "cutoffs": {}}
    for name in lm_rows:
        lm = name.split(":")[0]
        results["checkpoints"].setdefault(name, f"{untuned[lm.removesuffix('-' + UNTUNED)]}, not fine-tuned"
                                          if lm.endswith(UNTUNED) else checkpoints[lm])
    scores: dict = {}
    for name, metric in metrics.items():
        results["rows"][name], scores[name] = {}, {}
        for benchmark, dataset in datasets.items():
            if (name == "length" or name.endswith(":sum")) and benchmark not in PAPER_BENCHMARKS:
                continue
            if name == "similarity" and benchmark == "holistic-fluency":  # no context to compare with
                continue
            rating = results["benchmarks"][benchmark]
            output = metric.score_dataset(dataset)
            key = PAPER_BENCHMARKS[benchmark][1] if name in lm_rows and benchmark in PAPER_BENCHMARKS else (
                "context_coherence" if name in lm_rows else "overall")
            values = output.select(key)
            scores[name][benchmark] = values
            results["rows"][name][benchmark] = {"score": key, "truncated": sum(output.truncated),
                                                **correlate(values, dataset[rating])}
            if name == "default" and benchmark in PAPER_BENCHMARKS:
                write_results(results_record(output, values, dataset, benchmark, "holistic-eval", None, key),
                              out / f"{benchmark}.json")
            print(name, benchmark, key, json.dumps({k: results["rows"][name][benchmark][k]
                                                    for k in ("pearson", "spearman", "kendall")}), flush=True)
        if name in lm_rows and ":" not in name:  # once per LM, with its context coherence as PMI
            results["perplexity"][name] = language_model_perplexity(metric.model, metric.tokenizer, test["context"],
                                                                    test["response"], dtype=metric.dtype)
            print(name, "perplexity", json.dumps(results["perplexity"][name]), flush=True)
            context = datasets["holistic-context"]
            values = pmi_scores(metric, context)
            scores[f"{name}:pmi"] = {"holistic-context": values}
            results["rows"][f"{name}:pmi"] = {"holistic-context": {"score": "pmi", "truncated": 0,
                                                                   **correlate(values, context["Coherence"])}}
        if name in lm_rows:
            config = metric.model.config
            results["cutoffs"][name] = {"token_reduction": config.token_reduction,
                                        "context_coherence": config.context_coherence_cutoff,
                                        "fluency": config.fluency_cutoff, "reference": config.cutoff_reference}
    for name in lm_rows:
        if "holistic-fluency" not in scores[name]:
            continue
        for benchmark in PAPER_BENCHMARKS:  # the bar is the length floor's magnitude: its scores negated
            results["rows"][name][benchmark]["vs_negated_length_floor"] = compare_spearman(
                scores[name][benchmark], [-value for value in scores["length"][benchmark]],
                datasets[benchmark][results["benchmarks"][benchmark]])
        for benchmark in datasets:
            if "similarity" in scores and benchmark in scores["similarity"]:
                results["rows"][name][benchmark]["vs_similarity_floor"] = compare_spearman(
                    scores[name][benchmark], scores["similarity"][benchmark],
                    datasets[benchmark][results["benchmarks"][benchmark]])
    results["paper"] = {row: {b: paper_results(row, b, score)[r] for b, (r, score) in PAPER_BENCHMARKS.items()
                              if paper_results(row, b, score)} for row in PAPER_ROWS}
    results["throughput"] = throughput(metrics["default"], datasets["holistic-context"], args.repeats)
    results["figures"] = [p.name for p in scatter(results, scores, datasets, lm_rows, out)]
    (out / "holistic_eval.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / "holistic_eval.md").write_text(format_tables(results), encoding="utf-8")
    print(format_tables(results))


def _triple(cell: dict | None) -> str:
    if not cell:
        return " | | "
    return " | ".join(f"{cell[k]:.3f}" if cell.get(k) is not None else "" for k in ("pearson", "spearman", "kendall"))


def _difference(cell: dict | None) -> str:
    if not cell:
        return ""
    return f"{cell['spearman_difference']:+.3f} [{cell['ci95'][0]:+.3f}, {cell['ci95'][1]:+.3f}]"


def format_tables(results: dict) -> str:
    """Tables 3–4 (ours above the paper's), perplexity, other domains and throughput, as markdown."""
    paper = list(PAPER_BENCHMARKS)
    lines = ["### Tables 3–4: context coherence on holistic-context, fluency on holistic-fluency (r / ρ / τ)", "",
             "| row | " + " | ".join(f"{b} r | ρ | τ" for b in paper) + " | DailyDialog test perplexity (token / word) |",
             "|---|" + "---|---|---|" * len(paper) + "---|"]
    for name, row in results["rows"].items():
        ppl = results["perplexity"].get(name)
        ppl_cell = f"{ppl['token_perplexity']:.1f} / {ppl['word_perplexity']:.1f}" if ppl else ""
        lines.append(f"| {name} | " + " | ".join(_triple(row.get(b)) for b in paper) + f" | {ppl_cell} |")
    for name, row in results["paper"].items():
        lines.append(f"| paper: {name} | " + " | ".join(_triple(row.get(b)) for b in paper) + " | |")
    lines += ["", "Spearman minus the floors' (paired bootstrap 95% interval): holistic-context against similarity and "
              "against the negated length; holistic-fluency against the negated length.", "",
              "| row | context − similarity | context − (−length) | fluency − (−length) |", "|---|---|---|---|"]
    for name, row in results["rows"].items():
        if "vs_negated_length_floor" in row.get("holistic-fluency", {}):
            cells = [row["holistic-context"].get("vs_similarity_floor"), row["holistic-context"]["vs_negated_length_floor"],
                     row["holistic-fluency"]["vs_negated_length_floor"]]
            lines.append(f"| {name} | " + " | ".join(_difference(c) for c in cells) + " |")
    # the benchmarks scored beyond the paper's (grade-dailydialog alone with --no-other-domains)
    others = [b for b in results["benchmarks"]
              if b not in PAPER_BENCHMARKS and any(b in row for row in results["rows"].values())]
    lines += ["", "### grade-dailydialog (where the token reduction and the PMI weight are chosen) and other domains "
              "(never trained on): "
              "context coherence against each benchmark's coherence-like rating (Spearman), the similarity floor, and "
              "the difference (paired bootstrap 95% interval)", "",
              "| row | " + " | ".join(f"{b} ({results['benchmarks'][b]})" for b in others) + " |",
              "|---|" + "---|" * len(others)]
    for name, row in results["rows"].items():
        if others[0] not in row:
            continue
        cells = []
        for b in others:
            difference = row[b].get("vs_similarity_floor")
            cells.append(f"{row[b]['spearman']:+.3f}" + (f" ({_difference(difference)})" if difference else ""))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    t = results["throughput"]
    lines += ["", f"Throughput (holistic-context, {t['items']} LM inputs: each item with and without its context; "
              f"batch {t['batch_size']} items, {t['torch_threads']} "
              f"threads): raw forward {t['raw_forward_s']} s, score_dataset {t['scoring_s']} s, ratio "
              f"{t['ratio_raw_over_scoring']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
