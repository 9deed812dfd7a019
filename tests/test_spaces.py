"""Every ``metrics/<name>/`` folder is a Space, as evaluate's own metrics are: its README opens with the Space's front
matter, ``app.py`` launches the metric's Gradio widget, ``requirements.txt`` installs what the app imports. One app is
started on localhost and must serve its page and score one item through Gradio's API."""

import configparser
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
METRICS_DIR = ROOT / "metrics"
FOLDERS = sorted(path for path in METRICS_DIR.iterdir() if path.is_dir())
GRADIO_MISSING = "gradio is not installed (pip install -e '.[test]' installs it): the Spaces' widgets are not run"
#: the app that starts fastest and scores fastest with its shipped default model (about 20 s to its page on 2 cores)
LIVE_APP = "holistic_eval"
START_TIMEOUT_S = 120
SCORE_TIMEOUT_S = 60


def front_matter(folder: Path) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, f"{folder}/README.md does not open with a YAML front matter block"
    return yaml.safe_load(match.group(1))


def pinned_gradio() -> str:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    pins = [line.strip() for line in config["options.extras_require"]["test"].splitlines() if line.strip()]
    gradio = [pin for pin in pins if re.match(r"gradio\s*==", pin)]
    assert gradio, "setup.cfg's test extra does not pin gradio (CI installs it to run the Spaces)"
    return gradio[0].split("==")[1].strip()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: folder.name)
def test_space_front_matter(folder):
    card = front_matter(folder)
    for key in ("title", "emoji", "colorFrom", "colorTo", "description"):
        assert card.get(key), f"{folder.name}: the front matter has no {key!r}"
    assert card["sdk"] == "gradio"
    assert card["app_file"] == "app.py" and (folder / card["app_file"]).is_file()
    assert card["pinned"] is False
    assert {"evaluate", "metric"} <= set(card["tags"])
    # the Space runs the Gradio that CI tests the app with
    assert str(card["sdk_version"]) == pinned_gradio()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: folder.name)
def test_space_requirements_install_the_package(folder):
    lines = [line.split("#")[0].strip() for line in (folder / "requirements.txt").read_text().splitlines()]
    assert "hf-dialeval" in [line for line in lines if line], f"{folder.name}/requirements.txt does not install hf-dialeval"


def test_every_space_has_the_same_app():
    """The app is the package's widget launched on its own folder (its module found by file): one three-line app.py
    serves every folder, and a copy that differs has drifted."""
    apps = {folder.name: (folder / "app.py").read_bytes() for folder in FOLDERS}
    assert len(set(apps.values())) == 1, f"the metrics/*/app.py files differ: {sorted(apps)}"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: folder.name)
def test_widget_has_one_column_per_module_feature(folder, monkeypatch):
    pytest.importorskip("gradio", reason=GRADIO_MISSING)
    import evaluate

    from hf_dialeval.evaluate_modules.widget import build_widget, module_script

    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    assert module_script(folder).name == f"{folder.name}.py"
    module = evaluate.load(str(module_script(folder)))
    widget = build_widget(module, folder / "README.md")
    table = widget.input_components[0]
    assert list(table.headers) == list(module.features)
    # the first row is a ready example: list features hold a JSON list of texts, text features a text
    row = table.value["data"][0]
    for name, cell in zip(module.features, row):
        if name in ("contexts", "dialogues"):
            assert isinstance(json.loads(cell), list) and json.loads(cell), (name, cell)
        else:
            assert isinstance(cell, str) and cell, (name, cell)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_status(url: str, timeout: float) -> int | None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # localhost only, whatever the proxy
    try:
        with opener.open(url, timeout=timeout) as response:
            return response.status
    except OSError:
        return None


@contextlib.contextmanager
def serve_space(name: str, folder: Path) -> Iterator[tuple[str, Path]]:
    """``python metrics/<name>/app.py`` served on a free localhost port from ``folder`` (its log and Gradio's files
    kept there), offline and without analytics, until it serves its page; stopped (its process group) after.
    Yields (url, log path)."""
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "GRADIO_ANALYTICS_ENABLED": "False",  # no telemetry or version check: nothing outside localhost
           "GRADIO_TEMP_DIR": str(folder / "gradio"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false",
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", "PYTHONUNBUFFERED": "1"}
    log_path = folder / "app.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, str(METRICS_DIR / name / "app.py")], cwd=folder, env=env,
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while get_status(url, timeout=5) != 200:
            if process.poll() is not None:
                pytest.fail(f"{name}: the app exited ({process.returncode}) before serving its page:\n"
                            f"{log_path.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"{name}: the app did not serve {url} within {START_TIMEOUT_S} s:\n{log_path.read_text()}")
            time.sleep(0.5)
        yield url, log_path
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture
def running_app(tmp_path, monkeypatch):
    """The LIVE_APP Space served on a free localhost port, from another directory; stopped (its process group) after."""
    pytest.importorskip("gradio", reason=GRADIO_MISSING)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # for gradio_client's httpx in this process
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    with serve_space(LIVE_APP, tmp_path) as (url, log_path):
        yield url, log_path


@pytest.mark.slow
def test_space_serves_its_page_and_scores(running_app):
    from gradio_client import Client

    url, log_path = running_app
    assert get_status(url, timeout=10) == 200
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url + "config", timeout=10) as response:
        config = json.load(response)
    assert config["title"] == f"Metric: {LIVE_APP}"

    client = Client(url, verbose=False, download_files=False)
    table = {"headers": ["contexts", "responses"],
             "data": [['["Hi! How are you?", "Great, I just got back from a hike."]', '"Nice, where did you go?"'],
                      ['["Do you like tea?"]', "Yes, with milk."]]}
    job = client.submit(table, api_name="/predict")
    try:
        result = job.result(timeout=SCORE_TIMEOUT_S)
    except Exception as error:  # the app's log says why
        pytest.fail(f"scoring through the API failed: {error!r}\n{log_path.read_text()}")
    assert len(result["overall"]) == 2
    assert all(isinstance(score, float) and 0.0 <= score <= 1.0 for score in result["overall"])
    assert result["signature"]["metric"] == "holistic-eval" and result["signature"]["items"] == 2

    # a malformed list cell is the user's error, said in the widget, not a crash of the app
    bad = {"headers": ["contexts", "responses"], "data": [["Hi there", "Hello"]]}
    with pytest.raises(Exception, match="JSON list"):
        client.submit(bad, api_name="/predict").result(timeout=SCORE_TIMEOUT_S)
