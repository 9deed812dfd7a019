"""The two QuantiDCE training stages, behind ``hf-dialeval train quantidce-mlr`` / ``hf-dialeval train
quantidce-kd`` (their options: :mod:`.command`).

A stage's output folder is a checkpoint :func:`~hf_dialeval.quantidce.scoring.load_quantidce` reads: with
``lora_rank > 0`` a ``peft`` adapter (LoRA on the encoder + the full MLP head) and the QuantiDCE
``config.json`` naming the backbone; with ``lora_rank == 0`` (the Transformer layers and the head fine-tuned
in full, embeddings and LayerNorms frozen) the full model and its tokenizer — or, with ``adapter_rank > 0``,
the change from the untrained backbone factored into a LoRA adapter of that rank, the full model in ``full/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import datasets
from peft import PeftModel
from transformers import (AutoTokenizer, DataCollatorWithPadding, PreTrainedModel, PreTrainedTokenizerBase,
                          TrainingArguments, set_seed)

from ..corpora import load_dailydialog_plusplus, load_quantidce_dailydialog_eval
from ..backbones import lora_target_pattern
from ..checkpoints import MINILM_HUB_ID, resolve_backbone_path
from ..loading import is_adapter_checkpoint
from ..training import (add_lora, factor_into_adapter, save_adapter,
                        train_layers_only)
from .data import MultiLevelRankingCollator, build_pair_examples, build_ranking_examples
from .modeling_quantidce import QuantiDCEModel
from .scoring import load_quantidce
from .trainer import DistillationTrainer, MultiLevelRankingTrainer

#: DailyDialog++ splits that have all three response levels (its train split has positives only).
MLR_SPLITS = ("validation", "test")

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
        model = factor_into_adapter(model, base, adapter_rank, lora_target_pattern(base), modules_to_save=["predictor"])
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
        model = add_lora(model, rank=lora_rank, alpha=2 * lora_rank,
                         target_modules=lora_target_pattern(model, lora_layers),
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
