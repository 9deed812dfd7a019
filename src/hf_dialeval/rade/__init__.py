"""RADE (Shi et al. 2023): reference-assisted dialogue evaluation with an encoder–decoder."""
