"""One run owns an output folder (``adapt`` and every ``train`` command): refused before anything loads where it is
unsafe or holds an input, one writer at a time, written beside and swapped in whole, a file that appears meanwhile
kept (the run's folder kept beside it), and what a run that died left removed by the next run, saying so."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from hf_dialeval.cli import main
from hf_dialeval.output_folder import OutputFolderError, OwnedFolder, built_path, check_output_folder, scratch_path
from hf_dialeval.output_lock import StaleLockWarning
from hf_dialeval.training.arguments import DialEvalTrainingArguments
from hf_dialeval.training.run_folder import named, owns_output_dir


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def _files(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): path.read_text() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("output", ["/", "HOME", ".", "..", "HOME_PARENT"])
def test_the_root_home_and_working_folders_are_never_an_output(tmp_path, monkeypatch, output):
    home = tmp_path / "home" / "me"
    home.mkdir(parents=True)
    work = home / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    given = {"HOME": str(home), "HOME_PARENT": str(home.parent)}.get(output, output)
    with pytest.raises(OutputFolderError, match=r"(is|holds) (the root folder|your home folder|the working folder)"):
        check_output_folder(given)


def test_an_output_that_is_holds_or_lies_inside_an_input_is_refused(tmp_path):
    ratings = tmp_path / "data" / "my_ratings.csv"
    _write(tmp_path / "data", {"my_ratings.csv": "context,response,score\n"})
    inputs = {"--ratings": str(ratings), "--init-from": str(tmp_path / "base")}
    (tmp_path / "base").mkdir()
    with pytest.raises(OutputFolderError, match="is a file: give a folder"):
        check_output_folder(ratings, inputs)
    with pytest.raises(OutputFolderError, match=f"holds the run's input --ratings {ratings}"):
        check_output_folder(tmp_path / "data", inputs)
    with pytest.raises(OutputFolderError, match="lies inside the run's input --init-from"):
        check_output_folder(tmp_path / "base" / "adapted", inputs)
    with pytest.raises(OutputFolderError, match="is the run's input --init-from"):
        check_output_folder(tmp_path / "base", inputs)
    check_output_folder(tmp_path / "adapted", inputs)  # beside the inputs: fine
    check_output_folder(tmp_path / "adapted", {"--backbone": "sentence-transformers/all-MiniLM-L6-v2"})  # a Hub id


def test_the_folder_is_swapped_in_whole_and_an_earlier_run_replaced_only_when_asked(tmp_path):
    out = tmp_path / "out"
    with OwnedFolder(out) as folder:
        _write(folder.built, {"config.json": "{}", "adapter/a.txt": "first"})
        assert not out.exists() and (tmp_path / "out.lock").exists()
        folder.commit()
    assert _files(out) == {"config.json": "{}", "adapter/a.txt": "first"}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]  # no scratch, no lock left
    with pytest.raises(OutputFolderError, match="is not empty: give another folder, or --overwrite-output-dir"), \
            OwnedFolder(out):
        pass
    with OwnedFolder(out, overwrite=True) as folder:
        _write(folder.built, {"config.json": "{\"second\": 1}"})
        folder.commit()
    assert _files(out) == {"config.json": "{\"second\": 1}"}  # nothing stale of the first run


def test_overwrite_replaces_only_an_earlier_runs_folder(tmp_path):
    out = tmp_path / "notes"
    _write(out, {"notes.txt": "mine", "thesis.tex": "mine too"})
    with pytest.raises(OutputFolderError, match=r"holds files no run wrote \(notes.txt, thesis.tex, \.\.\.\)"), \
            OwnedFolder(out, overwrite=True):
        pass
    assert _files(out) == {"notes.txt": "mine", "thesis.tex": "mine too"}


@pytest.mark.parametrize("earlier", [None, {"config.json": "{}", "training_record.json": "{}"}])
def test_a_file_that_appears_during_the_run_refuses_the_swap_and_both_are_kept(tmp_path, earlier):
    out = tmp_path / "out"
    if earlier:
        _write(out, earlier)
    with OwnedFolder(out, overwrite=True) as folder:
        _write(folder.built, {"config.json": "new"})
        _write(out, {"notes.txt": "written by someone else meanwhile"})
        with pytest.raises(OutputFolderError, match=r"changed while the run was writing \(notes.txt\): nothing in it "
                                                    r"was replaced; the run's folder is .*out\.kept-"):
            folder.commit()
    assert _files(out) == {**(earlier or {}), "notes.txt": "written by someone else meanwhile"}
    kept = [path for path in tmp_path.iterdir() if path.name.startswith("out.kept-")]
    assert len(kept) == 1 and _files(kept[0]) == {"config.json": "new"}


def test_a_second_writer_is_refused_in_one_line(tmp_path, capsys):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("context,response,score\n")
    with OwnedFolder(tmp_path / "out"):
        assert main(["adapt", "quantidce", "--ratings", str(ratings), "--output-dir", str(tmp_path / "out")]) == 2
        assert main(["train", "quantidce-kd", "--ratings", str(ratings), "--output-dir", str(tmp_path / "out")]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2 and all(f"{tmp_path / 'out'} is being written by another run (process {os.getpid()}"
                                    in error and "give another --output-dir" in error for error in errors)


def test_what_a_run_that_died_left_is_removed_by_the_next_saying_so(tmp_path):
    out = tmp_path / "out"
    _write(scratch_path(out), {"data/ratings.jsonl": "a copy of the user's data", "out/config.json": "half"})
    (tmp_path / "out.lock").write_text(json.dumps({"pid": 999999999, "started": "yesterday"}))
    with pytest.warns(StaleLockWarning) as told, OwnedFolder(out) as folder:
        assert _files(scratch_path(out)) == {}
        folder.commit()
    messages = [str(warning.message) for warning in told]
    assert any("took over" in message and "process 999999999" in message for message in messages)
    assert any(f"removed {scratch_path(out)}, left by a run over {out} that did not finish" in message
               for message in messages)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]


def test_a_resumable_runs_checkpoints_are_kept_for_resuming(tmp_path):
    out = tmp_path / "run"
    checkpoint = built_path(out) / "checkpoint-2"
    _write(checkpoint, {"trainer_state.json": "{}"})
    with pytest.raises(OutputFolderError, match=f"--resume-from-checkpoint {checkpoint} continues it, "
                                                "--overwrite-output-dir starts again"), OwnedFolder(out, resumable=True):
        pass
    assert checkpoint.is_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # resuming removes nothing, so says nothing
        with OwnedFolder(out, resume_from=checkpoint, resumable=True) as folder:
            assert (folder.built / "checkpoint-2").is_dir()
            _write(folder.built, {"config.json": "{}"})
            folder.commit()
    assert (out / "config.json").is_file() and not scratch_path(out).exists()


def test_a_train_function_owns_its_folder_and_its_record_names_it(tmp_path):
    @owns_output_dir
    def train(args):
        Path(args.output_dir, "training_record.json").write_text(json.dumps({"output_dir": args.output_dir}))
        return Path(args.output_dir)

    out = tmp_path / "run"
    args = DialEvalTrainingArguments(output_dir=str(out), report_to="none", use_cpu=True)
    assert train(args) == out and args.output_dir == str(out)
    assert json.loads((out / "training_record.json").read_text()) == {"output_dir": str(out)}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"]


def test_named_replaces_the_longest_scratch_path_first():
    paths = {"/x/out.partial/kd": "the kd stage", "/x/out.partial/kd-2": "the kd-2 stage"}
    assert named(["--init-from", "/x/out.partial/kd", "--output-dir", "/x/out.partial/kd-2"], paths) == [
        "--init-from", "the kd stage", "--output-dir", "the kd-2 stage"]


@pytest.mark.parametrize("steps, warmup, expected", [(1, 0.1, 0), (2, 0.5, 1), (100, 0.1, 10), (4, 10, 2)])
def test_the_warm_up_never_takes_every_step(steps, warmup, expected):
    args = DialEvalTrainingArguments(output_dir="unused", report_to="none", use_cpu=True, warmup_steps=warmup)
    assert args.get_warmup_steps(steps) == expected


def _adapt_refused(capsys, *arguments: str) -> str:
    """``adapt quantidce`` with ``arguments``, refused (status 2) in one line before any model loads: the line."""
    status = main(["adapt", "quantidce", "--response-column", "reply", "--score-column", "stars",
                   "--context-separator", "|", "--max-steps", "1", *arguments])
    error = capsys.readouterr().err
    assert status == 2 and error.count("\n") == 1, error
    return error


@pytest.fixture
def user_folder(tmp_path):
    """A folder of the user's: their ratings and a file of theirs beside them."""
    folder = tmp_path / "dir"
    _write(folder, {"my_ratings.csv": "context,reply,stars\nHi!|How are you?,Fine.,4\n", "notes.txt": "mine"})
    return folder


@pytest.mark.parametrize("output, message", [
    ("dir/my_ratings.csv", "is a file: give a folder"),
    ("dir", "holds the run's input --ratings"),
    (".", "is the working folder, which the run would replace whole"),
    ("/", "is the root folder"),
])
def test_adapt_never_replaces_the_users_data(tmp_path, monkeypatch, capsys, user_folder, output, message):
    monkeypatch.chdir(tmp_path)
    before = _files(tmp_path)
    error = _adapt_refused(capsys, "--ratings", "dir/my_ratings.csv", "--output-dir", output, "--overwrite-output-dir")
    assert message in error
    assert _files(tmp_path) == before  # byte for byte, and nothing added


def test_train_never_replaces_the_users_data(tmp_path, monkeypatch, capsys, user_folder):
    monkeypatch.chdir(tmp_path)
    before = _files(tmp_path)
    for output, message in (("dir/my_ratings.csv", "is a file: give a folder"),
                            ("dir", "holds the run's input --ratings dir/my_ratings.csv")):
        assert main(["train", "quantidce-kd", "--ratings", "dir/my_ratings.csv", "--output-dir", output,
                     "--overwrite-output-dir"]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and message in error, error
    assert _files(tmp_path) == before


RATINGS_HEADER = "context,reply,stars\n"
BROKEN_RATINGS = {
    "header.csv": (RATINGS_HEADER.encode(), "holds no ratings: give one per line or row"),
    "blank.jsonl": (b"\n\n  \n", "holds no ratings: give one per line or row"),
    "empty.json": (b"[]", "holds no ratings: give one per line or row"),
    "object.json": (b'{"context": "Hi!", "reply": "Hello.", "stars": 3}', "holds one JSON object: give a list"),
    "latin1.csv": (RATINGS_HEADER.encode() + "Hi!,Caf\u00e9 ?,3\n".encode("latin-1"), "line 2: not UTF-8 text"),
}


@pytest.mark.parametrize("command", ["adapt", "train"])
@pytest.mark.parametrize("name", sorted(BROKEN_RATINGS))
def test_a_ratings_file_that_gives_no_rows_is_one_line(tmp_path, capfd, command, name):
    content, message = BROKEN_RATINGS[name]
    (tmp_path / name).write_bytes(content)
    argv = (["adapt", "quantidce"] if command == "adapt" else ["train", "quantidce-kd"]) + [
        "--ratings", str(tmp_path / name), "--response-column", "reply", "--score-column", "stars",
        "--output-dir", str(tmp_path / "out")]
    assert main(argv) == 2
    error = capfd.readouterr().err  # the process's own stderr: a library's log line would show here
    assert error.count("\n") == 1 and f"{tmp_path / name}" in error and message in error, error
    assert sorted(path.name for path in tmp_path.iterdir()) == [name]  # no output, lock or scratch left


@pytest.mark.parametrize("rows, message", [
    (["Hi!|How are you?,Fine.,4", "Hello.,Hi.,3", "What now?,Nothing.,1"],
     "1 of its 3 rated contexts held out, fewer than 10"),
    ([f"Hi!|How are you {n}?,Fine.,{n % 5 + 1}" for n in range(20)] * 3, "4 of its 20 rated contexts held out"),
])
def test_ratings_that_cannot_answer_are_refused_before_training(tmp_path, capfd, monkeypatch, rows, message):
    import hf_dialeval.adaptation.workflow as adaptation

    monkeypatch.setattr(adaptation, "load_metric", lambda *_args, **_kwargs: pytest.fail("a model was loaded"))
    (tmp_path / "mine.csv").write_text(RATINGS_HEADER + "\n".join(rows) + "\n")
    status = main(["adapt", "quantidce", "--ratings", str(tmp_path / "mine.csv"), "--response-column", "reply",
                   "--score-column", "stars", "--context-separator", "|", "--output-dir", str(tmp_path / "out")])
    *told, error = capfd.readouterr().err.splitlines()
    assert status == 2 and message in error, error
    # duplicates are dropped, and counted in one line before the refusal
    assert told == ([] if len(set(rows)) == len(rows) else
                    [f"hf-dialeval: warning: {tmp_path / 'mine.csv'}: 40 duplicate rows dropped (identical in every "
                     "column to an earlier row)"])


def test_every_train_command_owns_its_output_folder():
    from hf_dialeval.registry import train_commands

    owned = owns_output_dir(lambda args: args).__code__
    assert {name: command.train_function.__code__ is owned for name, command in train_commands().items()} == {
        name: True for name in train_commands()}



def test_a_train_commands_inputs_are_its_own_options_that_name_a_path(tmp_path, monkeypatch):
    from hf_dialeval.registry import train_commands

    monkeypatch.chdir(tmp_path)
    _write(tmp_path, {"teacher/config.json": "{}", "ratings.csv": "x", "mean": "a file named like a choice"})
    options = train_commands()["quantidce-kd"].options(output_dir="out", teacher="teacher", ratings="ratings.csv",
                                                      data_dir=str(tmp_path / "data"))
    assert options.input_paths() == {"--teacher": "teacher", "--ratings": "ratings.csv",
                                     "--data-dir": str(tmp_path / "data")}
    holistic = train_commands()["holistic-eval"].options(output_dir="out", token_reduction="mean", init_from="teacher",
                                                         data_dir=str(tmp_path))
    assert holistic.input_paths() == {"--init-from": "teacher", "--data-dir": str(tmp_path)}  # a choice is no path
