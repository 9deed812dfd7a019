"""RADE as a :class:`~hf_dialeval.inference.metric.DialogueMetric` (turn level with a reference: context + reference +
candidate → the candidate's score on the human 1–5 scale)."""

from __future__ import annotations

from pathlib import Path

from transformers import PreTrainedTokenizerBase

from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.modeling.base import EncoderMetric
from hf_dialeval.inference.metric import ScoreOutput
from hf_dialeval.metrics.rade.data import encode_posterior
from hf_dialeval.metrics.rade.modeling_rade import RADEModel

#: The offline default shipped inside the package: MiniLM turned into an encoder–decoder, trained here on the
#: train splits of RADE's three domains with the paper's fine-tuning loss; the folder holds its LoRA adapter and
#: head. See ``model_cards/rade.md``.
DEFAULT_CHECKPOINT = Path(__file__).parent / "defaults" / "rade-minilm"

#: Shi et al. 2023, Table 3 (test splits; RADE PT and TS rows, the ablations, and baselines as ``rade:<baseline>``
#: rows) and Table 4 (USR, zero-shot), printed beside ours by ``hf-dialeval benchmark``.
_TABLE_3 = {
    "rade-chitchat": {"rade": (0.601, 0.569, 0.409), "rade:pt": (0.472, 0.491, 0.334),
                      "rade:no-ranking": (0.503, 0.514, 0.353), "rade:no-generation": (0.451, 0.482, 0.332),
                      "rade:bert-mlp": (0.304, 0.301, 0.192), "rade:bart-mlp": (0.431, 0.440, 0.312),
                      "rade:grade": (0.491, 0.434, 0.300), "rade:bertscore": (0.296, 0.243, 0.213)},
    "rade-emotion": {"rade": (0.863, 0.849, 0.685), "rade:pt": (0.650, 0.601, 0.427),
                     "rade:no-ranking": (0.773, 0.756, 0.613), "rade:no-generation": (0.751, 0.740, 0.602),
                     "rade:bert-mlp": (0.501, 0.537, 0.373), "rade:bart-mlp": (0.412, 0.447, 0.356),
                     "rade:grade": (0.549, 0.568, 0.398), "rade:bertscore": (0.167, 0.243, 0.173)},
    "rade-persona": {"rade": (0.470, 0.465, 0.347), "rade:pt": (0.386, 0.390, 0.285),
                     "rade:no-ranking": (0.406, 0.403, 0.313), "rade:no-generation": (0.387, 0.372, 0.272),
                     "rade:bert-mlp": (0.331, 0.360, 0.251), "rade:bart-mlp": (0.310, 0.335, 0.242),
                     "rade:grade": (-0.031, -0.005, -0.030), "rade:bertscore": (0.278, 0.292, 0.196)},
}
_TABLE_4 = {
    "usr-topical-reference": {"rade": (0.480, 0.466), "rade:grade": (0.200, 0.217), "rade:usr": (0.412, 0.423),
                              "rade:bertscore": (0.298, 0.325)},
    "usr-persona-reference": {"rade": (0.451, 0.465), "rade:grade": (0.358, 0.352), "rade:usr": (0.440, 0.418),
                              "rade:bertscore": (0.152, 0.122)},
}
PAPER_RESULTS = {
    **{(row, benchmark): {"Overall": {"pearson": r, "spearman": rho, "kendall": tau}}
       for benchmark, rows in _TABLE_3.items() for row, (r, rho, tau) in rows.items()},
    **{(row, benchmark): {"Overall": {"pearson": r, "spearman": rho}}
       for benchmark, rows in _TABLE_4.items() for row, (r, rho) in rows.items()},
}


def load_rade(checkpoint: str | Path | None = None) -> tuple[RADEModel, PreTrainedTokenizerBase]:
    """Model (eval mode) and tokenizer of a RADE checkpoint: a Hub id or folder with a full model, or a folder
    with a ``peft`` adapter over the backbone its ``config.json`` names (merged on load); ``None``: the shipped
    default."""
    return load_checkpoint(checkpoint, DEFAULT_CHECKPOINT, RADEModel)


class RADEMetric(EncoderMetric):
    """The quality of a candidate response given its context and a reference response (the paper's ŝ_a), on the
    human 1–5 scale the model was trained on; higher is better. Scoring runs the encoder and the head only."""

    name = "rade"
    level = "turn"
    dimensions = ("score",)
    needs_reference = True

    model: RADEModel

    @property
    def lowest_score(self) -> float:
        """An empty candidate scores the bottom of the human scale (1 by default): no reply is the worst reply."""
        return float(self.model.config.human_scale[0])

    @property
    def max_tokens(self) -> int:
        return self.model.config.max_seq_length

    def _score_turns(self, contexts: list[list[str]], responses: list[str], conditions: list[str | None],
                     references: list[str | None]) -> ScoreOutput:
        encoding, truncated = encode_posterior(self.tokenizer, contexts, references, responses,
                                               self.model.config.max_seq_length)
        scores = self.forward_rows(lambda **batch: self.model(**batch).scores, encoding).tolist()
        return ScoreOutput(scores={"score": scores}, overall=list(scores), truncated=truncated)


def rade_metric(checkpoint: str | None = None, device: str | None = None, batch_size: int = 32,
                dtype: str | None = None) -> RADEMetric:
    """RADE from ``checkpoint`` (Hub id or folder; ``None``: the shipped offline default), computing in ``dtype``
    (``fp32``, the default, ``bf16`` or ``fp16``)."""
    model, tokenizer = load_rade(checkpoint)
    return RADEMetric(model, tokenizer, device=device, batch_size=batch_size, checkpoint=checkpoint, dtype=dtype)
