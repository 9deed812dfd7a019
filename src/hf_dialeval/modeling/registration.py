"""Every metric's config and model registered with transformers' ``AutoConfig`` / ``AutoModel``, so that
``AutoModel.from_pretrained`` loads hf-dialeval checkpoints without ``trust_remote_code``.

``import hf_dialeval`` must stay fast (the CLI answers ``--help`` in well under a second; torch alone takes
two here), so registration waits for transformers: configs are registered as soon as transformers' Auto
config module has been imported, models as soon as its Auto model module has (at once for what is already
imported). The two steps are separate because transformers imports its Auto config module while its own
``modeling_utils`` is still half initialised, when no model class can be imported yet. When one of our own
modules is half imported at that moment, the registration waits for it: it calls :func:`register_available`
at its end (the configuration and modeling modules, ``modeling.configuration`` and ``modeling.base`` do).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

AUTO_CONFIG_MODULE = "transformers.models.auto.configuration_auto"
AUTO_MODEL_MODULE = "transformers.models.auto.modeling_auto"


def _loaded(path: str, package: str) -> type | None:
    """The class a registry entry names by import path, or ``None`` while its module, or a module of ours it
    imports, is still being imported (that module calls :func:`register_available` at its end)."""
    from hf_dialeval.registry import resolve

    module = sys.modules.get(importlib.util.resolve_name(path.partition(":")[0], package))
    if getattr(getattr(module, "__spec__", None), "_initializing", False):  # half imported: the class may be missing
        return getattr(module, path.partition(":")[2], None)
    try:
        return resolve(path, package)
    except ImportError as error:
        if error.name in sys.modules and error.name.startswith("hf_dialeval."):  # partially initialised
            return None
        raise


def register_available() -> None:
    """Register every metric model's config (:data:`hf_dialeval.registry.METRICS`) with ``AutoConfig`` once
    transformers' Auto config module is loaded, and its model with ``AutoModel`` once its Auto model module is.
    Idempotent; each of hf-dialeval's configuration and modeling modules calls it at its end, for the case where
    importing it is what loaded transformers' Auto modules."""
    from hf_dialeval.registry import METRICS

    auto_config = getattr(sys.modules.get(AUTO_CONFIG_MODULE), "AutoConfig", None)
    if auto_config is None:  # not imported, or still being imported (the hook calls again when it is done)
        return
    auto_model = getattr(sys.modules.get(AUTO_MODEL_MODULE), "AutoModel", None)
    for spec in METRICS.values():
        config = _loaded(spec.config, spec.package) if spec.config is not None else None
        if config is None:
            continue
        auto_config.register(config.model_type, config, exist_ok=True)
        model = _loaded(spec.model, spec.package) if auto_model is not None and spec.model is not None else None
        if model is not None:
            auto_model.register(config, model, exist_ok=True)


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Runs a registration step right after transformers' Auto config / Auto model module is executed."""

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> Any:
        if fullname not in (AUTO_CONFIG_MODULE, AUTO_MODEL_MODULE):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            register_available()

        spec.loader.exec_module = exec_module
        return spec


def register_when_transformers_loads() -> None:
    """Register now what transformers has loaded, and hook the rest (idempotent)."""
    if not any(isinstance(finder, _RegisterAfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
    register_available()
