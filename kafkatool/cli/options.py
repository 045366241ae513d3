"""Options several commands share, declared once (same flag, same help, same default everywhere)."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from typing import Annotated

import typer

MaxDecompressed = Annotated[
    int, typer.Option(help="Refuse to decompress a batch beyond N bytes (decompression-bomb guard).", min=1,
                     metavar="N")
]
MaxBatchBytes = Annotated[
    int, typer.Option(help="Treat an entry declaring more than N bytes as a corrupt length.", min=61, metavar="N")
]
DEFAULT_MAX_DECOMPRESSED = 128 * 1024 * 1024
DEFAULT_MAX_BATCH_BYTES = 256 * 1024 * 1024
