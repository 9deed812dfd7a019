"""A metric's Space: evaluate's Gradio widget for its evaluate module, rebuilt on today's Gradio.

evaluate's own metric Spaces run ``evaluate.utils.launch_gradio_widget(evaluate.load(...))``. That widget (evaluate
0.4.6, the latest) builds its table with ``gr.inputs.Dataframe`` and ``gr.outputs.Textbox``, which Gradio removed in
4.0, and every Gradio 3 release pins numpy 1 and pandas 2, below what hf-dialeval's stack (datasets, transformers)
installs. So this is the same widget on today's Gradio API, built from evaluate's own helpers: one table column per
feature of the module, a list feature (``contexts``, ``dialogues``) typed as a JSON list of utterances, a text feature
as plain text (double quotes optional), the metric card below, and the module's output (as JSON, so that its lists and
signature stay readable). Rows with an empty cell are left out, as in evaluate's widget.

Every ``metrics/<name>/app.py`` is :func:`launch` of its own folder: the module is the other ``.py`` file there (in a
Space the folder is named after the Space, not the module, so it is found by file, not by folder name).
GRADIO_SERVER_NAME / GRADIO_SERVER_PORT choose the address. Gradio is imported here only: the package does not need
it otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import evaluate
import gradio as gr
from evaluate.utils.gradio import infer_gradio_input_types, json_to_string_type, parse_gradio_data, parse_readme

from hf_dialeval.errors import DialEvalError

#: a first row to score, by input name (any other list input gets the context, any other text input the response)
EXAMPLE_CELLS = {
    "contexts": ["Hi! How are you?", "Great, I just got back from a hike."],
    "dialogues": ["Hi! How are you?", "Great, I just got back from a hike.", "Nice, where did you go?",
                  "Up the hill behind the lake: the view was worth the climb."],
    "references": "Oh nice, which trail did you take?",
    "responses": "Nice, where did you go?",
    "candidates": "Nice, where did you go?",
}


APP_FILE = "app.py"


def module_script(folder: Path) -> Path:
    """The evaluate module script of a Space folder: its one ``.py`` file beside the app."""
    scripts = sorted(path for path in folder.glob("*.py") if path.name != APP_FILE)
    if len(scripts) != 1:
        raise RuntimeError(f"{folder} should hold one evaluate module script beside {APP_FILE}, "
                           f"found {[path.name for path in scripts]}")
    return scripts[0]


def build_widget(module: evaluate.EvaluationModule, readme: Path) -> gr.Interface:
    """evaluate's widget for ``module`` (its first set of features, as evaluate's does)."""
    features = module.features[0] if isinstance(module.features, list) else module.features
    names, types = zip(*features.items())
    input_types = infer_gradio_input_types(types)  # "json" for a list of strings, "str" for a string

    def example(name: str, input_type: str) -> str:
        if input_type == "json":
            return json.dumps(EXAMPLE_CELLS.get(name, EXAMPLE_CELLS["contexts"]))
        return EXAMPLE_CELLS.get(name, EXAMPLE_CELLS["responses"])

    def compute(data):
        try:
            inputs = parse_gradio_data(data, input_types)
        except json.JSONDecodeError as error:
            raise gr.Error(f"a list column ({', '.join(n for n, t in zip(names, input_types) if t == 'json')}) "
                           f"takes a JSON list of texts, e.g. {example('contexts', 'json')}: {error}") from error
        if not any(len(values) for values in inputs.values()):
            raise gr.Error("fill in at least one row")
        try:
            return module.compute(**inputs)
        except DialEvalError as error:  # what the user gave, shown as its one line; anything else is a bug
            raise gr.Error(str(error)) from error

    return gr.Interface(
        fn=compute,
        inputs=gr.Dataframe(
            value=[[example(name, input_type) for name, input_type in zip(names, input_types)]],
            headers=list(names),
            column_count=len(names),
            row_count=1,
            datatype=json_to_string_type(input_types),
            wrap=True,
            label="Items: one row each; a list column takes a JSON list of utterances, oldest first",
        ),
        outputs=gr.JSON(label=module.name),
        description=module.info.description + "\nA list column (" + ", ".join(
            name for name, input_type in zip(names, input_types) if input_type == "json") +
        ") takes a JSON-formatted list of texts; a text column takes the text (double quotes optional).",
        title=f"Metric: {module.name}",
        article=parse_readme(readme),
        flagging_mode="never",
        api_name="predict",
    )


def launch(app_file: str) -> None:
    """Serve the widget of the Space whose ``app.py`` is ``app_file``."""
    folder = Path(app_file).resolve().parent
    build_widget(evaluate.load(str(module_script(folder))), folder / "README.md").launch()
