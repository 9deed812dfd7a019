"""Auxiliary models and text tools several metrics share: sequence classifiers (NLI, QA), POS tagging."""
