"""This folder's Space: the Gradio widget of the evaluate module beside this file (see
``hf_dialeval.evaluate_modules.widget``). Run it with ``python metrics/<name>/app.py`` from any directory."""

from hf_dialeval.evaluate_modules.widget import launch

launch(__file__)
