"""The package's layers (CONTRIBUTING.md): each imports only the layers above it, and no metric imports another, so
that a reader can follow a command down the layers without coming back up."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "hf_dialeval"
#: Top to bottom; ``errors``, ``folders``, ``lazy`` and ``registry`` are imported by any layer (the registry finds the
#: metric packages lazily).
LAYERS = ("errors", "folders", "lazy", "registry", "data", "modeling", "training", "inference", "auxiliary",
          "evaluation", "metrics", "adaptation", "evaluate_modules", "publishing", "cli")


def _imports() -> list[tuple[str, str]]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(("hf_dialeval", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hf_dialeval"):
                targets = [f"{node.module}.{alias.name}" for alias in node.names] if node.module == "hf_dialeval" \
                    else [node.module]
                found += [(module, target) for target in targets]
    return found


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_every_import_points_to_a_layer_above_or_its_own():
    upward = [(source, target) for source, target in _imports()
              if _layer(source) and _layer(target) and _layer(source) != _layer(target)
              and LAYERS.index(_layer(target)) > LAYERS.index(_layer(source))
              and (_layer(source), target) != ("registry", "hf_dialeval.metrics")]
    assert not upward, f"imports pointing down the layers: {upward}"


def test_no_metric_imports_another():
    crossing = [(source, target) for source, target in _imports()
                if source.startswith("hf_dialeval.metrics.") and target.startswith("hf_dialeval.metrics.")
                and source.split(".")[2] != target.split(".")[2]]
    assert not crossing, f"a metric importing another: {crossing}"


def test_statistics_imports_no_inference_or_registry():
    # the statistics are pure functions over arrays of scores; scoring a metric is evaluation.meta_evaluation's
    reached = [target for source, target in _imports() if source == "hf_dialeval.evaluation.statistics"
               and target.startswith(("hf_dialeval.inference", "hf_dialeval.registry", "hf_dialeval.metrics"))]
    assert not reached, f"evaluation.statistics imports a metric, the registry or the inference layer: {reached}"
