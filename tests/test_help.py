"""Every command's ``--help`` at 80 columns: nothing wider than the terminal, the docstring's paragraphs
reflowed to the terminal's width (the help renderer keeps hard line breaks, which cut sentences in two), and
metavars a person reads (``PATHS...``, ``text|jsonl``, ``INTEGER``), never typer's Python types."""

from __future__ import annotations

import shlex

import pytest

from kafkatool.cli.main import app

from .clirun import cli

COMMANDS = sorted(c.name for c in app.registered_commands) + ["spark scan"]
PYTHON_TYPES = ("{", "<bool>", "<list", "<str>", "<int", "<Path>", "<path>", "<float>", "NoneType")


def help_of(*command: str) -> str:
    p = cli(*command, "--help", env={"COLUMNS": "80", "TERM": "dumb"})
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_80_columns_and_paragraphs_are_reflowed(command: str) -> None:
    text = help_of(*command.split())
    assert all(len(line) <= 80 for line in text.splitlines()), [x for x in text.splitlines() if len(x) > 80]
    assert "\nExamples:\n" in text
    # the examples are pasteable: the renderer wrapped none of them (every line keeps its indentation), and
    # each command with its backslash continuations is whole shell words
    examples = text.split("\nExamples:\n", 1)[1].splitlines()
    assert all(not line.strip() or line.startswith("  ") for line in examples), examples
    joined = "\n".join(line.strip() for line in examples).replace(" \\\n", " ")
    for cmd in filter(None, joined.split("\n")):
        assert cmd.startswith(("kafkatool ", "#", "spark-submit ", "psql ", "jq ")), cmd
        shlex.split(cmd, comments=True)  # balanced quotes
    callback = next((c.callback for c in app.registered_commands if c.name == command), None)
    if callback is not None:
        assert all("\n" not in para for para in callback.__doc__.split("\n\n")), command


@pytest.mark.parametrize("command", [*COMMANDS, "", "spark"])
def test_help_shows_metavars_not_python_types(command: str) -> None:
    text = help_of(*command.split())
    assert not [t for t in PYTHON_TYPES if t in text], [line for line in text.splitlines()
                                                          if any(t in line for t in PYTHON_TYPES)]
    usage = text.splitlines()[0]
    assert usage.startswith(f"Usage: kafkatool {command}".rstrip() + " "), usage
    assert "[OPTIONS]" in usage and "paths" not in usage, usage
    if "--format" in text:  # a choice shows its choices
        assert "--format text|jsonl" in text, text


def test_usage_and_metavars_of_verify() -> None:
    text = help_of("verify")
    assert text.splitlines()[0] == "Usage: kafkatool verify [OPTIONS] PATHS..."
    for line in ("  PATHS...  ", "  -f, --format text|jsonl ", "  --fail-on info|warning|error ",
                 "  -j, --jobs INTEGER ", "  --deep "):
        assert line in text, line
    assert help_of("repair").splitlines()[0] == "Usage: kafkatool repair [OPTIONS] [PATHS...]"


def test_root_help_lists_every_command_and_the_exit_codes() -> None:
    text = help_of()
    for name in [*(c.name for c in app.registered_commands), "spark"]:
        assert f"\n  {name} " in text, name
    assert "..." not in text.split("Commands:")[1]  # each first sentence whole, not cut at 45 characters
    flat = " ".join(text.split())
    for code in ("0 clean", "1 findings", "2 usage error", "3 I/O error", "70 internal error", "130 interrupted",
                 "141 output pipe closed"):
        assert code in flat, code
