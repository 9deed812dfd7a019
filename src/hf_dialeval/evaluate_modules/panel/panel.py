"""The panel as an ``evaluate`` metric: one score of a reply in context, combined from several dialogue metrics."""

import evaluate

from hf_dialeval import evaluate_modules

_CITATION = """\
@article{zhang2022mmecrs,
    title = "{MME-CRS}: Multi-Metric Evaluation Based on Correlation Re-Scaling for Evaluating Open-Domain Dialogue",
    author = "Zhang, Pengfei and Hu, Xiaohui and Yu, Kaidong and Wang, Jian and Han, Song and Liu, Cao and Yuan, Chunyang",
    journal = "arXiv preprint arXiv:2206.09403",
    year = "2022",
}
"""

_DESCRIPTION = """\
The panel scores a reply in its dialogue context with several learned dialogue metrics (its members, each run as it
runs alone), maps each member's score through an empirical CDF fitted once on the rated benchmarks' replies and
stored in the checkpoint (so that an item's score never depends on the other items scored with it), and averages
them with weights chosen on those benchmarks, the scores that reward length marking a reply down only. `overall` is
in [0, 1], higher is better.
It is meant for conversations of a domain no metric was trained on, when you have no ratings of your own; its
members, weights and leave-one-benchmark-out numbers are in the model card.
"""

_KWARGS_DESCRIPTION = """
Args:
    contexts (`list` of `list` of `str`): each response's dialogue context, its utterances oldest first.
    responses (`list` of `str`): the responses to score, one per context.
    conditions (`list` of `str` or None, optional): a persona or knowledge text per response, for the members that
        read one (None or "" for none).
    checkpoint (`str`, optional): local folder of a panel (`hf-dialeval train panel`). Default: the shipped panel.
    members (`str`, optional): the members to score with, comma-separated (the weights are renormalised over them).
        Default: all of the panel's.
    batch_size (`int`, optional): items per forward pass of each member. Default 32.
    device (`str`, optional): e.g. "cpu" or "cuda:0". Default: CUDA when available.
    dtype (`str`, optional): "fp32", "bf16" or "fp16": the precision every member computes in. Default: each
        member's own.
Returns:
    `overall` (0-1, higher is better; an empty response scores 0), one list per member score (`METRIC.SCORE`, its
    CDF value in 0-1: the share of the benchmarks' replies it scores above; nan for `fined-eval.overall`, which
    scores whole dialogues only, through the package), `truncated` (True where a member cut
    the item to fit its model), `empty` (True where the item holds an empty utterance or response) and `signature`
    (the panel's and every member's checkpoint, versions and settings). Every context needs at least one utterance.
Examples:
    >>> import hf_dialeval
    >>> panel = evaluate.load(hf_dialeval.evaluate_module("panel"))
    >>> results = panel.compute(contexts=[["Do you like to cook?"], ["Do you like to cook?"]],
    ...                         responses=["Yes, I make pasta every Sunday.", "I don't know."])
    >>> results["overall"][0] > results["overall"][1]
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Panel(evaluate_modules.DialogueEvaluationModule):
    """The panel: several dialogue metrics' scores, normalised and combined."""

    optional_inputs = {"conditions": "condition"}

    codebase_url = "https://arxiv.org/abs/2206.09403"  # the combination's idea (MME-CRS); this package's own code
    paper_url = "https://arxiv.org/abs/2206.09403"

    def _compute(self, contexts, responses, conditions=None, checkpoint=None, members=None, batch_size=32,
                 device=None, dtype=None):
        inputs = {"contexts": contexts, "responses": responses, "conditions": conditions}
        return self.scored(self.scorer(checkpoint, device, batch_size, dtype=dtype, members=members), inputs).to_dict()
