"""Diagnostic: does more relevance data lift a MiniLM cross-encoder towards the similarity floor on grade-convai2?

MLR pre-training with two levels (random < positive, K = 5 each) on DailyDialog++ *train* contexts — released with
positives only; each context's random negatives are positives of five other train contexts drawn at random, as
DailyDialog++ drew its own — instead of the paper's three levels on the 2,170 contexts that have negatives.
Transformer layers fine-tuned in full, [CLS] pooling, 64 tokens, 6 contexts (60 pairs) per step, lr 3e-5, one
pass: ``hf-dialeval train quantidce-mlr``'s training (``train_mlr``) given these contexts. Contexts
``--start``…``--stop`` of the train split shuffled with seed 42; ``--init`` continues from a previous run (its
``--init-from``), so a run can be extended over the next contexts.

    python benchmarks/quantidce/studies/relevance_pretraining.py --data-dir ../shared/data \\
        --output-dir runs/qd-rel-3000 --start 0 --stop 3000
    python benchmarks/quantidce/studies/relevance_pretraining.py --data-dir ../shared/data \\
        --output-dir runs/qd-rel-7641 --start 3000 --stop 7641 --init runs/qd-rel-3000
    hf-dialeval benchmark --metric quantidce --checkpoint runs/qd-rel-3000 --benchmark grade-convai2 \\
        --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from hf_dialeval.data.corpora import load_dailydialog_plusplus
from hf_dialeval.metrics.quantidce.train import QuantiDCEMLRTrainingArguments, train_mlr

MAX_SEQ_LENGTH = 64
RESPONSES_PER_LEVEL = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--stop", type=int, default=3000)
    parser.add_argument("--init", default=None, help="a previous run's folder to continue from")
    args = parser.parse_args()
    corpus = load_dailydialog_plusplus("train", args.data_dir)
    pool = corpus["positive_responses"]
    contexts = corpus.shuffle(seed=42).select(range(args.start, min(args.stop, len(corpus))))
    rng = random.Random(42)

    def random_negatives(row: dict[str, Any]) -> dict[str, list[str]]:
        return {"random_negative_responses": [rng.choice(pool[rng.randrange(len(pool))])
                                              for _ in range(RESPONSES_PER_LEVEL)]}

    contexts = contexts.map(random_negatives, desc="random negatives")
    training_args = QuantiDCEMLRTrainingArguments(
        output_dir=args.output_dir, init_from=args.init, max_seq_length=MAX_SEQ_LENGTH, pooling="cls", lora_rank=0,
        eval_contexts=0, num_train_epochs=1.0, per_device_train_batch_size=6, learning_rate=3e-5, seed=42,
        logging_steps=20)
    train_mlr(training_args, contexts=contexts, level_columns=("random_negative_responses", "positive_responses"))


if __name__ == "__main__":
    main()
