"""``import hf_dialeval`` is fast yet registers every config and model with transformers' Auto classes,
whatever the order in which the user imports things (each case in a fresh interpreter)."""

import subprocess
import sys

import pytest

CHECK = """
import sys
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
assert {"fined-eval", "quantidce", "rade", "holistic-eval", "dial-m"} <= set(CONFIG_MAPPING.keys()), "configs not registered"
if WANT_MODELS:
    from transformers.models.auto.modeling_auto import MODEL_MAPPING
    from hf_dialeval import FineDEvalConfig, FineDEvalModel, QuantiDCEConfig, QuantiDCEModel
    assert MODEL_MAPPING[FineDEvalConfig] is FineDEvalModel and MODEL_MAPPING[QuantiDCEConfig] is QuantiDCEModel
print("registered")
"""


@pytest.mark.parametrize("imports, want_models", [
    ("import hf_dialeval; from transformers import AutoModel", True),
    ("from transformers import AutoModel; import hf_dialeval", True),
    ("import hf_dialeval; from transformers import AutoConfig", False),
    ("import hf_dialeval; from transformers import PreTrainedModel; from transformers import AutoModel", True),
    ("import hf_dialeval; from hf_dialeval.metrics.fined_eval import encode_dialogues", True),
    ("import hf_dialeval; from hf_dialeval.metrics.quantidce.configuration_quantidce import QuantiDCEConfig; "
     "from transformers import AutoModel", True),
    ("import hf_dialeval; import peft; from transformers import Trainer, AutoModel", True),
    ("import hf_dialeval; from hf_dialeval.modeling.base import encoder_inputs; from transformers import AutoModel", True),
    ("import hf_dialeval; from hf_dialeval.modeling.configuration import DialEvalConfig; from transformers import AutoModel",
     True),
])
@pytest.mark.slow
def test_auto_classes_know_every_metric_model(imports, want_models):
    code = f"{imports}\nWANT_MODELS = {want_models}\n{CHECK}"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "registered", result.stderr[-2000:]


def test_importing_the_package_imports_no_deep_learning_library():
    code = "import sys, hf_dialeval; print('torch' in sys.modules, 'transformers' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() \
        == ["False", "False"]


def test_every_public_name_of_the_package_resolves():
    import hf_dialeval

    assert [name for name in hf_dialeval.__all__ if not hasattr(hf_dialeval, name)] == []
