import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import yaml
from test_spaces import front_matter, pinned_gradio

import hf_dialeval
from hf_dialeval import publishing
from hf_dialeval.inference.signature import configured_backbone
from hf_dialeval.publishing import SPACES_DIR, build_dataset_dict, dataset_names, space_metrics, write_dataset_folder
from hf_dialeval.registry import METRICS, exportable_metrics

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


# --- Spaces and model cards --------------------------------------------------------------------------------

#: The Hub id each exported default is built from (its card's base_model).
BASE_MODELS = {
    "dial-m": "google/gemma-3-270m",
    "fined-eval": "sentence-transformers/all-MiniLM-L6-v2",
    "holistic-eval": "HuggingFaceTB/SmolLM2-135M-Instruct",
    "panel": None,  # no backbone: it reads its members' scores
    "quantidce": "sentence-transformers/all-MiniLM-L6-v2",
    "rade": "sentence-transformers/all-MiniLM-L6-v2",
}


@pytest.fixture(scope="module")
def push_to_hub():
    """The script as a module, so that its ``main`` runs in this process (the modules it imports are loaded once)."""
    spec = importlib.util.spec_from_file_location("push_to_hub", ROOT / "push_to_hub.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def hub_calls(push_to_hub, monkeypatch) -> list[dict]:
    """What an upload would do, recorded by a stand-in for ``HfApi``: each repo's creation options and the files of
    the folder it uploads."""
    calls = []

    class RecordingHfApi:
        def create_repo(self, repo_id, **options):
            calls.append({"create": repo_id, **options})

        def upload_folder(self, repo_id, folder_path, repo_type, **options):
            calls.append({"upload": repo_id, "repo_type": repo_type, "files": folder_files(Path(folder_path))})

    monkeypatch.setattr(push_to_hub, "HfApi", RecordingHfApi)
    return calls


class NoHfApi:
    def __init__(self):
        raise AssertionError("a dry run must not reach the Hub")


def folder_files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_spaces_dry_run_writes_each_module_space(push_to_hub, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(push_to_hub, "HfApi", NoHfApi)
    modules = {METRICS[name].evaluate_module for name in space_metrics()}
    # every Space folder of the checkout (a folder with an app), and nothing else
    assert modules == {path.parent.name for path in (Path(__file__).resolve().parents[1] / "metrics").glob("*/app.py")}
    (tmp_path / "quantidce").mkdir()
    (tmp_path / "quantidce" / "stale.txt").write_text("from an earlier run")  # replaced with the whole folder
    assert push_to_hub.main(["spaces", "--dry-run", "--out", str(tmp_path)]) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(modules)  # no scratch folder left
    for module in modules:
        folder = tmp_path / module
        assert sorted(path.name for path in folder.iterdir()) == sorted(
            ["README.md", "app.py", f"{module}.py", "requirements.txt"])
        card = front_matter(folder)  # the Space's configuration, as the Hub reads it
        assert card["sdk"] == "gradio" and card["app_file"] == "app.py" and card["title"] and card["emoji"]
        assert str(card["sdk_version"]) == pinned_gradio()
        assert {"evaluate", "metric"} <= set(card["tags"])
        assert (folder / "README.md").read_bytes() == (SPACES_DIR / module / "README.md").read_bytes()
        compile((folder / "app.py").read_text(encoding="utf-8"), str(folder / "app.py"), "exec")
        # evaluate.load("<namespace>/<module>") loads <module>.py: the package's own script
        package_script = Path(hf_dialeval.evaluate_module(module)) / f"{module}.py"
        assert (folder / f"{module}.py").read_bytes() == package_script.read_bytes()
        requirements = [line.split("#")[0].strip() for line in (folder / "requirements.txt").read_text().splitlines()]
        assert f"hf-dialeval=={hf_dialeval.__version__}" in requirements
    assert capsys.readouterr().out.count("wrote ") == len(modules)


def test_spaces_upload_creates_gradio_spaces_with_the_dry_run_files(push_to_hub, hub_calls, tmp_path):
    assert push_to_hub.main(["spaces", "--metric", "quantidce", "--metric", "rade", "--namespace", "me"]) == 0
    assert push_to_hub.main(["spaces", "--metric", "quantidce", "--metric", "rade", "--dry-run",
                             "--out", str(tmp_path)]) == 0
    creates = [call for call in hub_calls if "create" in call]
    assert creates == [{"create": f"me/{module}", "repo_type": "space", "space_sdk": "gradio", "exist_ok": True}
                       for module in ("quantidce", "rade")]
    uploads = {call["upload"]: call for call in hub_calls if "upload" in call}
    assert sorted(uploads) == ["me/quantidce", "me/rade"]
    for module in ("quantidce", "rade"):
        assert uploads[f"me/{module}"]["repo_type"] == "space"
        assert uploads[f"me/{module}"]["files"] == folder_files(tmp_path / module)


def test_a_space_whose_requirements_miss_the_package_is_one_line(push_to_hub, tmp_path, monkeypatch, capsys):
    spaces = tmp_path / "metrics"
    shutil.copytree(SPACES_DIR / "quantidce", spaces / "quantidce", symlinks=True)
    (spaces / "quantidce" / "requirements.txt").write_text("evaluate\n")
    monkeypatch.setattr(publishing, "SPACES_DIR", spaces)
    assert push_to_hub.main(["spaces", "--metric", "quantidce", "--dry-run", "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "quantidce/requirements.txt" in error and "'hf-dialeval'" in error
    assert not (tmp_path / "out" / "quantidce").exists()


def test_model_cards_name_the_library_and_the_backbone_hub_id():
    assert sorted(BASE_MODELS) == exportable_metrics()
    for name in exportable_metrics():
        spec = METRICS[name]
        card = publishing.model_card(publishing.MODEL_CARDS_DIR / spec.card, configured_backbone(Path(spec.default)))
        assert card.data.library_name == "transformers" and card.data.base_model == BASE_MODELS[name], name
        assert yaml.safe_load(str(card).split("---\n")[1]).get("base_model") == BASE_MODELS[name]


def test_a_local_backbone_leaves_base_model_out(tmp_path):
    card_path = tmp_path / "card.md"
    card_path.write_text("---\nlicense: apache-2.0\nbase_model: sentence-transformers/all-MiniLM-L6-v2\n---\n# Toy\n")
    with pytest.warns(UserWarning, match="backbone_name_or_path .* not a Hub id"):
        card = publishing.model_card(card_path, str(tmp_path))
    assert card.data.base_model is None and "base_model" not in str(card)
    assert card.data.library_name == "transformers" and card.data.license == "apache-2.0"


@pytest.mark.slow
@pytest.mark.parametrize("name", exportable_metrics())
def test_model_export_card_declares_library_and_base_model(push_to_hub, name, tmp_path, monkeypatch):
    monkeypatch.setattr(push_to_hub, "HfApi", NoHfApi)
    assert push_to_hub.main(["models", "--metric", name, "--dry-run", "--out", str(tmp_path)]) == 0
    [folder] = list(tmp_path.iterdir())
    assert folder.name == METRICS[name].hub_repo
    metadata = front_matter(folder)
    assert metadata["library_name"] == "transformers"
    assert metadata.get("base_model") == BASE_MODELS[name]
    assert json.loads((folder / "config.json").read_text()).get("backbone_name_or_path") == BASE_MODELS[name]
