"""The package's modules import one another in one direction only: no module imports, at its top or inside a
function, a module that imports it back (directly or through others), so each can be read, and imported, alone. (The
registry finds the metric packages by name, not by import.)"""

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "hf_dialeval"


def _module_name(path: Path) -> str:
    return ".".join(("hf_dialeval", *path.relative_to(SOURCE).with_suffix("").parts)).removesuffix(".__init__")


def _imported_modules() -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports anywhere in its code (``from a import b``
    counts as importing ``a.b`` when that is a module, else ``a``)."""
    modules = {_module_name(path): path for path in SOURCE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("hf_dialeval"):
                targets |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                            for alias in node.names}
            elif isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
        graph[name] = targets & modules.keys() - {name}
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


def test_no_module_imports_one_that_imports_it_back():
    graph = _imported_modules()
    assert {"hf_dialeval.modeling.base", "hf_dialeval.modeling.loading"} <= set(graph)
    assert "hf_dialeval.modeling.adapters" in graph["hf_dialeval.modeling.loading"]
    assert _cycle(graph) is None, f"an import cycle: {' -> '.join(_cycle(graph))}"
