"""Options several commands share, declared once (same flags, same help everywhere; a command sets the default).

A short flag means one long option across the whole CLI (tests/test_cli.py walks every command to hold it):
``-f`` ``--format``, ``-o`` ``--out``, ``-t`` ``--topic``, ``-p`` ``--partition``, ``-r`` ``--records``,
``-g`` ``--group``, ``-j`` ``--jobs``, ``-s`` ``--sink``, ``-l`` ``--leader``, ``-F`` ``--follower``. Offsets,
timestamps and transactional ids are long options only.
"""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated

import typer

OFFSET_MAX = 2**63 - 1  # offsets are signed 64-bit (kafkatool.delivery.OFFSET_MAX; not imported: commands build cheap)

Format = Annotated[str, typer.Option("--format", "-f", metavar="text|jsonl",
                                     help="text (readable lines and tables) or jsonl (one JSON object a line).")]
FailOn = Annotated[str, typer.Option("--fail-on", metavar="info|warning|error",
                                     help="Exit 1 when a finding is at or above this severity.")]
Jobs = Annotated[int | None, typer.Option(
    "--jobs", "-j", help="Check N partitions at a time, in threads (default: the CPUs this process may use, at most "
                         "8); the output is the same whatever N.", min=1, show_default=False)]
Topic = Annotated[str | None, typer.Option("--topic", "-t", help="Only this topic.", show_default=False)]
PartitionNo = Annotated[int | None, typer.Option("--partition", "-p", help="Only this partition number.", min=0,
                                                 show_default=False)]
Records = Annotated[bool, typer.Option("--records", "-r", help="Also read every record of the batches "
                                                               "(decompressed).")]
DeepIteration = Annotated[bool, typer.Option(
    "--deep-iteration", help="With --format dump-log: a line per record with its metadata and no key or payload "
                             "(kafka-dump-log's --deep-iteration without --print-data-log, which --records is).")]
SkipRecordMetadata = Annotated[bool, typer.Option(
    "--skip-record-metadata", help="With --format dump-log: record lines without their metadata, as kafka-dump-log's "
                                   "--skip-record-metadata (a control record's line is empty).")]
Deep = Annotated[bool, typer.Option("--deep", help="Also decompress every batch and decode every record (slower).")]
Isolation = Annotated[str, typer.Option(
    "--isolation", metavar="read_uncommitted|read_committed",
    help="The consumer's isolation.level: read_uncommitted (every batch) or read_committed (no aborted records or "
         "control batches, nothing from the last stable offset or high watermark on).")]
FromOffset = Annotated[int | None, typer.Option(
    "--from-offset", help="Only offsets from this one on (default: the log start), read from where a fetch of it "
                          "starts (its segment, then the offset index).", min=0, max=OFFSET_MAX, show_default=False)]
ToOffset = Annotated[int | None, typer.Option(
    "--to-offset", help="Only offsets up to this one (default: the log end; delivery: the highest offset in the "
                        "sink); reading stops at the first batch past it.", min=0, max=OFFSET_MAX,
    show_default=False)]
Groups = Annotated[list[str] | None, typer.Option("--group", "-g", help="A consumer group id (repeatable).",
                                                  show_default=False)]
TransactionalIds = Annotated[list[str] | None, typer.Option("--transactional-id",
                                                            help="A transactional id (repeatable).",
                                                            show_default=False)]
Now = Annotated[str | None, typer.Option(
    "--now", metavar="TIME", help="Judge open transactions (tiered: unfinished segment copies and deletes) at this "
                                  "time (ISO-8601, UTC without a zone, or epoch ms). Default: the newest record time "
                                  "read (said in the output).",
    show_default=False)]
Force = Annotated[bool, typer.Option("--force", help="With --out: replace a file (or the tables of a directory) "
                                                   "that exists; without it that is refused (exit 2).")]
BackupDir = Annotated[Path | None, typer.Option(
    "--backup-dir", help="With --apply: where the originals are copied before anything changes (default: "
                         "kafkatool-backup-<log dir>-<UTC time> beside the log dir changed).")]
MaxDecompressed = Annotated[
    int, typer.Option(help="Refuse to decompress a batch beyond N bytes (decompression-bomb guard).", min=1,
                      metavar="N")
]
MaxBatchBytes = Annotated[
    int, typer.Option(help="Treat an entry declaring more than N bytes as a corrupt length.", min=61, metavar="N")
]
DEFAULT_MAX_DECOMPRESSED = 128 * 1024 * 1024
DEFAULT_MAX_BATCH_BYTES = 256 * 1024 * 1024
IndexIntervalBytes = Annotated[int | None, typer.Option(
    "--index-interval-bytes", metavar="BYTES", min=0, show_default=False,
    help="The topic's index.interval.bytes: verify judges an index's density by it, repair spaces rebuilt entries "
         "by it (default: per partition, the one its offset indexes fit, else Kafka's default 4096; repair's "
         "output says which).")]
# Keys and values as the application wrote them (kafkatool.payloads): dump (text, jsonl, csv, parquet).
KeyDecoder = Annotated[str | None, typer.Option(
    "--key-decoder", metavar="NAME", show_default=False,
    help="Decode each key: string, int, long, double, uuid, json (Kafka's deserializers), avro, protobuf, "
         "json-schema (Confluent's framing, the schema by its id), or auto; a key that does not decode is shown raw "
         "with a payload-undecodable finding.")]
ValueDecoder = Annotated[str | None, typer.Option(
    "--value-decoder", metavar="NAME", show_default=False, help="Decode each value, as --key-decoder.")]
SchemaLogDir = Annotated[Path | None, typer.Option(
    "--schema-log-dir", metavar="DIR", show_default=False,
    help="Where Schema Registry's _schemas topic is (a log dir or its partition dir; default: the paths "
    "given, and the log dir a partition dir given is in).")]
SchemasDir = Annotated[Path | None, typer.Option(
    "--schemas", metavar="DIR", show_default=False,
    help="A directory of schemas by id: <id>.avsc, <id>.proto, <id>.json.")]
Validate = Annotated[bool, typer.Option("--validate", help="Check JSON Schema payloads against their schema.")]
KeyField = Annotated[str | None, typer.Option(
    "--key-field", metavar="PATH", show_default=False,
    help="With --key-match: search that regular expression in this field of the decoded key (customer.id, "
         "items.0.sku), not in the key's bytes.")]
ValueField = Annotated[str | None, typer.Option(
    "--value-field", metavar="PATH", show_default=False,
    help="With --value-match: search that regular expression in this field of the decoded value (its JSON text, a "
         "string without quotes), not in the value's bytes.")]
Where = Annotated[list[str] | None, typer.Option(
    "--where", metavar="EXPR", show_default=False,
    help="Only records whose decoded key or value holds: key|value[.PATH] OP LITERAL, OP one of == != < <= > >= ~= "
         "(regex), the literal JSON: 'value.customer.id == 42' (repeatable: all must hold).")]
