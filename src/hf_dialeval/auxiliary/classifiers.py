"""The one loader of the auxiliary classifiers some metrics lean on: a sequence-classification model over text pairs
(an NLI model: HolisticEval's self-consistency, FineD-Eval's contradiction and entailment pairs; a QA relevance
evaluator: FineD-Eval's relevance pairs) and an utterance emotion classifier (FineD-Eval's positive-emotion pairs).

None installs offline: each takes a Hub id or a folder (safetensors weights only, like every model the package
loads), and one that cannot be loaded is a one-line error naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import (
    AutoConfig,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    PretrainedConfig,
)

from hf_dialeval.inference.model_metric import (
    batched_forward,
    check_batch_size,
    encode_context_response,
    resolve_device,
    resolve_dtype,
)
from hf_dialeval.modeling.checkpoint_sources import from_pretrained, resolve_backbone_path
from hf_dialeval.modeling.checkpoints import CheckpointError

#: The class a pair classifier may be asked for, and the label names (lower-cased) that mean it; :data:`LAST_CLASS`
#: is the last column (a binary QA evaluator's "relevant").
LABEL_NAMES = {"contradiction": ("contradiction", "contradict"), "entailment": ("entailment", "entail")}
LAST_CLASS = "last"
#: The most tokens a pair may hold (the tokenizer's own limit, when lower).
MAX_PAIR_TOKENS = 512


def label_column(config: PretrainedConfig, label: str) -> int:
    """The output column of ``label`` (a :data:`LABEL_NAMES` key, matched against ``config.id2label``, whose order
    differs between checkpoints; or :data:`LAST_CLASS`). A checkpoint without exactly one such label is a one-line
    :class:`~hf_dialeval.modeling.checkpoints.CheckpointError`."""
    if label == LAST_CLASS:
        return config.num_labels - 1
    if label not in LABEL_NAMES:
        raise ValueError(f"label={label!r}: choose one of {[*LABEL_NAMES, LAST_CLASS]}")
    labels = {int(index): str(name) for index, name in (config.id2label or {}).items()}
    matches = [index for index, name in labels.items() if name.strip().lower() in LABEL_NAMES[label]]
    if len(matches) != 1:
        raise CheckpointError(f"{config.name_or_path or 'the classifier'} has labels {labels}: it needs exactly one label "
                              f"named {label!r} in config.id2label (give an NLI model)")
    return matches[0]


def _checked(checkpoint: str, what: str) -> str:
    try:
        return resolve_backbone_path(checkpoint)
    except CheckpointError as error:
        raise CheckpointError(f"{what} {checkpoint!r} cannot be loaded ({error}); none installs offline: give the "
                              "folder of one") from None


class PairClassifier:
    """P(``label`` | first text, second text) from a sequence-classification model over text pairs, in length-sorted
    batches under the given precision. A pair too long for the model loses tokens of its first text first, from its
    start; the second is cut only when it alone cannot fit."""

    def __init__(self, checkpoint: str, label: str, device: str | None = None, batch_size: int = 32,
                 dtype: str | torch.dtype | None = None) -> None:
        check_batch_size(batch_size)
        path = _checked(checkpoint, "the pair classifier")
        config = AutoConfig.from_pretrained(path)
        config.name_or_path = checkpoint
        self.column = label_column(config, label)
        self.checkpoint = checkpoint
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype)
        self.model = from_pretrained(AutoModelForSequenceClassification, path).to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.max_length = min(self.tokenizer.model_max_length, MAX_PAIR_TOKENS)
        self.batch_size = batch_size
        self.collator = DataCollatorWithPadding(self.tokenizer, return_tensors="pt")

    def _probability(self, **batch: Any) -> torch.Tensor:
        return self.model(**batch).logits.float().softmax(dim=-1)[:, self.column]

    def __call__(self, first: Sequence[str], second: Sequence[str]) -> list[float]:
        """The probability of each pair, in the input order."""
        if len(first) != len(second):
            raise ValueError(f"{len(first)} first texts but {len(second)} second texts: give them in pairs")
        if not first:
            return []
        encoding, _ = encode_context_response(self.tokenizer, [[text] for text in first], second, self.max_length)
        return batched_forward(self._probability, encoding, self.batch_size, self.collator, self.device,
                               self.dtype).tolist()


class EmotionClassifier:
    """The emotion label (lower-cased) of each text: a text-to-text model (like FineD-Eval's
    ``mrm8488/t5-base-finetuned-emotion``) generates the label word, a sequence-classification model gives its
    ``id2label`` name."""

    def __init__(self, checkpoint: str, device: str | None = None, batch_size: int = 64) -> None:
        check_batch_size(batch_size)
        path = _checked(checkpoint, "the emotion classifier")
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.generative = AutoConfig.from_pretrained(path).is_encoder_decoder
        loader = AutoModelForSeq2SeqLM if self.generative else AutoModelForSequenceClassification
        self.model = from_pretrained(loader, path).to(resolve_device(device)).eval()
        self.batch_size = batch_size

    @torch.inference_mode()
    def __call__(self, texts: Sequence[str]) -> list[str]:
        labels: list[str] = []
        for start in range(0, len(texts), self.batch_size):
            inputs = self.tokenizer(list(texts[start : start + self.batch_size]), padding=True, truncation=True,
                                    return_tensors="pt").to(self.model.device)
            if self.generative:
                generated = self.model.generate(**inputs, max_new_tokens=4)
                labels.extend(t.strip().lower() for t in self.tokenizer.batch_decode(generated, skip_special_tokens=True))
            else:
                labels.extend(self.model.config.id2label[int(i)].lower() for i in self.model(**inputs).logits.argmax(-1))
        return labels
