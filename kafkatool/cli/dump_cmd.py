"""``kafkatool dump``: show any log-dir file, a partition dir or a whole log dir."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

import functools
from itertools import chain
from pathlib import Path
from typing import Annotated

import typer

from .options import (
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_MAX_DECOMPRESSED,
    DeepIteration,
    FailOn,
    Force,
    FromOffset,
    Isolation,
    KeyDecoder,
    KeyField,
    MaxBatchBytes,
    MaxDecompressed,
    Records,
    SchemaLogDir,
    SchemasDir,
    SkipRecordMetadata,
    ToOffset,
    Validate,
    ValueDecoder,
    ValueField,
    Where,
)

EXAMPLES = """
[bold]Examples[/bold]

  kafkatool dump /var/lib/kafka/data/orders-0/00000000000000000000.log

  kafkatool dump --records --from-offset 1200 --to-offset 1210 /var/lib/kafka/data/orders-0

  kafkatool dump --format jsonl --records /var/lib/kafka/data | jq 'select(.type=="finding")'

  kafkatool dump /var/lib/kafka/data/replication-offset-checkpoint orders-0/leader-epoch-checkpoint

  kafkatool dump --isolation read_committed --records /var/lib/kafka/data/payments-0

  kafkatool dump --key '^order-0-004' --header source=web /var/lib/kafka/data/orders-0

  kafkatool dump --decode auto /var/lib/kafka/data/__consumer_offsets-12

  kafkatool dump --value-decoder json --where 'value.customer.id == 42' /var/lib/kafka/data/orders-0

  kafkatool dump -f jsonl --value-decoder auto --value-field customer.id --value-match '^42$' orders-0

  kafkatool dump --from-time 2023-11-14T22:40:00Z --to-time 2023-11-14T22:45:00Z --records orders-0
"""


def dump(
    paths: Annotated[list[Path], typer.Argument(help="Files, partition dirs or log dirs.", show_default=False)],
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="text|jsonl|dump-log|csv|parquet",
                                     help="text (readable), jsonl (SCHEMA.md lines), dump-log (the text "
                                          "kafka-dump-log.sh prints), or the records as csv or parquet rows (the "
                                          "Spark records level's columns); findings go to stderr for the last "
                                          "three.")] = "text",
    out_file: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Write csv or parquet to this file (a device or FIFO: in place).",
        show_default=False)] = None,
    force: Force = False,
    records: Records = False,
    deep_iteration: DeepIteration = False,
    skip_record_metadata: SkipRecordMetadata = False,
    values: Annotated[
        str | None,
        typer.Option(help="Keys/values as base64, text, hex or none (default: text for text, base64 for jsonl).",
                     metavar="base64|text|hex|none"),
    ] = None,
    from_offset: FromOffset = None,
    to_offset: ToOffset = None,
    max_batches: Annotated[int | None, typer.Option(help="Stop each record file after N batches.", min=1)] = None,
    max_bytes: Annotated[
        int | None, typer.Option(help="Read only the entries starting in the first N bytes of each record file.", min=1)
    ] = None,
    max_decompressed: MaxDecompressed = DEFAULT_MAX_DECOMPRESSED,
    max_batch_bytes: MaxBatchBytes = DEFAULT_MAX_BATCH_BYTES,
    isolation: Isolation = "read_uncommitted",
    key: Annotated[str | None, typer.Option("--key", "--key-match",
                                            help="Only records whose key matches this regular expression (searched "
                                                 "in the key as UTF-8, or with --key-field in that decoded field).",
                                            show_default=False)] = None,
    value: Annotated[str | None, typer.Option("--value-match", "--value",
                                              help="Only records whose value matches this regular expression "
                                                   "(or with --value-field: that decoded field).",
                                              show_default=False)] = None,
    header: Annotated[str | None, typer.Option(help="Only records with this header: NAME, or NAME=REGEX on its "
                                                    "value.", show_default=False)] = None,
    producer_id: Annotated[int | None, typer.Option(help="Only batches of this producer id.",
                                                    show_default=False)] = None,
    from_time: Annotated[str | None, typer.Option(
        help="Only records at or after this time (ISO-8601, UTC without a zone, or epoch ms); found through "
             "the time index, as ListOffsets finds it.", show_default=False)] = None,
    to_time: Annotated[str | None, typer.Option(help="Only records at or before this time.",
                                                show_default=False)] = None,
    decode: Annotated[str | None, typer.Option(
        help="Decode the records of Kafka's internal topics (implies --records): consumer-offsets, "
             "transaction-state, cluster-metadata, share-group-state, remote-log-metadata, or auto (by the "
             "partition's topic).",
        metavar="DECODER", show_default=False)] = None,
    key_decoder: KeyDecoder = None,
    value_decoder: ValueDecoder = None,
    schema_log_dir: SchemaLogDir = None,
    schemas: SchemasDir = None,
    validate: Validate = False,
    key_field: KeyField = None,
    value_field: ValueField = None,
    where: Where = None,
    fail_on: FailOn = "error",
) -> int:
    """Decode Kafka log-dir files: segments, indexes, snapshots, checkpoints, metadata.

    The file type comes from its name. Damaged data is reported as findings (file, byte
    position, reason) and the dump goes on where the framing allows.
    --key, --value, --header, --producer-id, --from-time and --to-time search: only the matching records are
    shown, each after its batch's line (they imply --records when a record field is searched).
    With --from-offset or --to-offset only the record files are shown.
    Exit 1 when a finding reaches --fail-on (default: error, as verify's: the same bytes give the same exit).
    """
    from ..dump import DumpOptions, dump_paths, record_filter
    from ..errors import UsageError
    from ..records import ScanOptions
    from ..walk import total_bytes
    from .exits import check_fail_on
    from .output import DUMP_FORMATS, VALUE_MODES, Output, check_format
    from .output.notes import nothing_shown, tallied

    exporting = fmt in ("csv", "parquet")
    check_format(fmt, (*DUMP_FORMATS, "csv", "parquet"))
    check_fail_on(fail_on)
    if out_file is not None and not exporting:
        raise UsageError("--out is for --format csv or parquet")
    if force and out_file is None:
        raise UsageError("--force is for --out")
    if values is not None and values not in VALUE_MODES:
        raise UsageError(f"--values must be one of {', '.join(VALUE_MODES)}")
    for flag, given in (("--deep-iteration", deep_iteration), ("--skip-record-metadata", skip_record_metadata)):
        if given and fmt != "dump-log":
            raise UsageError(f"{flag} is for --format dump-log")
    if isolation not in ("read_uncommitted", "read_committed"):
        raise UsageError("--isolation must be read_uncommitted or read_committed")
    # The engines an option needs beyond the files (the index lookups of a range, the internal topics' decoders,
    # the partition's transactions) are imported only where it is given: a plain dump reads the files alone.
    decoder = None
    if decode is not None:
        from ..internal.decode import DECODERS, file_decoder

        if decode not in DECODERS:
            raise UsageError(f"--decode must be one of {', '.join(DECODERS)}")
        decoder = functools.partial(file_decoder, decode)
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise UsageError(f"--from-offset {from_offset} is after --to-offset {to_offset}")
    locate = None
    if from_offset is not None or from_time is not None or to_time is not None:
        from .. import locate
    # --key-decoder/--value-decoder: a --key-field/--value-field takes its --*-match from the bytes to that field
    payload, loaded = None, []
    if key_decoder is not None or value_decoder is not None or key_field is not None or value_field is not None \
            or where:
        from ..payloads import SchemaSources
        from ..payloads.fields import payload_view

        if decode is not None:
            raise UsageError("--decode reads internal topics; --key-decoder/--value-decoder read applications' "
                             "payloads: give one or the other")
        payload, loaded = payload_view(key_decoder, value_decoder,
                                       SchemaSources(tuple(paths), schema_log_dir, schemas, validate),
                                       (("key", key_field, key), ("value", value_field, value)), where or ())
    elif schema_log_dir is not None or schemas is not None or validate:
        raise UsageError("--schema-log-dir, --schemas and --validate are for --key-decoder/--value-decoder")
    key, value = (None if key_field is not None else key), (None if value_field is not None else value)
    wanted = record_filter(key=key, value=value, header=header,
                           producer_id=producer_id, from_time=from_time, to_time=to_time,
                           parse_time=None if locate is None else locate.parse_timestamp)
    filters = {"--key": key, "--value": value, "--header": header,
               "--producer-id": producer_id, "--from-time": from_time, "--to-time": to_time,
               "--from-offset": from_offset, "--to-offset": to_offset,
               **({} if payload is None else {t.option: True for t in payload.tests})}
    committed = None
    if isolation == "read_committed":  # the view the broker serves (its .txnindex files), not the log's markers
        from ..txns import committed_view

        committed = functools.partial(committed_view, served=True)
    options = DumpOptions(
        records=records or deep_iteration or wanted.needs_records or decode is not None or exporting
        or payload is not None,
        from_offset=from_offset, to_offset=to_offset,
        max_batches=max_batches, max_bytes=max_bytes,
        scan=ScanOptions(max_decompressed=max_decompressed, max_batch=max_batch_bytes),
        filter=wanted, columnar=fmt in ("text", "jsonl"), committed=committed, decoder=decoder, payload=payload,
        offset_start=None if locate is None else locate.first_at_offset,
        time_start=None if locate is None else locate.first_at_time,
    )
    if exporting:
        import sys
        from contextlib import nullcontext

        from ..export import export
        from ..safewrite.outpath import output_file

        if fmt == "parquet" and out_file is None:
            raise UsageError("--format parquet needs --out FILE")
        report = Output("text", stream=sys.stderr)  # stdout (or --out) carries the rows
        # --out is decided (written in place, replaced whole, or refused) before anything is read.
        with output_file(out_file, force) if out_file is not None else nullcontext() as sink, \
                report.progress(lambda: total_bytes(paths), "dump") as advance:
            report.emit_all(export(tallied(report, chain(loaded, dump_paths(paths, options, progress=advance,
                                                                            name_files=True))),
                                   fmt, sink, values or "base64", decoded=_decoded_sides(payload)))
        nothing_shown(report, "record", lambda: _record_files(paths), filters)
        _unreached(payload)
        return report.exit_code(fail_on)
    out = Output(fmt, values)
    # kafka-dump-log's forms: --print-data-log (keys and payloads) is --records; --deep-iteration alone leaves them out
    # (a decoder prints them, as --key-decoder-class/--value-decoder-class imply --print-data-log)
    out.print_data_log = records or not deep_iteration or payload is not None
    out.skip_record_metadata = skip_record_metadata
    with out.progress(lambda: total_bytes(paths), "dump") as advance:
        out.emit_all(chain(loaded, dump_paths(paths, options, progress=advance, name_files=fmt == "dump-log")))
    nothing_shown(out, "record" if options.records else "batch", lambda: _record_files(paths), filters)
    _unreached(payload)
    return out.exit_code(fail_on)


def _decoded_sides(payload) -> tuple[str, ...]:
    """The sides (key, value) a --key-decoder/--value-decoder decodes: the export's decoded columns."""
    return () if payload is None else tuple(side for side in ("key", "value") if getattr(payload, side) is not None)


def _unreached(payload) -> None:
    """A note for each field filter whose PATH no decoded key or value had: nothing matched because the field is
    not there, not because its values differ."""
    from .output.notes import note

    for option in () if payload is None else payload.unreached():
        note(f"{option}: no decoded payload had this field")


def _record_files(paths: list[Path]) -> str:
    """What a dump's search read: its record files, how many and how big."""
    from ..walk import expand, total_bytes

    files = sum(f.kind.holds_records for f in expand(paths))
    return f"{files:,} record file{'' if files == 1 else 's'} ({total_bytes(paths):,} bytes)"
