"""The record of an installed model folder's files (:data:`RECORD`), written when the folder is installed and checked
whenever it is loaded.

Hashing 1 GB of weights takes seconds, and loading a model happens far more often than installing it; so each file is
recorded with its size, its modification time, its full sha256, and a quick digest of a fixed sample of its bytes (its
size, its first MiB, :data:`BLOCKS` blocks of :data:`BLOCK` bytes at evenly spaced offsets and its last block: about 3
MiB whatever its size). A load checks sizes and quick digests (milliseconds, once per process and file version), and
the full sha256 of a file written since it was recorded (its modification time differs; ``verify`` hashed Gemma's
1.1 GB in 1.6 s from a warm page cache), once per process; ``hf-dialeval models verify`` checks every full sha256. So a file changed by any write is caught at
load; only a change that also restores the file's time, outside the sampled bytes, waits for ``verify``.

Imports no deep-learning library.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

#: The record's file name, inside the folder it describes.
RECORD = "hf_dialeval_files.json"
#: Raised when the sampling below changes: a record of another format cannot be checked, only rewritten.
FORMAT = 1
HEAD = 1 << 20
BLOCK = 1 << 16
BLOCKS = 32


def sampled_ranges(size: int) -> list[tuple[int, int]]:
    """The ``(offset, length)`` ranges the quick digest reads from a file of ``size`` bytes, in order (they overlap
    in a small file: every byte of one under 1 MiB is read)."""
    spacing = max(size - BLOCK, 0)
    blocks = [(spacing * index // (BLOCKS - 1), min(BLOCK, size)) for index in range(BLOCKS)]
    return [(0, min(HEAD, size)), *blocks, (spacing, min(BLOCK, size))]


def quick_digest(path: Path, size: int) -> str:
    """sha256 of ``size`` and of the bytes of :func:`sampled_ranges` of the file at ``path``."""
    digest = hashlib.sha256(str(size).encode("ascii"))
    with path.open("rb") as handle:
        for offset, length in sampled_ranges(size):
            digest.update(os.pread(handle.fileno(), length, offset))
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def record_files(folder: Path) -> dict[str, dict[str, int | str]]:
    """Size, sha256 and quick digest of every file under ``folder`` (sub-folders included), by relative path."""
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != RECORD):
        stat = path.stat()
        files[path.relative_to(folder).as_posix()] = {"size": stat.st_size, "sha256": file_sha256(path),
                                                      "quick": quick_digest(path, stat.st_size),
                                                      "mtime_ns": stat.st_mtime_ns}
    return files


def write_record(folder: Path) -> None:
    """Writes :data:`RECORD` into ``folder`` (atomically: a folder holding a record holds a whole one)."""
    text = json.dumps({"format": FORMAT, "files": record_files(folder)}, indent=1) + "\n"
    scratch = folder / f".{RECORD}.tmp"
    scratch.write_text(text, encoding="utf-8")
    os.replace(scratch, folder / RECORD)


def read_record(folder: Path) -> dict[str, dict[str, int | str]] | None:
    """The files that ``folder``'s record lists (``None``: it has no record, or one this version cannot check).
    ``ValueError`` when the record cannot be read."""
    path = folder / RECORD
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    files = record.get("files")
    if not isinstance(files, dict) or not all(isinstance(entry, dict) for entry in files.values()):
        raise ValueError(f"{path} lists no files")
    return files


def record_digest(folder: Path) -> str | None:
    """One sha256 over the recorded names, sizes and sha256s (``None`` without a record): two installs whose files
    differ have different digests, and computing it reads one small file."""
    try:
        files = read_record(folder)
    except (OSError, ValueError):
        return None
    if files is None:
        return None
    listing = {name: [entry.get("size"), entry.get("sha256")] for name, entry in sorted(files.items())}
    return hashlib.sha256(json.dumps(listing, sort_keys=True).encode("utf-8")).hexdigest()


def damaged_file(folder: Path, files: dict[str, dict[str, int | str]], full: bool = False) -> tuple[str, str] | None:
    """The first recorded file of ``folder`` that is not as recorded, with what is wrong (``None``: all are): missing,
    another size, another quick digest, or another sha256 (``full``, or a file written since it was recorded: its
    modification time differs, so the sample alone cannot vouch for it)."""
    for name, entry in files.items():
        path = folder / name
        try:
            stat = path.stat()
        except OSError:
            return name, "is missing"
        if stat.st_size != entry.get("size"):
            return name, f"has {stat.st_size} bytes, not the {entry.get('size')} recorded"
        version = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if _quick_digest_of(*version) != entry.get("quick"):
            return name, "does not have the content recorded"
        if (full or stat.st_mtime_ns != entry.get("mtime_ns")) and _sha256_of(*version) != entry.get("sha256"):
            return name, "does not have the sha256 recorded"
    return None


@functools.lru_cache(maxsize=None)
def _sha256_of(path: str, size: int, modified_ns: int) -> str:
    """Once per process and file version, as :func:`_quick_digest_of`."""
    return file_sha256(Path(path))


@functools.lru_cache(maxsize=None)
def _quick_digest_of(path: str, size: int, modified_ns: int) -> str:
    """Once per process and file version (a metric's loader, its model class and its tokenizer all ask for the
    folder; the file's size and time say whether it is still the one read)."""
    return quick_digest(Path(path), size)
