"""``python -m gated_attention``: the command line (``tools.cli``)."""

import sys

from .tools.cli import main

sys.exit(main())
