"""The command line in a child process, as an operator runs it: ``python -m kafkatool ARGS``.

The child inherits the environment (``KAFKATOOL_CORPUS``; ``PYTHONPATH``, so it imports the checkout under test)
and runs in the project root, so that ``fixtures/logdir`` names the checkout's files. Tests take the ``run_cli``
fixture (``tests/conftest.py``), which is ``cli``; module-level helpers, fixtures and probes call ``cli`` or spawn
``KAFKATOOL`` themselves (a ``Popen`` to signal, a parent measuring the child's peak RSS).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
KAFKATOOL = (sys.executable, "-m", "kafkatool")
TIMEOUT = 600  # seconds: a hang fails the test instead of the run (the slowest command of the suite takes ~60 s)


class CliResult(subprocess.CompletedProcess):
    """A finished ``kafkatool`` run: ``returncode``, ``stdout``, ``stderr`` (str, or bytes with ``text=False``)."""

    def jsonl(self) -> list[dict]:
        """Every stdout line as a JSON object: ``--format jsonl``'s contract, so any other line fails."""
        return [json.loads(line) for line in self.stdout.splitlines()]


def cli(*args: object, env: Mapping[str, str | None] | None = None, cwd: str | Path = PROJECT_ROOT,
        input: str | bytes | None = None, timeout: float = TIMEOUT, text: bool = True, **kwargs: Any) -> CliResult:
    """Run ``kafkatool ARGS`` (each argument through ``str``) to the end, stdout and stderr captured unless
    ``stdout``/``stderr`` say where they go. ``env`` is laid over the inherited environment, ``None`` removing
    a variable; other keyword arguments go to ``subprocess.run`` (``stdin``, ``preexec_fn``...). ``COLUMNS`` and
    ``LINES`` are not inherited (pytest-xdist's workers set them, and a width asked for shapes text tables even when
    piped): a test that wants a width gives it in ``env``."""
    environ = {**os.environ, "COLUMNS": None, "LINES": None, **(env or {})}
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    done = subprocess.run([*KAFKATOOL, *map(str, args)], env={k: v for k, v in environ.items() if v is not None},
                          cwd=cwd, input=input, timeout=timeout, text=text, check=False, **kwargs)
    return CliResult(done.args, done.returncode, done.stdout, done.stderr)
