"""``python -m context_compact.cli``: the ``context-compact`` command."""

from . import main

main()
