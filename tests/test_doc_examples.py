"""The documents' examples run as a user pastes them: every code block of the documents ``tests/test_docs.py`` checks
(README.md, docs/*.md, model_cards/*.md, metrics/*/README.md, benchmarks/*/README.md) that is marked runnable is run,
so that a broken example fails the suite.

The marker is an HTML comment, invisible on GitHub and the Hub, alone on the line right before the opening fence:

* ``<!-- doctest -->``: run in every test run (a block that takes seconds);
* ``<!-- doctest: slow -->``: run under ``pytest.mark.slow``, so the full ``python -m pytest -q`` runs it and
  ``-m "not slow"`` leaves it out: a block that scores a benchmark, exports, or loads several models or a language
  model (keep it to a minute or two on 2 CPU cores: every slow block together adds a few minutes to CI).

A block without a marker is not run: one that needs a Hub token or another download, creates an environment, runs
for many minutes (a training run, ``hf-dialeval leaderboard`` over every metric, a checklist over a corpus) or names
a placeholder (``<options>``, ``"<this repo>"``). A marker that is not alone on its line in one of the two forms, is
not followed by a fence on the next line, or marks a block that is neither ``python`` nor ``bash`` fails
``test_markers_are_used_as_documented``.

How a marked block runs, offline (``HF_HUB_OFFLINE=1``):

* ``python``: a fresh interpreter (the one running the tests) runs it as a script, so it imports what it needs itself;
* ``bash``: ``bash -euo pipefail`` with that interpreter's ``bin`` folder first on ``PATH`` (``hf-dialeval``).

Its working directory is a temporary folder holding what the examples cite (:func:`workdir`); every output
(``scored.jsonl``, ``r.json``, ``hub/``) lands there, never in the checkout. A block that reads the data directory
(:data:`READS_DATA`: it names ``../shared/data``, loads a benchmark or corpus, or exports the datasets) gets the
``data_dir`` fixture, so it is skipped when the data is absent: ``../shared/data`` in the block is replaced by the folder found, and
``$HF_DIALEVAL_DATA_DIR`` names it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_docs import FENCE, ROOT, _relative, documents

from hf_dialeval.data.paths import DATA_DIR_ENV

#: a line that means to be a marker (an HTML comment opening with "doctest"), and the two forms one may take
MARKER_LIKE = re.compile(r"^\s*<!--\s*doctest", re.IGNORECASE)
MARKER = re.compile(r"<!-- doctest(: slow)? -->")
#: how each language that may be marked runs
COMMANDS = {"python": lambda code: [sys.executable, "-c", code],
            "bash": lambda code: ["bash", "-euo", "pipefail", "-c", code]}
#: what makes a block read the data directory: naming it, loading a benchmark or corpus, exporting the datasets
READS_DATA = re.compile(r"\.\./shared/data|load_(benchmark|dailydialog)|push_to_hub\.py datasets")
#: the turn items the examples' ``--input turns.jsonl`` names: contexts, responses and references
TURNS = [
    {"context": ["Hi! How are you?", "Great, I just got back from a hike."], "response": "Nice, where did you go?",
     "reference": "Oh nice! Where did you hike?"},
    {"context": ["Do you like tea?"], "response": "Yes, with milk.", "reference": "Only green tea, no milk."},
]
#: longer than any marked block should take, short enough that a hung one does not stall CI
TIMEOUT_S = 900


@dataclass(frozen=True)
class Example:
    """A marked code block: its document, the line of its opening fence, its language and code."""

    document: Path
    line: int
    language: str
    code: str
    slow: bool

    @property
    def name(self) -> str:
        return f"{_relative(self.document)}:{self.line}"


def read_examples(document: Path, text: str | None = None) -> tuple[list[Example], list[str]]:
    """The marked blocks of ``document`` (of ``text``, when given, as if it were the document's), and each misuse of
    the marker as ``"line N: what is wrong"``."""
    text = document.read_text(encoding="utf-8") if text is None else text
    fences = {text.count("\n", 0, match.start()) + 1: match.group(0) for match in FENCE.finditer(text)}
    examples, problems = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not MARKER_LIKE.match(line):
            continue
        marker = MARKER.fullmatch(line)
        fence = fences.get(number + 1)
        if marker is None:
            problems.append(f"line {number}: {line.strip()!r} is neither <!-- doctest --> nor <!-- doctest: slow -->")
        elif fence is None:
            problems.append(f"line {number}: the marker is not followed by a fenced code block on the next line")
        else:
            header, _, body = fence.partition("\n")
            language = header.strip("`~ ").split(" ")[0]
            if language not in COMMANDS:
                problems.append(f"line {number}: a {language or 'plain'} block cannot run (mark python or bash)")
            else:
                examples.append(Example(document, number + 1, language, body.rpartition("\n")[0],
                                        slow=marker.group(1) is not None))
    return examples, problems


def tail(output: str, lines: int = 30, width: int = 300) -> str:
    """The last lines of a run's output, each cut to ``width`` (an error from transformers can list 400 classes)."""
    return "\n".join(line[:width] for line in output.splitlines()[-lines:])


def all_examples() -> list:
    return [pytest.param(example, id=example.name, marks=[pytest.mark.slow] if example.slow else [])
            for document in documents() for example in read_examples(document)[0]]


def test_the_marker_rules():
    text = ("<!-- doctest -->\n```python\nprint(1)\n```\n\n<!-- doctest: slow -->\n```bash\necho 1\n```\n"
            "<!-- doctest -->\n\n```bash\necho 2\n```\n<!-- doctest: fast -->\n```bash\necho 3\n```\n"
            "<!-- doctest -->\n```json\n{}\n```\n`<!-- doctest -->` in prose is no marker\n")
    examples, problems = read_examples(ROOT / "sample.md", text)
    assert [(e.line, e.language, e.code, e.slow) for e in examples] == [(2, "python", "print(1)", False),
                                                                       (7, "bash", "echo 1", True)]
    assert [problem.split(":")[0] for problem in problems] == ["line 10", "line 15", "line 19"]


@pytest.mark.parametrize("document", documents(), ids=_relative)
def test_markers_are_used_as_documented(document):
    problems = read_examples(document)[1]
    assert not problems, f"{_relative(document)} misuses the doctest marker: {problems}"


@pytest.fixture
def workdir(tmp_path) -> Iterator[Path]:
    """A working directory holding what the examples cite: the sample dialogues (``examples/``), ``push_to_hub.py``
    and ``turns.jsonl`` (two turn items with references, as the score commands' comments describe). Removed after the
    test: the exports the examples write are hundreds of MB."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copy(ROOT / "push_to_hub.py", tmp_path)
    (tmp_path / "turns.jsonl").write_text("".join(json.dumps(turn) + "\n" for turn in TURNS), encoding="utf-8")
    yield tmp_path
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.mark.parametrize("example", all_examples())
def test_the_example_runs(example, workdir, request):
    code = example.code
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "HF_HUB_OFFLINE": "1"}
    if READS_DATA.search(code):
        data_dir = str(request.getfixturevalue("data_dir"))
        code = code.replace("../shared/data", data_dir)
        env[DATA_DIR_ENV] = data_dir
    done = subprocess.run(COMMANDS[example.language](code), cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, (f"the {example.language} block at {example.name} failed (exit status "
                                  f"{done.returncode}):\n{tail(done.stdout)}\n{tail(done.stderr)}")
