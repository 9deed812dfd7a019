"""Dial-M as an ``evaluate`` metric: how well a language model fine-tuned on dialogues predicts each keyword of a
response given the context and the condition (persona, knowledge)."""

import evaluate

from hf_dialeval import evaluate_modules

_CITATION = """\
@inproceedings{dey-desarkar-2023-dial,
    title = "Dial-M: A Masking-based Framework for Dialogue Evaluation",
    author = "Dey, Suvodip and Desarkar, Maunendra Sankar",
    booktitle = "Proceedings of the 24th Annual Meeting of the Special Interest Group on Discourse and Dialogue",
    year = "2023",
    pages = "77--84",
}
"""

_DESCRIPTION = """\
Dial-M asks a language model, trained on dialogues to predict utterance keywords, to predict each keyword of a
response (YAKE! keywords and words of content POS tags; every word when there is none) given the dialogue context and
the condition (persona or knowledge fact) when there is one: a masked LM with the keyword masked on its own (the
paper), or a causal LM from what precedes it (this package's adaptation, and the offline default). Eq. 1, the
mean over keywords of the cross-entropy of their tokens, is the paper's score, lower is better (`dial_m_loss`);
its variant "eq1" exposes `dial_m` as its negation, so that higher is better as for every metric here. The variant
"context-gain" exposes how much the context and condition lower that loss (higher is better). A keyword that a reply
copies from the dialogue or from its own earlier words (a run of the checkpoint's `copy_span` tokens, 8 for the
offline default) scores the lowest score, as in a reply without a keyword: an echo cannot answer for its own
keywords. Without a checkpoint the offline default shipped with `hf-dialeval` is used, which scores context gain
unless asked for "eq1" (see its
model card for what it is, why, and how far it gets).
"""

_KWARGS_DESCRIPTION = """
Args:
    contexts (`list` of `list` of `str`): each response's dialogue context, its utterances oldest first.
    responses (`list` of `str`): the responses to score, one per context.
    conditions (`list` of `str` or None, optional): a persona or knowledge text per response (None or "" for none).
    checkpoint (`str`, optional): Hub id or local folder of a Dial-M model. Default: the shipped model.
    variant (`str`, optional): "eq1" (the paper's score) or "context-gain" (the keyword loss without the context
        and condition minus the loss with them: how much they help; this package's adaptation). Default: the
        checkpoint's own (its config's `variant`: "context-gain" for the offline default, "eq1" otherwise).
    return_keywords (`bool`, optional): add `keywords`, per response its masked words with their losses.
    batch_size (`int`, optional): keyword-masked copies per forward pass. Default 32.
    device (`str`, optional): e.g. "cpu" or "cuda:0". Default: CUDA when available.
    dtype (`str`, optional): "fp32" (default), "bf16" or "fp16": the precision the model computes in (autocast).
Returns:
    `dial_m` (higher is better) and `dial_m_loss` (its negation, Eq. 1, lower is better; with variant "eq1");
    `overall` (= `dial_m`);
    `truncated` (True where the context or condition was cut); `empty`; `signature`; and with `return_keywords`,
    `keywords`: per response a list of `{"word", "loss", "copied"}`.
Examples:
    >>> import hf_dialeval
    >>> dial_m = evaluate.load(hf_dialeval.evaluate_module("dial_m"))
    >>> results = dial_m.compute(contexts=[["Do you like to cook?"]], responses=["Yes , I cook pasta every Sunday ."],
    ...                          variant="eq1", return_keywords=True)
    >>> [keyword["word"] for keyword in results["keywords"][0]]
    ['cook', 'pasta', 'Sunday']
    >>> results["dial_m"][0] == -results["dial_m_loss"][0]
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class DialM(evaluate_modules.DialogueEvaluationModule):
    """Dial-M: the masked-keyword cross-entropy of a response given its context and condition."""

    optional_inputs = {"conditions": "condition"}

    codebase_url = "https://github.com/SuvodipDey/Dial-M"
    paper_url = "https://aclanthology.org/2023.sigdial-1.7"

    def _compute(self, contexts, responses, conditions=None, checkpoint=None, variant=None, return_keywords=False,
                 batch_size=32, device=None, dtype=None):
        inputs = {"contexts": contexts, "responses": responses, "conditions": conditions}
        metric = self.scorer(checkpoint, device, batch_size, dtype=dtype, variant=variant)
        metric.return_keywords = return_keywords  # the same model either way: one loaded scorer
        results = self.scored(metric, inputs).to_dict()
        if metric.variant == "eq1":
            results["dial_m_loss"] = [-score for score in results["dial_m"]]
        if return_keywords:  # from the same forward passes as the scores (an empty response: no keywords)
            results["keywords"] = [keywords or [] for keywords in results.pop("details")["keywords"]]
        return results
