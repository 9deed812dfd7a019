"""Building the exact folders that ``push_to_hub.py`` uploads: benchmark/corpus datasets, metric models and each
metric's evaluate Space. Each folder is written whole or not at all, replacing any earlier one, so that what a dry run
leaves is exactly what an upload sends."""

from __future__ import annotations

import os
import re
import shutil
import warnings
from pathlib import Path

import datasets
import yaml
from huggingface_hub import DatasetCard, DatasetCardData, ModelCard
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id
from transformers import AutoModel, PreTrainedModel, PreTrainedTokenizerBase

from hf_dialeval import __version__
from hf_dialeval.data.benchmarks import BENCHMARKS, load_benchmark
from hf_dialeval.data.corpora import CORPORA
from hf_dialeval.errors import DialEvalError, PathError, UnknownNameError
from hf_dialeval.folders import replacing_folder
from hf_dialeval.modeling.base import DialEvalPreTrainedModel
from hf_dialeval.modeling.checkpoint_sources import check_checkpoint
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.registry import METRICS, entry, exportable_metrics

#: The repository's top level, which holds the model cards and the Spaces' folders (publishing runs from a checkout).
CHECKOUT = Path(__file__).resolve().parents[2]
MODEL_CARDS_DIR = CHECKOUT / "model_cards"
#: ``metrics/<module>/``: a Space's card (README.md with its front matter), app and requirements; its module script
#: is a link to the package's, which the export copies.
SPACES_DIR = CHECKOUT / "metrics"
#: The library the Hub names for an exported model: it loads with ``AutoModel`` (after ``import hf_dialeval``).
LIBRARY_NAME = "transformers"
SPACE_SDK = "gradio"
SPACE_APP = "app.py"
SPACE_FILES = ("README.md", SPACE_APP, "requirements.txt")
#: A requirements line that installs this package (any spelling pip accepts, any version or extra after it).
_PACKAGE_REQUIREMENT = re.compile(r"hf[-_.]dialeval(?![\w.-])", re.IGNORECASE)


# --- models ------------------------------------------------------------------------------------------------

def hub_base_model(backbone: str | None) -> str | None:
    """The Hub id a model was built from, as its config names its backbone (``backbone_name_or_path``); ``None`` when
    that is a local folder or empty, which the Hub cannot link."""
    if not backbone or Path(backbone).expanduser().exists():
        return None
    try:
        validate_repo_id(backbone)
    except HFValidationError:
        return None
    return backbone


def model_card(card_path: Path, backbone: str | None) -> ModelCard:
    """The card ``card_path`` with the front matter keys through which the Hub links an export: ``library_name`` and
    ``base_model``, the Hub id of the backbone (``backbone``: the config's ``backbone_name_or_path``). A backbone that
    is no Hub id leaves ``base_model`` out, with a warning, rather than keep the card's, which names the default's; a
    model without a backbone (the panel) has none."""
    card = ModelCard(card_path.read_text(encoding="utf-8"))
    card.data.library_name = LIBRARY_NAME
    card.data.base_model = None if backbone is None else hub_base_model(backbone)
    if backbone is not None and card.data.base_model is None:
        warnings.warn(f"the card's base_model is left out: the checkpoint's config names backbone_name_or_path "
                      f"{backbone!r}, not a Hub id (set it to the Hub id the backbone came from for the Hub to link "
                      "it)", stacklevel=2)
    return card


def write_model_folder(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None, card: str, folder: Path
                       ) -> Path:
    """Write a model's Hub repo folder: ``config.json`` + ``model.safetensors``, the tokenizer (a model that reads
    text), and ``model_cards/<card>`` as ``README.md`` (with ``library_name`` and ``base_model``: :func:`model_card`)."""
    card_path = MODEL_CARDS_DIR / card
    if not card_path.is_file():
        raise PathError(f"model card {card_path} not found: export from a checkout of hf-dialeval")
    readme = model_card(card_path, getattr(model.config, "backbone_name_or_path", None))
    with replacing_folder(folder) as built:
        model.save_pretrained(str(built))
        if tokenizer is not None:
            tokenizer.save_pretrained(str(built))
        readme.save(built / "README.md")
    return folder


def export_models(name: str, checkpoint: str | os.PathLike | None, out_dir: str | os.PathLike) -> list[Path]:
    """Write the Hub repo folder of metric ``name``'s model (its shipped default when ``checkpoint`` is None, any
    adapter merged into a full model): config, safetensors weights, tokenizer, and its registry entry's card as
    README.md. The folder is named after the entry's ``hub_repo`` (the default) or the checkpoint. Loads back with
    ``AutoModel.from_pretrained`` after ``import hf_dialeval``."""
    if name not in exportable_metrics():
        raise UnknownNameError(f"no model to publish for metric {name!r}; publishable: {exportable_metrics()}")
    spec = entry(name)
    if issubclass(spec.model_class, DialEvalPreTrainedModel):
        model, tokenizer = load_checkpoint(name, checkpoint)
    else:  # a model that reads no text and has no backbone (the panel reads its members' scores)
        model, tokenizer = AutoModel.from_pretrained(check_checkpoint(checkpoint or spec.default)), None
    repo = spec.hub_repo if checkpoint is None else Path(checkpoint).name or str(checkpoint).rstrip("/").split("/")[-1]
    return [write_model_folder(model, tokenizer, spec.card, Path(out_dir) / repo)]


# --- Spaces ------------------------------------------------------------------------------------------------

def space_metrics() -> list[str]:
    """The metrics with an evaluate module, each published as a Space."""
    return sorted(name for name, spec in METRICS.items() if spec.evaluate_module is not None)


def space_front_matter(readme: Path) -> dict:
    """The Space's configuration: the YAML front matter of its ``README.md``."""
    match = re.match(r"---\n(.*?\n)---\n", readme.read_text(encoding="utf-8"), re.DOTALL)
    front_matter = yaml.safe_load(match.group(1)) if match else None
    if not isinstance(front_matter, dict):
        raise DialEvalError(f"{readme} does not open with the Space's YAML front matter: add a '---' block with "
                            f"title, emoji, sdk: {SPACE_SDK}, sdk_version, app_file: {SPACE_APP}")
    return front_matter


def pinned_requirements(requirements: Path, version: str = __version__) -> str:
    """``requirements``' text with its hf-dialeval line pinned to ``version``, the package being published, so that
    the Space runs the release its module script was written for."""
    lines, pinned = [], False
    for line in requirements.read_text(encoding="utf-8").splitlines():
        if _PACKAGE_REQUIREMENT.match(line.split("#")[0].strip()):
            line, pinned = f"hf-dialeval=={version}", True
        lines.append(line)
    if not pinned:
        raise DialEvalError(f"{requirements} does not install hf-dialeval: add the line 'hf-dialeval'")
    return "\n".join(lines) + "\n"


def write_space_folder(name: str, out_dir: str | os.PathLike) -> Path:
    """Write the Space folder of metric ``name``'s evaluate module, named after the module (``evaluate.load(
    "<namespace>/<module>")`` loads ``<module>.py`` from it): ``README.md`` (the Space's front matter and the module's
    card) and ``app.py`` from ``metrics/<module>/``, the module script copied from the package, and
    ``requirements.txt`` with hf-dialeval pinned to this version."""
    module = entry(name).evaluate_module
    if module is None:
        raise UnknownNameError(f"metric {name!r} has no evaluate module, so no Space; with one: {space_metrics()}")
    source = SPACES_DIR / module
    for file in SPACE_FILES:
        if not (source / file).is_file():
            raise PathError(f"{source / file} not found: publish the Spaces from a checkout of hf-dialeval")
    front_matter = space_front_matter(source / "README.md")
    if front_matter.get("sdk") != SPACE_SDK or front_matter.get("app_file") != SPACE_APP:
        raise DialEvalError(f"{source / 'README.md'}'s front matter says sdk {front_matter.get('sdk')!r}, app_file "
                            f"{front_matter.get('app_file')!r}: set 'sdk: {SPACE_SDK}' and 'app_file: {SPACE_APP}'")
    script = entry(name).evaluate_module_folder() / f"{module}.py"
    requirements = pinned_requirements(source / "requirements.txt")
    folder = Path(out_dir) / module
    with replacing_folder(folder) as built:
        for file in ("README.md", SPACE_APP):
            shutil.copyfile(source / file, built / file)
        shutil.copyfile(script, built / script.name)
        (built / "requirements.txt").write_text(requirements, encoding="utf-8")
    return folder


# --- datasets ----------------------------------------------------------------------------------------------

_CORPUS_CARDS = {
    "dailydialog": dict(
        description="DailyDialog: 13,118 human-written daily-life dialogues with per-utterance emotion and dialogue-act "
                    "labels (one row per dialogue; speakers alternate A/B).",
        source="Li et al. 2017 release (yanran.li/dailydialog)", license="cc-by-nc-sa-4.0",
        citation="Li et al. (2017). DailyDialog: A Manually Labelled Multi-turn Dialogue Dataset. IJCNLP.",
    ),
    "dailydialog-plusplus": dict(
        description="DailyDialog++: DailyDialog contexts with 5 positive, 5 adversarial-negative and 5 random-negative "
                    "responses (train: positives only).",
        source="iitmnlp/DailyDialog-plusplus", license="other",
        citation="Sai et al. (2020). Improving Dialog Evaluation with a Multi-reference Adversarial Dataset and "
                 "Large Scale Pretraining. TACL.",
    ),
    "topical-chat": dict(
        description="Topical-Chat: knowledge-grounded human-human conversations, the four splits released with the "
                    "corpus' evaluation data (valid_freq, valid_rare, test_freq, test_rare; the train split is not "
                    "included). One row per conversation: `dialogue` and `speakers` (`agent_1`/`agent_2`), where "
                    "consecutive messages of one agent are joined into one utterance so that speakers alternate; "
                    "`knowledge`: per utterance, the wiki lead sections (`FS1`-`FS3` of its `knowledge_source`) "
                    "its speaker marked as used, joined by a space, empty when it used none or only fun facts and "
                    "articles (whose texts are not included). The release's sentiment and rating fields are left "
                    "out. Licensed under the Community Data License Agreement - Sharing - Version 1.0 "
                    "(CDLA-Sharing-1.0, https://cdla.dev/sharing-1-0/) and republished under it, changed as "
                    "described here.",
        source="Amazon Alexa release (github.com/alexa/Topical-Chat)", license="cdla-sharing-1.0",
        citation="Gopalakrishnan et al. (2019). Topical-Chat: Towards Knowledge-Grounded Open-Domain "
                 "Conversations. Interspeech.",
    ),
}


def _dataset_card(name: str, dataset_dict: datasets.DatasetDict, description: str, source: str, license: str,
                  citation: str) -> DatasetCard:
    card_data = DatasetCardData(
        language=["en"], license=license, pretty_name=name, tags=["dialogue-evaluation", "hf-dialeval"],
        **({"license_name": "see-source"} if license == "other" else {}),
        configs=[{"config_name": "default",
                  "data_files": [{"split": split, "path": f"data/{split}-*"} for split in dataset_dict]}],
    )
    first = next(iter(dataset_dict.values()))
    columns = "\n".join(f"| `{column}` | `{feature}` |" for column, feature in first.features.items())
    sizes = ", ".join(f"{split}: {len(ds)}" for split, ds in dataset_dict.items())
    body = f"""# {name}

{description}

Built by hf-dialeval (`push_to_hub.py datasets`) from the original release, unchanged but for the column layout:
human ratings are averaged over annotators (non-numeric ratings such as `N/A` left out; `None` where no
annotator gave a number).

- **Source:** {source}
- **Licence:** {license} (the original authors' terms apply)
- **Rows:** {sizes}

## Columns

| column | type |
|---|---|
{columns}

## Citation

{citation}
"""
    return DatasetCard(f"---\n{card_data.to_yaml()}\n---\n{body}")


def build_dataset_dict(name: str, data_dir: str | os.PathLike | None = None) -> tuple[datasets.DatasetDict, DatasetCard]:
    """A benchmark (every split) or corpus as a ``DatasetDict`` with its dataset card."""
    if name in BENCHMARKS:
        spec = BENCHMARKS[name]
        splits = datasets.DatasetDict({s: load_benchmark(name, data_dir, split=s) for s in spec.splits})
        card_fields = dict(description=spec.description, source=spec.source, license="other", citation=spec.citation)
    elif name in CORPORA:
        loader, split_names = CORPORA[name]
        splits = datasets.DatasetDict({s: loader(split=s, data_dir=data_dir) for s in split_names})
        card_fields = _CORPUS_CARDS[name]
    else:
        raise KeyError(f"unknown dataset {name!r}; choose from {sorted([*BENCHMARKS, *CORPORA])}")
    return splits, _dataset_card(name, splits, **card_fields)


def write_dataset_folder(name: str, out_dir: str | os.PathLike, data_dir: str | os.PathLike | None = None) -> Path:
    """Write the repo folder that would be uploaded for dataset ``name``: ``README.md`` (card) and
    ``data/<split>-00000-of-00001.parquet``, the layout ``datasets.load_dataset(folder)`` reads back."""
    dataset_dict, card = build_dataset_dict(name, data_dir)
    folder = Path(out_dir) / name
    with replacing_folder(folder) as built:
        (built / "data").mkdir()
        for split, dataset in dataset_dict.items():
            dataset.to_parquet(str(built / "data" / f"{split}-00000-of-00001.parquet"))
        card.save(built / "README.md")
    return folder


def dataset_names() -> list[str]:
    return [*BENCHMARKS, *CORPORA]
