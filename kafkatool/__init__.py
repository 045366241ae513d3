"""kafkatool: offline inspection and repair of Apache Kafka log directories.

Import layering (kept light so ``kafkatool --help`` starts fast):
``kafkatool.formats`` (Construct declarations) <- readers (``kafkatool.records``, ``kafkatool.smallfiles``, ...)
<- library operations (``kafkatool.dump``) <- ``kafkatool.cli`` (typer + rich, presentation only).
A module's classes are made each time it is imported, so on a command's path an immutable value is a
``NamedTuple`` (~0.07 ms to make) rather than a frozen dataclass (~0.5 ms on Python 3.11, which compiles six methods
for it); a stream mixing values with other tuples tells them apart by class, never by ``isinstance(x, tuple)``.
"""

import os.path as _path
import sys as _sys

__version__ = "0.1.0"


class _CheckoutFormats:
    """Run in place: in a checkout, ``formats/`` sits beside the package, and only an install maps it to
    ``kafkatool.formats`` (pyproject's ``package-dir``). From the repository root, ``python -m kafkatool`` imports this
    checkout's package even when a non-editable install is on the path, so the name is mapped here as the install
    maps it. Lazy: nothing is read until ``kafkatool.formats`` is first imported."""

    def __init__(self, where: str) -> None:
        self.where = where

    def find_spec(self, name: str, path: object = None, target: object = None):  # importlib's MetaPathFinder protocol
        if name != "kafkatool.formats":
            return None
        from importlib.util import spec_from_file_location

        init = _path.join(self.where, "__init__.py")
        return spec_from_file_location(name, init, submodule_search_locations=[self.where])


_here = _path.dirname(__file__)
_formats = _path.join(_path.dirname(_here), "formats")
if not _path.isdir(_path.join(_here, "formats")) and _path.isfile(_path.join(_formats, "__init__.py")):
    _sys.meta_path.append(_CheckoutFormats(_formats))
