"""The modelling layer: the config and model base every metric model builds on, backbones of every family, checkpoints
(checked paths, offline models, ``peft`` adapters, the one loader) and calibration."""
