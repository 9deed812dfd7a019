"""Streaming scores (:mod:`hf_dialeval.inference.streaming`): JSONL and Parquet read in chunks, the output equal to scoring
everything at once, errors naming the item's place in the whole input, ``--resume`` after a kill (a partial line
cut, no duplicate, no gap, the same bytes as an uninterrupted run), and data-parallel scoring under ``torchrun``
with two CPU processes giving the single-process output to the bit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from hf_dialeval.cli import main
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.data.table_chunks import count_items, read_chunks
from hf_dialeval.errors import PathError
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.process_group import ProcessGroup
from hf_dialeval.inference.resume import ResumeError, read_output, signature_path
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.inference.streaming import partial_path, score_stream, systems_path

from conftest import save_tiny_bert

WORDS = "the a cat dog likes runs home blue tea coffee very much i you we go went see".split()


def turn_items(count: int, seed: int = 0) -> list[dict]:
    """Turn-level items of varied lengths, every fifth with a system name and every seventh with a condition."""
    generator = torch.Generator().manual_seed(seed)

    def sentence(low: int, high: int) -> str:
        length = int(torch.randint(low, high, (1,), generator=generator))
        return " ".join(WORDS[int(i)] for i in torch.randint(len(WORDS), (length,), generator=generator))

    items = []
    for index in range(count):
        item = {"context": [sentence(2, 12) for _ in range(1 + index % 3)], "response": sentence(1, 15), "id": index}
        if index % 5 == 0:
            item["system"] = f"bot-{index % 3}"
        if index % 7 == 0:
            item["condition"] = sentence(3, 6)
        items.append(item)
    return items


def write_jsonl(path: Path, items: list[dict], blank_every: int = 0) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for index, item in enumerate(items):
            handle.write(json.dumps(item) + "\n")
            if blank_every and index % blank_every == 0:
                handle.write("\n")
    return path


class WordCountMetric(DialogueMetric):
    """A metric without a model, scoring systems as a whole: the response's word count, and per system the number
    of items and their mean score. It exercises the streaming machinery alone."""

    name = "word-count"
    level = "turn"
    dimensions = ("words",)
    lowest_score = 0.0
    system_level = True

    def _score_turns(self, contexts, responses, conditions, references) -> ScoreOutput:
        words = [float(len(response.split())) for response in responses]
        return ScoreOutput({"words": words}, list(words))

    def system_level_scores(self, items, output) -> dict[str, dict[str, float]]:
        systems: dict[str, list[float]] = {}
        for item, value in zip(items, output.overall):
            systems.setdefault(item.get("system") or "all", []).append(value)
        return {name: {"items": len(values), "mean": sum(values) / len(values)} for name, values in systems.items()}


@pytest.fixture(scope="module")
def tiny_similarity_folder(tmp_path_factory) -> str:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def test_jsonl_and_parquet_are_read_in_chunks(tmp_path):
    items = turn_items(11)
    source = write_jsonl(tmp_path / "in.jsonl", items, blank_every=4)
    chunks = list(read_chunks(str(source), chunk_size=4))
    assert [len(chunk) for chunk in chunks] == [4, 4, 3]
    assert [item for chunk in chunks for item in chunk] == items
    assert count_items(source) == 11
    parquet = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(items), parquet, row_group_size=3)
    read = [item for chunk in read_chunks(str(parquet), chunk_size=5) for item in chunk]
    # a null Parquet field (the items without a system or a condition) is a missing field
    assert read == items and "system" not in read[1] and count_items(parquet) == 11


def test_a_bad_jsonl_line_is_named(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text('{"context": ["a"], "response": "b"}\n\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(DialogueValidationError, match=r"line 3: expected a JSON object"):
        list(read_chunks(str(source)))
    source.write_text('{"context": ["a"], "response": "b"}\n{"context": \n', encoding="utf-8")
    with pytest.raises(DialogueValidationError, match=r"line 2: not valid JSON"):
        list(read_chunks(str(source)))


def test_jsonl_text_users_write_is_read_or_named(tmp_path):
    source = tmp_path / "in.jsonl"
    item = '{"context": ["caf\u00e9"], "response": "ol\u00e9"}\n'
    source.write_bytes(b"\xef\xbb\xbf" + (item * 2).encode("utf-8"))  # a byte-order mark, as some editors write
    assert [i["context"] for chunk in read_chunks(str(source)) for i in chunk] == [["caf\u00e9"]] * 2
    source.write_bytes(item.encode("utf-8") + item.encode("latin-1"))
    with pytest.raises(DialogueValidationError, match=rf"^{source}, line 2: not UTF-8 text \(byte 0xe9 .*save the file"):
        list(read_chunks(str(source)))
    source.write_text(item + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(DialogueValidationError, match=r"line 2: JSON nested too deeply"):
        list(read_chunks(str(source)))
    with pytest.raises(PathError, match="is a folder: give a JSONL, CSV or Parquet file"):
        list(read_chunks(str(tmp_path)))


def _linked_to(source: Path, how: str) -> Path:
    link = source.with_name(f"{how}.jsonl")
    {"same": lambda: None, "hard": lambda: os.link(source, link), "symbolic": lambda: link.symlink_to(source)}[how]()
    return source if how == "same" else link


@pytest.mark.parametrize("how", ["same", "hard", "symbolic"])
def test_an_output_that_is_the_input_is_refused_before_anything_is_written(tmp_path, capsys, how):
    source = write_jsonl(tmp_path / "in.jsonl", turn_items(30))
    before = source.read_bytes()
    output = _linked_to(source, how)
    with pytest.raises(ValueError, match="is the input file itself"):
        score_stream(WordCountMetric(), str(source), str(output), chunk_size=4)
    assert main(["score", "--metric", "length", "--input", str(source), "--output", str(output),
                 "--chunk-size", "10"]) == 2
    assert "is the input file itself" in capsys.readouterr().err
    with open(source, encoding="utf-8") as stdin:  # hf-dialeval score --output x.jsonl < x.jsonl
        with pytest.raises(ValueError, match="is the input file itself"):
            score_stream(WordCountMetric(), stdin, str(output))
    assert source.read_bytes() == before and not partial_path(output).exists()


def test_a_failed_run_leaves_no_output_that_looks_complete(tmp_path):
    items = turn_items(30)
    items[17]["response"] = 7
    source, output = write_jsonl(tmp_path / "in.jsonl", items), tmp_path / "out.jsonl"
    with pytest.raises(DialogueValidationError, match="item 17"):
        score_stream(WordCountMetric(), str(source), str(output), chunk_size=4)
    assert not output.exists() and not signature_path(output).exists()
    assert partial_path(output).read_text(encoding="utf-8").count("\n") == 16  # the chunks before the bad one
    # a bad first chunk fails before any file is opened
    items[17]["response"], items[1]["context"] = "fine", 7
    with pytest.raises(DialogueValidationError, match="in.jsonl, line 2, column 'context': expected a list of "
                                                      "utterances or one text, got int"):
        score_stream(WordCountMetric(), str(write_jsonl(source, items)), str(tmp_path / "first.jsonl"), chunk_size=4)
    assert not list(tmp_path.glob("first.jsonl*"))


@pytest.mark.parametrize("chunk_size", [1, 3, 64])
def test_streamed_scores_equal_scoring_everything_at_once(tmp_path, chunk_size):
    items = turn_items(23)
    metric = WordCountMetric()
    expected = metric.score_items(items)
    source, output = write_jsonl(tmp_path / "in.jsonl", items), tmp_path / "out.jsonl"
    result = score_stream(metric, str(source), str(output), chunk_size=chunk_size)
    records = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [record["id"] for record in records] == list(range(23))
    assert [record["overall"] for record in records] == expected.overall
    assert [{k: v for k, v in r.items() if k in ("scores", "overall", "truncated", "empty")} for r in records] == \
        expected.records()
    assert (result.scored, result.resumed) == (23, 0) and result.signature["items"] == 23
    # system scores come from every item, not from the last chunk
    assert result.system_scores == expected.system_scores
    assert json.loads(systems_path(output).read_text()) == expected.system_scores
    assert json.loads(signature_path(output).read_text()) == result.signature


def test_errors_name_the_item_by_its_place_in_the_whole_input(tmp_path):
    items = turn_items(9)
    items[6]["response"] = 7
    source = write_jsonl(tmp_path / "in.jsonl", items)
    with pytest.raises(DialogueValidationError, match=r"^item 6, field 'response'"):
        score_stream(WordCountMetric(), str(source), str(tmp_path / "out.jsonl"), chunk_size=4)
    mixed = turn_items(5) + [{"dialogue": ["hi", "hello"]}]
    with pytest.raises(DialogueValidationError, match=r"item 5"):
        score_stream(WordCountMetric(), str(write_jsonl(tmp_path / "mixed.jsonl", mixed)),
                     str(tmp_path / "mixed-out.jsonl"), chunk_size=5)


def test_an_empty_input_is_an_error(tmp_path):
    source = tmp_path / "empty.jsonl"
    source.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no items"):
        score_stream(WordCountMetric(), str(source), str(tmp_path / "out.jsonl"))


@pytest.mark.parametrize("kept_lines, partial", [(0, True), (5, True), (8, False), (13, True), (23, False)])
def test_resume_after_a_cut_gives_the_uninterrupted_output(tmp_path, kept_lines, partial):
    items = turn_items(23)
    source = write_jsonl(tmp_path / "in.jsonl", items)
    full, cut = tmp_path / "full.jsonl", tmp_path / "cut.jsonl"
    score_stream(WordCountMetric(), str(source), str(full), chunk_size=4)
    lines = full.read_text(encoding="utf-8").splitlines(keepends=True)
    # what a kill leaves: the complete lines written, perhaps half of the next, and the signature written first
    cut.write_text("".join(lines[:kept_lines]) + (lines[kept_lines][:20] if partial and kept_lines < 23 else ""),
                   encoding="utf-8")
    first = json.loads(signature_path(full).read_text())
    signature_path(cut).write_text(json.dumps({**first, "items": 0, "truncated": 0, "empty": 0}))
    result = score_stream(WordCountMetric(), str(source), str(cut), resume=True, chunk_size=4)
    assert cut.read_bytes() == full.read_bytes()
    assert (result.resumed, result.scored) == (kept_lines, 23 - kept_lines)
    assert signature_path(cut).read_text() == signature_path(full).read_text()
    assert systems_path(cut).read_text() == systems_path(full).read_text()


def test_resume_refuses_what_it_cannot_continue(tmp_path):
    items = turn_items(10)
    source = write_jsonl(tmp_path / "in.jsonl", items)
    output = tmp_path / "out.jsonl"
    with pytest.raises(ResumeError, match="no output"):
        score_stream(WordCountMetric(), str(source), str(output), resume=True)
    score_stream(WordCountMetric(), str(source), str(output), chunk_size=4)
    # another input: the output's last line is not the input's item at that place
    other = write_jsonl(tmp_path / "other.jsonl", turn_items(20, seed=1))
    with pytest.raises(ValueError, match="another input"):
        score_stream(WordCountMetric(), str(other), str(output), resume=True, chunk_size=4)
    # an input that differs anywhere in what the output holds: every kept line is compared with its item
    for index, field, value in [(3, "response", "changed"), (6, "condition", "a persona"), (9, "id", "9")]:
        edited = turn_items(20)
        edited[index][field] = value
        with pytest.raises(ResumeError, match=rf"line {index + 1} of .* is not the score of input item {index} "
                                               rf"\(they differ in '{field}'\)"):
            score_stream(WordCountMetric(), str(write_jsonl(tmp_path / "edited.jsonl", edited)), str(output),
                         resume=True, chunk_size=4)
    removed = turn_items(20)
    del removed[5]["system"]  # a field taken out of an item is an edit too
    with pytest.raises(ResumeError, match="line 6 of .*they differ in 'system'"):
        score_stream(WordCountMetric(), str(write_jsonl(tmp_path / "edited.jsonl", removed)), str(output),
                     resume=True, chunk_size=4)
    # a shorter input than the output holds
    with pytest.raises(ValueError, match="more than the 6 of the input"):
        score_stream(WordCountMetric(), str(write_jsonl(tmp_path / "short.jsonl", items[:6])), str(output),
                     resume=True)
    # another metric (or checkpoint, or settings): its signature differs
    signature = json.loads(signature_path(output).read_text())
    signature_path(output).write_text(json.dumps({**signature, "metric": "length"}))
    with pytest.raises(ValueError, match="scored with other metric"):
        score_stream(WordCountMetric(), str(source), str(output), resume=True)
    signature_path(output).unlink()
    with pytest.raises(ResumeError, match="signature.json is missing"):
        score_stream(WordCountMetric(), str(source), str(output), resume=True)
    output.write_text('{"id": 0}\n', encoding="utf-8")
    with pytest.raises(ResumeError, match="line 1 .* not a scored item"):
        read_output(output, WordCountMetric(), cut_partial_line=False)


def test_the_cli_streams_parquet_and_refuses_resume_to_stdout(tiny_similarity_folder, tmp_path, capsys):
    items = turn_items(12)
    parquet = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(items), parquet)
    output = tmp_path / "out.jsonl"
    assert main(["score", "--metric", "similarity", "--checkpoint", tiny_similarity_folder, "--input", str(parquet),
                 "--output", str(output), "--chunk-size", "5"]) == 0
    expected = load_metric("similarity", checkpoint=tiny_similarity_folder, device="cpu").score_items(items)
    records = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [r["overall"] for r in records] == pytest.approx(expected.overall, abs=1e-6)
    assert [r["id"] for r in records] == list(range(12))
    assert main(["score", "--metric", "similarity", "--input", str(parquet), "--resume"]) == 2
    assert "--resume continues an output file" in capsys.readouterr().err
    assert main(["score", "--metric", "similarity", "--input", str(parquet), "--output",
                 str(tmp_path / "out.parquet")]) == 2
    assert "the output is JSONL" in capsys.readouterr().err


def _cli_env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_OFFLINE": "1"}


def _interrupted_run(command: list[str], output: Path, how: signal.Signals) -> subprocess.Popen:
    """``command`` writing ``output``, sent ``how`` once its partial output holds 200 kB (however long a loaded
    machine takes to get there: a signal sent before would stop the run while it imports)."""
    # Ctrl-C's default action, as in a terminal: a job started in the background (CI's, say) inherits SIGINT ignored
    run = subprocess.Popen([*command, "--output", str(output)], env=_cli_env(), stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    partial, deadline = partial_path(output), time.monotonic() + 900
    while not partial.exists() or partial.stat().st_size < 200_000:
        assert run.poll() is None, f"the run ended before it was stopped: {run.stderr.read()[-2000:]}"
        assert time.monotonic() < deadline, "the run wrote less than 200 kB in 15 minutes"
        time.sleep(0.01)
    run.send_signal(how)
    run.wait(timeout=60)
    return run


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_an_interrupted_run_resumes_to_the_uninterrupted_output(tiny_similarity_folder, tmp_path, how):
    source = write_jsonl(tmp_path / "in.jsonl", turn_items(6000))
    score = [sys.executable, "-m", "hf_dialeval.cli", "score", "--metric", "similarity", "--checkpoint",
             tiny_similarity_folder, "--input", str(source), "--chunk-size", "100"]
    full, stopped = tmp_path / "full.jsonl", tmp_path / "stopped.jsonl"
    subprocess.run([*score, "--output", str(full)], check=True, env=_cli_env(), timeout=300, capture_output=True)
    assert not partial_path(full).exists() and not signature_path(partial_path(full)).exists()
    run = _interrupted_run(score, stopped, how)
    written = partial_path(stopped).read_bytes().count(b"\n")
    assert 0 < written < 6000, "the run was not stopped mid-way"
    assert not stopped.exists(), "a stopped run left an output that looks complete"
    if how == signal.SIGINT:  # Ctrl-C: one line saying what was kept and how to go on
        assert run.returncode == 130
        stderr = run.stderr.read()
        assert "Traceback" not in stderr
        assert stderr.strip().splitlines()[-1] == (
            f"hf-dialeval: interrupted: stopped after {written} scored items; {partial_path(stopped)} holds them: run "
            "the same command with --resume to continue")
    else:
        assert run.returncode == -signal.SIGKILL
    resumed = subprocess.run([*score, "--output", str(stopped), "--resume"], env=_cli_env(), timeout=300,
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed after {written} scored items; scored {6000 - written} more" in resumed.stderr
    assert stopped.read_bytes() == full.read_bytes() and not partial_path(stopped).exists()
    assert signature_path(stopped).read_text() == signature_path(full).read_text()


@pytest.mark.skipif(not (torch.distributed.is_available() and torch.distributed.is_gloo_available()),
                    reason="torch.distributed with the gloo backend is needed")
@pytest.mark.slow
def test_two_processes_score_like_one(tiny_similarity_folder, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", turn_items(50))
    score = ["-m", "hf_dialeval.cli", "score", "--metric", "similarity", "--checkpoint", tiny_similarity_folder,
             "--input", str(source), "--chunk-size", "7"]
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    subprocess.run([sys.executable, *score, "--output", str(one)], check=True, env=_cli_env(), timeout=300,
                   capture_output=True)
    launched = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone", *score, "--output",
         str(two), "--verbose"],
        env=_cli_env(), timeout=300, capture_output=True, text=True)
    assert launched.returncode == 0, launched.stderr[-3000:]
    assert two.read_bytes() == one.read_bytes()
    assert signature_path(two).read_text() == signature_path(one).read_text()
    # a bad item stops both processes, no hang; each that reports says the same line (the launcher stops the
    # other process once one exits, so it may be stopped before it prints)
    bad = turn_items(20)
    bad[12]["response"] = 7
    failed = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone", *score[:-4],
         "--input", str(write_jsonl(tmp_path / "bad.jsonl", bad)), "--chunk-size", "7", "--output",
         str(tmp_path / "bad-out.jsonl")], env=_cli_env(), timeout=300, capture_output=True, text=True)
    assert failed.returncode != 0
    errors = [line for line in failed.stderr.splitlines() if line.startswith("hf-dialeval: error:")]
    assert 1 <= len(errors) <= 2
    assert all(line.startswith("hf-dialeval: error: item 12, field 'response'") for line in errors), errors


def test_the_process_group_of_a_single_process():
    group = ProcessGroup()
    assert (group.size, group.rank, group.is_main, group.device) == (1, 0, True, None)
    assert group.gather([["a"]]) == [["a"]]


def test_csv_is_read_as_a_person_writes_it(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text(
        '\ufeffid,context,response,condition\n'
        '1,"[""Hi!"", ""Hello, how are you?""]","Fine, thanks.",\n'
        '2,"Hi!\nHow was the hike?",,a hiker\n'
        '3,,"Just a reply.",\n', encoding="utf-8")
    items = [item for chunk in read_chunks(str(source), chunk_size=2) for item in chunk]
    assert items == [
        {"id": "1", "context": ["Hi!", "Hello, how are you?"], "response": "Fine, thanks.", "condition": ""},
        {"id": "2", "context": ["Hi!", "How was the hike?"], "response": "", "condition": "a hiker"},
        {"id": "3", "context": [], "response": "Just a reply.", "condition": ""},
    ]
    assert count_items(source) == 3
    tsv = tmp_path / "in.tsv"
    tsv.write_text('dialogue\tspeakers\n"[""Hi!"", ""Hello.""]"\t\n', encoding="utf-8")
    assert list(read_chunks(str(tsv))) == [[{"dialogue": ["Hi!", "Hello."]}]]


@pytest.mark.parametrize("text, message", [
    ("context,,response\na,b,c\n", r"line 1: column 2 of the header has no name"),
    ("context,response\na,b,c\n", r"line 2: more cells than the header's 2 columns: quote cells"),
    ('context,response\n"[""a"", oops]",b\n', r"line 2, column 'context': starts like a JSON array of utterances but is not one"),
    # the line the row starts on, not the last line of the row before it
    ('context,response\na,b\nc,d\n"e,f\ng,h\n', r"line 4: not valid CSV \(unexpected end of data\)"),
])
def test_a_bad_csv_is_named_by_file_and_line(tmp_path, text, message):
    source = tmp_path / "in.csv"
    source.write_text(text, encoding="utf-8")
    with pytest.raises(DialogueValidationError, match=rf"^{source}, {message}"):
        list(read_chunks(str(source)))


def test_a_file_whose_suffix_lies_is_named(tmp_path):
    jsonl_as_parquet = tmp_path / "items.parquet"
    write_jsonl(jsonl_as_parquet, turn_items(3))
    with pytest.raises(DialogueValidationError, match=rf"^{jsonl_as_parquet} is not a Parquet file .*perhaps JSONL: "
                                                      "name it .jsonl$"):
        list(read_chunks(str(jsonl_as_parquet)))
    with pytest.raises(DialogueValidationError, match=rf"^{jsonl_as_parquet} is not a Parquet file"):
        count_items(jsonl_as_parquet)
    parquet_as_jsonl = tmp_path / "items.jsonl"
    pq.write_table(pa.Table.from_pylist(turn_items(3)), parquet_as_jsonl)
    with pytest.raises(DialogueValidationError, match=rf"^{parquet_as_jsonl}, line 1: .*it is a Parquet file: name it "
                                                      r"\.parquet$"):
        list(read_chunks(str(parquet_as_jsonl)))


def test_an_item_of_no_known_kind_is_named(tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", [{"text": "hello"}, *turn_items(3)])
    assert main(["score", "--metric", "length", "--input", str(source)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "hf-dialeval: error: item 0: cannot tell the item's kind from its keys ['text']: a dialogue-level item has "
        "'dialogue', a turn-level item has 'context' and 'response'.")


def test_the_cli_scores_csv(tmp_path):
    source, output = tmp_path / "in.csv", tmp_path / "out.jsonl"
    source.write_text('context,response\n"Hi!\nHow are you?","Fine, thanks, and you?"\nHi!,Hello.\n', encoding="utf-8")
    assert main(["score", "--metric", "length", "--input", str(source), "--output", str(output)]) == 0
    records = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [(r["context"], r["overall"]) for r in records] == [(["Hi!", "How are you?"], 4.0), (["Hi!"], 1.0)]


def test_the_cli_reads_and_checks_each_chunk_once(tmp_path, monkeypatch):
    """``score`` checks the first chunk before the model loads and the scoring loop goes on from it: the input is
    read once, and every chunk checked once."""
    from hf_dialeval.inference import streaming
    from hf_dialeval.registry import entry

    reads, checked = [], []
    read_chunks_once = streaming.read_chunks
    monkeypatch.setattr(streaming, "read_chunks", lambda *args: reads.append(args) or read_chunks_once(*args))
    metric_class = entry("length").metric_class
    check_items = metric_class.check_items
    monkeypatch.setattr(metric_class, "check_items", classmethod(
        lambda cls, items, level, first_index=0: checked.append(first_index) or check_items(items, level, first_index)))
    source, output = write_jsonl(tmp_path / "in.jsonl", turn_items(5)), tmp_path / "out.jsonl"
    assert main(["score", "--metric", "length", "--input", str(source), "--output", str(output),
                 "--chunk-size", "2"]) == 0
    assert len(reads) == 1 and checked == [0, 2, 4]
    assert len(output.read_text(encoding="utf-8").splitlines()) == 5


def test_a_missing_checkpoint_is_refused_before_torch_imports(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", turn_items(3))
    code = ("import sys; from hf_dialeval.cli import main; "
            f"status = main(['score', '--metric', 'quantidce', '--checkpoint', {str(tmp_path / 'no-such')!r}, "
            f"'--input', {str(source)!r}]); print(status, 'torch' in sys.modules, 'transformers' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["2", "False", "False"], run.stderr
    assert run.stderr.strip() == f"hf-dialeval: error: no such folder: {tmp_path / 'no-such'}"
