"""The one place that picks the byte-level core: the Rust extension ``kafkatool._native``, or pure Python.

``CORE`` is the extension module, or ``None`` when it is not built (an install without cargo) or when
``KAFKATOOL_PURE_PYTHON=1`` asks for the pure-Python reader. :mod:`kafkatool.records` reads
``CORE`` at each call and hands the common case to it (whole v2 batches of a window; the records of a
v2 batch; compressed payloads); everything else, every check and every finding stays in Python,
which is also the readable reference the native core is tested against (``tests/test_native.py``).

The crate lives in ``native/`` (see its ``src/lib.rs``); ``kafkatool/_native.pyi`` types and documents what it
exports, each function with its pure-Python twin. ``CORE`` and :func:`available` are that module (a module cannot
be named as a type: checkers infer it from the import, and read its API from the stub) or ``None``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

PURE_ENV = "KAFKATOOL_PURE_PYTHON"


def available():  # -> kafkatool._native (typed by _native.pyi) | None
    """The extension module if it is installed, whatever ``KAFKATOOL_PURE_PYTHON`` says."""
    try:
        # Here, not at the top: the extension is optional, and a KAFKATOOL_PURE_PYTHON run never loads it.
        from . import _native
    except ImportError:  # built without cargo: the pure-Python reader does everything
        return None
    return _native


def _load():  # -> kafkatool._native (typed by _native.pyi) | None
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    return available()


CORE = _load()


@contextmanager
def using(core: ModuleType | None) -> Iterator[None]:
    """Read with ``core`` (``None``: pure Python) inside the block: for tests and benchmarks that
    compare both readers in one process."""
    global CORE
    saved, CORE = CORE, core
    try:
        yield
    finally:
        CORE = saved
