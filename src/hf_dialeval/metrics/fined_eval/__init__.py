"""FineD-Eval (Zhang et al., EMNLP 2022): fine-grained dialogue-level evaluation by pairwise ranking of
self-supervised dialogue pairs: sub-metrics for coherence, likability and topic depth, combined by a multitask model
(FineD-Eval_mu) or an ensemble (FineD-Eval_en). This module is its registry entry."""

from __future__ import annotations

from pathlib import Path

from hf_dialeval.lazy import lazy_attributes
from hf_dialeval.metrics.fined_eval.options import FineDEvalTrainingOptions
from hf_dialeval.metrics.fined_eval.paper import PAPER_RESULTS
from hf_dialeval.metrics.fined_eval.reader_options import AdjacencyEncoderOptions, PairEncoderOptions, PairWeightOptions
from hf_dialeval.registry import AdaptationStep, MetricEntry, TrainCommand

#: The offline default shipped in the package: a LoRA adapter and heads over the MiniLM encoder.
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "defaults"


ENTRY = MetricEntry(
    "fined-eval", "dialogue", "FineD-Eval: a dialogue's coherence, likability and topic depth", package=__name__,
    metric=".scoring:FineDEvalMetric", config=".configuration_fined_eval:FineDEvalConfig",
    model=".modeling_fined_eval:FineDEvalModel", default=DEFAULT_CHECKPOINT,
    hub_repo="fined-eval-mu-minilm-dailydialog",  # its default is the defaults/ folder itself
    train_commands=(
        TrainCommand("fined-eval", "train FineD-Eval (pairwise ranking on self-supervised pairs)",
                     FineDEvalTrainingOptions, ".train:FineDEvalTrainingArguments", ".train:train_fined_eval",
                     check=".train:pair_dialogues"),
        TrainCommand("fined-eval-adjacency-encoder", "train the sentence encoder that fined-eval --adjacency-encoder "
                     "adds (next-utterance contrast)", AdjacencyEncoderOptions,
                     ".reader_training:AdjacencyEncoderArguments", ".reader_training:train_adjacency_encoder"),
        TrainCommand("fined-eval-pair-encoder", "train the pair cross-encoder that fined-eval --pair-encoder adds "
                     "(picking the true next utterance)", PairEncoderOptions,
                     ".reader_training:PairEncoderArguments", ".reader_training:train_pair_encoder"),
        TrainCommand("fined-eval-pair-weight", "choose on validation pairs the --pair-weight at which a pair "
                     "encoder joins a FineD-Eval model", PairWeightOptions,
                     ".pair_weight:PairWeightArguments", ".pair_weight:choose_pair_weight"),
    ),
    # the paper's route to a new domain: self-supervised pairs built from the domain's own dialogues (§3.3), by the
    # strategies that need neither labels nor an auxiliary model, for the shipped default's three heads as it was
    # trained (generic replies: any utterance said twice, as a small set has few); its three encoders fine-tuned in
    # full at a low rate and factored again into a rank-32 adapter. Each layer's activations are computed again in the
    # backward pass rather than kept (16 long dialogues, each read whole, by utterance and by adjacent pair, took the
    # route to 7.6 GB on FED, 2.0 GB so): a step of 8 FED pairs takes 19–24 s on 2 cores (12 s keeping them), so 30
    # steps (240 pairs) keep it to minutes (--max-steps for more)
    adaptation=(AdaptationStep("fined-eval", "dialogues", "init_from", (
        "--strategies", "shuffling", "speaker_shuffling", "random_substitution", "echo_substitution",
        "repeat_substitution", "generic_substitution:likability", "generic_substitution",
        "repeat_substitution:topic_depth", "--pair-with-original", "--generic-min-count", "2", "--lora-rank", "0",
        "--adapter-rank", "32", "--learning-rate", "2e-5", "--batch-size", "8", "--max-steps", "30",
        "--eval-steps", "30", "--train-pairs", "100", "--eval-pairs", "20", "--train-max-seq-length", "256",
        "--activation-checkpointing", "true")),),
    paper_results=PAPER_RESULTS, ensemble=True,
)

#: The package's public names (its entry's classes and more), each imported from its module on first use.
_EXPORTS = {
    **ENTRY.exports, "FINED_EVAL_DIMENSIONS": ".constants", "add_utterance_token": ".encoding",
    "encode_dialogues": ".encoding",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
