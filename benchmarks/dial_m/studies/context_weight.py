"""Chooses how much of the response-alone keyword loss Dial-M's score subtracts, on human ratings that are not among
its benchmarks: the validation splits of the RADE releases (ChitChat, EmpatheticDialogues, PersonaChat; each response
rated 1–5). For each checkpoint, every item's keyword loss with its context (Eq. 1's ``L_ctx``) and of the response
alone (``L_alone``) are computed once; then, for each weight ``β`` on a grid, the Spearman of
``β · L_alone − L_ctx`` with the ratings (``β = 0`` is Eq. 1, ``β = 1`` the context-gain variant). The weight with the
highest mean Spearman over the validation splits is the one to ship. ``--benchmarks`` scores others instead (the
test benchmarks of Table 1 and other domains: to show, not to choose). ``--all-words`` scores every word of each
response instead of its keywords (whether keyword selection matters, under every weight). ``--zero-shot`` adds
causal LMs not trained for Dial-M (a Hub id or a local folder, read as ``run.py --zero-shot`` reads them).

    python benchmarks/dial_m/studies/context_weight.py runs/dial-m-smollm2-lm-gpu-kw/adapter --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from hf_dialeval import load_benchmark, load_metric
from hf_dialeval.metrics.dial_m.scoring import weighted_scores

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/dial_m/run.py
from benchmarks.dial_m.run import PAPER_BENCHMARKS, UNSEEN, every_word, untrained_metric  # noqa: E402

SELECTION = ("rade-chitchat", "rade-emotion", "rade-persona")
#: The rating correlated on each benchmark: RADE's overall score, and run.py's (Table 1's first, the other domains').
RATINGS = {**{name: "Overall" for name in SELECTION}, **{name: dimensions[0] for name, dimensions in
                                                        PAPER_BENCHMARKS.items()}, **UNSEEN}
WEIGHTS = tuple(round(0.1 * step, 1) for step in range(11))


def keyword_losses(metric, dataset) -> dict[str, list[float]]:
    """Each item's mean keyword loss given its context and condition, and of its response alone."""
    contexts, responses = [list(c) for c in dataset["context"]], dataset["response"]
    with_context, _ = metric.losses(contexts, responses, dataset["condition"])
    alone, _ = metric.losses([[] for _ in responses], responses, [None] * len(responses))
    return {"with_context": with_context, "alone": alone}


def rated_spearman(scores: np.ndarray, ratings: list[float | None]) -> float:
    """Spearman of ``scores`` with ``ratings`` over the items that have a rating."""
    rated = [index for index, rating in enumerate(ratings) if rating is not None]
    return float(spearmanr(scores[rated], [ratings[index] for index in rated]).statistic)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="*", help="Dial-M checkpoints (run folders or adapters)")
    parser.add_argument("--zero-shot", nargs="*", default=[], metavar="BACKBONE",
                        help="causal LMs not trained for Dial-M, scored as they are")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--benchmarks", nargs="+", default=list(SELECTION))
    parser.add_argument("--split", default="validation", help="the RADE releases' split (the others have only test)")
    parser.add_argument("--max-seq-length", type=int, default=256,
                        help="the token limit to score with (the default's own; a run keeps its training length)")
    parser.add_argument("--dtype", default=None, help="the precision to score in (default: the config's)")
    parser.add_argument("--all-words", action="store_true",
                        help="score every word of each response, not its keywords (a causal LM's checkpoints)")
    parser.add_argument("--out", default=None, help="a JSON file for every item's losses and every weight's Spearman")
    args = parser.parse_args()
    if not args.checkpoints and not args.zero_shot:
        parser.error("name a checkpoint or a --zero-shot backbone to score")
    datasets = {name: load_benchmark(name, args.data_dir, split=args.split if name in SELECTION else "test")
                for name in args.benchmarks}
    ratings = {name: RATINGS[name] for name in datasets}
    record: dict = {"split": args.split, "ratings": ratings, "weights": list(WEIGHTS), "all_words": args.all_words,
                    "checkpoints": {}}
    for checkpoint in [*args.checkpoints, *args.zero_shot]:
        metric = (untrained_metric(checkpoint) if checkpoint in args.zero_shot else
                  load_metric("dial-m", checkpoint=checkpoint, device="cpu", dtype=args.dtype))
        metric.model.config.max_seq_length = args.max_seq_length
        if args.all_words:
            every_word(metric)
        losses = {name: keyword_losses(metric, dataset) for name, dataset in datasets.items()}
        spearman = {name: [rated_spearman(np.array(weighted_scores(losses[name]["with_context"], losses[name]["alone"],
                                                                   weight)), dataset[ratings[name]])
                           for weight in WEIGHTS] for name, dataset in datasets.items()}
        mean = [float(np.mean(values)) for values in zip(*spearman.values())]
        best = WEIGHTS[int(np.argmax(mean))]
        record["checkpoints"][checkpoint] = {"losses": losses, "spearman": spearman, "mean": mean, "best": best}
        print(f"{checkpoint} (Spearman with {', '.join(f'{n} {r}' for n, r in ratings.items())})")
        print("weight  " + "  ".join(f"{name:>15}" for name in datasets) + "     mean")
        for index, weight in enumerate(WEIGHTS):
            print(f"{weight:6.1f}  " + "  ".join(f"{spearman[name][index]:15.3f}" for name in datasets) +
                  f"  {mean[index]:7.3f}")
        print(f"highest mean Spearman: weight {best}")
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
