"""``kafkatool --version``: the installed distribution's version, exit 0, nothing else on stdout."""

from __future__ import annotations

from importlib.metadata import version


def test_version(run_cli) -> None:
    p = run_cli("--version")
    assert p.returncode == 0 and p.stdout == f"kafkatool {version('kafkatool')}\n" and p.stderr == ""
