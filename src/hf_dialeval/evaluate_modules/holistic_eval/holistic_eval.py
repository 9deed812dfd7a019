"""HolisticEval as an ``evaluate`` metric: context coherence and fluency of responses from a language model, and
logical self-consistency from an NLI model when one is given."""

import evaluate

from hf_dialeval import evaluate_modules

_CITATION = """\
@inproceedings{pang-etal-2020-towards,
    title = "Towards Holistic and Automatic Evaluation of Open-Domain Dialogue Generation",
    author = "Pang, Bo and Nijkamp, Erik and Han, Wenjuan and Zhou, Linqi and Liu, Yixian and Tu, Kewei",
    booktitle = "Proceedings of the 58th Annual Meeting of the Association for Computational Linguistics",
    year = "2020",
    pages = "3619--3629",
}
"""

_DESCRIPTION = """\
HolisticEval scores a response with a causal language model fine-tuned on dialogues: context coherence is the
mean log-probability of the response's tokens given its context (Eq. 1), fluency the same without the context
(Eq. 3), each normalised into [0, 1] by the 5th percentile of the same score over a reference set fitted when the
model was trained and stored in its config (Eq. 2: 0 at or below that percentile, 1 for a response the model is
certain of); the shipped model subtracts part of the response's own log-probability from context coherence (its
config's `pmi_weight`), gives a token that copies the context or the response's own earlier words no credit (its
`copy_span`), and adds diversity, the response's own n-gram entropy between two reference percentiles. With an NLI
checkpoint, consistency is 1 − the mean contradiction probability of the
response against each earlier utterance of its speaker. Without a checkpoint the offline default shipped with
`hf-dialeval` is used (see its model card for what it is and how far it gets).
"""

_KWARGS_DESCRIPTION = """
Args:
    contexts (`list` of `list` of `str`): each response's dialogue context, its utterances oldest first; an empty
        list scores the response alone (fluency only, `context_coherence` is nan).
    responses (`list` of `str`): the responses to score, one per context.
    checkpoint (`str`, optional): Hub id or local folder of a HolisticEval model. Default: the shipped model.
    nli_checkpoint (`str`, optional): an MNLI sequence classifier (e.g. "roberta-large-mnli") that adds
        `consistency`. None exists offline.
    batch_size (`int`, optional): items per forward pass (each item runs with and without its context). Default 32.
    device (`str`, optional): e.g. "cpu" or "cuda:0". Default: CUDA when available.
    dtype (`str`, optional): "fp32" (default), "bf16" or "fp16": the precision the model computes in (autocast).
Returns:
    `context_coherence`, `fluency`, `diversity` (and `consistency`), each in [0, 1], higher is better; `overall` (the
    mean of the scores of the response in its dialogue, context coherence and consistency, and of the response
    alone, fluency and diversity); `truncated` (True where the context, or a response too long alone, was cut); `empty`;
    `signature`; and `system_scores`: the n-gram entropy (n = 1, 2, 3) of all responses pooled and each score's
    mean, under "all".
Examples:
    >>> import hf_dialeval
    >>> holistic = evaluate.load(hf_dialeval.evaluate_module("holistic_eval"))
    >>> results = holistic.compute(contexts=[["Do you like to cook?"], []],
    ...                            responses=["Yes , I cook pasta every Sunday .", "Yes , I cook pasta every Sunday ."])
    >>> sorted(results)
    ['context_coherence', 'diversity', 'empty', 'fluency', 'overall', 'signature', 'system_scores', 'truncated']
    >>> 0.0 <= results["fluency"][0] <= 1.0
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class HolisticEval(evaluate_modules.DialogueEvaluationModule):
    """HolisticEval context coherence, fluency, diversity and (with an NLI model) consistency."""

    codebase_url = "https://github.com/alexzhou907/dialogue_evaluation"
    paper_url = "https://aclanthology.org/2020.acl-main.333"

    def _compute(self, contexts, responses, checkpoint=None, nli_checkpoint=None, batch_size=32, device=None,
                 dtype=None):
        return self.score({"contexts": contexts, "responses": responses}, checkpoint, device, batch_size,
                          nli_checkpoint=nli_checkpoint, dtype=dtype)
