"""The checkout runs in place: ``python -m kafkatool`` from the repository root imports the checkout's package (the
current directory comes first on ``sys.path``), even when ``pip install .`` (not editable) put another copy in
site-packages; ``formats/`` becomes ``kafkatool.formats`` there as the install maps it (``kafkatool/__init__.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_verify_runs_from_the_repository_root_over_a_non_editable_install(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # No cargo on PATH: the optional native core is skipped (a pure-Python wheel is enough to show the import).
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if not Path(p, "cargo").exists())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")} | {"PATH": path}
    subprocess.run([python, "-m", "pip", "install", "--quiet", str(ROOT)], env=env, check=True, timeout=600,
                   capture_output=True)
    installed = subprocess.run([python, "-c", "import kafkatool, os; print(os.path.dirname(kafkatool.__file__))"],
                               env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(installed).is_relative_to(env_dir)  # elsewhere, the installed copy is the one imported
    assert Path(installed, "formats", "record_batch.py").is_file()

    in_place = subprocess.run([python, "-m", "kafkatool", "verify", "fixtures/logdir"], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    reference = subprocess.run([sys.executable, "-m", "kafkatool", "verify", "fixtures/logdir"], cwd=ROOT,
                               capture_output=True, text=True, timeout=120)
    assert in_place.returncode == 0, in_place.stderr
    assert in_place.stdout == reference.stdout
    assert "clean:" in in_place.stdout


def test_every_package_is_installed() -> None:
    """pyproject lists its packages by name: a new subpackage left out of the list is missing from ``pip install .``
    (the checkout and editable installs would still find it), so the list is held to the tree."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    tree = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "kafkatool").rglob("__init__.py")}
    # Kafka's JSON message schemas: data in dirs, listed where their names are importable (setuptools warns of those)
    schemas = {f"kafkatool.formats.{'.'.join(d.relative_to(ROOT / 'formats').parts)}"
               for d in [ROOT / "formats" / "schemas", *(ROOT / "formats" / "schemas").iterdir()]
               if d.is_dir() and d.name.isidentifier()}
    assert listed == tree | {"kafkatool.formats"} | schemas
