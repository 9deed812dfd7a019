"""``hf-dialeval train fined-eval``: the command's options, description and example. It imports no
deep-learning library (``--help`` answers at once); the training itself is :func:`.train.run_train`."""

from __future__ import annotations

import argparse

from ..checkpoints import MINILM_HUB_ID
from .constants import (
    DEFAULT_EMOTION_MODEL,
    DEFAULT_NLI_MODEL,
    DEFAULT_QA_EVALUATOR,
    LONG_DIALOGUE_MODES,
    STRATEGY_DIMENSIONS,
)

DEFAULT_BACKBONE = MINILM_HUB_ID

DESCRIPTION = """\
Train FineD-Eval on DailyDialog with self-supervised dialogue pairs (paper §3.3).

strategies (the dimension each trains):
  shuffling          coherence    original vs. utterance-permuted dialogue (offline)
  qa_relevance       coherence    QA evaluator relevance, thresholds 0.85/0.99 (--qa-model)
  contradiction      likability   NLI contradiction of adjacent utterances, 0.20/0.40 (--nli-model)
  positive_emotions  likability   all utterances positive vs. fewer than two (--emotion-model; 'gold'
                                  uses DailyDialog's emotion labels, offline)
  entailment         topic_depth  NLI entailment of all utterance pairs, 0.01/0.10 (--nli-model)
  generic_substitution
                     topic_depth  original vs. one speaker's utterances partly replaced by the training
                                  corpus's most frequent ones ("Thank you .", "OK ."); offline, not in
                                  the paper (--generic-min-count)
"""

EXAMPLE = """\
example (the shipped default; its adapter is written to runs/fe-gs-s43/adapter):
  hf-dialeval train fined-eval --output-dir runs/fe-gs-s43 \\
      --strategies shuffling positive_emotions generic_substitution --emotion-model gold \\
      --length-matched-pairs --lora-rank 0 --adapter-rank 32 --learning-rate 2e-5 --batch-size 8 \\
      --max-steps 1000 --eval-steps 100 --train-pairs 20000 --eval-pairs 500 --train-max-tokens 256 \\
      --seed 43 --keep-checkpoints --average-last 5
"""


def configure(parser: argparse.ArgumentParser) -> None:
    """``hf-dialeval train fined-eval``: its options; the description ends with the default's command."""
    parser.description = DESCRIPTION
    parser.epilog = EXAMPLE
    parser.add_argument("--output-dir", required=True, help="where checkpoints and the final model go")
    parser.add_argument("--strategies", nargs="+", default=["shuffling", "positive_emotions"],
                        choices=sorted(STRATEGY_DIMENSIONS), help="pair strategies (default: the paper's offline ones)")
    parser.add_argument("--backbone", default=DEFAULT_BACKBONE,
                        help=f"encoder Hub id or local path (default: {DEFAULT_BACKBONE}, installed offline)")
    parser.add_argument("--data-dir", default=None, help="folder holding corpora/dailydialog")
    parser.add_argument("--qa-model", default=DEFAULT_QA_EVALUATOR, help="QA relevance evaluator (id or path)")
    parser.add_argument("--nli-model", default=DEFAULT_NLI_MODEL, help="NLI model (id or path)")
    parser.add_argument("--emotion-model", default=DEFAULT_EMOTION_MODEL,
                        help="emotion classifier (id or path), or 'gold' for DailyDialog's labels")
    parser.add_argument("--generic-min-count", type=int, default=20,
                        help="generic_substitution: utterances this frequent in DailyDialog train are generic")
    parser.add_argument("--train-pairs", type=int, default=100_000, help="training pairs per head (paper: 100K)")
    parser.add_argument("--eval-pairs", type=int, default=10_000, help="validation pairs per head (paper: 10K)")
    parser.add_argument("--length-matched-pairs", action="store_true",
                        help="pair each positive only with negatives of its number of utterances (no length shortcut)")
    parser.add_argument("--train-max-tokens", type=int, default=256, help="tokens per training input (default 256)")
    parser.add_argument("--max-tokens", type=int, default=512, help="tokens per input when scoring (default 512)")
    parser.add_argument("--long-dialogue", default="keep_start", choices=LONG_DIALOGUE_MODES,
                        help="scoring of dialogues longer than --max-tokens, stored in the config (default: "
                             "keep_start, what the FED comparison in the model card favours)")
    parser.add_argument("--lora-rank", type=int, default=16,
                        help="LoRA rank; 0 fine-tunes the Transformer layers in full (embeddings, LayerNorms frozen)")
    parser.add_argument("--lora-alpha", type=int, default=32)
    parser.add_argument("--adapter-rank", type=int, default=0,
                        help="with --lora-rank 0: fine-tune the Transformer layers in full, then factor their "
                             "weight changes into a LoRA adapter of this rank (SVD)")
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--batch-size", type=int, default=8, help="pairs per batch (default 8)")
    parser.add_argument("--max-steps", type=int, default=600, help="optimizer steps; -1 runs --epochs")
    parser.add_argument("--epochs", type=float, default=10.0, help="epochs when --max-steps is -1 (paper: 10)")
    parser.add_argument("--eval-steps", type=int, default=100, help="evaluate and checkpoint every N steps")
    parser.add_argument("--average-last", type=int, default=0, metavar="K",
                        help="with --lora-rank 0: the final model is the weight average of the last K checkpoints "
                             "(tail averaging, against checkpoint noise) instead of the best one (default: 0, off)")
    parser.add_argument("--keep-checkpoints", action="store_true",
                        help="keep every checkpoint (default: only the best and the last one, or the last K with "
                             "--average-last, removed at the end)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--resume-from-checkpoint", default=None, metavar="DIR",
                        help="continue a run from one of its Trainer checkpoints (same arguments, more --max-steps)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from .train import run_train

    run_train(args)
