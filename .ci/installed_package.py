"""Check, in the fresh environment that holds the installed wheel, that hf-dialeval runs from there: it is imported
from that environment (not from a checkout), the README's `hf-dialeval score` wrote a finite score per input item,
and `evaluate.load(hf_dialeval.evaluate_module("quantidce"))` loads the module script shipped in the wheel and scores.

    python .ci/installed_package.py SCORED.jsonl INPUT.jsonl CHECKOUT
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import evaluate

import hf_dialeval


def check(condition: bool, message: str) -> None:
    if not condition:
        sys.exit(f"installed-package check failed: {message}")


def finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def main(scored: Path, source: Path, checkout: Path) -> None:
    package = Path(hf_dialeval.__file__).resolve().parent
    check(package.is_relative_to(Path(sys.prefix).resolve()), f"hf_dialeval imported from {package}, not from "
          f"the environment {sys.prefix}")
    check(not package.is_relative_to(checkout.resolve()), f"hf_dialeval imported from the checkout ({package})")

    lines = scored.read_text(encoding="utf-8").splitlines()
    inputs = source.read_text(encoding="utf-8").splitlines()
    check(len(lines) == len(inputs), f"{scored} has {len(lines)} lines for {len(inputs)} input items")
    for number, line in enumerate(lines, 1):
        record = json.loads(line)
        check(finite(record.get("overall")), f"{scored} line {number}: overall is {record.get('overall')!r}")
        check(record.get("scores") and all(finite(value) for value in record["scores"].values()),
              f"{scored} line {number}: scores are {record.get('scores')!r}")
    print(f"hf-dialeval score: {len(lines)} items, overall {[json.loads(line)['overall'] for line in lines]}")

    folder = Path(hf_dialeval.evaluate_module("quantidce")).resolve()
    check(folder.is_relative_to(package), f"the quantidce module is {folder}, outside the installed package")
    module = evaluate.load(str(folder))
    result = module.compute(contexts=[["Hi!"]], responses=["Hello, how are you?"])
    print(f"evaluate quantidce: {result}")
    check(len(result["overall"]) == 1 and finite(result["overall"][0]) and 1.0 <= result["overall"][0] <= 5.0,
          f"quantidce overall is {result['overall']!r}, not one score on the 1-5 scale")
    check(result["coherence"] == result["overall"] and result["signature"]["metric"] == "quantidce",
          f"quantidce returned {sorted(result)} with signature {result.get('signature')!r}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*map(Path, sys.argv[1:]))
