"""``python -m kafkatool`` is the ``kafkatool`` command."""

from .cli import main

main()
