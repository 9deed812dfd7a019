"""The ``hf-dialeval train <metric>`` group: each metric registers its own training command here."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class TrainCommand:
    help: str
    description: str
    #: Adds the command's options to its parser and sets ``func`` (called with the parsed namespace).
    configure: Callable[[argparse.ArgumentParser], None]


TRAIN_COMMANDS: dict[str, TrainCommand] = {}


def register_train_command(name: str, help: str, description: str) -> Callable:
    """Decorator for ``configure(parser)`` of ``hf-dialeval train <name>``."""

    def decorator(configure: Callable[[argparse.ArgumentParser], None]) -> Callable[[argparse.ArgumentParser], None]:
        TRAIN_COMMANDS[name] = TrainCommand(help, description, configure)
        return configure

    return decorator
