"""Building the exact folders that ``push_to_hub.py`` uploads: benchmark/corpus datasets and metric models."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import datasets
from huggingface_hub import DatasetCard, DatasetCardData
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from hf_dialeval.data.benchmarks import BENCHMARKS, load_benchmark
from hf_dialeval.data.corpora import CORPORA
from hf_dialeval.modeling.loading import load_checkpoint
from hf_dialeval.registry import entry, exportable_metrics

#: The model cards, kept at the repository's top level (export runs from a source checkout).
MODEL_CARDS_DIR = Path(__file__).resolve().parents[2] / "model_cards"


def write_model_folder(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, card: str, folder: Path) -> Path:
    """Write a model's Hub repo folder: ``config.json`` + ``model.safetensors``, the tokenizer, and
    ``model_cards/<card>`` as ``README.md``."""
    card_path = MODEL_CARDS_DIR / card
    if not card_path.is_file():
        raise FileNotFoundError(f"model card {card_path} not found: export from a checkout of hf-dialeval")
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    shutil.copyfile(card_path, folder / "README.md")
    return folder


def export_models(name: str, checkpoint: str | os.PathLike | None, out_dir: str | os.PathLike) -> list[Path]:
    """Write the Hub repo folder of metric ``name``'s model (its shipped default when ``checkpoint`` is None, any
    adapter merged into a full model): config, safetensors weights, tokenizer, and its registry entry's card as
    README.md. The folder is named after the entry's ``hub_repo`` (the default) or the checkpoint. Loads back with
    ``AutoModel.from_pretrained`` after ``import hf_dialeval``."""
    if name not in exportable_metrics():
        raise KeyError(f"no model to publish for metric {name!r}; publishable: {exportable_metrics()}")
    spec = entry(name)
    model, tokenizer = load_checkpoint(name, checkpoint)
    repo = spec.hub_repo if checkpoint is None else Path(checkpoint).name or str(checkpoint).rstrip("/").split("/")[-1]
    return [write_model_folder(model, tokenizer, spec.card, Path(out_dir) / repo)]


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
    (folder / "data").mkdir(parents=True, exist_ok=True)
    for split, dataset in dataset_dict.items():
        dataset.to_parquet(str(folder / "data" / f"{split}-00000-of-00001.parquet"))
    card.save(folder / "README.md")
    return folder


def dataset_names() -> list[str]:
    return [*BENCHMARKS, *CORPORA]
