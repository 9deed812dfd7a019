"""``hf-dialeval train dial-m-mlm`` and ``hf-dialeval train dial-m``: their options, importable without torch
(``--help`` answers at once). The training itself is in :mod:`.train`."""

from __future__ import annotations

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

#: The paper's backbone (§2.1): the default when online.
PAPER_BACKBONE = "roberta-base"
DEFAULT_CORPORA = ["dailydialog"]
#: How the help of a setting ends: what an option left out means.
_KEPT = "; left out: {} for a new model, a continued Dial-M checkpoint's own"


@dataclass
class _DialMOptions(ActivationCheckpointingOn, DialoguesOptions, BackboneTrainingOptions):
    RANGES: ClassVar[dict[str, Range]] = {"eval_dialogues": NOT_NEGATIVE, "max_train_items": AT_LEAST_ONE,
                                          "max_seq_length": AT_LEAST_ONE, "copy_span": NOT_NEGATIVE}
    #: The options a run writes into its model's config, with a new model's setting of each left unset; a Dial-M
    #: checkpoint continued as --backbone keeps its own where the option is not given (:meth:`settle`).
    NEW_MODEL_SETTINGS: ClassVar[dict[str, Any]] = {"detokenize": False, "copy_span": COPY_SPAN}

    corpora: list[str] = field(default_factory=lambda: list(DEFAULT_CORPORA), metadata={
        "help": "dialogue sources: dailydialog, dailydialog-plusplus (its contexts with each positive response), "
                "topical-chat (its released splits with the wiki leads as conditions, without the conversations that "
                "share an utterance with USR-Topical)"})
    eou_token: str = field(default="<eou>", metadata={
        "help": "the end-of-utterance token added to a masked LM's tokenizer (a causal LM reads a transcript instead)"})
    detokenize: bool | None = field(default=None, metadata={
        "nargs": "?", "const": True,  # --detokenize alone is true, as a plain flag's is
        "help": "a causal LM reads texts written back the ordinary way (DailyDialog's 'Hi , how are you ?' becomes "
                "'Hi, how are you?'), as a pretrained LM has read them" + _KEPT.format("no")})
    copy_span: int | None = field(default=None, metadata={"help": (
        "scoring: the shortest run of tokens that counts as a copy of the dialogue or of the response's earlier "
        "words; a keyword in a copy scores the lowest score, as a reply without a keyword; 0: every keyword as in "
        "the paper" + _KEPT.format(COPY_SPAN))})
    eval_dialogues: int = field(default=200, metadata={
        "help": "dialogues whose loss is logged during training (0: none): DailyDialog validation's, or with "
                "--dialogues that many of them held out and never trained on, at most a tenth (at least one)"})
    max_train_items: int | None = field(default=None, metadata={
        "help": "train on at most this many inputs (drawn with --seed)"})
    # TrainingArguments fields, Dial-M's defaults: the paper's AdamW at 1e-5, Transformer layers fine-tuned in full
    lora_rank: int = field(default=0, metadata={
        "help": "LoRA rank; 0 (the paper) fine-tunes the Transformer layers and the LM head in full"})
    learning_rate: float = field(default=1e-5, metadata={"help": "peak learning rate (the paper: 1e-5)"})
    group_by_length: bool = field(default=True, metadata={"help": "batch inputs of similar length (less padding)"})
    # each stage takes its paper's batch a few inputs at a time (--gradient-accumulation-steps), within 4 GB, with
    # activation checkpointing on (ActivationCheckpointingOn)

    def check_before_training(self) -> None:
        """Also: ``--corpora`` and ``--dialogues`` name what the run trains on, so one of them."""
        if self.dialogues is not None and self.corpora != DEFAULT_CORPORA:
            raise OptionError("--corpora and --dialogues exclude each other: --dialogues names what Dial-M trains on "
                              "(a shipped corpus name among them); leave --corpora out")
        super().check_before_training()


@dataclass
class DialMMLMTrainingOptions(_DialMOptions):
    """Dial-M stage 1 (§2.1): masked-LM pre-training on dialogues, utterances joined by the end-of-utterance token and
    no conditions, 15 percent of the tokens masked. On a causal LM (--backbone of a family without a masked LM, e.g.
    HuggingFaceTB/SmolLM2-135M-Instruct: this package's adaptation), causal-LM training on windows of speaker-tagged
    transcripts instead. --backbone may also be a Dial-M checkpoint (a run of either stage, or the shipped default),
    which keeps training with its settings but those the options give. The run folder is the --backbone of stage 2
    (hf-dialeval train dial-m). The dialogues are the corpora's (--corpora; DailyDialog validation's to validate
    on) or your own (--dialogues, conditions unused here; a share held out to validate on, --eval-dialogues).
    Dialogues of the corpora holding a text of the Table 1 benchmarks (USR, PredictiveEngage, HolisticEval context)
    are cut before it.

    Every transformers.TrainingArguments option is accepted as well (e.g. --bf16, --max-steps)."""

    EXAMPLE: ClassVar[str] = """\
example (offline; the shipped default's commands are in model_cards/dial_m.md):
  hf-dialeval train dial-m-mlm --backbone sentence-transformers/all-MiniLM-L6-v2 --output-dir runs/dial-m-mlm \\
      --data-dir ../shared/data --learning-rate 1e-4 --max-steps 1000 --bf16
example (a run continued on your own dialogues, a JSONL file of {"dialogue": [...]} lines; hf-dialeval adapt dial-m
continues the shipped default so, and measures it before and after):
  hf-dialeval train dial-m-mlm --backbone runs/dial-m-mlm --dialogues my_dialogues.jsonl --output-dir runs/dial-m-mine \\
      --learning-rate 2e-4 --max-steps 300 --bf16
"""

    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {"backbone": (
        f"give --backbone {MINILM_HUB_ID} (an encoder given a fresh LM head, the shipped default's recipe)")}
    RANGES: ClassVar[dict[str, Range]] = {"mlm_probability": Range("in (0, 1]", lambda value: 0 < value <= 1)}
    NEW_MODEL_SETTINGS: ClassVar[dict[str, Any]] = {**_DialMOptions.NEW_MODEL_SETTINGS, "max_seq_length": 128}

    backbone: str = field(default=PAPER_BACKBONE, metadata={
        "help": "masked LM (roberta-base), an encoder given a fresh LM head, or a causal LM (Hub id or folder); or a "
                "Dial-M checkpoint, continued"})
    mlm_probability: float = field(default=0.15, metadata={"help": "share of tokens masked (the paper: 0.15)"})
    max_seq_length: int | None = field(default=None, metadata={
        "help": "tokens per window of consecutive utterances, and per input the model scores" + _KEPT.format(128)})
    num_train_epochs: float = field(default=30.0, metadata={"aliases": ["--epochs"], "help": "epochs (the paper: 30)"})
    # the paper's 64 windows a step, 8 at a time: its batch through Gemma 3 in one pass took over 6.5 GB on FED
    per_device_train_batch_size: int = field(default=8, metadata={
        "aliases": ["--batch-size"], "help": "windows per forward pass; a step accumulates "
                                            "--gradient-accumulation-steps of them (8 × 8: the paper's 64)"})
    gradient_accumulation_steps: int = field(default=8, metadata={
        "help": "forward passes accumulated per optimizer step"})


@dataclass
class DialMTrainingOptions(_DialMOptions):
    """Dial-M stage 2 (§2.2): keyword-masking fine-tuning. For each utterance of the corpora with its context and
    condition, the keywords of the utterance (YAKE! and POS tags, as in scoring) are masked and predicted; utterances
    without a keyword are skipped. On a causal LM, each utterance's keywords are predicted from everything before them
    (their tokens the only labels). --backbone is a stage-1 run folder (or any Dial-M checkpoint, which keeps training
    with its settings but those the options give; or, for the paper's "w/o pre-training" ablation, a plain masked or
    causal LM); --masking random masks 15 percent of the words instead (the "random masking" ablation). The utterances
    are the corpora's (--corpora; DailyDialog validation's to validate on) or your own dialogues' (--dialogues, each
    with its dialogue's condition, the persona or knowledge text; a share held out to validate on, --eval-dialogues).

    Every transformers.TrainingArguments option is accepted as well (e.g. --bf16, --max-steps)."""

    EXAMPLE: ClassVar[str] = """\
example (offline; the shipped default's commands are in model_cards/dial_m.md):
  hf-dialeval train dial-m --backbone runs/dial-m-mlm --output-dir runs/dial-m --data-dir ../shared/data \\
      --corpora dailydialog topical-chat --learning-rate 5e-5 --max-steps 500 --adapter-rank 64 --bf16
example (a stage-1 run continued on your own dialogues, with a "condition" column of persona or knowledge texts):
  hf-dialeval train dial-m --backbone runs/dial-m-mlm --dialogues my_dialogues.jsonl --output-dir runs/dial-m-mine \\
      --learning-rate 5e-5 --max-steps 300 --bf16
"""

    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {"backbone": (
        f"give --backbone a stage-1 run folder (hf-dialeval train dial-m-mlm --backbone {MINILM_HUB_ID} ...), or "
        f"--backbone {MINILM_HUB_ID}")}
    RANGES: ClassVar[dict[str, Range]] = {"max_keywords": AT_LEAST_ONE}
    NEW_MODEL_SETTINGS: ClassVar[dict[str, Any]] = {**_DialMOptions.NEW_MODEL_SETTINGS, "max_seq_length": 256,
                                                    "max_keywords": 20}

    backbone: str = field(default=PAPER_BACKBONE, metadata={
        "help": "a stage-1 run folder (hf-dialeval train dial-m-mlm) or any Dial-M checkpoint, continued; or a masked "
                "LM / encoder / causal LM (Hub id or folder)"})
    masking: str = field(default="keywords", metadata={"choices": ("keywords", "random"), "help": (
        "what is masked in each utterance: its keywords (the paper) or 15 percent of its words at random (ablation)")})
    max_keywords: int | None = field(default=None, metadata={
        "help": "keywords per utterance at most" + _KEPT.format(20)})
    max_seq_length: int | None = field(default=None, metadata={
        "help": "tokens per context + utterance + condition input" + _KEPT.format(256)
                + " (a stage-1 run's: its window length)"})
    num_train_epochs: float = field(default=10.0, metadata={"aliases": ["--epochs"], "help": "epochs (the paper: 10)"})
    # the paper's 96 inputs a step, 8 at a time (as stage 1)
    per_device_train_batch_size: int = field(default=8, metadata={
        "aliases": ["--batch-size"], "help": "inputs per forward pass; a step accumulates "
                                            "--gradient-accumulation-steps of them (8 × 12: the paper's 96)"})
    gradient_accumulation_steps: int = field(default=12, metadata={
        "help": "forward passes accumulated per optimizer step"})
