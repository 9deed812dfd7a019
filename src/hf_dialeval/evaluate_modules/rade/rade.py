"""RADE as an ``evaluate`` metric: a candidate response scored against its dialogue context and a reference."""

import evaluate

from hf_dialeval import evaluate_modules

_CITATION = """\
@inproceedings{shi-etal-2023-rade,
    title = "{RADE}: Reference-Assisted Dialogue Evaluation for Open-Domain Dialogue",
    author = "Shi, Zhengliang and Sun, Weiwei and Zhang, Shuo and Zhang, Zhen and Ren, Pengjie and Ren, Zhaochun",
    booktitle = "Proceedings of the 61st Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)",
    year = "2023",
    pages = "12856--12875",
}
"""

_DESCRIPTION = """\
RADE scores a candidate response with the assistance of a reference response: an encoder reads
`context [SEP] reference [SEP] candidate` (the oldest context is cut first when the input is too long, never the
reference or the candidate) and a feed-forward layer predicts both responses' scores on the human 1-5 scale. It
is trained with an MSE on both scores, a pairwise ranking loss (the candidate above the reference when people
rated it higher) and an auxiliary task in which a decoder sharing the encoder generates the reference from the
context. The reference is a benchmark to compare with, not the one right answer. `score` is the candidate's
predicted score (1-5, higher is better). Without a checkpoint the offline default shipped with `hf-dialeval` is
used (MiniLM made into an encoder-decoder, trained here on RADE's three domains).
"""

_KWARGS_DESCRIPTION = """
Args:
    contexts (`list` of `list` of `str`): each candidate's dialogue context, its utterances oldest first.
    references (`list` of `str`): a reference response per candidate (e.g. the original human response).
    candidates (`list` of `str`): the responses to score, one per context and reference.
    checkpoint (`str`, optional): Hub id or local folder of a RADE model. Default: the shipped model.
    batch_size (`int`, optional): inputs per forward pass. Default 32.
    device (`str`, optional): e.g. "cpu" or "cuda:0". Default: CUDA when available.
    dtype (`str`, optional): "fp32" (default), "bf16" or "fp16": the precision the model computes in (autocast).
Returns:
    `score` and `overall` (the same: the candidate's predicted score on 1-5, higher is better; an empty candidate
    scores 1, the lowest), `truncated` (True where context was cut to fit the encoder), `empty` (True where the
    item holds an empty utterance or candidate) and `signature` (metric, checkpoint, versions, settings and
    counts). Every item needs a reference with text.
Examples:
    >>> import hf_dialeval
    >>> rade = evaluate.load(hf_dialeval.evaluate_module("rade"))
    >>> results = rade.compute(contexts=[["Hi! How are you?", "Great, I just got back from a hike."]],
    ...                        references=["Oh nice! Where did you hike?"],
    ...                        candidates=["Cool, which trail did you take?"])
    >>> sorted(results)
    ['empty', 'overall', 'score', 'signature', 'truncated']
    >>> 1.0 <= results["score"][0] <= 5.0
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Rade(evaluate_modules.DialogueEvaluationModule):
    """RADE reference-assisted turn-level score."""

    inputs = {"contexts": "context", "references": "reference", "candidates": "response"}

    # the authors released their data but no code: this package is the implementation
    codebase_url = "https://aclanthology.org/2023.acl-long.719"
    paper_url = "https://aclanthology.org/2023.acl-long.719"

    def _compute(self, contexts, references, candidates, checkpoint=None, batch_size=32, device=None,
                 dtype=None):
        return self.score({"contexts": contexts, "references": references, "candidates": candidates}, checkpoint,
                          device, batch_size, dtype=dtype)
