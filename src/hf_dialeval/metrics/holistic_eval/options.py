"""``hf-dialeval train holistic-eval``: its options, importable without torch (``--help`` answers at once). The
training itself is in :mod:`.train`, which takes them as ``TrainingArguments``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hf_dialeval.data.copies import COPY_SPAN
from hf_dialeval.errors import OptionError
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID
from hf_dialeval.training.data_options import DialoguesOptions
from hf_dialeval.training.options import (
    AT_LEAST_ONE,
    NOT_NEGATIVE,
    ActivationCheckpointingOn,
    BackboneTrainingOptions,
    Range,
)

#: The paper's language model (§4.3): the default when online.
PAPER_BACKBONE = "gpt2"

#: The options a run writes into its model's config, with a new model's setting of each left unset; a model continued
#: with ``--init-from`` keeps its own where the option is not given (:meth:`HolisticEvalTrainingOptions.settle`).
NEW_MODEL_SETTINGS = {"max_seq_length": 256, "percentile": 5.0, "token_reduction": "mean",
                      "prompt_format": "special-tokens", "detokenize": False, "context_coherence_measure": "likelihood",
                      "pmi_weight": 1.0, "copy_span": COPY_SPAN}
CONFIG_OPTIONS = tuple(NEW_MODEL_SETTINGS)
#: How the help of a setting ends: what an option left out means.
_KEPT = "; left out: {} for a new model, a continued --init-from model's own"
#: The options of the shipped corpora's pairs, which ``--dialogues`` replaces: what takes the place of each.
CORPUS_OPTIONS = {
    "corpora": "--dialogues names what the LM trains on (a shipped corpus name among them)",
    "train_splits": "--dialogues-split picks a split of --dialogues",
    "cutoff_split": "the cutoffs are fitted on a held-out share of --dialogues"}


@dataclass
class HolisticEvalTrainingOptions(ActivationCheckpointingOn, DialoguesOptions, BackboneTrainingOptions):
    """Fine-tune HolisticEval's language model on query–response pairs, each one sequence (§4.3), then fit the
    percentile cutoffs of Eq. 2 on a reference set and save them in the checkpoint's config. --backbone is a causal
    LM (GPT-2) or an encoder made into one (MiniLM); --from-scratch trains a small GPT-2 with its own BPE tokenizer
    instead (every weight trained; the LoRA options do not apply). The pairs are the shipped corpora's (--corpora;
    the cutoffs fitted on DailyDialog's) or your own dialogues' (--dialogues: each utterance and the one before it;
    a tenth of the dialogues are held out, at least 10 or half of fewer than 20, and the cutoffs are fitted and the
    validation loss logged on their pairs; the pmi measure's weight, unless --pmi-weight is given, is refitted on
    them). A shipped corpus's pairs that hold a text of the holistic-context or
    holistic-fluency benchmarks are left out of training.

    Every transformers.TrainingArguments option is accepted as well (e.g. --bf16, --max-steps)."""

    EXAMPLE: ClassVar[str] = """\
examples (offline; the shipped default's commands are in model_cards/holistic_eval.md):
  hf-dialeval train holistic-eval --backbone sentence-transformers/all-MiniLM-L6-v2 --output-dir runs/he-minilm \\
      --data-dir ../shared/data --max-steps 1000 --bf16
  hf-dialeval train holistic-eval --from-scratch --corpora dailydialog dailydialog-plusplus topical-chat \\
      --output-dir runs/he-scratch --data-dir ../shared/data --epochs 1 --bf16
example (a run continued on your own dialogues, a JSONL file of {"dialogue": [...]} lines):
  hf-dialeval train holistic-eval --init-from runs/he-scratch --dialogues my_dialogues.jsonl \\
      --output-dir runs/he-mine --data-dir ../shared/data --epochs 1
"""

    NEW_MODEL_SETTINGS: ClassVar[dict[str, Any]] = NEW_MODEL_SETTINGS
    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {"backbone": (
        f"give --from-scratch (a small GPT-2 with its own tokenizer, the shipped default's recipe) or --backbone "
        f"{MINILM_HUB_ID} (an encoder made into a decoder)")}
    RANGES: ClassVar[dict[str, Range]] = {
        "scratch_vocab_size": AT_LEAST_ONE, "scratch_layers": AT_LEAST_ONE, "scratch_hidden_size": AT_LEAST_ONE,
        "scratch_heads": AT_LEAST_ONE, "cutoff_pairs": AT_LEAST_ONE,
        "percentile": Range("in (0, 50)", lambda value: 0 < value < 50),  # the upper cutoff is its (100 - p)-th
        "pmi_weight": Range("in [0, 1] (1: the pointwise mutual information, 0: Eq. 1's likelihood)",
                            lambda value: 0 <= value <= 1),
        "eval_pairs": NOT_NEGATIVE, "max_seq_length": AT_LEAST_ONE, "max_train_items": AT_LEAST_ONE,
        "copy_span": NOT_NEGATIVE,
        "test_pairs": NOT_NEGATIVE}

    backbone: str = field(default=PAPER_BACKBONE, metadata={
        "help": "causal LM (GPT-2), or an encoder made into one (Hub id or folder)"})
    from_scratch: bool = field(default=False, metadata={
        "help": "train a GPT-2 of the --scratch-* size from scratch, with a byte-level BPE tokenizer trained on the "
                "training pairs, instead of fine-tuning --backbone"})
    init_from: str | None = field(default=None, metadata={
        "help": "a HolisticEval checkpoint whose LM keeps training (e.g. the shipped default or one trained on other "
                "corpora, fine-tuned here on --dialogues or DailyDialog as the paper fine-tunes GPT-2): its model and "
                "tokenizer replace --backbone; its adapter, when it has one, keeps training; its cutoffs are "
                "refitted at the end"})
    scratch_vocab_size: int = field(default=8192, metadata={"help": "the scratch tokenizer's vocabulary size"})
    scratch_layers: int = field(default=4, metadata={"help": "Transformer layers of the scratch GPT-2"})
    scratch_hidden_size: int = field(default=256, metadata={"help": "hidden size of the scratch GPT-2"})
    scratch_heads: int = field(default=4, metadata={"help": "attention heads of the scratch GPT-2"})
    corpora: list[str] = field(default_factory=lambda: ["dailydialog"], metadata={
        "help": "sources of training pairs: dailydialog, dailydialog-plusplus, topical-chat (its released splits, "
                "with the conversations that share an utterance with USR-Topical left out)"})
    train_splits: list[str] = field(default_factory=lambda: ["train"], metadata={
        "help": "DailyDialog(++) splits to train on (the paper: train validation; the cutoffs are then fitted on "
                "data the LM has read)"})
    cutoff_split: str = field(default="validation", metadata={
        "help": "the DailyDialog split whose query-response pairs the percentile cutoffs are fitted on"})
    cutoff_pairs: int = field(default=2000, metadata={
        "help": "pairs the cutoffs are fitted on: of --cutoff-split, or with --dialogues of the held-out dialogues"})
    percentile: float | None = field(default=None, metadata={
        "help": "the percentile that is Eq. 2's lower bound" + _KEPT.format(5)})
    token_reduction: str | None = field(default=None, metadata={"choices": ("mean", "sum"), "help": (
        "how the response's token log-probabilities make a score: mean (Eq. 1 and 3) or sum (the authors' code for "
        "context coherence); the cutoffs are fitted for it" + _KEPT.format("mean"))})
    prompt_format: str | None = field(default=None, metadata={
        "choices": ("special-tokens", "speaker-tags"), "help": (
        "the input layout: special-tokens (<bos> query <sep> response: an LM trained for the metric) or speaker-tags "
        "(A: query / B: response lines: a pretrained LM)" + _KEPT.format("special-tokens"))})
    context_coherence_measure: str | None = field(default=None, metadata={
        "choices": ("likelihood", "pmi"), "help": (
        "what context coherence measures: likelihood (Eq. 1: the response's mean log-probability given the query) "
        "or pmi (that minus the response's own: how much likelier the query makes it)" + _KEPT.format("likelihood"))})
    pmi_weight: float | None = field(default=None, metadata={"help": (
        "with --context-coherence-measure pmi, the share of the response's own log-probability subtracted: 1 the "
        "pointwise mutual information, 0 Eq. 1's likelihood, between them an MMI-antiLM score (in [0, 1])"
        + _KEPT.format(1) + "; with --dialogues, refitted on the held-out dialogues: the weight under which the "
        "human reply beats a reply from another dialogue and a generic one most often")})
    copy_span: int | None = field(default=None, metadata={"help": (
        "the shortest run of tokens that counts as a copy of what the LM read before it (the query, or the "
        "response's earlier tokens): copied tokens earn no credit in any score; 0: every token is scored, as in the "
        "paper" + _KEPT.format(COPY_SPAN))})
    detokenize: bool | None = field(default=None, metadata={
        "help": "write DailyDialog's tokenised text ('Hi , how are you ?') the ordinary way before the LM reads it"
                + _KEPT.format("no")})
    eval_pairs: int = field(default=1000, metadata={
        "help": "pairs whose loss is logged during training: DailyDialog validation's, or with --dialogues the "
                "held-out dialogues'"})
    max_seq_length: int | None = field(default=None, metadata={
        "help": "tokens per query + response sequence" + _KEPT.format(256)})
    max_train_items: int | None = field(default=None, metadata={"help": "train on at most this many pairs"})
    test_pairs: int | None = field(default=None, metadata={
        "help": "DailyDialog test pairs whose perplexity the run records at the end (default: all; 0: none)"})
    # TrainingArguments fields, HolisticEval's defaults
    num_train_epochs: float = field(default=1.0, metadata={"aliases": ["--epochs"], "help": "epochs"})
    per_device_train_batch_size: int = field(default=32, metadata={"aliases": ["--batch-size"], "help": "pairs per batch"})
    learning_rate: float = field(default=1e-4, metadata={"help": "peak learning rate"})
    group_by_length: bool = field(default=True, metadata={"help": "batch pairs of similar length (less padding)"})

    def models_to_load(self) -> dict[str, str]:
        models = super().models_to_load()
        if self.from_scratch:
            models.pop("backbone", None)
        return models

    def settle(self, continued: Mapping[str, Any] | None = None) -> None:
        """Also: the settings, settled, must agree."""
        super().settle(continued)
        self._check_pmi_weight()

    def _check_pmi_weight(self) -> None:
        # a measure left out is a new model's likelihood, or a continued model's own (known once it loads)
        measure = self.context_coherence_measure or (None if self.init_from else NEW_MODEL_SETTINGS[
            "context_coherence_measure"])
        if self.pmi_weight not in (None, 1.0) and measure not in (None, "pmi"):
            raise OptionError(f"--pmi-weight weighs the pmi measure: give --context-coherence-measure pmi with it, or "
                              f"leave it out (the measure is {measure})")

    def check_before_training(self) -> None:
        self._check_pmi_weight()
        if self.dialogues is not None:
            for option in dataclasses.fields(self):
                default = option.default_factory() if callable(option.default_factory) else option.default
                if option.name in CORPUS_OPTIONS and getattr(self, option.name) != default:
                    flag = f"--{option.name.replace('_', '-')}"
                    raise OptionError(f"{flag} and --dialogues exclude each other: {CORPUS_OPTIONS[option.name]}; "
                                      f"leave {flag} out")
        super().check_before_training()
