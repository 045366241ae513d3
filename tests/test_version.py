"""``kafkatool --version``: the installed distribution's version, exit 0, nothing else on stdout."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version


def test_version() -> None:
    p = subprocess.run([sys.executable, "-m", "kafkatool", "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == f"kafkatool {version('kafkatool')}\n" and p.stderr == ""
