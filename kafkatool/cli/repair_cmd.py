"""``kafkatool repair``: the broker's recovery, planned offline and shown first; done safely with --apply."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated

import typer

from . import options as o

EXAMPLES = """
[bold]Examples[/bold]

  # dry run: the plan, nothing changes
  kafkatool repair /var/lib/kafka/data/orders-0

  # broker stopped; originals backed up
  kafkatool repair --apply /var/lib/kafka/data/orders-0

  kafkatool repair --apply --backup-dir /mnt/spare/backup --salvage /var/lib/kafka/data

  kafkatool repair --index-interval-bytes 1024 --recovery-point 174 -f jsonl orders-0

  kafkatool repair --restore /var/lib/kafka/kafkatool-backup-data-20250101T120000Z          (dry run)

  kafkatool repair --restore /var/lib/kafka/kafkatool-backup-data-20250101T120000Z --apply  (undo, exactly)
"""


def repair(
    paths: Annotated[list[Path] | None, typer.Argument(help="Partition dirs, or log dirs (every partition).",
                                                       show_default=False)] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Carry the plan out (default: only show it).")] = False,
    restore: Annotated[
        Path | None,
        typer.Option("--restore", help="Undo the applies whose backup dir this is: every file back as it was "
                                       "(dry run unless --apply; broker stopped). PATH: its log dir, needed only "
                                       "when the backup dir is not beside it.",
                     show_default=False),
    ] = None,
    backup_dir: o.BackupDir = None,
    salvage: Annotated[
        bool, typer.Option("--salvage", help="Also copy the valid batches found after a cut into a side file in the "
                                             "backup dir.")
    ] = False,
    index_interval_bytes: o.IndexIntervalBytes = None,
    recovery_point: Annotated[
        int | None,
        typer.Option(help="Recover from this offset (default: the log dir's recovery point checkpoint, else 0: "
                          "every segment; the output says which).", min=0, metavar="OFFSET"),
    ] = None,
    now_ms: Annotated[
        int | None,
        typer.Option(help="The broker clock for producer-id expiry in rebuilt snapshots (default: now).", min=0,
                     metavar="MS"),
    ] = None,
    fmt: o.Format = "text",
    fail_on: o.FailOn = "error",
    max_decompressed: o.MaxDecompressed = o.DEFAULT_MAX_DECOMPRESSED,
    max_batch_bytes: o.MaxBatchBytes = o.DEFAULT_MAX_BATCH_BYTES,
) -> int:
    """Do offline what a broker's recovery after an unclean shutdown would do, losing nothing that can be kept.

    Shows the plan first: cut a segment at its first invalid batch (bad CRC, torn or zero-filled tail),
    delete the later segments (kept when the segment was recovered for a missing index, as the broker
    does), rebuild .index/.timeindex/.txnindex and producer snapshots from the log, resolve
    .swap/.cleaned/.deleted leftovers, trim (or create) leader-epoch-checkpoint, move the recovery point.
    With --apply (broker stopped: a held .lock refuses it): originals are backed up first, new files are
    written to a temporary name, fsynced and renamed; a killed repair completes when run again.
    With --restore BACKUP_DIR the applies recorded there are undone, every file made byte-identical to its
    original again (refused, changing nothing, when a file changed since: the broker ran).
    Exit 0 when nothing is (left) to do, 1 when a dry run found work or something could not be repaired (a
    finding at or above --fail-on, default error).
    """
    from ..errors import UsageError
    from ..records import ScanOptions
    from ..repair import RepairOptions, repair_paths
    from ..walk import total_bytes
    from .exits import check_fail_on
    from .output import Output, check_format

    check_format(fmt)
    check_fail_on(fail_on)
    if restore is not None:
        if paths and len(paths) > 1:
            raise UsageError("--restore takes the backup dir and at most one PATH: its log dir")
        return _restore(restore, apply, fmt, fail_on, paths[0] if paths else None)
    if not paths:
        raise UsageError("give the partition dirs or log dirs to repair (or --restore BACKUP_DIR)")
    options = RepairOptions(
        index_interval_bytes=index_interval_bytes, recovery_point=recovery_point, salvage=salvage, now_ms=now_ms,
        scan=ScanOptions(max_decompressed=max_decompressed, max_batch=max_batch_bytes),
    )
    out = Output(fmt)
    pending = False
    with out.progress(lambda: total_bytes(paths), "repair") as advance:
        for item in repair_paths(paths, options, apply=apply, backup_dir=backup_dir, progress=advance):
            out.emit(item)
            d = item.as_dict()
            if d["type"] == "partition" and d["actions"] and not d["applied"]:
                pending = True
    out.close()
    return out.exit_code(fail_on, verdict=pending)


def _restore(backup_dir: Path, apply: bool, fmt: str, fail_on: str, log_dir: Path | None) -> int:
    from ..findings import finding
    from ..safewrite.restore import restore
    from .output import Output

    out = Output(fmt)
    steps = restore(backup_dir, apply=apply, log_dir=log_dir)
    for step in steps:
        out.emit(step)
    if not steps:
        message = "nothing to restore: every file is as it was before the applies"
    elif apply:
        message = f"restored: {len(steps)} files as they were before the applies (run `kafkatool verify` next)"
    else:
        message = f"dry run: {len(steps)} files to restore; run again with --apply (broker stopped) to do it"
    out.emit(finding("restore", str(backup_dir), None, message))
    out.close()
    return out.exit_code(fail_on, verdict=bool(steps) and not apply)
