"""Every command's ``--help`` at 80 columns: nothing wider than the terminal, and the docstring's paragraphs
reflowed to the terminal's width (the help renderer keeps hard line breaks, which cut sentences in two)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from kafkatool.cli.main import app

COMMANDS = sorted(c.name for c in app.registered_commands) + ["spark scan"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_80_columns_and_paragraphs_are_reflowed(command: str) -> None:
    p = subprocess.run([sys.executable, "-m", "kafkatool", *command.split(), "--help"], capture_output=True,
                       text=True, env={**os.environ, "COLUMNS": "80", "TERM": "dumb"})
    assert p.returncode == 0, p.stderr
    assert all(len(line) <= 80 for line in p.stdout.splitlines()), [x for x in p.stdout.splitlines() if len(x) > 80]
    assert "Examples" in p.stdout
    # the examples are pasteable: the renderer wrapped none of them (every line keeps its indentation), and
    # each command with its backslash continuations is whole shell words
    examples = p.stdout.split("Examples", 1)[1].splitlines()
    assert all(not line.strip() or line.startswith("   ") for line in examples), examples
    joined = "\n".join(line.strip() for line in examples).replace(" \\\n", " ")
    for cmd in filter(None, joined.split("\n")):
        assert cmd.startswith(("kafkatool ", "#", "spark-submit ", "psql ", "jq ")), cmd
        shlex.split(cmd, comments=True)  # balanced quotes
    callback = next((c.callback for c in app.registered_commands if c.name == command), None)
    if callback is not None:
        assert all("\n" not in para for para in callback.__doc__.split("\n\n")), command
