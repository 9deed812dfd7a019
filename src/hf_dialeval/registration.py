"""Every metric's config and model registered with transformers' ``AutoConfig`` / ``AutoModel``, so that
``AutoModel.from_pretrained`` loads hf-dialeval checkpoints without ``trust_remote_code``.

``import hf_dialeval`` must stay fast (the CLI answers ``--help`` in well under a second; torch alone takes
two here), so registration waits for transformers: configs are registered as soon as transformers' Auto
config module has been imported, models as soon as its Auto model module has (at once for what is already
imported). The two steps are separate because transformers imports its Auto config module while its own
``modeling_utils`` is still half initialised, when no model class can be imported yet.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

#: model_type -> (module, config class, model class)
MODELS = {
    "fined-eval": ("hf_dialeval.fined_eval.configuration_fined_eval", "FineDEvalConfig",
                   "hf_dialeval.fined_eval.modeling_fined_eval", "FineDEvalModel"),
    "quantidce": ("hf_dialeval.quantidce.configuration_quantidce", "QuantiDCEConfig",
                  "hf_dialeval.quantidce.modeling_quantidce", "QuantiDCEModel"),
}
AUTO_CONFIG_MODULE = "transformers.models.auto.configuration_auto"
AUTO_MODEL_MODULE = "transformers.models.auto.modeling_auto"


def _attribute(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


def register_configs() -> None:
    from transformers.models.auto.configuration_auto import AutoConfig

    for model_type, (config_module, config_class, _, _) in MODELS.items():
        AutoConfig.register(model_type, _attribute(config_module, config_class), exist_ok=True)


def register_models() -> None:
    from transformers.models.auto.modeling_auto import AutoModel

    register_configs()
    for config_module, config_class, model_module, model_class in MODELS.values():
        AutoModel.register(_attribute(config_module, config_class), _attribute(model_module, model_class),
                           exist_ok=True)


_STEPS = {AUTO_CONFIG_MODULE: register_configs, AUTO_MODEL_MODULE: register_models}


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Runs a registration step right after transformers' Auto config / Auto model module is executed."""

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> Any:
        step = _STEPS.get(fullname)
        if step is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            step()

        spec.loader.exec_module = exec_module
        return spec


def register_when_transformers_loads() -> None:
    """Register now what transformers has loaded, and hook the rest (idempotent)."""
    if not any(isinstance(finder, _RegisterAfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
    if AUTO_MODEL_MODULE in sys.modules:
        register_models()
    elif AUTO_CONFIG_MODULE in sys.modules:
        register_configs()
