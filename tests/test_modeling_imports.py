"""The modelling layer's modules import one another in one direction only: no module imports, at its top or inside
a function, a module that imports it back (directly or through others), so each can be read, and imported, alone."""

import ast
from pathlib import Path

MODELING = Path(__file__).resolve().parents[1] / "src" / "hf_dialeval" / "modeling"
PACKAGE = "hf_dialeval.modeling"


def _imported_modules() -> dict[str, set[str]]:
    """Each module of ``modeling/`` and the modules of ``modeling/`` it imports anywhere in its code."""
    modules = {path.stem for path in MODELING.glob("*.py") if path.stem != "__init__"}
    graph = {}
    for name in modules:
        targets = set()
        for node in ast.walk(ast.parse((MODELING / f"{name}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(f"{PACKAGE}."):
                targets.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                targets |= {alias.name.split(".")[2] for alias in node.names if alias.name.startswith(f"{PACKAGE}.")}
        graph[name] = targets & modules - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as the modules along it, or ``None``."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return path[path.index(name):] + [name]
        if name in done:
            return None
        for target in sorted(graph[name]):
            found = visit(target, [*path, name])
            if found:
                return found
        done.add(name)
        return None

    return next((found for name in sorted(graph) if (found := visit(name, []))), None)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_modeling_module_imports_one_that_imports_it_back():
    graph = _imported_modules()
    assert {"base", "loading", "adapters"} <= set(graph)
    assert _cycle(graph) is None, f"an import cycle: {' -> '.join(_cycle(graph))}"
