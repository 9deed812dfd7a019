"""HolisticEval (Pang et al., ACL 2020): context coherence and fluency from a fine-tuned causal language model with
percentile normalisation, n-gram diversity over response groups, and NLI-based logical self-consistency. This module
is its registry entry."""

from __future__ import annotations

from pathlib import Path

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.metrics.holistic_eval.default_options import HolisticEvalDefaultOptions
from hf_dialeval.metrics.holistic_eval.options import HolisticEvalTrainingOptions
from hf_dialeval.metrics.holistic_eval.paper import PAPER_RESULTS
from hf_dialeval.registry import AdaptationStep, MetricEntry, MetricOption, TrainCommand

#: The offline default shipped inside the package (model_cards/holistic_eval.md).
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults" / "holistic-eval-dailydialog"


ENTRY = MetricEntry(
    "holistic-eval", "turn", "HolisticEval: context coherence, fluency and diversity from a language model's "
    "likelihood and the reply's own n-grams",
    package=__name__, metric=".scoring:HolisticEvalMetric", config=".configuration_holistic_eval:HolisticEvalConfig",
    model=".modeling_holistic_eval:HolisticEvalModel", default=DEFAULT_CHECKPOINT,
    options=(MetricOption("nli_checkpoint", "an MNLI sequence classifier (Hub id such as roberta-large-mnli, or "
                                            "folder) that adds the consistency score; none exists offline"),),
    train_commands=(TrainCommand(
        "holistic-eval", "train HolisticEval's language model (LM fine-tuning on query-response pairs, or a small "
        "GPT-2 from scratch) and fit its percentile cutoffs", HolisticEvalTrainingOptions,
        ".train:HolisticEvalTrainingArguments", ".train:train_holistic_eval"),
        TrainCommand(
            "holistic-eval-default", "make a run of train holistic-eval the default that ships: its cutoffs refitted "
            "for the scoring settings, the smallest folder that reloads it", HolisticEvalDefaultOptions,
            ".default_folder:HolisticEvalDefaultArguments", ".default_folder:write_default_folder")),
    # the paper's route to a new domain: its LM fine-tuned on the domain's dialogues (§4.3), the PMI weight and the
    # cutoffs refitted on held-out ones; 100 steps of 8 pairs keep it to minutes on a CPU (--max-steps for more)
    adaptation=(AdaptationStep("holistic-eval", "dialogues", "init_from", (
        "--max-steps", "100", "--batch-size", "8", "--learning-rate", "5e-5", "--cutoff-pairs", "300",
        "--eval-pairs", "200", "--test-pairs", "0")),),
    paper_results=PAPER_RESULTS,
)

#: The package's public names (its entry's classes and more), each imported from its module on first use.
_EXPORTS = {**ENTRY.exports, "fit_cutoffs": ".scoring", "language_model_perplexity": ".scoring",
            "fit_pmi_weight": ".pmi_weight"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
