"""kafkatool: offline inspection and repair of Apache Kafka log directories.

Import layering (kept light so ``kafkatool --help`` starts fast):
``kafkatool.formats`` (Construct declarations) <- readers (``kafkatool.records``, ``kafkatool.files``, ...)
<- library operations (``kafkatool.dump``) <- ``kafkatool.cli`` (typer + rich, presentation only).
A module's classes are made each time it is imported, so on a command's path an immutable value is a
``NamedTuple`` (~0.07 ms to make) rather than a frozen dataclass (~0.5 ms on Python 3.11, which compiles six methods
for it); a stream mixing values with other tuples tells them apart by class, never by ``isinstance(x, tuple)``.
"""

__version__ = "0.1.0"
