"""FineD-Eval's names and defaults, importable without torch (the command line lists them in its help)."""

from hf_dialeval.errors import UnknownNameError

#: The paper's three fine-grained dimensions, in head order of the multitask model.
FINED_EVAL_DIMENSIONS = ("coherence", "likability", "topic_depth")
#: How a dialogue longer than ``max_seq_length`` tokens is scored.
LONG_DIALOGUE_MODES = ("window", "keep_start", "keep_end")
UTTERANCE_TOKEN = "</UTT>"
#: The trained one-logit pair layer of a pair cross-encoder, in its folder beside the encoder's weights.
PAIR_HEAD_FILE = "pair_head.safetensors"
#: Margin of the ranking loss (paper Eq. 1).
RANKING_MARGIN = 0.1
#: The paper's auxiliary models (Hub ids; a local path works as well).
DEFAULT_QA_EVALUATOR = "iarfmoose/bert-base-cased-qa-evaluator"
DEFAULT_NLI_MODEL = "roberta-large-mnli"
DEFAULT_EMOTION_MODEL = "mrm8488/t5-base-finetuned-emotion"

#: strategy name -> the dimension (head) it trains unless told otherwise (``strategy:dimension``)
STRATEGY_DIMENSIONS = {
    "shuffling": "coherence",
    "qa_relevance": "coherence",
    "contradiction": "likability",
    "positive_emotions": "likability",
    "entailment": "topic_depth",
    "generic_substitution": "topic_depth",
    "random_substitution": "coherence",
    "echo_substitution": "coherence",
    "repeat_substitution": "coherence",
    "speaker_shuffling": "coherence",
}
#: Strategies that need no auxiliary model (positive_emotions with DailyDialog's own emotion labels).
OFFLINE_STRATEGIES = ("shuffling", "positive_emotions", "generic_substitution", "random_substitution",
                      "echo_substitution", "repeat_substitution", "speaker_shuffling")
#: Strategies whose negatives are corruptions of their positives, one each: they can pair a dialogue with its own
#: corruption (``--pair-with-original``) instead of with another dialogue's.
CORRUPTION_STRATEGIES = frozenset({"shuffling", "generic_substitution", "random_substitution", "echo_substitution",
                                   "repeat_substitution", "speaker_shuffling"})


def parse_strategy(spec: str) -> tuple[str, str]:
    """``"strategy"`` or ``"strategy:dimension"`` -> (strategy, the dimension whose head it trains)."""
    strategy, _, dimension = spec.partition(":")
    if strategy not in STRATEGY_DIMENSIONS:
        raise UnknownNameError(f"unknown pair strategy {strategy!r} in --strategies: choose among {sorted(STRATEGY_DIMENSIONS)}")
    dimension = dimension or STRATEGY_DIMENSIONS[strategy]
    if dimension not in FINED_EVAL_DIMENSIONS:
        raise UnknownNameError(f"--strategies {spec!r}: the dimension after ':' must be one of {list(FINED_EVAL_DIMENSIONS)}")
    return strategy, dimension
