"""Shared fixtures: the data directory, found the way the CLI finds it (skipped only when absent)."""

from pathlib import Path

import pytest

from hf_dialeval.paths import DATA_DIR_ENV, find_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    found = find_data_dir()
    if found is None:
        pytest.skip(f"benchmark data not found: set ${DATA_DIR_ENV} or place shared/data beside the checkout")
    return found
