"""Every metric's Space, served by its own ``app.py`` and used the way a visitor uses it: in a real (headless)
Chromium driven by Selenium. The example row the widget opens with is scored with the shipped default model by
pressing Submit, and the score must show in the JSON output; a bad table (a list cell that is not JSON, an utterance
that is not a text, a table emptied) must show the widget's one-line error, never a Python traceback. A screenshot
of each scored page is kept (``tmp_path``, and ``$HF_DIALEVAL_SCREENSHOTS`` when set).

The browser is Debian's ``chromium`` and ``chromium-driver`` (``tests/install_browser.sh`` installs them), driven
through the chromedriver's path, so that Selenium Manager never looks for (or downloads) one; without them these
tests skip, saying so. HolisticEval's and Dial-M's language models come from ``hf-dialeval models install smollm2-135m
gemma3-270m`` (the README's test command runs it): without them their apps report the missing model, and the test
fails naming the command. Nothing leaves localhost: the apps run with ``HF_HUB_OFFLINE=1`` and Gradio's analytics off.
"""

import math
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from test_spaces import FOLDERS, serve_space

pytestmark = pytest.mark.slow  # five apps, each loading its default model: about 3 minutes on 2 CPU cores

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
BROWSER_MISSING = (f"{CHROMIUM} and {CHROMEDRIVER} are needed to drive the Spaces in a browser: run "
                   "tests/install_browser.sh (as root, or with passwordless sudo; it installs Debian's chromium and "
                   "chromium-driver)")
SCREENSHOTS_ENV = "HF_DIALEVAL_SCREENSHOTS"
METRIC_NAMES = [folder.name for folder in FOLDERS]
#: the first scoring loads the default model (Dial-M's Gemma 3 270M the slowest, about 20 s on 2 cores)
SCORE_TIMEOUT_S = 180
ERROR_TIMEOUT_S = 30
PAGE_TIMEOUT_S = 60
WINDOW = (1280, 1000)  # wide enough to put the table and the JSON output side by side, both in the screenshot
#: the JSON output's "overall" scores: the first one, as the JSON viewer shows it (a list of numbers, one per row)
OVERALL = re.compile(r'"overall"\s*:\s*\[\s*(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|NaN|-?Infinity|null)')


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module, through Debian's chromedriver (skipped, naming the fix, without it)."""
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        pytest.skip(BROWSER_MISSING)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--no-proxy-server", "--no-first-run", "--disable-extensions",
                     f"--window-size={WINDOW[0]},{WINDOW[1]}"):
        options.add_argument(argument)
    with pytest.MonkeyPatch.context() as patch:
        # Selenium talks to the chromedriver on localhost: never through a proxy; and never asks the Selenium Manager
        patch.setenv("NO_PROXY", "127.0.0.1,localhost")
        patch.setenv("no_proxy", "127.0.0.1,localhost")
        patch.setenv("SE_AVOID_STATS", "true")
        driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
        try:
            driver.set_page_load_timeout(PAGE_TIMEOUT_S)
            yield driver
        finally:
            driver.quit()


@pytest.fixture(scope="module", params=METRIC_NAMES)
def space(request, tmp_path_factory):
    """The metric's Space: ``python metrics/<name>/app.py`` on a free localhost port, from another directory, until
    it serves its page; stopped (its process group) after the metric's tests. Yields (name, url, log path)."""
    name = request.param
    with serve_space(name, tmp_path_factory.mktemp(f"space-{name}")) as (url, log_path):
        yield name, url, log_path


def open_widget(driver, url: str):
    """Load the Space's page afresh and wait for its table and Submit button; returns the button."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    wait = WebDriverWait(driver, PAGE_TIMEOUT_S)
    wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, '[data-testid="cell-0-0"]')))
    return wait.until(expected_conditions.element_to_be_clickable(
        (By.XPATH, "//button[normalize-space(.)='Submit']")))


def toasts(driver) -> list[str]:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    texts = []
    for element in driver.find_elements(By.CSS_SELECTOR, '[data-testid="toast-text"]'):
        try:
            texts.append(element.text)
        except StaleElementReferenceException:  # a toast that went away meanwhile
            pass
    return [text for text in texts if text]


def json_output_text(driver) -> str:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        return "\n".join(element.text for element in driver.find_elements(By.CSS_SELECTOR, '[data-testid="json"]'))
    except StaleElementReferenceException:
        return ""


def assert_no_traceback(driver, what: str) -> None:
    from selenium.webdriver.common.by import By

    shown = driver.find_element(By.TAG_NAME, "body").text
    for text in (shown, driver.page_source):
        assert "Traceback" not in text, f"{what}: the page shows a Python traceback:\n{shown}"


def save_screenshot(driver, tmp_path: Path, name: str) -> Path:
    """The window's screenshot, in ``tmp_path`` and, when ``$HF_DIALEVAL_SCREENSHOTS`` is set, copied there."""
    path = tmp_path / f"{name}.png"
    assert driver.save_screenshot(str(path)), f"no screenshot saved to {path}"
    if os.environ.get(SCREENSHOTS_ENV):
        folder = Path(os.environ[SCREENSHOTS_ENV]).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, folder / path.name)
    return path


def assert_real_png(path: Path) -> None:
    """A PNG of the window's size that shows something: not blank, not one flat colour."""
    from PIL import Image

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert len(data) > 20_000, f"{path} is only {len(data)} bytes: a blank page?"
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        assert image.size[0] >= WINDOW[0] // 2 and image.size[1] >= WINDOW[1] // 2, (path, image.size)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 50, f"{path} holds {len(colours)} colours: nothing drawn?"


def test_space_scores_its_example_in_a_browser(browser, space, tmp_path):
    """Submit the example row as it opens: the JSON output shows the metric's overall score, a number."""
    name, url, log_path = space
    submit = open_widget(browser, url)
    assert browser.title == f"Metric: {name}"
    started = time.monotonic()
    submit.click()
    text = ""
    while time.monotonic() - started < SCORE_TIMEOUT_S:
        errors = toasts(browser)
        if errors:
            pytest.fail(f"{name}: scoring the example row showed an error: {errors}\n{log_path.read_text()}")
        text = json_output_text(browser)
        if OVERALL.search(text):
            break
        time.sleep(0.25)
    else:
        pytest.fail(f"{name}: no score on the page {SCORE_TIMEOUT_S} s after Submit; the output shows "
                    f"{text!r}\n{log_path.read_text()}")
    seconds = time.monotonic() - started

    score = OVERALL.search(text).group(1)
    assert score not in ("NaN", "Infinity", "-Infinity", "null"), f"{name}: the overall score shows as {score}"
    assert math.isfinite(float(score)), (name, score)
    assert '"signature"' in text and '"metric"' in text, f"{name}: the output has no signature:\n{text}"
    assert_no_traceback(browser, name)

    # the "overall" line in sight (the output scrolls within its box), then the picture of the page
    browser.execute_script(
        "const box = document.querySelector('[data-testid=\"json\"]');"
        "const key = [...box.querySelectorAll('*')].find(e => e.children.length === 0 && "
        "e.textContent.trim().startsWith('\"overall\"'));"
        "if (key) key.scrollIntoView({block: 'center'}); window.scrollTo(0, 0);")
    path = save_screenshot(browser, tmp_path, name)
    assert_real_png(path)
    print(f"{name}: overall {float(score):.4f} shown {seconds:.1f} s after Submit; screenshot {path}")


def edit_cell(driver, row: int, column: int, text: str) -> None:
    """Type ``text`` into a table cell as a visitor does: double-click it, replace what it holds, press Enter."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    selector = f'[data-testid="cell-{row}-{column}"]'
    ActionChains(driver).double_click(driver.find_element(By.CSS_SELECTOR, selector)).perform()
    editor = WebDriverWait(driver, 10).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, f'{selector} textarea[aria-label="Edit cell"]'))[0]
    editor.send_keys(Keys.CONTROL, "a")
    editor.send_keys(Keys.BACKSPACE)
    if text:
        editor.send_keys(text)
    editor.send_keys(Keys.ENTER)
    shown = f"{selector} span[data-editable]"  # the cell's text (a selected cell also holds its menu button)
    WebDriverWait(driver, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, shown).text.strip() == text,
                                    f"cell {row},{column} does not show {text!r} after editing")


#: a bad table, by case: what goes into the first (list) column's cell (None: every cell emptied), and what the
#: error says
BAD_TABLES = {
    "malformed-list": ("[not json", "takes a JSON list of texts"),
    "not-a-text": ('["Hi! How are you?", 3]', "expected a string"),
    "emptied": (None, "fill in at least one row"),
}


@pytest.mark.parametrize("case", list(BAD_TABLES))
def test_space_shows_a_bad_table_as_an_error(browser, space, tmp_path, case):
    """The visitor's mistake is said in the widget's error toast, in one line, with no traceback on the page."""
    from selenium.webdriver.common.by import By

    name, url, log_path = space
    cell, expected = BAD_TABLES[case]
    submit = open_widget(browser, url)
    columns = len(browser.find_elements(By.CSS_SELECTOR, '[data-testid^="header-"]'))
    assert columns >= 1
    if cell is None:
        for column in range(columns):
            edit_cell(browser, 0, column, "")
    else:
        edit_cell(browser, 0, 0, cell)
    submit.click()
    deadline = time.monotonic() + ERROR_TIMEOUT_S
    while not (errors := toasts(browser)):
        if OVERALL.search(json_output_text(browser)):
            pytest.fail(f"{name}, {case}: the bad table was scored:\n{json_output_text(browser)}")
        if time.monotonic() > deadline:
            pytest.fail(f"{name}, {case}: no error shown {ERROR_TIMEOUT_S} s after Submit\n{log_path.read_text()}")
        time.sleep(0.1)
    assert any(expected in error for error in errors), (name, case, errors)
    assert all("\n" not in error.strip() for error in errors), f"{name}, {case}: not a one-line error: {errors}"
    assert_no_traceback(browser, f"{name}, {case}")
    assert_real_png(save_screenshot(browser, tmp_path, f"{name}-{case}"))
