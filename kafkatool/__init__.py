"""kafkatool: offline inspection and repair of Apache Kafka log directories.

Import layering (kept light so ``kafkatool --help`` starts fast):
``kafkatool.formats`` (Construct declarations) <- readers (``kafkatool.records``, ``kafkatool.files``, ...)
<- library operations (``kafkatool.dump``) <- ``kafkatool.cli`` (typer + rich, presentation only).
"""

__version__ = "0.1.0"
