"""The signature of a scoring run: what a reader needs to tell whether two sets of scores are comparable.

Learned metrics drift with their checkpoint, the libraries and the settings (sacreBLEU's signature made the
same point for BLEU), so every scoring output carries one: the metric, the checkpoint (``default`` with the
package version, a Hub id with its revision, or a local folder with a content hash, and the backbone that a folder's
config names: every shipped default is an adapter, whose scores depend on the backbone's weights as much), the
versions of hf-dialeval, transformers and torch, the settings that change scores (dtype, token limit, device), and
how many items were scored, truncated and empty.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from hf_dialeval.modeling.checkpoints import checkpoint_names, folder_sha256
from hf_dialeval.modeling.offline_models import OFFLINE_BACKBONES, package_version

PACKAGES = ("hf-dialeval", "transformers", "torch")
#: Keys older signatures wrote under another name: old name -> the name now.
RENAMED_KEYS = {"max_tokens": "max_seq_length"}


def read_signature(signature: dict[str, Any]) -> dict[str, Any]:
    """A signature as this version writes it, whatever version wrote it (keys renamed since are renamed back)."""
    return {RENAMED_KEYS.get(key, key): value for key, value in signature.items()}


def checkpoint_identity(checkpoint: str | None, revision: str | None = None,
                        default: str | os.PathLike | None = None) -> dict[str, Any]:
    """How to find the exact weights again: ``{"name": "default", "version": ...}`` for the shipped default (with
    the hash of ``default``, the folder or offline backbone it loads: a default can change within a version),
    ``{"name": <folder>, "sha256": <content hash>}`` for a local folder (with ``"backbone"``: :func:`backbone_identity`
    of the backbone its config names), ``{"name": <hub id>, "revision": ...}`` for a Hub model (the offline copy of a
    Hub id: :func:`backbone_identity`). Comma-separated names (an ensemble) give a list under ``"members"``."""
    if checkpoint is None:
        identity = {"name": "default", "version": package_version("hf-dialeval")}
        if default is not None:
            identity.update((key, value) for key, value in checkpoint_identity(str(default)).items() if key != "name")
        return identity
    members = checkpoint_names(checkpoint)
    if len(members) > 1:
        return {"name": checkpoint, "members": [checkpoint_identity(member) for member in members]}
    path = Path(checkpoint).expanduser()
    if path.is_dir():
        identity = {"name": str(path.resolve()), "sha256": folder_sha256(path)}
        backbone = configured_backbone(path)
        if backbone is not None:
            identity["backbone"] = backbone_identity(backbone)
        return identity
    if checkpoint in OFFLINE_BACKBONES:
        return backbone_identity(checkpoint)
    return {"name": checkpoint, "revision": revision}


def configured_backbone(folder: Path) -> str | None:
    """The backbone that the config of the checkpoint ``folder`` names (``backbone_name_or_path``: what an adapter is
    merged into), or ``None``."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    backbone = config.get("backbone_name_or_path") if isinstance(config, dict) else None
    return backbone if isinstance(backbone, str) and backbone else None


def backbone_identity(name_or_path: str) -> dict[str, Any]:
    """How to find a backbone's exact weights again, resolved as loading resolves it (an offline copy first):
    an offline backbone's source and pinned weights sha256 (an installed model's also the digest of its file record,
    so two installs whose files differ differ here, without hashing its weights again), a local folder's content
    hash, else the Hub id alone."""
    if name_or_path in OFFLINE_BACKBONES:
        return {"name": name_or_path, **OFFLINE_BACKBONES[name_or_path].identity()}
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return {"name": str(path.resolve()), "sha256": folder_sha256(path)}
    return {"name": name_or_path}


def scoring_signature(metric: str, identity: dict[str, Any], settings: dict[str, Any], items: int, truncated: int,
                      empty: int) -> dict[str, Any]:
    """The signature of one scoring run (see the module docstring), ``identity`` from :func:`checkpoint_identity`
    (copied: each signature is its own)."""
    return {
        "metric": metric,
        "checkpoint": copy.deepcopy(identity),
        "versions": {name: package_version(name) for name in PACKAGES},
        **settings,
        "items": items,
        "truncated": truncated,
        "empty": empty,
    }
