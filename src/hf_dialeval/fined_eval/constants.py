"""FineD-Eval's names and defaults, importable without torch (the command line lists them in its help)."""

#: The paper's three fine-grained dimensions, in head order of the multitask model.
FINED_EVAL_DIMENSIONS = ("coherence", "likability", "topic_depth")
#: How a dialogue longer than ``max_seq_length`` tokens is scored.
LONG_DIALOGUE_MODES = ("window", "keep_start", "keep_end")
UTTERANCE_TOKEN = "</UTT>"
#: Margin of the ranking loss (paper Eq. 1).
RANKING_MARGIN = 0.1
#: The paper's auxiliary models (Hub ids; a local path works as well).
DEFAULT_QA_EVALUATOR = "iarfmoose/bert-base-cased-qa-evaluator"
DEFAULT_NLI_MODEL = "roberta-large-mnli"
DEFAULT_EMOTION_MODEL = "mrm8488/t5-base-finetuned-emotion"

#: strategy name -> the dimension (head) it trains
STRATEGY_DIMENSIONS = {
    "shuffling": "coherence",
    "qa_relevance": "coherence",
    "contradiction": "likability",
    "positive_emotions": "likability",
    "entailment": "topic_depth",
    "generic_substitution": "topic_depth",
}
