"""FineD-Eval as an ``evaluate`` metric: fine-grained dialogue-level scores (coherence, likability, topic depth)."""

import evaluate

from hf_dialeval import evaluate_modules
from hf_dialeval.errors import OptionError
from hf_dialeval.modeling.checkpoints import checkpoint_names

_CITATION = """\
@inproceedings{zhang-etal-2022-fined,
    title = "{F}ine{D}-Eval: Fine-grained Automatic Dialogue-Level Evaluation",
    author = "Zhang, Chen and D'Haro, Luis Fernando and Zhang, Qiquan and Friedrichs, Thomas and Li, Haizhou",
    booktitle = "Proceedings of the 2022 Conference on Empirical Methods in Natural Language Processing",
    year = "2022",
    pages = "3336--3355",
}
"""

_DESCRIPTION = """\
FineD-Eval scores whole dialogues with an encoder trained by pairwise ranking on self-supervised pairs:
one sigmoid head per dimension (coherence, likability, topic depth), in (0, 1), higher is better.
`overall` is the mean over the dimensions: FineD-Eval_mu for one multitask checkpoint (config `mu`,
the default), FineD-Eval_en for several sub-metric checkpoints (config `en`). Without a checkpoint the
offline default shipped with `hf-dialeval` is used (MiniLM + LoRA; coherence, likability, topic-depth heads).
"""

_KWARGS_DESCRIPTION = """
Args:
    dialogues (`list` of `list` of `str`): each dialogue as its list of utterances, in order.
    checkpoint (`str` or `list` of `str`, optional): Hub id or local folder of a FineD-Eval model; for the
        `en` config, the sub-metric checkpoints (a list or a comma-separated string). Default: the shipped model.
    batch_size (`int`, optional): encoder inputs per forward pass. Default 32.
    device (`str`, optional): e.g. "cpu" or "cuda:0". Default: CUDA when available.
    dtype (`str`, optional): "fp32" (default), "bf16" or "fp16": the precision the model computes in (autocast).
    long_dialogue (`str`, optional): "window", "keep_start" or "keep_end" for dialogues longer than the
        encoder; default: the checkpoint's setting.
Returns:
    one list per dimension of the checkpoint(s) (e.g. `coherence`, `likability`, `topic_depth`), `overall` (their
    mean), `truncated` (True where text was cut to fit the encoder), `empty` (True where the dialogue holds an
    empty utterance; a dialogue whose system utterances are all empty scores 0, the lowest) and `signature`
    (metric, checkpoint, versions, settings and counts of the run).
Examples:
    >>> import hf_dialeval
    >>> fined_eval = evaluate.load(hf_dialeval.evaluate_module("fined_eval"))
    >>> results = fined_eval.compute(dialogues=[["Hi! How are you?", "Great, I just got back from a hike.",
    ...                                          "Nice, where did you go?"]])
    >>> sorted(results)
    ['coherence', 'empty', 'likability', 'overall', 'signature', 'topic_depth', 'truncated']
    >>> 0.0 < results["overall"][0] < 1.0
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class FinedEval(evaluate_modules.DialogueEvaluationModule):
    """FineD-Eval_mu (config `mu`, default) or FineD-Eval_en (config `en`)."""

    codebase_url = "https://github.com/e0397123/FineD-Eval"
    paper_url = "https://aclanthology.org/2022.emnlp-main.220"
    config_names = ("default", "mu", "en")

    def _compute(self, dialogues, checkpoint=None, batch_size=32, device=None, long_dialogue=None, dtype=None):
        if self.config_name == "en" and len(checkpoint_names(checkpoint)) < 2:
            raise OptionError("the 'en' configuration averages several sub-metric models: pass "
                              "checkpoint=[coherence_model, likability_model, topic_depth_model]")
        return self.score({"dialogues": dialogues}, checkpoint, device, batch_size, long_dialogue=long_dialogue,
                          dtype=dtype)
