"""ARCHITECTURE.md names every module of the tree, and every module it names exists: it cannot go stale.

A module is named by its path in backquotes (``kafkatool/loader.py``, ``formats/index.py``); a Rust module of the
native core by its file name (``frame.rs``) in the paragraph on ``native/src/``.
"""

from __future__ import annotations

import re

from .conftest import PROJECT_ROOT

TEXT = (PROJECT_ROOT / "ARCHITECTURE.md").read_text()


def python_modules() -> set[str]:
    """Every module of ``kafkatool/`` and ``formats/`` (``kafkatool/formats``, a link to ``formats/``, aside)."""
    found = {p.relative_to(PROJECT_ROOT).as_posix() for root in ("kafkatool", "formats")
             for p in (PROJECT_ROOT / root).rglob("*.py")}
    return {m for m in found if not m.startswith("kafkatool/formats/")}


def test_every_python_module_is_named() -> None:
    named = set(re.findall(r"`((?:kafkatool|formats)/[\w/]+\.py)`", TEXT))
    assert len(python_modules()) > 50
    unnamed, gone = sorted(python_modules() - named), sorted(named - python_modules())
    assert not unnamed, f"modules ARCHITECTURE.md does not name: {unnamed}"
    assert not gone, f"modules ARCHITECTURE.md names that do not exist: {gone}"


def test_every_native_module_is_named() -> None:
    modules = {p.name for p in (PROJECT_ROOT / "native" / "src").glob("*.rs")}
    named = set(re.findall(r"`(\w+\.rs)`", TEXT))
    assert modules and sorted(modules - named) == [] and sorted(named - modules) == []
