"""Training pieces every metric shares: :class:`DialEvalTrainingArguments` (``TrainingArguments`` with the LoRA,
adapter-rank and averaging knobs), :func:`prepare_model` and :func:`finish_run` (one run layout for every
metric, see :mod:`hf_dialeval.training.options`), logging the terms of a composite loss, averaging the weights of
a run's last checkpoints, and LoRA adapters (``peft``) that keep a trained default small enough to ship inside
the package — trained as LoRA, or factored after full fine-tuning of the Transformer layers
(:func:`factor_into_adapter`)."""

from __future__ import annotations

import copy
import json
import logging
import re
import shutil
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file, save_file
from transformers import PreTrainedModel, PreTrainedTokenizerBase, Trainer, TrainingArguments
from transformers.pytorch_utils import Conv1D
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import SAFE_WEIGHTS_NAME

from hf_dialeval.errors import OptionError
from hf_dialeval.modeling.adapters import keep_module_copies, load_adapter
from hf_dialeval.modeling.backbones import LINEAR_TYPES, family_backbones, layer_linear_modules, lora_target_pattern
from hf_dialeval.modeling.base import DialEvalPreTrainedModel
from hf_dialeval.modeling.checkpoints import ADAPTER_WEIGHTS, is_adapter_checkpoint
from hf_dialeval.training.options import ADAPTER_DIR, FULL_MODEL_DIR, TRAINING_RECORD, DialEvalTrainingOptions

logger = logging.getLogger(__name__)


@dataclass
class DialEvalTrainingArguments(DialEvalTrainingOptions, TrainingArguments):
    """``TrainingArguments`` with the knobs every metric's training shares (:class:`DialEvalTrainingOptions`);
    each train command's arguments subclass it with the metric's own options."""

    def __post_init__(self) -> None:
        lora_rank = getattr(self, "lora_rank", 0)  # the LoRA options of BackboneTrainingOptions, when present
        if lora_rank and self.adapter_rank:
            raise OptionError("--adapter-rank factors a full fine-tuning: give it with --lora-rank 0")
        if lora_rank and getattr(self, "freeze_encoder", False):
            raise OptionError("--freeze-encoder trains the head alone: give --lora-rank 0")
        if lora_rank and self.average_last:
            raise OptionError("--average-last averages full-model checkpoints: give it with --lora-rank 0")
        if lora_rank and self.lora_alpha is None:
            self.lora_alpha = 2 * lora_rank
        if self.average_last:  # the average replaces the final model: loading the best one first is wasted
            self.load_best_model_at_end = False
        if self.save_steps is None:
            self.save_steps = self.eval_steps or 500
        if self.save_total_limit is None and not self.keep_checkpoints:
            # the best checkpoint is kept besides the last one(s)
            self.save_total_limit = max(2, self.average_last + 1)
        super().__post_init__()

    def get_warmup_steps(self, num_training_steps: int) -> int:
        """The warm-up, at most half the steps: a warm-up over every step would train the whole run at a learning
        rate near 0 (one step: exactly 0, and nothing learnt)."""
        return min(super().get_warmup_steps(num_training_steps), num_training_steps // 2)


def prepare_model(model: DialEvalPreTrainedModel, args: DialEvalTrainingArguments
                  ) -> tuple[PreTrainedModel | PeftModel, PreTrainedModel | None]:
    """The model to train — ``model`` with LoRA adapters (``args.lora_rank > 0``; its heads and added token rows
    trained in full), or ``model`` itself with its Transformer layers trainable — and, when ``args.adapter_rank``
    will factor the fine-tuning, the untrained model to factor against (the backbone's weights: what the adapter
    is loaded onto, whatever ``model`` started from). With ``args.freeze_encoder`` (the metrics whose options have
    it) the backbone is frozen afterwards, so only the heads train."""
    base = model.untrained_copy() if args.adapter_rank else None
    if getattr(args, "lora_rank", 0):
        trainable = add_lora(model, rank=args.lora_rank, alpha=args.lora_alpha, dropout=args.lora_dropout,
                             target_modules=lora_target_pattern(model, args.lora_layers),
                             modules_to_save=model.head_names(), embedding_rows=model.added_token_ids())
    else:
        train_layers_only(model, embedding_rows=model.added_token_ids())
        trainable = model
    if getattr(args, "freeze_encoder", False):
        model.backbone.requires_grad_(False)
    if trainable is not model:
        trainable.print_trainable_parameters()
    return trainable, base


def prepare_continued_model(model: DialEvalPreTrainedModel, checkpoint: str | Path, args: DialEvalTrainingArguments
                            ) -> tuple[PreTrainedModel | PeftModel, PreTrainedModel | None]:
    """:func:`prepare_model` for a model loaded from a trained ``checkpoint`` (a stage that continues another):
    when the checkpoint holds a LoRA adapter (the folder itself, or its run's ``adapter/``), that adapter keeps
    training over a fresh copy of the backbone, so the result is again one adapter over the backbone; a full
    model is prepared as :func:`prepare_model` prepares a new one, without LoRA (an adapter saved over the backbone
    would lose the checkpoint's own training)."""
    adapter = next((Path(folder) for folder in (checkpoint, Path(checkpoint) / ADAPTER_DIR)
                    if is_adapter_checkpoint(folder)), None)
    if adapter is None:
        if getattr(args, "lora_rank", 0):  # the adapter is saved over the backbone: it would lose what was trained
            raise OptionError(f"{checkpoint} is fully fine-tuned, so a LoRA adapter trained on it would be saved "
                              "without that fine-tuning: continue it with --lora-rank 0 (and --adapter-rank to factor "
                              "the whole fine-tuning into an adapter), or start from a run that holds an adapter")
        return prepare_model(model, args)
    if args.adapter_rank:
        raise OptionError(f"the adapter of {checkpoint} ({adapter}) keeps training: --adapter-rank factors the "
                          "fine-tuning of a full model")
    return load_adapter(model.untrained_copy(), adapter, is_trainable=True), None


def finish_run(trainer: Trainer, tokenizer: PreTrainedTokenizerBase, base: PreTrainedModel | None = None,
               record: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """End a run in the layout of :mod:`~hf_dialeval.training.options`: average the last checkpoints
    (``average_last``), evaluate the final model, write the merged model, ``adapter/`` (a trained LoRA adapter,
    or the weight changes factored against ``base`` at ``adapter_rank``), ``full/``, and
    ``training_record.json`` (the arguments, the validation metrics, the logs and ``record``), then remove the
    checkpoints unless ``keep_checkpoints``. Returns the record."""
    args: DialEvalTrainingArguments = trainer.args
    output_dir = Path(args.output_dir)
    trained = trainer.model
    model = trained.get_base_model() if isinstance(trained, PeftModel) else trained
    if args.average_last:
        average_checkpoints(model, last_checkpoints(output_dir, args.average_last))
    validation = trainer.evaluate() if trainer.eval_dataset is not None else {}  # every process: a collective
    best = {"path": trainer.state.best_model_checkpoint, "metric": trainer.state.best_metric}
    full_record = {"arguments": args.to_dict(), "validation": validation, "best_checkpoint": best,
                   "log_history": trainer.state.log_history, **(record or {})}
    if trainer.is_world_process_zero():  # one writer of the run folder under torchrun / accelerate launch
        write_run(args, model, trained, tokenizer, base, full_record)
    trainer.accelerator.wait_for_everyone()
    logger.info("run written to %s; validation of the final model: %s", output_dir, validation)
    return full_record


def write_run(args: DialEvalTrainingArguments, model: PreTrainedModel, trained: PreTrainedModel,
              tokenizer: PreTrainedTokenizerBase, base: PreTrainedModel | None, record: Mapping[str, Any]) -> None:
    """Write the run layout (see :func:`finish_run`): ``full/`` and the factored adapter when ``base`` is given,
    ``adapter/`` for a peft model, the merged model, ``training_record.json``; then remove the checkpoints unless
    ``keep_checkpoints``."""
    output_dir = Path(args.output_dir)
    if base is not None:
        model.save_pretrained(str(output_dir / FULL_MODEL_DIR))
        tokenizer.save_pretrained(str(output_dir / FULL_MODEL_DIR))
        trained = factor_into_adapter(model, base, args.adapter_rank, lora_target_pattern(base),
                                      modules_to_save=model.head_names(), embedding_rows=model.added_token_ids())
    if isinstance(trained, PeftModel):
        save_adapter(trained, output_dir / ADAPTER_DIR)
        adapted = trained.get_base_model()
        adapted.config.architectures = [type(adapted).__name__]  # as save_pretrained records it: the Hub reads it
        adapted.config.save_pretrained(str(output_dir / ADAPTER_DIR))
        tokenizer.save_pretrained(str(output_dir / ADAPTER_DIR))
        model = trained.merge_and_unload()
    model.save_pretrained(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    # default=str: paths given as Path objects
    (output_dir / TRAINING_RECORD).write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    if not args.keep_checkpoints:
        for checkpoint in output_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*"):
            shutil.rmtree(checkpoint, ignore_errors=True)


def require_collator_columns(trainer: Trainer) -> None:
    """Stop a Trainer whose collator reads the examples' own columns (levels, candidates, reference scores) when
    ``TrainingArguments.remove_unused_columns`` would drop them before the collator sees them."""
    if trainer.args.remove_unused_columns:
        raise ValueError(f"{type(trainer).__name__} needs TrainingArguments(remove_unused_columns=False): its "
                         "collator reads the examples' own columns")


class LossTermLogging:
    """Mixin for ``transformers.Trainer`` subclasses whose loss has several terms: ``record_terms`` in
    ``compute_loss``; the means since the last log are added to the training logs (``eval_``-prefixed in
    evaluation logs)."""

    def record_terms(self, terms: Mapping[str, torch.Tensor | float], training: bool) -> None:
        store = self.__dict__.setdefault("_loss_terms", {True: defaultdict(list), False: defaultdict(list)})
        for name, value in terms.items():
            store[training][name].append(float(value.detach()) if isinstance(value, torch.Tensor) else float(value))

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        store = self.__dict__.get("_loss_terms")
        if store is not None:
            training = "loss" in logs
            evaluating = any(key.startswith("eval_") for key in logs)
            if training or evaluating:
                prefix = "" if training else "eval_"
                for name, values in store[training].items():
                    if values:
                        logs[f"{prefix}{name}"] = round(sum(values) / len(values), 6)
                store[training].clear()
        super().log(logs, *args, **kwargs)


def last_checkpoints(checkpoints_dir: str | Path, count: int) -> list[Path]:
    """The ``count`` Trainer checkpoints (``checkpoint-<step>``) of ``checkpoints_dir`` with the highest steps,
    oldest first."""
    found = sorted(Path(checkpoints_dir).glob(f"{PREFIX_CHECKPOINT_DIR}-*"),
                   key=lambda path: int(path.name.rsplit("-", 1)[1]))
    if len(found) < count:
        raise OptionError(f"{checkpoints_dir} holds {len(found)} checkpoints, fewer than the {count} to average: "
                          "save more (a smaller --eval-steps) or average fewer")
    return found[-count:]


def average_checkpoints(model: PreTrainedModel, checkpoints: Sequence[str | Path]) -> None:
    """Load into ``model`` the uniform average of the weights saved in ``checkpoints`` (folders of full-model
    checkpoints, e.g. a run's last few: tail averaging as in stochastic weight averaging, which smooths the
    checkpoint-to-checkpoint noise of a run). Averaged in float64; non-float tensors come from the last one."""
    if not checkpoints:
        raise ValueError("average_checkpoints needs at least one checkpoint folder")
    total: dict[str, torch.Tensor] = {}
    for checkpoint in checkpoints:
        path = Path(checkpoint) / SAFE_WEIGHTS_NAME
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: averaging needs full-model safetensors checkpoints "
                                    "(a LoRA run's checkpoints hold adapters only)")
        for name, tensor in load_file(str(path)).items():
            if tensor.is_floating_point():
                total[name] = total[name] + tensor.double() if name in total else tensor.double()
            else:
                total[name] = tensor
    state = model.state_dict()
    unexpected = [name for name in total if name not in state]
    if unexpected:
        raise ValueError(f"the checkpoints hold weights the model does not have: {unexpected[:5]}")
    averaged = {name: (value / len(checkpoints) if value.is_floating_point() else value).to(state[name].dtype)
                for name, value in total.items()}
    missing = [name for name in state if name not in averaged]
    # a tied weight is saved once, under one of its names
    saved_storage = {state[name].data_ptr() for name in averaged}
    untied = [name for name in missing if state[name].data_ptr() not in saved_storage]
    if untied:
        raise ValueError(f"the checkpoints lack weights of the model: {untied[:5]}")
    model.load_state_dict(averaged, strict=False)
    logger.info("weights averaged over %d checkpoints: %s", len(checkpoints),
                ", ".join(Path(c).name for c in checkpoints))


def add_lora(model: PreTrainedModel, rank: int = 16, alpha: int = 32, dropout: float = 0.05,
             target_modules: str | Sequence[str] | None = None, modules_to_save: Sequence[str] = (),
             embedding_rows: Sequence[int] = (), lora_bias: bool = False) -> PeftModel:
    """Wrap ``model`` with trainable LoRA adapters on ``target_modules``; ``modules_to_save`` (e.g. a scoring
    head) are trained in full and saved with the adapter, as are the ``embedding_rows`` of the word embeddings
    (e.g. an added special token). ``target_modules``: a pattern or module names (default: every linear
    projection of every Transformer layer, :func:`~hf_dialeval.modeling.backbones.lora_target_pattern`, for any family).
    ``lora_bias`` gives ``lora_B`` a bias (a bias change)."""
    if target_modules is None:
        target_modules = lora_target_pattern(model)
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, lora_bias=lora_bias,
                        target_modules=target_modules if isinstance(target_modules, str) else list(target_modules),
                        modules_to_save=list(modules_to_save) or None,
                        trainable_token_indices={"word_embeddings": list(embedding_rows)} if embedding_rows else None)
    return keep_module_copies(get_peft_model(model, config), lambda name: name in modules_to_save)


def save_adapter(model: PeftModel, directory: str | Path, dtype: torch.dtype = torch.float16) -> Path:
    """``model.save_pretrained(directory)`` with the adapter's tensors stored as ``dtype`` (half the size of
    float32; loading casts them back to the model's dtype). Returns the safetensors file."""
    with warnings.catch_warnings():
        # peft mistakes the 1-D bias of a lora_bias=True adapter for an ungathered ZeRO-3 shard
        warnings.filterwarnings("ignore", message=r".*LoRA tensor\(s\) have invalid shape.*lora_B\.bias")
        model.save_pretrained(str(directory))
    path = Path(directory) / ADAPTER_WEIGHTS
    tensors = {name: tensor.to(dtype) if tensor.is_floating_point() else tensor
               for name, tensor in load_file(str(path)).items()}
    save_file(tensors, str(path), metadata={"format": "pt"})
    return path


def train_layers_only(model: PreTrainedModel, embedding_rows: Sequence[int] = ()) -> None:
    """Make ``model`` train the linear maps of its backbone's Transformer layers (any family in
    :data:`~hf_dialeval.modeling.backbones.FAMILIES`), everything outside the backbone and the metric's heads inside it
    (``head_names()``, e.g. an encoder's new LM head), but not the embeddings or LayerNorms — the parameters whose
    change :func:`factor_into_adapter` can carry.
    ``embedding_rows`` (e.g. an added special token) keep training: the other rows of the word embeddings get
    a zero gradient (so train with ``weight_decay=0``: decoupled weight decay would still shrink them)."""
    layer_linears = {id(p) for _, module in layer_linear_modules(model) for p in module.parameters()}
    for backbone in family_backbones(model):
        for parameter in backbone.parameters():
            parameter.requires_grad_(id(parameter) in layer_linears)
    modules = dict(model.named_modules())
    for name in model.head_names() if isinstance(model, DialEvalPreTrainedModel) else ():
        modules[name].requires_grad_(True)  # a head inside the backbone (a fresh LM head of an encoder family)
    if embedding_rows:
        embeddings = model.get_input_embeddings().weight
        embeddings.requires_grad_(True)
        keep = torch.zeros(embeddings.size(0), 1)
        keep[list(embedding_rows)] = 1.0
        embeddings.register_hook(lambda grad: grad * keep.to(grad))


def factor_into_adapter(tuned: PreTrainedModel, base: PreTrainedModel, rank: int, target_modules: str,
                        modules_to_save: Sequence[str] = (), embedding_rows: Sequence[int] = ()) -> PeftModel:
    """A LoRA adapter over ``base`` that approximates ``tuned`` (``base`` after :func:`train_layers_only`
    fine-tuning): each targeted linear layer's weight change ΔW is replaced by its best rank-``rank``
    approximation (truncated SVD, ``lora_B @ lora_A`` with scaling 1) and its bias change is carried exactly
    by ``lora_B``'s bias (where the family's layers have biases: Llama's and Gemma's have none, and their adapter
    none); ``modules_to_save`` and the ``embedding_rows`` of the word embeddings are copied.
    ``base`` is not modified. The relative Frobenius error of the factored ΔW is logged (mean, max over layers)."""
    # peft can merge a LoRA bias only into a layer that has one (it matches a pattern to the whole module name)
    pattern = re.compile(lora_target_pattern(base) if target_modules is None else target_modules)
    biased = all(module.bias is not None for name, module in base.named_modules()
                 if isinstance(module, LINEAR_TYPES) and pattern.fullmatch(name))
    adapted = add_lora(copy.deepcopy(base), rank=rank, alpha=rank, dropout=0.0, target_modules=target_modules,
                       modules_to_save=modules_to_save, embedding_rows=embedding_rows, lora_bias=biased)
    tuned_modules = dict(tuned.named_modules())
    errors = []
    with torch.no_grad():
        for name, module in adapted.base_model.model.named_modules():
            if hasattr(module, "lora_A") and "default" in module.lora_A:
                source = tuned_modules[name]
                device = module.base_layer.weight.device  # the Trainer moved ``tuned`` to its device; ``base`` stayed
                delta = source.weight.to(device) - module.base_layer.weight
                if isinstance(module.base_layer, Conv1D):  # GPT-2 keeps (in, out); LoRA's B @ A is (out, in)
                    delta = delta.T
                u, s, vh = torch.linalg.svd(delta.float(), full_matrices=False)
                kept = min(rank, s.numel())  # a rank above the layer's smaller side: the rest stays zero
                root = s[:kept].sqrt()
                module.lora_B["default"].weight.zero_()[:, :kept] = u[:, :kept] * root
                module.lora_A["default"].weight.zero_()[:kept] = root[:, None] * vh[:kept]
                if module.lora_B["default"].bias is not None:
                    module.lora_B["default"].bias.copy_(source.bias.to(device) - module.base_layer.bias)
                elif source.bias is not None and not torch.equal(source.bias.to(device), module.base_layer.bias):
                    raise ValueError(f"the bias of {name} changed, but some of the layers have no bias, so the "
                                     "adapter has none to carry it")
                total = s.square().sum()  # zero for a layer that did not change (a frozen encoder)
                kept = float(s[:rank].square().sum() / total) if total > 0 else 1.0
                errors.append((1.0 - kept) ** 0.5)
            elif name.endswith("modules_to_save.default"):
                module.load_state_dict(tuned_modules[name.rsplit(".modules_to_save.default", 1)[0]].state_dict())
        if embedding_rows:
            rows = tuned.get_input_embeddings().weight[list(embedding_rows)]
            adapted.get_input_embeddings().token_adapter.trainable_tokens_delta["default"].copy_(rows)
    if errors:
        logger.info("rank-%d adapter: relative error of the weight changes mean %.3f, max %.3f over %d layers",
                    rank, sum(errors) / len(errors), max(errors), len(errors))
    return adapted
