"""``kafkatool schemas``: Schema Registry's subjects, versions, ids and settings, read from ``_schemas`` on disk."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated, Any

import typer

from .options import FailOn, Format

EXAMPLES = """
[bold]Examples[/bold]

  kafkatool schemas /var/lib/kafka/data

  kafkatool schemas /var/lib/kafka/data/_schemas-0

  kafkatool schemas -f jsonl /var/lib/kafka/data | jq -c 'select(.type=="schema_version" and .deleted)'
"""


def schemas(
    paths: Annotated[list[Path], typer.Argument(help="Log dirs or _schemas-N partition dirs.", show_default=False)],
    fmt: Format = "text",
    fail_on: FailOn = "warning",
) -> int:
    """Schema Registry's store, rebuilt from its _schemas topic as its KafkaStoreReaderThread rebuilds it.

    Every subject's versions with their schema id, type (AVRO, PROTOBUF, JSON), references and whether they are
    soft-deleted (still served by id); then the compatibility (CONFIG) and mode (MODE) settings, global and per
    subject. A tombstone removes its key, a DELETE_SUBJECT soft-deletes the versions up to its version, a
    CLEAR_SUBJECT drops a subject's soft-deleted versions. A record Schema Registry would skip is
    schema-record-invalid; references that do not resolve or form a cycle are schema-reference-invalid.
    Exit 0 ok, 1 findings (--fail-on, default warning), 2 usage error, 3 I/O error.
    """
    from ..payloads.registry import SchemaVersion, registry_bytes, registry_listing
    from .exits import check_fail_on
    from .output import Output, check_format

    check_format(fmt)
    check_fail_on(fail_on)
    out = Output(fmt)
    with out.progress(lambda: registry_bytes(paths), "schemas") as advance:
        items = registry_listing(paths, progress=advance)
        out.emit_all(_version_row(i) if fmt == "text" and isinstance(i, SchemaVersion) else i for i in items)
    return out.exit_code(fail_on)


def _version_row(version: Any) -> dict[str, Any]:
    """A schema version's text row: its references on one line (``name=subject/version``), the partition it is in."""
    d = version.as_dict()
    d["source"] = Path(d["source"]).parent.name
    d["references"] = ", ".join(f"{r['name']}={r['subject']}/{r['version']}" for r in d["references"]) or "-"
    d["deleted"] = "soft-deleted" if d["deleted"] else "-"
    return d
