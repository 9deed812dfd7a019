"""The checkout's ``metrics/<name>/`` folders (what ``evaluate.load("metrics/<name>")`` reads) must serve
the very module scripts the package installs: a copy drifts (Dial-M's once lacked ``dtype``), a link cannot."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
METRICS_DIR = ROOT / "metrics"
#: where the package's module scripts live in the checkout (``hf_dialeval.registry.EVALUATE_MODULES_DIR`` once installed)
MODULES_DIR = ROOT / "src/hf_dialeval/evaluate_modules"
METRIC_FOLDERS = sorted(path for path in METRICS_DIR.iterdir() if path.is_dir())
PACKAGED = sorted(path.name for path in MODULES_DIR.iterdir() if (path / f"{path.name}.py").is_file())


def test_every_packaged_module_has_a_metrics_folder():
    assert PACKAGED, f"no evaluate module found under {MODULES_DIR}"
    assert sorted(folder.name for folder in METRIC_FOLDERS) == PACKAGED


@pytest.mark.parametrize("folder", METRIC_FOLDERS, ids=lambda folder: folder.name)
def test_metrics_folder_links_the_packaged_script_and_has_its_card(folder):
    script = folder / f"{folder.name}.py"
    assert script.is_symlink(), f"{script} is a copy: replace it with a link to the packaged script"
    target = Path(script.readlink())
    assert not target.is_absolute(), f"{script} -> {target}: the link must be relative to work in any checkout"
    assert script.resolve() == (MODULES_DIR / folder.name / f"{folder.name}.py").resolve()
    assert (folder / "README.md").is_file(), f"{folder} has no metric card (README.md)"
    assert (folder / "requirements.txt").is_file(), f"{folder} has no requirements.txt"
