"""The documents a user reads: every path they cite exists, the README and the model cards stay short, and they say
what the package is rather than how it came to be (no session, issue number or commit named).

Checked documents: README.md, docs/*.md, model_cards/*.md, metrics/*/README.md and benchmarks/*/README.md.

What counts as a cited path:

* the target of a relative markdown link, ``[text](target)`` (a URL, ``mailto:`` or an ``#anchor`` is not one; a
  ``#fragment`` after a path is dropped). It must exist relative to the document, as a renderer resolves it.
* inside inline code and fenced code blocks, a repository path: a run of path characters holding a ``/`` whose last
  part has a file extension (``benchmarks/checklist/run.py``, ``results/rade.{md,json}``) or that ends with ``/``
  after at least two parts (``src/hf_dialeval/metrics/rade/defaults/rade-minilm/``). It must exist relative to the
  document or to the repository root; ``{a,b}`` is expanded and ``*`` globbed (at least one match).

Not paths of this repository, so not checked (each rule as narrow as the documents need):

* a run that starts after ``$``, ``~``, ``<``, ``>``, ``:`` or another path character: environment variables,
  home-folder paths, ``<placeholders>`` and the rest of a URL;
* an absolute path (``/tmp/...``) and anything under ``../shared/`` (the data directory beside a checkout);
* a first part that names a user's output folder of the documented commands (``runs/``: training runs, ``hub/``:
  ``push_to_hub.py --out``, ``plots/``: ``benchmark --plot``) or a web host (``github.com/...``);
* a single folder name with a trailing ``/`` (``adapter/``, ``models/``): a part of a run's or the cache's layout.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the documents whose paths are checked
DOCUMENT_GLOBS = ("README.md", "docs/*.md", "model_cards/*.md", "metrics/*/README.md", "benchmarks/*/README.md")
#: the documents a user reads first: short, and about what the package is now
USER_DOCUMENT_GLOBS = ("README.md", "docs/*.md", "model_cards/*.md")
README_MAX_LINES = 250
MODEL_CARD_MAX_LINES = 300

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
PATH_RUN = re.compile(r"(?<![\w.\-/{}*,$~<>:])(?:\.{1,2}/)?[\w.\-{}*,]+(?:/[\w.\-{}*,]*)+")
EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,11}$")
USER_OUTPUT_FOLDERS = {"runs", "hub", "plots"}
WEB_HOST = re.compile(r"^[\w-]+(\.[\w-]+)*\.(com|org|io|net|ai|dev)$")
#: what the user documents must not name: sessions, issue numbers, commits (the check the issue gives, plus bare
#: commit hashes: 7 to 40 hex digits, at least one a digit and one a letter) and history told as numbered stages
HISTORY = re.compile(r"session|issue [0-9]|commit [0-9a-f]{7}", re.IGNORECASE)
COMMIT_HASH = re.compile(r"(?<![0-9A-Za-z])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![0-9A-Za-z])")
ORDINAL_STAGE = re.compile(r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth) stage\b", re.IGNORECASE)


def documents(patterns=DOCUMENT_GLOBS) -> list[Path]:
    return sorted({path for pattern in patterns for path in ROOT.glob(pattern) if path.is_file()})


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def expand_braces(text: str) -> list[str]:
    """``a.{md,json}`` -> ``a.md``, ``a.json`` (one level at a time, every group)."""
    match = re.search(r"\{([^{}]*)\}", text)
    if match is None:
        return [text]
    return [expanded for option in match.group(1).split(",")
            for expanded in expand_braces(text[:match.start()] + option + text[match.end():])]


def is_repository_path(run: str) -> bool:
    run = run.rstrip(".,")
    if "/" not in run or run.startswith("/"):
        return False
    parts = run.split("/")
    first = parts[1] if parts[0] in (".", "..") and len(parts) > 1 else parts[0]
    if run.startswith("../shared/") or first in USER_OUTPUT_FOLDERS or WEB_HOST.match(first):
        return False
    if run.endswith("/"):
        return len([part for part in parts if part]) >= 2
    return any(EXTENSION.search(expanded.rsplit("/", 1)[-1]) for expanded in expand_braces(run))


def exists(run: str, document: Path) -> bool:
    run = run.rstrip(".,")
    for expanded in expand_braces(run):
        for base in (document.parent, ROOT):
            candidate = str(base / expanded)
            if ("*" in expanded and glob.glob(candidate)) or Path(candidate).exists():
                break
        else:
            return False
    return True


def code_texts(text: str) -> list[str]:
    """The fenced code blocks and the inline code spans of a markdown text."""
    fenced = [match.group(0) for match in FENCE.finditer(text)]
    prose = FENCE.sub("", text)
    return fenced + [match.group(2) for match in INLINE_CODE.finditer(prose)]


def missing_paths(document: Path) -> list[str]:
    text = document.read_text(encoding="utf-8")
    missing = []
    for target in LINK.findall(INLINE_CODE.sub("", FENCE.sub("", text))):
        if URL_SCHEME.match(target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if path and not (document.parent / path).exists():
            missing.append(f"link ({target})")
    for code in code_texts(text):
        for run in PATH_RUN.findall(code):
            if is_repository_path(run) and not exists(run, document):
                missing.append(f"`{run}`")
    return missing


def test_the_rules_find_paths_and_leave_the_rest():
    assert is_repository_path("benchmarks/checklist/run.py") and is_repository_path("src/hf_dialeval/metrics/rade/")
    assert is_repository_path("results/rade.{md,json}") and is_repository_path("../model_cards/rade.md")
    for not_a_path in ("runs/fe/adapter/", "hub/", "adapter/", "../shared/data/corpora/x.json", "/tmp/he-sum",
                       "sentence-transformers/all-MiniLM-L6-v2", "0.257/0.461", "github.com/org/repo.git"):
        assert not is_repository_path(not_a_path), not_a_path
    assert PATH_RUN.findall("$HF_DIALEVAL_CACHE/models/ ~/.cache/x.json <folder>/x.md https://a.org/b.md") == []
    assert expand_braces("a/b.{md,json}") == ["a/b.md", "a/b.json"]
    sample = ROOT / "README.md"
    assert exists("benchmarks/checklist/run.py", sample) and not exists("benchmarks/checklist/nothing.py", sample)


@pytest.mark.parametrize("document", documents(), ids=_relative)
def test_every_cited_path_exists(document):
    missing = missing_paths(document)
    assert not missing, f"{_relative(document)} cites paths that do not exist: {', '.join(missing)}"


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, f"README.md has {lines} lines; keep it under {README_MAX_LINES} (move detail to docs/)"


@pytest.mark.parametrize("card", documents(("model_cards/*.md",)), ids=_relative)
def test_every_model_card_is_short(card):
    lines = card.read_text(encoding="utf-8").count("\n")
    assert lines < MODEL_CARD_MAX_LINES, (f"{_relative(card)} has {lines} lines; keep it under {MODEL_CARD_MAX_LINES} "
                                          f"(the study behind the default goes to benchmarks/<metric>/README.md)")


@pytest.mark.parametrize("card", documents(("model_cards/*.md",)), ids=_relative)
def test_every_model_card_has_hub_front_matter(card):
    """The Hub reads a card's metadata from its YAML front matter (push_to_hub.py copies the card as README.md)."""
    import yaml

    text = card.read_text(encoding="utf-8")
    assert text.startswith("---\n") and "\n---\n" in text[4:], f"{_relative(card)} has no YAML front matter"
    metadata = yaml.safe_load(text[4:text.index("\n---\n", 4) + 1])
    assert isinstance(metadata, dict) and {"license", "tags"} <= set(metadata), metadata
    for section in ("## Model details", "## Intended use", "## How to use", "## Training data",
                    "## Training procedure", "## Evaluation", "## Limitations", "## Citation"):
        assert f"\n{section}\n" in text, f"{_relative(card)} has no '{section}' section"


@pytest.mark.parametrize("document", documents(USER_DOCUMENT_GLOBS), ids=_relative)
def test_user_documents_name_no_session_issue_or_commit(document):
    found = []
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
        for pattern in (HISTORY, COMMIT_HASH, ORDINAL_STAGE):
            found += [f"line {number}: {match.group(0)!r}" for match in pattern.finditer(line)]
    assert not found, f"{_relative(document)} tells history (describe what is measured, where and how): {found}"


def test_the_readme_keeps_the_commands_ci_runs_and_the_generated_leaderboard():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert f"```bash\n{ci}\n```" in readme, "README.md must give the test command that .ci/run runs, verbatim"
    assert readme.count("<!-- leaderboard:begin -->") == 1 and readme.count("<!-- leaderboard:end -->") == 1


def test_the_adapt_route_table_is_the_registrys():
    """docs/adapting.md's table of routes: one row per metric the registry gives a route, naming the kinds of data
    its stages read."""
    from hf_dialeval.registry import METRICS

    def plain(name: str) -> str:
        return re.sub(r"[^a-z]", "", name.lower())

    routes = {plain(name): {step.data for step in spec.adaptation} for name, spec in METRICS.items() if spec.adaptation}
    text = (ROOT / "docs" / "adapting.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1:-1] for line in text.split("\n\n| metric |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]]
    documented = {plain(cells[0]): set(re.findall(r"`--(ratings|dialogues)`", cells[-1])) for cells in rows}
    assert documented == routes
