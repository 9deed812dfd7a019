import subprocess
import sys
from pathlib import Path

import datasets

from hf_dialeval.publishing import build_dataset_dict, dataset_names, write_dataset_folder

ROOT = Path(__file__).resolve().parents[1]


def test_dry_run_folder_loads_back_equal(tmp_path, data_dir):
    for name in ("fed-dialogue", "rade-chitchat", "dailydialog-plusplus"):
        folder = write_dataset_folder(name, tmp_path, data_dir)
        assert (folder / "README.md").read_text().startswith("---\n")
        reloaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "cache"))  # not a stale cache
        original, _ = build_dataset_dict(name, data_dir)
        assert set(reloaded) == set(original)
        for split in original:
            assert reloaded[split].to_list() == original[split].to_list()
            assert reloaded[split].features == original[split].features


def test_push_to_hub_script_dry_run(tmp_path, data_dir):
    result = subprocess.run(
        [sys.executable, str(ROOT / "push_to_hub.py"), "datasets", "--dry-run", "--out", str(tmp_path),
         "--name", "grade-convai2", "--data-dir", str(data_dir)],
        capture_output=True, text=True, check=True,
    )
    assert "wrote" in result.stdout
    card = (tmp_path / "grade-convai2" / "README.md").read_text()
    assert "Huang et al. (2020)" in card and "| `Coherence` |" in card
    assert (tmp_path / "grade-convai2" / "data" / "test-00000-of-00001.parquet").exists()


def test_dry_run_exports_topical_chat_with_licence_and_knowledge(tmp_path, data_dir):
    assert "topical-chat" in dataset_names()  # so that `push_to_hub.py datasets` without --name exports it
    folder = write_dataset_folder("topical-chat", tmp_path, data_dir)
    splits = ("valid_freq", "valid_rare", "test_freq", "test_rare")
    assert sorted(path.name for path in (folder / "data").iterdir()) == sorted(
        f"{split}-00000-of-00001.parquet" for split in splits)
    card = (folder / "README.md").read_text()
    assert "license: cdla-sharing-1.0" in card and "CDLA-Sharing-1.0" in card
    assert "github.com/alexa/Topical-Chat" in card and "Gopalakrishnan et al. (2019)" in card
    assert "| `knowledge` |" in card and "valid_freq: 539" in card
    test_freq = datasets.load_dataset(str(folder), split="test_freq", cache_dir=str(tmp_path / "cache"))
    assert test_freq.column_names == ["dialogue", "speakers", "knowledge"]
    assert any(text for row in test_freq["knowledge"] for text in row)
