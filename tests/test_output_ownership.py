"""Nothing lost or stale in ``score``'s output: one run at a time owns an output (``OUTPUT.lock``), an interrupted
run's ``OUTPUT.partial`` is never discarded without ``--resume`` or ``--overwrite``, resuming a complete output never
appends to it under its final name, and a write that fails (a full disk) says which file holds what and how to go
on."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_streaming import WordCountMetric, turn_items, write_jsonl

from hf_dialeval.cli import main
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.errors import OptionError
from hf_dialeval.inference import streaming
from hf_dialeval.inference.resume import signature_path
from hf_dialeval.inference.streaming import OutputWriteError, partial_path, score_stream
from hf_dialeval.output_lock import OutputLock, OutputLocked, StaleLockWarning, lock_path


def _holding_process(output: Path) -> subprocess.Popen:
    """Another process that takes ``output``'s lock and keeps it until it is killed."""
    code = textwrap.dedent(f"""
        import sys, time
        from hf_dialeval.output_lock import OutputLock
        with OutputLock({str(output)!r}):
            print("locked", flush=True)
            time.sleep(600)
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_an_output_another_run_writes_is_refused_and_a_dead_runs_lock_taken_over(tmp_path):
    source, output = write_jsonl(tmp_path / "in.jsonl", turn_items(12)), tmp_path / "out.jsonl"
    holder = _holding_process(output)
    try:
        with pytest.raises(OutputLocked, match=rf"^{output} is being written by another run \(process {holder.pid}, "
                                               r"started .*\): wait for it to finish, or give another --output$"):
            score_stream(WordCountMetric(), str(source), str(output), chunk_size=4)
        assert not output.exists() and not partial_path(output).exists()
    finally:
        holder.send_signal(signal.SIGKILL)  # dies holding it: the file stays, the system's lock goes
        holder.wait()
    assert json.loads(lock_path(output).read_text())["pid"] == holder.pid
    with pytest.warns(StaleLockWarning, match=rf"took over {lock_path(output)}, left by a run that is no longer "
                                              rf"running \(process {holder.pid}"):
        result = score_stream(WordCountMetric(), str(source), str(output), chunk_size=4)
    assert result.scored == 12 and output.read_text().count("\n") == 12
    assert not lock_path(output).exists()  # a finished run leaves no lock behind


def test_the_lock_is_one_per_output_and_released_on_error(tmp_path):
    output = tmp_path / "out.jsonl"
    with OutputLock(output):
        with pytest.raises(OutputLocked, match=f"process {os.getpid()}"):
            OutputLock(output).__enter__()
        with OutputLock(tmp_path / "other.jsonl"):  # another output: its own lock
            pass
    bad = turn_items(6)
    bad[0]["response"] = 7
    with pytest.raises(DialogueValidationError, match="item 0"):
        score_stream(WordCountMetric(), str(write_jsonl(tmp_path / "bad.jsonl", bad)), str(output))
    assert not lock_path(output).exists()
    with OutputLock(output):  # free again
        pass


def test_two_cli_runs_into_one_output_one_refused_the_other_complete(tmp_path):
    first = write_jsonl(tmp_path / "a.jsonl", turn_items(60000))  # long enough to be running when the second starts
    second = write_jsonl(tmp_path / "b.jsonl", turn_items(50, seed=1))
    output = tmp_path / "o.jsonl"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    command = [sys.executable, "-m", "hf_dialeval.cli", "score", "--metric", "length", "--chunk-size", "1",
               "--output", str(output)]
    running = subprocess.Popen([*command, "--input", str(first)], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not partial_path(output).exists() or partial_path(output).stat().st_size == 0:
        assert running.poll() is None, running.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    refused = subprocess.run([*command, "--input", str(second)], env=env, capture_output=True, text=True)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"hf-dialeval: error: {output} is being written by another run (process {running.pid}, "
        f"started {json.loads(lock_path(output).read_text())['started']}): wait for it to finish, or give another "
        "--output"]
    assert running.wait(timeout=300) == 0, running.stderr.read()
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert [record["id"] for record in records] == list(range(60000))
    assert json.loads(signature_path(output).read_text())["items"] == 60000


def test_an_interrupted_runs_partial_output_is_never_discarded_silently(tmp_path, capsys):
    source, output = write_jsonl(tmp_path / "in.jsonl", turn_items(12)), tmp_path / "out.jsonl"
    full = tmp_path / "full.jsonl"
    score_stream(WordCountMetric(), str(source), str(full), chunk_size=4)
    kept = "".join(full.read_text().splitlines(keepends=True)[:5])
    partial_path(output).write_text(kept)
    signature_path(partial_path(output)).write_text(signature_path(full).read_text())
    with pytest.raises(OptionError, match=rf"^{partial_path(output)} holds 5 scored items of an interrupted run: "
                                          "give --resume to continue it, or --overwrite to discard it and start "
                                          "again$"):
        score_stream(WordCountMetric(), str(source), str(output), chunk_size=4)
    assert partial_path(output).read_text() == kept
    assert main(["score", "--metric", "length", "--input", str(source), "--output", str(output)]) == 2
    assert "holds 5 scored items of an interrupted run" in capsys.readouterr().err
    assert partial_path(output).read_text() == kept
    with pytest.raises(OptionError, match="give one of them"):
        score_stream(WordCountMetric(), str(source), str(output), resume=True, overwrite=True)
    result = score_stream(WordCountMetric(), str(source), str(output), chunk_size=4, overwrite=True)
    assert (result.resumed, result.scored) == (0, 12) and output.read_bytes() == full.read_bytes()
    assert not partial_path(output).exists()


class FailingAfter(WordCountMetric):
    """Stops (as a kill would) once it has scored ``chunks`` chunks."""

    def __init__(self, chunks: int) -> None:
        self.left = chunks

    def score_chunk(self, items, level, first_index=0):
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return super().score_chunk(items, level, first_index)


def test_resuming_a_complete_output_never_appends_to_it(tmp_path):
    short, longer = turn_items(8), turn_items(20)
    output, full = tmp_path / "out.jsonl", tmp_path / "full.jsonl"
    score_stream(WordCountMetric(), str(write_jsonl(tmp_path / "short.jsonl", short)), str(output), chunk_size=4)
    complete, complete_signature = output.read_bytes(), signature_path(output).read_bytes()
    source = write_jsonl(tmp_path / "longer.jsonl", longer)
    score_stream(WordCountMetric(), str(source), str(full), chunk_size=4)
    # stopped part-way through the resumed run: the complete output is untouched, the new lines are in the partial
    with pytest.raises(KeyboardInterrupt, match="stopped after 12 scored items"):
        score_stream(FailingAfter(1), str(source), str(output), resume=True, chunk_size=4)
    assert output.read_bytes() == complete and signature_path(output).read_bytes() == complete_signature
    assert partial_path(output).read_text().count("\n") == 12
    result = score_stream(WordCountMetric(), str(source), str(output), resume=True, chunk_size=4)
    assert (result.resumed, result.scored) == (12, 8)
    assert output.read_bytes() == full.read_bytes() and not partial_path(output).exists()
    assert signature_path(output).read_text() == signature_path(full).read_text()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, a device that is always full")
def test_a_full_disk_names_the_file_and_how_to_go_on(tmp_path, capsys):
    source, output = write_jsonl(tmp_path / "in.jsonl", turn_items(12)), tmp_path / "out.jsonl"
    partial_path(output).symlink_to("/dev/full")  # every write to the partial output fails: no space left
    with pytest.raises(OutputWriteError, match=rf"^cannot write {partial_path(output)}: No space left on device; "
                                               "make room, then run the same command again$"):
        score_stream(WordCountMetric(), str(source), str(output), chunk_size=4, overwrite=True)
    assert not output.exists()
    assert main(["score", "--metric", "length", "--input", str(source), "--output", str(output), "--overwrite"]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        f"hf-dialeval: error: cannot write {partial_path(output)}: No space")


def _no_space() -> OSError:
    """What a write to a full disk raises when its data reaches the disk (at close, say): no file name."""
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_when_the_lock_is_written_leaves_no_lock_file(tmp_path, monkeypatch, capsys):
    source, output = write_jsonl(tmp_path / "small.jsonl", turn_items(3)), tmp_path / "p.jsonl"
    write, descriptors = os.write, []

    def full_disk(descriptor, data):
        if b'"pid"' in data:  # the lock's record
            descriptors.append(descriptor)
            raise _no_space()
        return write(descriptor, data)

    monkeypatch.setattr(os, "write", full_disk)
    message = f"cannot write {lock_path(output)}: No space left on device; make room, then run the same command again"
    with pytest.raises(OutputWriteError, match=f"^{re.escape(message)}$"):
        OutputLock(output).__enter__()
    with pytest.raises(OSError, match="Bad file descriptor"):  # closed
        os.fstat(descriptors[0])
    assert not lock_path(output).exists()
    argv = ["score", "--metric", "length", "--input", str(source), "--output", str(output)]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"hf-dialeval: error: {message}\n"
    assert not lock_path(output).exists() and not partial_path(output).exists()
    monkeypatch.undo()
    assert main(argv) == 0 and output.read_text().count("\n") == 3


@pytest.mark.parametrize("written, call, whole, kept", [
    ("signature", 1, 0, 0), ("chunk", 1, 0, 0), ("chunk", 3, 1, 9),
    ("signature", 2, 0, 12),  # the second signature: the complete one, at the end
])
def test_a_full_disk_says_how_to_go_on_and_going_on_works(tmp_path, monkeypatch, capsys, written, call, whole, kept):
    """The ``call``-th write of a ``written`` fails (a chunk's after ``whole`` of its lines and part of the next):
    the message names the file written, and says --resume only when there are scored items (``kept``) to resume;
    the write leaves no file cut short that the next run needs (a signature)."""
    source = write_jsonl(tmp_path / "in.jsonl", turn_items(12))
    output, full = tmp_path / "o.jsonl", tmp_path / "f.jsonl"
    argv = ["score", "--metric", "length", "--input", str(source), "--chunk-size", "4", "--output"]
    assert main([*argv, str(full)]) == 0
    if written == "chunk":
        write_all, calls = streaming._write_all, []

        def full_disk(out, data):
            calls.append(out)
            if len(calls) == call:  # a raw write that wrote part of the chunk; the next one fails
                out.write(data[:len(b"".join(data.splitlines(keepends=True)[:whole])) + 10])
                raise _no_space()
            write_all(out, data)

        monkeypatch.setattr(streaming, "_write_all", full_disk)
        failed = partial_path(output)
    else:
        write_text, signatures = Path.write_text, []

        def full_disk(path, *args, **kwargs):
            if ".signature.json" in path.name:
                signatures.append(path)
                if len(signatures) == call:
                    path.write_bytes(b"")  # opened, cut, and then no room for the text
                    raise _no_space()
            return write_text(path, *args, **kwargs)

        monkeypatch.setattr(Path, "write_text", full_disk)
        failed = signature_path(partial_path(output))
    how = (f"{partial_path(output)} keeps the {kept} items scored so far: make room, then run the same command with "
           "--resume to continue" if kept else "make room, then run the same command again")
    assert main([*argv, str(output)]) == 2
    error = capsys.readouterr().err.splitlines()[-1]  # after the progress bar's lines
    assert error == f"hf-dialeval: error: cannot write {failed}: No space left on device; {how}"
    assert not output.exists()
    monkeypatch.undo()
    assert main([*argv, str(output), *(["--resume"] if kept else [])]) == 0
    assert output.read_bytes() == full.read_bytes()
    assert json.loads(signature_path(output).read_text())["items"] == 12


def test_a_full_disk_while_a_complete_output_is_copied_to_resume_it(tmp_path, monkeypatch, capsys):
    items = turn_items(12)
    output, full = tmp_path / "o.jsonl", tmp_path / "f.jsonl"
    argv = ["score", "--metric", "length", "--chunk-size", "4", "--input"]
    assert main([*argv, str(write_jsonl(tmp_path / "short.jsonl", items[:8])), "--output", str(output)]) == 0
    longer = write_jsonl(tmp_path / "in.jsonl", items)
    assert main([*argv, str(longer), "--output", str(full)]) == 0

    def full_disk(source, target):
        Path(target).write_bytes(Path(source).read_bytes()[:100])  # cut short mid-line
        raise _no_space()

    monkeypatch.setattr(shutil, "copyfile", full_disk)
    assert main([*argv, str(longer), "--output", str(output), "--resume"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"hf-dialeval: error: cannot write {partial_path(output)}: No space left on device; {output} keeps the 8 items "
        "scored so far: make room, then run the same command with --resume to continue")
    monkeypatch.undo()
    assert main([*argv, str(longer), "--output", str(output), "--resume"]) == 0
    assert output.read_bytes() == full.read_bytes()


def test_a_bad_item_after_chunks_were_written_says_what_was_kept(tmp_path, capsys):
    items = turn_items(6)
    items[3]["response"] = 7
    source, output = write_jsonl(tmp_path / "in.jsonl", items), tmp_path / "o.jsonl"
    argv = ["score", "--metric", "length", "--input", str(source), "--output", str(output), "--chunk-size", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()[-1]  # after the progress bar's lines
    assert err.startswith("hf-dialeval: error: item 3, field 'response': expected a string"), err
    assert err.endswith(f"; {partial_path(output)} keeps the 3 items scored before it: fix the item and run the same "
                        "command with --resume, or --overwrite to start again"), err
    assert partial_path(output).read_text().count("\n") == 3
    items[3]["response"] = "fixed"
    write_jsonl(source, items)
    assert main([*argv, "--resume"]) == 0 and output.read_text().count("\n") == 6
    # a bad item in the first chunk fails before anything is written: nothing kept, nothing said of it
    assert main(["score", "--metric", "length", "--input", str(write_jsonl(source, [{"response": 7}])), "--output",
                 str(tmp_path / "first.jsonl")]) == 2
    assert "keeps" not in capsys.readouterr().err
