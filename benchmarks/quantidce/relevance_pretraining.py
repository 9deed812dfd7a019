"""Diagnostic: does more relevance data lift a MiniLM cross-encoder towards the similarity floor on grade-convai2?

MLR pre-training with two levels (random < positive, K = 5 each) on DailyDialog++ *train* contexts — released with
positives only; each context's random negatives are positives of five other train contexts drawn at random, as
DailyDialog++ drew its own — instead of the paper's three levels on the 2,170 contexts that have negatives.
Transformer layers fine-tuned in full, 64 tokens, 6 contexts (60 pairs) per step, lr 3e-5, one pass.
Contexts ``--start``…``--stop`` of the train split shuffled with seed 42; ``--init`` continues from a previous
run's model (so a run can be extended over the next contexts).

    python benchmarks/quantidce/relevance_pretraining.py --data-dir ../shared/data --output-dir runs/qd-rel-3000 \
        --start 0 --stop 3000
    python benchmarks/quantidce/relevance_pretraining.py --data-dir ../shared/data --output-dir runs/qd-rel-7641 \
        --start 3000 --stop 7641 --init runs/qd-rel-3000/model
    hf-dialeval benchmark --metric quantidce --checkpoint runs/qd-rel-3000/model --benchmark grade-convai2 \
        --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer, set_seed

from hf_dialeval.corpora import load_dailydialog_plusplus
from hf_dialeval.checkpoints import MINILM_HUB_ID, resolve_backbone_path
from hf_dialeval.quantidce.data import MultiLevelRankingCollator, build_ranking_examples
from hf_dialeval.quantidce.modeling_quantidce import QuantiDCEModel
from hf_dialeval.quantidce.train import stage_arguments
from hf_dialeval.quantidce.trainer import MultiLevelRankingTrainer
from hf_dialeval.training import train_layers_only

MAX_SEQ_LENGTH = 64
RESPONSES_PER_LEVEL = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--stop", type=int, default=3000)
    parser.add_argument("--init", default=None, help="a previous run's model folder to continue from")
    args = parser.parse_args()
    set_seed(42)
    output_dir = Path(args.output_dir)

    corpus = load_dailydialog_plusplus("train", args.data_dir)
    pool = corpus["positive_responses"]
    contexts = corpus.shuffle(seed=42).select(range(args.start, min(args.stop, len(corpus))))
    rng = random.Random(42)

    def random_negatives(row: dict[str, Any]) -> dict[str, list[str]]:
        return {"random_negative_responses": [rng.choice(pool[rng.randrange(len(pool))])
                                              for _ in range(RESPONSES_PER_LEVEL)]}

    contexts = contexts.map(random_negatives, desc="random negatives")
    tokenizer = AutoTokenizer.from_pretrained(resolve_backbone_path(MINILM_HUB_ID))
    examples = build_ranking_examples(contexts, tokenizer, MAX_SEQ_LENGTH,
                                      level_columns=("random_negative_responses", "positive_responses"))
    model = (QuantiDCEModel.from_pretrained(args.init) if args.init
             else QuantiDCEModel.from_backbone(MINILM_HUB_ID, max_seq_length=MAX_SEQ_LENGTH))
    train_layers_only(model)
    trainer = MultiLevelRankingTrainer(
        model=model, args=stage_arguments(output_dir, 1.0, 6, 3e-5, 42, 20, False, "levels"),
        train_dataset=examples, data_collator=MultiLevelRankingCollator(tokenizer))
    trainer.train()
    model.save_pretrained(str(output_dir / "model"))
    tokenizer.save_pretrained(str(output_dir / "model"))


if __name__ == "__main__":
    main()
