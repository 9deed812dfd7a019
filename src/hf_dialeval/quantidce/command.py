"""``hf-dialeval train quantidce-mlr`` and ``quantidce-kd``: the commands' options, descriptions and examples.
They import no deep-learning library (``--help`` answers at once); the training itself is in :mod:`.train`."""

from __future__ import annotations

import argparse

from ..checkpoints import MINILM_HUB_ID

ADAPTER_RANK_HELP = ("with a fully fine-tuned model: factor its change from the untrained backbone into a LoRA "
                     "adapter of this rank (SVD), the full model kept in full/")


def configure_mlr(parser: argparse.ArgumentParser) -> None:
    """``hf-dialeval train quantidce-mlr``: its options."""
    parser.description = (
        "Multi-level ranking (separation + compactness + ordering) pre-training of a QuantiDCE model "
        "(encoder + 3-layer MLP) on DailyDialog++ (levels: random < adversarial < positive).")
    parser.epilog = """\
example (a short run; the shipped default's commands are in model_cards/quantidce.md):
  hf-dialeval train quantidce-mlr --output-dir runs/quantidce-mlr --data-dir ../shared/data --max-contexts 200
"""
    parser.add_argument("--output-dir", required=True, help="folder of the trained checkpoint")
    parser.add_argument("--backbone", default=MINILM_HUB_ID, help=f"encoder Hub id or folder (default: {MINILM_HUB_ID})")
    parser.add_argument("--data-dir", default=None, help="shared data folder (default: found automatically)")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=3, help="contexts per batch, each with L·K = 15 responses")
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--pooling", choices=("cls", "mean"), default="mean")
    parser.add_argument("--lora-rank", type=int, default=16,
                        help="LoRA rank; 0 fine-tunes the Transformer layers in full (embeddings, LayerNorms frozen)")
    parser.add_argument("--lora-layers", type=int, nargs="+", default=None,
                        help="encoder layers that get LoRA adapters (default: all)")
    parser.add_argument("--adapter-rank", type=int, default=0, help=ADAPTER_RANK_HELP)
    parser.add_argument("--separation-margin", type=float, default=0.3, help="λ")
    parser.add_argument("--compactness-margin", type=float, default=0.1, help="μ")
    parser.add_argument("--no-ordering-loss", action="store_true", help="drop the ordering term (ablation)")
    parser.add_argument("--max-contexts", type=int, default=None, help="train on at most this many contexts")
    parser.add_argument("--eval-contexts", type=int, default=100, help="contexts held out for evaluation")
    parser.add_argument("--seed", type=int, default=42)
    parser.set_defaults(func=_run_mlr)


def _run_mlr(a: argparse.Namespace) -> None:
    from .train import train_mlr

    train_mlr(
        a.output_dir, a.backbone, a.data_dir, a.epochs, a.batch_size, a.learning_rate, a.max_seq_length, a.pooling,
        lora_rank=a.lora_rank, lora_layers=a.lora_layers, adapter_rank=a.adapter_rank,
        separation_margin=a.separation_margin, compactness_margin=a.compactness_margin,
        use_ordering_loss=not a.no_ordering_loss, max_contexts=a.max_contexts, eval_contexts=a.eval_contexts,
        seed=a.seed)


def configure_kd(parser: argparse.ArgumentParser) -> None:
    """``hf-dialeval train quantidce-kd``: its options."""
    parser.description = (
        "Fine-tune an MLR-trained QuantiDCE model on the DailyDialogEVAL ratings with MSE + TinyBERT-style "
        "distillation from the frozen MLR model (or MSE only with --no-distillation).")
    parser.epilog = """\
example (stage 2 on the output of quantidce-mlr):
  hf-dialeval train quantidce-kd --teacher runs/quantidce-mlr --output-dir runs/quantidce-kd --data-dir ../shared/data
"""
    parser.add_argument("--teacher", required=True, help="the MLR checkpoint (stage 1 output)")
    parser.add_argument("--output-dir", required=True, help="folder of the fine-tuned checkpoint")
    parser.add_argument("--data-dir", default=None, help="shared data folder (default: found automatically)")
    parser.add_argument("--no-distillation", action="store_true", help="MSE only, no teacher (ablation)")
    parser.add_argument("--alpha", type=float, default=1.0, help="weight of the MSE term")
    parser.add_argument("--beta", type=float, default=5.0, help="weight of the distillation term")
    parser.add_argument("--epochs", type=float, default=20.0)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--adapter-rank", type=int, default=0, help=ADAPTER_RANK_HELP)
    parser.add_argument("--seed", type=int, default=42)
    parser.set_defaults(func=_run_kd)


def _run_kd(a: argparse.Namespace) -> None:
    from .train import train_kd

    train_kd(
        a.teacher, a.output_dir, a.data_dir, distill=not a.no_distillation, alpha=a.alpha, beta=a.beta,
        epochs=a.epochs, batch_size=a.batch_size, learning_rate=a.learning_rate, seed=a.seed,
        adapter_rank=a.adapter_rank)
