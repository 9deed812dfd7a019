"""QuantiDCE as an ``evaluate`` metric: the coherence of a response to its dialogue context."""

import evaluate

from hf_dialeval import evaluate_modules

_CITATION = """\
@inproceedings{ye-etal-2021-towards-quantifiable,
    title = "Towards Quantifiable Dialogue Coherence Evaluation",
    author = "Ye, Zheng and Lu, Liucun and Huang, Lishan and Lin, Liang and Liang, Xiaodan",
    booktitle = "Proceedings of the 59th Annual Meeting of the Association for Computational Linguistics",
    year = "2021",
    pages = "2718--2729",
}
"""

_DESCRIPTION = """\
QuantiDCE scores how coherent a response is with its dialogue context: an encoder reads
`[CLS] context [SEP] response [SEP]` (the oldest context is cut first when the pair is too long, never the
response) and a three-layer MLP (ELU, ELU, sigmoid) gives a score in [0, 1]. The model is pre-trained with a
multi-level ranking loss (DailyDialog++: random < adversarial < reference responses) and fine-tuned on a few
hundred human ratings with knowledge distillation from the pre-trained model. `coherence` is on the human 1–5
scale (`1 + 4 *` the model's [0, 1] output); higher is more coherent. Without a checkpoint the offline default shipped
with `hf-dialeval` is used (MiniLM + LoRA, trained on the CPU through both stages).
"""

_KWARGS_DESCRIPTION = """
Args:
    contexts (`list` of `list` of `str`): each response's dialogue context, its utterances oldest first.
    responses (`list` of `str`): the responses to score, one per context.
    checkpoint (`str`, optional): Hub id or local folder of a QuantiDCE model. Default: the shipped model.
    batch_size (`int`, optional): pairs per forward pass. Default 32.
    device (`str`, optional): e.g. "cpu" or "cuda:0". Default: CUDA when available.
    dtype (`str`, optional): "fp32" (default), "bf16" or "fp16": the precision the model computes in (autocast).
Returns:
    `coherence` and `overall` (the same: 1–5, higher is more coherent; an empty response scores 1, the
    lowest), `truncated` (True where context was cut to fit the encoder), `empty` (True where the item holds
    an empty utterance or response) and `signature` (metric, checkpoint, versions, settings and counts).
    Every context needs at least one utterance.
Examples:
    >>> import hf_dialeval
    >>> quantidce = evaluate.load(hf_dialeval.evaluate_module("quantidce"))
    >>> results = quantidce.compute(contexts=[["Hi! How are you?", "Great, I just got back from a hike."]],
    ...                             responses=["Nice, where did you go?"])
    >>> sorted(results)
    ['coherence', 'empty', 'overall', 'signature', 'truncated']
    >>> 1.0 <= results["coherence"][0] <= 5.0
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Quantidce(evaluate_modules.DialogueEvaluationModule):
    """QuantiDCE turn-level coherence."""

    codebase_url = "https://github.com/James-Yip/QuantiDCE"
    paper_url = "https://aclanthology.org/2021.acl-long.211"

    def _compute(self, contexts, responses, checkpoint=None, batch_size=32, device=None, dtype=None):
        return self.score({"contexts": contexts, "responses": responses}, checkpoint, device, batch_size,
                          dtype=dtype)
