"""``python -m hf_dialeval.cli``: the command line (what ``torchrun`` and ``accelerate launch`` start)."""

import sys

from hf_dialeval.cli import main

sys.exit(main())
