"""Dial-M beside the paper's Tables 1–2: Pearson and Spearman of the exposed score (higher is better: minus Eq. 1's
loss, the paper's correlations with the loss negated, or the context gain) on USR-Topical and USR-Persona (Overall and
the five sub-dimensions of Table 2), PredictiveEngage and HolisticEval context, for the shipped default (its own
variant, context gain), the same model under Eq. 1, each ``--run`` (the ablations in miniature: random masking, no
pre-training, no fine-tuning — run folders of ``hf-dialeval train dial-m-mlm|dial-m``), the untrained backbone with a
fresh LM head (``--untrained``) and pretrained causal LMs untrained for Dial-M (``--zero-shot``, this package's
adaptation); the floors on the same items (length, similarity, keyword rarity); turn-level benchmarks of other
domains that no row was trained on; and the default's throughput (items/s, and the ratio of its raw forward pass
over the same inputs to its scoring: keyword-masked copies for a masked LM, one transcript per response for a causal
LM). ``--zero-shot``, ``--all-words``, ``--no-condition`` and ``--context-gain`` add the causal-LM study's rows.

    python benchmarks/dial_m/run.py --data-dir ../shared/data --run no-fine-tuning=runs/dial-m-mlm

Writes ``results/dial_m.json``, ``results/dial_m.md`` and, per Table 1 benchmark, the ``hf-dialeval benchmark
--output`` record of the default (``results/<benchmark>.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

from hf_dialeval import load_benchmark, load_metric
from hf_dialeval.evaluation.meta_evaluation import results_record, write_results
from hf_dialeval.evaluation.statistics import compare_spearman, correlate
from hf_dialeval.metrics.dial_m import DEFAULT_CHECKPOINT
from hf_dialeval.metrics.dial_m.data import causal_keyword_rows, masked_keyword_copies
from hf_dialeval.metrics.dial_m.keywords import extract_keywords, keyword_spans, tokenizer_words
from hf_dialeval.metrics.dial_m.modeling_dial_m import DialMModel
from hf_dialeval.metrics.dial_m.scoring import DialMMetric
from hf_dialeval.metrics.dial_m.training_data import load_training_dialogues
from hf_dialeval.modeling.checkpoints import folder_sha256
from hf_dialeval.registry import paper_results

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for benchmarks/common/
from benchmarks.common.throughput import scoring_throughput  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
USR_DIMENSIONS = ("Overall", "Understandable", "Natural", "Maintains Context", "Engaging", "Uses Knowledge")
#: Table 1's benchmarks and the ratings correlated (the first is Table 1's; the USR rest are Table 2's).
PAPER_BENCHMARKS = {"usr-topical": USR_DIMENSIONS, "usr-persona": USR_DIMENSIONS,
                    "predictive-engage": ("Engagement",), "holistic-context": ("Coherence",)}
#: Turn-level benchmarks of other domains, never trained on, and their overall-like rating.
UNSEEN = {"grade-convai2": "Coherence", "fed-turn": "Overall"}
FLOORS = ("length", "similarity", "keyword-rarity")
PAPER_ROWS = ("dial-m", "dial-m:random-masking", "dial-m:no-pre-training", "dial-m:no-fine-tuning", "dial-m:untrained")
#: The corpora whose word counts define keyword rarity: what the default was trained on.
RARITY_CORPORA = ("dailydialog", "topical-chat")


class KeywordRarity:
    """The model-free floor: the mean over a response's keywords (the same masked words as Dial-M's) of the word's
    negative log frequency in the training corpora (add-one smoothed). Higher is rarer."""

    def __init__(self, tokenizer, data_dir: str | None) -> None:
        self.tokenizer = tokenizer
        split = tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str
        self.counts: Counter[str] = Counter()
        for dialogue in load_training_dialogues(RARITY_CORPORA, "train", data_dir)["dialogue"]:
            for utterance in dialogue:
                self.counts.update(word.lower() for word, _ in split(utterance))
        self.total = sum(self.counts.values()) + len(self.counts)

    def score_dataset(self, dataset) -> list[float]:
        scores = []
        for response in dataset["response"]:
            spans = keyword_spans(tokenizer_words(self.tokenizer, response)[1], extract_keywords(response))
            rarities = [-math.log((self.counts[s.word.lower()] + 1) / self.total) for s in spans]
            scores.append(sum(rarities) / len(rarities) if rarities else 0.0)
        return scores


def minilm_tokenizer():
    """MiniLM's WordPiece tokenizer (the default's): its words are the ones keyword rarity counts."""
    from transformers import AutoTokenizer

    from hf_dialeval.modeling.checkpoint_sources import resolve_backbone_path
    from hf_dialeval.modeling.offline_models import MINILM_HUB_ID

    return AutoTokenizer.from_pretrained(resolve_backbone_path(MINILM_HUB_ID))


def untrained_metric(backbone: str) -> DialMMetric:
    """``backbone`` untrained for Dial-M, the paper's "w/o pre-training and fine-tuning" row: a masked LM (a fresh LM
    head for an encoder), utterances joined by its separator token; or a causal LM reading detokenised transcripts
    (this package's adaptation, zero-shot), in bf16 where the CPU has it."""
    from transformers import AutoTokenizer

    from hf_dialeval.modeling.backbones import is_decoder_only
    from hf_dialeval.modeling.checkpoint_sources import resolve_backbone_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_backbone_path(backbone))
    if is_decoder_only(backbone):
        model = DialMModel.from_backbone(backbone, lm_kind="causal-lm", detokenize=True, scoring_dtype="bf16")
    else:
        model = DialMModel.from_backbone(backbone, eou_token=None, eou_token_id=tokenizer.sep_token_id)
    return DialMMetric(model.eval(), tokenizer, device="cpu")


def every_word(metric: DialMMetric) -> DialMMetric:
    """``metric`` (on a causal LM) scoring every word of a response with a letter or digit, not only its keywords:
    whether keyword selection matters."""
    if metric.model.config.lm_kind != "causal-lm":
        raise ValueError("--all-words rows are of a causal LM (a masked LM masks each scored word on its own)")
    metric.word_choice = lambda text, words: keyword_spans(words, ())
    return metric


def context_gain(metric: DialMMetric) -> DialMMetric:
    """``metric`` scoring how much the context and condition lower the keywords' loss (the context-gain variant)."""
    metric.variant = "context-gain"
    return metric


def with_token_limit(metric: DialMMetric, max_seq_length: int) -> DialMMetric:
    """``metric`` scoring inputs of at most ``max_seq_length`` tokens (a stage-1 run keeps its MLM window length)."""
    metric.model.config.max_seq_length = max_seq_length
    return metric


def model_inputs(metric: DialMMetric, dataset) -> dict[str, list[list[int]]]:
    """The inputs the metric's model reads for ``dataset``: its keyword-masked copies (a masked LM) or one transcript
    per response (a causal LM, every keyword scored in the same pass)."""
    contexts, responses, conditions = [list(c) for c in dataset["context"]], dataset["response"], dataset["condition"]
    config = metric.model.config
    if config.lm_kind == "causal-lm":
        return causal_keyword_rows(metric.tokenizer, metric.layout, contexts, responses, conditions,
                                   config.max_seq_length, metric.word_choice).rows
    return masked_keyword_copies(metric.tokenizer, contexts, responses, conditions, metric.eou, config.max_seq_length,
                                 config.max_keywords, config.keyword_pos_tags).rows


def throughput(metric: DialMMetric, dataset, repeats: int) -> dict[str, float]:
    metric.score_dataset(dataset.select(range(8)))  # warm-up
    result = scoring_throughput(metric, model_inputs(metric, dataset), lambda: metric.score_dataset(dataset), repeats)
    result["inputs"] = result.pop("items")
    result["items"] = len(dataset)
    result["items_per_s"] = round(len(dataset) / result["scoring_s"], 2)
    return result


def named_by_weights(label: str, folder: str | Path) -> str:
    """A trained row's checkpoint name: ``label`` and the digest of its folder's files, so that ``--cache`` scores a
    retrained run, or a new default, again instead of reading back the scores of the weights it replaced."""
    return f"{label}, weights {folder_sha256(Path(folder))[:12]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--run", action="append", default=[], metavar="NAME=PATH", help="a trained run to add as a row")
    parser.add_argument("--untrained", default="sentence-transformers/all-MiniLM-L6-v2",
                        help="the backbone of the untrained row ('' leaves the row out)")
    parser.add_argument("--zero-shot", action="append", default=[], metavar="NAME=BACKBONE",
                        help="a causal LM untrained for Dial-M, as the row NAME-zero-shot (e.g. "
                             "smollm2=HuggingFaceTB/SmolLM2-135M-Instruct)")
    parser.add_argument("--all-words", action="append", default=[], metavar="ROW",
                        help="add ROW:all-words, a causal-LM row scoring every word of the response, not its keywords")
    parser.add_argument("--no-condition", action="append", default=[], metavar="ROW",
                        help="add ROW:no-condition, the row scored without the items' persona or knowledge")
    parser.add_argument("--context-gain", action="append", default=[], metavar="ROW",
                        help="add ROW:context-gain, the row's context-gain variant")
    parser.add_argument("--max-seq-length", type=int, default=256,
                        help="the token limit every --run and the untrained row score with (the default's own)")
    parser.add_argument("--dtype", default=None, help="the precision every --run scores in (its config's unless "
                        "given; the untrained and zero-shot rows score in bf16 where the CPU has it)")
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats of the throughput measurement")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--cache", default=None, help="a folder keeping each row's scores (but the default's) by row "
                        "name and checkpoint (a trained row's by its weights' digest): a row already there is read, "
                        "not scored again")
    parser.add_argument("--only", nargs="*", default=None, help="score only these rows (into --cache) and stop")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    datasets = {name: load_benchmark(name, args.data_dir) for name in [*PAPER_BENCHMARKS, *UNSEEN]}
    ratings = {**{b: list(d) for b, d in PAPER_BENCHMARKS.items()}, **{b: [r] for b, r in UNSEEN.items()}}
    loaders = {"default": lambda: load_metric("dial-m", device="cpu"),
               "default:eq1": lambda: load_metric("dial-m", device="cpu", variant="eq1")}
    default = named_by_weights("default", DEFAULT_CHECKPOINT)
    checkpoints = {"default": default, "default:eq1": f"{default}, Eq. 1"}
    for run in args.run:
        name, path = run.split("=", 1)
        loaders[name], checkpoints[name] = (lambda path=path: with_token_limit(
            load_metric("dial-m", checkpoint=path, device="cpu", dtype=args.dtype), args.max_seq_length)), \
            named_by_weights(path if args.dtype is None else f"{path}, {args.dtype}", path)
    if args.untrained:
        loaders["untrained"] = lambda: with_token_limit(untrained_metric(args.untrained), args.max_seq_length)
        checkpoints["untrained"] = f"{args.untrained}, fresh LM head"
    for item in args.zero_shot:
        name, backbone = item.split("=", 1)
        loaders[f"{name}-zero-shot"] = lambda backbone=backbone: with_token_limit(untrained_metric(backbone),
                                                                                 args.max_seq_length)
        checkpoints[f"{name}-zero-shot"] = f"{backbone}, causal LM, not trained for Dial-M"
    for row in args.all_words:
        loaders[f"{row}:all-words"] = lambda row=row: every_word(loaders[row]())
        checkpoints[f"{row}:all-words"] = f"{checkpoints[row]}, every word scored"
    for row in args.context_gain:
        loaders[f"{row}:context-gain"] = lambda row=row: context_gain(loaders[row]())
        checkpoints[f"{row}:context-gain"] = f"{checkpoints[row]}, context gain"
    for row in args.no_condition:
        loaders[f"{row}:no-condition"] = loaders[row]
        checkpoints[f"{row}:no-condition"] = f"{checkpoints[row]}, without the condition"
    model_rows = list(loaders)
    loaders["length"], loaders["similarity"] = (lambda: load_metric("length", device="cpu")), \
        (lambda: load_metric("similarity", device="cpu"))
    rows = model_rows + [*FLOORS]
    if args.only:
        model_rows = [name for name in model_rows if name in args.only]
        rows = [name for name in rows if name in args.only]
    rarity = KeywordRarity(minilm_tokenizer(), args.data_dir) if "keyword-rarity" in rows else None

    results: dict = {"ratings": ratings, "checkpoints": checkpoints, "rows": {}}
    scores: dict = {}
    default_metric = None
    for name in rows:
        results["rows"][name], scores[name] = {}, {}
        metric = None  # loaded only for a benchmark not in the cache, so one model is in memory at a time
        for benchmark, dataset in datasets.items():
            cached = Path(args.cache) / name / f"{benchmark}.json" if args.cache and name != "default" else None
            record = json.loads(cached.read_text()) if cached is not None and cached.is_file() else None
            if record is not None and record["checkpoint"] == checkpoints.get(name):
                values, truncated = record["scores"], record["truncated"]
            elif name == "keyword-rarity":
                values, truncated = rarity.score_dataset(dataset), 0
            else:
                scored = dataset.remove_columns("condition") if name.endswith(":no-condition") and \
                    "condition" in dataset.column_names else dataset
                if metric is None:
                    metric = loaders[name]()
                output = metric.score_dataset(scored)
                values, truncated = output.overall, sum(output.truncated)
                if name == "default" and benchmark in PAPER_BENCHMARKS:
                    write_results(results_record(output, values, dataset, benchmark, "dial-m", None),
                                  out / f"{benchmark}.json")
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                cached.write_text(json.dumps({"checkpoint": checkpoints.get(name), "scores": values,
                                              "truncated": truncated}))
            scores[name][benchmark] = values
            results["rows"][name][benchmark] = {"truncated": truncated,
                                                **{r: correlate(values, dataset[r]) for r in ratings[benchmark]}}
            first = results["rows"][name][benchmark][ratings[benchmark][0]]
            print(name, benchmark, ratings[benchmark][0], round(first["pearson"], 3), round(first["spearman"], 3),
                  flush=True)
        if name == "default":
            default_metric = metric
    if args.only:
        print("scored the --only rows into --cache; the tables need every row: run again without --only")
        return
    for name in model_rows:  # against each floor on the first rating (the floors' own orientation)
        for benchmark, dataset in datasets.items():
            rating = ratings[benchmark][0]
            results["rows"][name][benchmark]["vs_floors"] = {
                floor: compare_spearman(scores[name][benchmark], scores[floor][benchmark], dataset[rating])
                for floor in FLOORS}
            results["rows"][name][benchmark]["rank_correlation_with_keyword_rarity"] = correlate(
                scores[name][benchmark], scores["keyword-rarity"][benchmark])["spearman"]
    results["paper"] = {row: {b: paper_results(row, b) for b in PAPER_BENCHMARKS if paper_results(row, b)}
                        for row in PAPER_ROWS}
    results["throughput"] = throughput(default_metric, datasets["usr-topical"], args.repeats)
    (out / "dial_m.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / "dial_m.md").write_text(format_tables(results), encoding="utf-8")
    print(format_tables(results))


def _pair(cell: dict | None) -> str:
    return f"{cell['pearson']:+.3f} / {cell['spearman']:+.3f}" if cell else ""


def _difference(cell: dict) -> str:
    return f"{cell['spearman_difference']:+.3f} [{cell['ci95'][0]:+.3f}, {cell['ci95'][1]:+.3f}]"


def format_tables(results: dict) -> str:
    """Tables 1–2 (ours above the paper's), the floors, other domains and throughput, as markdown."""
    table1 = list(PAPER_BENCHMARKS)
    lines = ["### Table 1 (r / ρ of the exposed score, higher is better: the paper's loss correlations negated)", "",
             "| row | " + " | ".join(f"{b} ({results['ratings'][b][0]})" for b in table1) + " |",
             "|---|" + "---|" * len(table1)]
    for name, row in results["rows"].items():
        lines.append(f"| {name} | " + " | ".join(_pair(row[b][results['ratings'][b][0]]) for b in table1) + " |")
    for name, row in results["paper"].items():
        lines.append(f"| paper: {name} | " + " | ".join(
            _pair(row.get(b, {}).get(results["ratings"][b][0])) for b in table1) + " |")
    lines += ["", "### Table 2: USR sub-dimensions (r / ρ)", "",
              "| row | benchmark | " + " | ".join(USR_DIMENSIONS[1:]) + " |", "|---|---|" + "---|" * 5]
    for benchmark in ("usr-topical", "usr-persona"):
        for name, row in results["rows"].items():
            lines.append(f"| {name} | {benchmark} | " + " | ".join(_pair(row[benchmark][d]) for d in USR_DIMENSIONS[1:])
                         + " |")
        paper = results["paper"]["dial-m"][benchmark]
        lines.append(f"| paper: dial-m | {benchmark} | " + " | ".join(_pair(paper.get(d)) for d in USR_DIMENSIONS[1:])
                     + " |")
    lines += ["", "### Against the floors: Spearman minus each floor's (paired bootstrap 95% interval), and the rank "
              "correlation of the score with keyword rarity", "",
              "| row | benchmark | − length | − similarity | − keyword rarity | ρ with rarity |", "|---|---|---|---|---|---|"]
    for name, row in results["rows"].items():
        if name in FLOORS:
            continue
        for benchmark, cell in row.items():
            differences = [_difference(cell["vs_floors"][f]) for f in FLOORS]
            lines.append(f"| {name} | {benchmark} | " + " | ".join(differences)
                         + f" | {cell['rank_correlation_with_keyword_rarity']:+.3f} |")
    unseen = list(UNSEEN)
    lines += ["", "### Other domains, never trained on (r / ρ)", "",
              "| row | " + " | ".join(f"{b} ({UNSEEN[b]})" for b in unseen) + " |", "|---|" + "---|" * len(unseen)]
    for name, row in results["rows"].items():
        lines.append(f"| {name} | " + " | ".join(_pair(row[b][UNSEEN[b]]) for b in unseen) + " |")
    t = results["throughput"]
    lines += ["", f"Throughput (usr-topical, {t['items']} items, {t['inputs']} model inputs, batch "
              f"{t['batch_size']} inputs, {t['torch_threads']} threads): {t['items_per_s']} items/s; raw forward "
              f"{t['raw_forward_s']} s, scoring {t['scoring_s']} s, ratio {t['ratio_raw_over_scoring']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
