"""``python -m kafkatool`` is the ``kafkatool`` command."""

from .cli.main import main

main()
