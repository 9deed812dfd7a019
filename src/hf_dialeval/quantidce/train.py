"""The two QuantiDCE training stages as functions and as ``hf-dialeval train quantidce-mlr`` /
``hf-dialeval train quantidce-kd``.

A stage's output folder is a checkpoint :func:`~hf_dialeval.quantidce.scoring.load_quantidce` reads: with
``lora_rank > 0`` a ``peft`` adapter (LoRA on the encoder + the full MLP head) and the QuantiDCE
``config.json`` naming the backbone; with ``lora_rank == 0`` (the Transformer layers and the head fine-tuned
in full, embeddings and LayerNorms frozen) the full model and its tokenizer — or, with ``adapter_rank > 0``,
the change from the untrained backbone factored into a LoRA adapter of that rank, the full model in ``full/``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import datasets
from peft import PeftModel
from transformers import (AutoTokenizer, DataCollatorWithPadding, PreTrainedModel, PreTrainedTokenizerBase,
                          TrainingArguments, set_seed)

from ..corpora import load_dailydialog_plusplus, load_quantidce_dailydialog_eval
from ..checkpoints import MINILM_HUB_ID, resolve_backbone_path
from ..training import (add_lora, bert_lora_targets, factor_into_adapter, is_adapter_checkpoint, save_adapter,
                        train_layers_only)
from .data import MultiLevelRankingCollator, build_pair_examples, build_ranking_examples
from .modeling_quantidce import QuantiDCEModel
from .scoring import load_quantidce
from .trainer import DistillationTrainer, MultiLevelRankingTrainer

#: DailyDialog++ splits that have all three response levels (its train split has positives only).
MLR_SPLITS = ("validation", "test")
ADAPTER_RANK_HELP = ("with a fully fine-tuned model: factor its change from the untrained backbone into a LoRA "
                     "adapter of this rank (SVD), the full model kept in full/")


def _save(model: PreTrainedModel | PeftModel, tokenizer: PreTrainedTokenizerBase, output_dir: Path,
          adapter_rank: int = 0) -> None:
    """Write a stage's checkpoint; ``adapter_rank > 0`` factors a fully fine-tuned ``model``'s change from its
    untrained backbone into a LoRA adapter (the full model goes to ``full/``)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    if adapter_rank and not isinstance(model, PeftModel):
        _save(model, tokenizer, output_dir / "full")
        config = model.config
        base = QuantiDCEModel.from_backbone(
            config.backbone_name_or_path, pooling=config.pooling, mlp_hidden_sizes=config.mlp_hidden_sizes,
            max_seq_length=config.max_seq_length, score_scale=config.score_scale)
        model = factor_into_adapter(model, base, adapter_rank, bert_lora_targets(), modules_to_save=["predictor"])
    if isinstance(model, PeftModel):
        save_adapter(model, output_dir)
        model.get_base_model().config.save_pretrained(str(output_dir))
    else:
        model.save_pretrained(str(output_dir))
        tokenizer.save_pretrained(str(output_dir))


def stage_arguments(output_dir: Path, epochs: float, batch_size: int, learning_rate: float, seed: int,
                    logging_steps: int, has_eval: bool, label_name: str) -> TrainingArguments:
    """The ``TrainingArguments`` of both stages (checkpoints in ``output_dir/trainer``, 10% warm-up, linear decay)."""
    return TrainingArguments(
        output_dir=str(output_dir / "trainer"), num_train_epochs=epochs, per_device_train_batch_size=batch_size,
        per_device_eval_batch_size=batch_size, learning_rate=learning_rate, warmup_steps=0.1,
        adam_beta1=0.9, adam_beta2=0.999, weight_decay=0.01, logging_steps=logging_steps,
        eval_strategy="epoch" if has_eval else "no", save_strategy="epoch", save_total_limit=1, report_to=[], seed=seed,
        remove_unused_columns=False, prediction_loss_only=True, label_names=[label_name], dataloader_num_workers=0,
    )


def mlr_contexts(data_dir: str | os.PathLike | None = None, max_contexts: int | None = None, eval_contexts: int = 100,
                 seed: int = 42) -> tuple[datasets.Dataset, datasets.Dataset | None]:
    """The DailyDialog++ contexts of MLR pre-training (those of :data:`MLR_SPLITS`, which have all three
    levels), shuffled with ``seed``: up to ``max_contexts`` for training and ``eval_contexts`` held out
    (``None`` when 0). :func:`train_mlr` trains on the first; the second is its validation set."""
    corpus = datasets.concatenate_datasets([load_dailydialog_plusplus(s, data_dir) for s in MLR_SPLITS]).shuffle(seed=seed)
    if max_contexts is not None:
        corpus = corpus.select(range(min(max_contexts + eval_contexts, len(corpus))))
    if not eval_contexts:
        return corpus, None
    split = corpus.train_test_split(test_size=eval_contexts, seed=seed)
    return split["train"], split["test"]


def train_mlr(
    output_dir: str | os.PathLike, backbone: str = MINILM_HUB_ID, data_dir: str | os.PathLike | None = None,
    epochs: float = 1.0, batch_size: int = 3, learning_rate: float = 2e-4, max_seq_length: int = 128,
    pooling: str = "mean", mlp_hidden_sizes: tuple[int, int] = (256, 64), lora_rank: int = 16,
    lora_layers: list[int] | None = None, adapter_rank: int = 0,
    separation_margin: float = 0.3, compactness_margin: float = 0.1, use_ordering_loss: bool = True,
    max_contexts: int | None = None, eval_contexts: int = 100, seed: int = 42, logging_steps: int = 20,
) -> Path:
    """Stage 1, MLR pre-training on DailyDialog++ (random < adversarial < positive responses, K = 5 each), on
    the contexts of its splits that have all three levels, ``eval_contexts`` of them held out."""
    set_seed(seed)
    output_dir = Path(output_dir)
    tokenizer = AutoTokenizer.from_pretrained(resolve_backbone_path(backbone))
    train_contexts, held_out = mlr_contexts(data_dir, max_contexts, eval_contexts, seed)
    train_examples = build_ranking_examples(train_contexts, tokenizer, max_seq_length)
    eval_examples = build_ranking_examples(held_out, tokenizer, max_seq_length) if held_out is not None else None
    model: PreTrainedModel | PeftModel = QuantiDCEModel.from_backbone(
        backbone, pooling=pooling, mlp_hidden_sizes=mlp_hidden_sizes, max_seq_length=max_seq_length)
    if lora_rank:
        model = add_lora(model, rank=lora_rank, alpha=2 * lora_rank, target_modules=bert_lora_targets(lora_layers),
                         modules_to_save=["predictor"])
    else:
        train_layers_only(model)
    trainer = MultiLevelRankingTrainer(
        model=model, args=stage_arguments(output_dir, epochs, batch_size, learning_rate, seed, logging_steps,
                                          eval_examples is not None, "levels"),
        train_dataset=train_examples, eval_dataset=eval_examples,
        data_collator=MultiLevelRankingCollator(tokenizer), separation_margin=separation_margin,
        compactness_margin=compactness_margin, use_ordering_loss=use_ordering_loss,
    )
    trainer.train()
    _save(trainer.model, tokenizer, output_dir, adapter_rank)
    return output_dir


def train_kd(
    teacher: str | os.PathLike, output_dir: str | os.PathLike, data_dir: str | os.PathLike | None = None,
    distill: bool = True, alpha: float = 1.0, beta: float = 5.0, epochs: float = 20.0, batch_size: int = 10,
    learning_rate: float = 5e-5, seed: int = 42, logging_steps: int = 10, adapter_rank: int = 0,
) -> Path:
    """Stage 2, KD fine-tuning on the 270 DailyDialogEVAL training ratings (validation: the other 30): the
    student starts as a copy of the MLR checkpoint ``teacher`` (an adapter checkpoint keeps training its
    adapter); ``distill=False`` trains with the MSE term alone (the ablation)."""
    set_seed(seed)
    output_dir = Path(output_dir)
    teacher_model, tokenizer = load_quantidce(teacher)
    if is_adapter_checkpoint(teacher):
        base = QuantiDCEModel.from_backbone(
            teacher_model.config.backbone_name_or_path, pooling=teacher_model.config.pooling,
            mlp_hidden_sizes=teacher_model.config.mlp_hidden_sizes, max_seq_length=teacher_model.config.max_seq_length,
            score_scale=teacher_model.config.score_scale)
        student: PreTrainedModel | PeftModel = PeftModel.from_pretrained(base, str(teacher), is_trainable=True)
    else:
        student, _ = load_quantidce(teacher)
        train_layers_only(student)
    max_seq_length = teacher_model.config.max_seq_length
    train = build_pair_examples(load_quantidce_dailydialog_eval("train", data_dir), tokenizer, max_seq_length)
    validation = build_pair_examples(load_quantidce_dailydialog_eval("validation", data_dir), tokenizer, max_seq_length)
    trainer = DistillationTrainer(
        model=student, args=stage_arguments(output_dir, epochs, batch_size, learning_rate, seed, logging_steps, True, "labels"),
        train_dataset=train.remove_columns("truncated"), eval_dataset=validation.remove_columns("truncated"),
        data_collator=DataCollatorWithPadding(tokenizer), teacher_model=teacher_model if distill else None,
        alpha=alpha, beta=beta, distill=distill,
    )
    trainer.train()
    _save(trainer.model, tokenizer, output_dir, adapter_rank)
    return output_dir


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
    parser.set_defaults(func=lambda a: train_mlr(
        a.output_dir, a.backbone, a.data_dir, a.epochs, a.batch_size, a.learning_rate, a.max_seq_length, a.pooling,
        lora_rank=a.lora_rank, lora_layers=a.lora_layers, adapter_rank=a.adapter_rank, separation_margin=a.separation_margin, compactness_margin=a.compactness_margin,
        use_ordering_loss=not a.no_ordering_loss, max_contexts=a.max_contexts, eval_contexts=a.eval_contexts,
        seed=a.seed))


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
    parser.set_defaults(func=lambda a: train_kd(
        a.teacher, a.output_dir, a.data_dir, distill=not a.no_distillation, alpha=a.alpha, beta=a.beta,
        epochs=a.epochs, batch_size=a.batch_size, learning_rate=a.learning_rate, seed=a.seed,
        adapter_rank=a.adapter_rank))
