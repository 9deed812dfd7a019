"""``hf-dialeval train holistic-eval-default``: its options, importable without torch (``--help`` answers at once).
The work is :func:`.default_folder.write_default_folder`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hf_dialeval.data.copies import COPY_SPAN
from hf_dialeval.errors import OptionError
from hf_dialeval.training.options import AT_LEAST_ONE, NOT_NEGATIVE, DialEvalTrainingOptions, Range


@dataclass
class HolisticEvalDefaultOptions(DialEvalTrainingOptions):
    """Make a run of hf-dialeval train holistic-eval a default that ships: refit its percentile cutoffs for
    --token-reduction (and the scoring settings below) on the DailyDialog validation pairs the train command fits on,
    and write the smallest folder that reloads the model exactly: the run's adapter with the config holding the new
    cutoffs (the tokenizer is the backbone's) when the run trained one, else the full model in bfloat16 (the loader
    scores in float32) with its tokenizer. --scoring-dtype bf16 makes bf16 autocast the precision it scores in by
    default (where the CPU has bf16 instructions); the cutoffs are then fitted in it.

    transformers.TrainingArguments options are accepted as well; the one that applies is --seed (of the cutoff
    pairs)."""

    EXAMPLE: ClassVar[str] = """\
example (the shipped default; model_cards/holistic_eval.md):
  hf-dialeval train holistic-eval-default --run runs/he-smollm2-gpu-full --token-reduction mean --scoring-dtype bf16 \\
      --context-coherence-measure pmi --pmi-weight 0.8 --copy-span 8 --max-seq-length 256 \\
      --data-dir ../shared/data --output-dir src/hf_dialeval/metrics/holistic_eval/defaults/holistic-eval-dailydialog \\
      --overwrite-output-dir
"""

    OFFLINE_CHOICES: ClassVar[dict[str, str]] = {
        "run": "give --run the --output-dir of hf-dialeval train holistic-eval"}
    RANGES: ClassVar[dict[str, Range]] = {
        "cutoff_pairs": AT_LEAST_ONE, "max_seq_length": AT_LEAST_ONE, "seed": NOT_NEGATIVE, "copy_span": NOT_NEGATIVE,
        "pmi_weight": Range("in [0, 1] (1: the pointwise mutual information, 0: Eq. 1's likelihood)",
                            lambda value: 0 <= value <= 1)}

    output_dir: str | None = field(default=None, metadata={
        "required": True, "help": "the folder that ships (the package's default: "
                                  "src/hf_dialeval/metrics/holistic_eval/defaults/holistic-eval-dailydialog), written "
                                  "whole, replacing the folder there (with --overwrite-output-dir)"})
    run: str | None = field(default=None, metadata={
        "required": True, "help": "the run folder of hf-dialeval train holistic-eval (its adapter/, when it has one, "
                                  "is what ships)"})
    token_reduction: str | None = field(default=None, metadata={
        "required": True, "choices": ("mean", "sum"), "help": (
            "how the response's token log-probabilities make a score: mean (Eq. 1 and 3) or sum")})
    cutoff_pairs: int = field(default=2000, metadata={"help": "DailyDialog validation pairs the cutoffs are fitted on"})
    scoring_dtype: str | None = field(default=None, metadata={
        "choices": ("fp32", "bf16"), "help": "the precision the default scores in (default: float32)"})
    context_coherence_measure: str = field(default="likelihood", metadata={
        "choices": ("likelihood", "pmi"), "help": (
            "what context coherence measures: likelihood (Eq. 1) or pmi (that minus the response's own "
            "log-probability)")})
    pmi_weight: float = field(default=1.0, metadata={
        "help": "with --context-coherence-measure pmi, the share of the response's own log-probability subtracted "
                "(1: the PMI)"})
    copy_span: int = field(default=COPY_SPAN, metadata={"help": (
        "the shortest run of tokens that counts as a copy of what the LM read before it: copied tokens earn no "
        "credit; 0: every token is scored, as in the paper")})
    max_seq_length: int | None = field(default=None, metadata={
        "help": "tokens per scoring input (default: the run's; a pretrained LM has room for more)"})
    seed: int = field(default=42, metadata={"help": "seed of the cutoff pairs (the train command's default)"})

    def check_before_training(self) -> None:
        if self.pmi_weight != 1.0 and self.context_coherence_measure != "pmi":
            raise OptionError(f"--pmi-weight weighs the pmi measure: give --context-coherence-measure pmi with it, or "
                              f"leave it out (the measure is {self.context_coherence_measure})")
        super().check_before_training()
