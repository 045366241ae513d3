"""``kafkatool replicas`` / ``truncation`` / ``epochs``: one partition across brokers' disks, and its leader epochs."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated

import typer

from .options import (
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_MAX_DECOMPRESSED,
    BackupDir,
    FailOn,
    Format,
    MaxBatchBytes,
    MaxDecompressed,
    PartitionNo,
    Topic,
)

REPLICAS_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool replicas /mnt/broker-1/data /mnt/broker-2/data /mnt/broker-3/data

  kafkatool replicas --topic orders --partition 0 --isr broker-1 --isr broker-2 /mnt/broker-*/data

  kafkatool replicas /mnt/broker-1/data/orders-0 /mnt/broker-2/data/orders-0

  kafkatool replicas -f jsonl /mnt/broker-*/data | jq 'select(.type=="partition") | .divergence[]'
"""

TRUNCATION_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool truncation --leader /mnt/broker-2/data/orders-0 --follower /mnt/broker-1/data/orders-0

  kafkatool truncation --leader /mnt/broker-2/data --follower /mnt/broker-1/data --topic orders --rule epoch

  kafkatool truncation -f jsonl --leader b2/orders-0 --follower b1/orders-0 | jq '.rule, .truncate_to, .lost'

  # the follower's broker stopped; originals backed up
  kafkatool truncation --rule epoch --apply --leader /mnt/broker-2/data/orders-0 --follower /data/orders-0
"""

EPOCHS_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool epochs /var/lib/kafka/data/orders-0

  kafkatool epochs --topic orders /var/lib/kafka/data

  kafkatool epochs -f jsonl /var/lib/kafka/data | jq 'select(.type=="epochs" and .disagreements > 0)'
"""


def _options(max_decompressed: int, max_batch_bytes: int):  # -> ScanOptions (imported when run)
    from ..records import ScanOptions

    return ScanOptions(max_decompressed=max_decompressed, max_batch=max_batch_bytes)


def _output(fmt: str, fail_on: str):  # -> Output
    from .exits import check_fail_on
    from .output import Output, check_format

    check_format(fmt)
    check_fail_on(fail_on)
    return Output(fmt)


def replicas(
    paths: Annotated[list[Path], typer.Argument(
        help="One log dir per broker, or the partition's dir on each broker (a dir holding log dirs works too).",
        show_default=False)],
    isr: Annotated[list[str] | None, typer.Option(
        "--isr", help="Replicas in sync (log dir names, e.g. broker-2, or paths); repeat or comma-separate. "
                      "Default: from the KRaft metadata in the log dirs, else the high-watermark checkpoints, "
                      "else all (the output says which).")
    ] = None,
    topic: Topic = None,
    partition: PartitionNo = None,
    unclean: Annotated[bool, typer.Option(
        "--unclean", help="Simulate the unclean election of every replica, not only of those outside --isr.")
    ] = False,
    fmt: Format = "text",
    fail_on: FailOn = "warning",
    max_decompressed: MaxDecompressed = DEFAULT_MAX_DECOMPRESSED,
    max_batch_bytes: MaxBatchBytes = DEFAULT_MAX_BATCH_BYTES,
) -> int:
    """Compare the replicas of each partition found on two or more brokers' disks.

    Per replica: log start, log end offset (LEO: after the last valid batch), the high watermark and
    recovery point checkpoints of its log dir, last stable offset, latest leader epoch, size, lag behind
    the longest replica. Per partition: the high watermark the ISR would compute (min LEO over --isr),
    and, for every pair, the first offset where their batches differ (offsets, leader epoch, CRC) and the
    batches each has that the other does not. For each replica outside --isr (every one with --unclean):
    if an unclean election made it leader, the acknowledged offsets (below the high watermark) lost, with
    records and producer ids, and what each other replica would truncate.
    Exit 0 when the replicas agree (lagging is normal), 1 when two diverge, a log is damaged, a high
    watermark is beyond its log end or acknowledged offsets would be left on the leader alone (findings at or
    above --fail-on, default warning), 2 usage error, 3 I/O error.
    """
    from ..partition import inspect_replicas, replicas_bytes

    out = _output(fmt, fail_on)
    if isr is not None:
        isr = [name for value in isr for name in value.split(",") if name]
    with out.progress(lambda: replicas_bytes(paths, topic=topic, partition=partition), "replicas") as advance:
        out.emit_all(inspect_replicas(paths, isr=isr, topic=topic, partition=partition, unclean=unclean,
                                      options=_options(max_decompressed, max_batch_bytes), progress=advance))
    return out.exit_code(fail_on)


def truncation(
    leader: Annotated[Path, typer.Option("--leader", "-l", help="The leader's partition dir (or log dir).",
                                         show_default=False)],
    follower: Annotated[Path, typer.Option("--follower", "-F", help="The follower's partition dir (or log dir).",
                                           show_default=False)],
    rule: Annotated[str, typer.Option(
        metavar="epoch|hw|both",
        help="epoch (leader-epoch protocol, Kafka >= 0.11), hw (truncate to the high watermark, before), or both.")
    ] = "both",
    topic: Topic = None,
    partition: PartitionNo = None,
    max_lost: Annotated[int, typer.Option(help="List at most N discarded batches per rule (all are counted).",
                                          min=0)] = 1000,
    apply: Annotated[bool, typer.Option(
        "--apply", help="Carry the truncation out on the follower's dir (its broker stopped); needs --rule epoch "
                        "or --rule hw. Default: only show it.")] = False,
    backup_dir: BackupDir = None,
    fmt: Format = "text",
    fail_on: FailOn = "warning",
    max_decompressed: MaxDecompressed = DEFAULT_MAX_DECOMPRESSED,
    max_batch_bytes: MaxBatchBytes = DEFAULT_MAX_BATCH_BYTES,
) -> int:
    """Simulate the follower rejoining the leader: where it truncates its log, and what it discards.

    For each rule: the truncation offset (with the epoch protocol's rounds), every discarded batch
    (offsets, leader epoch, producer; whether the leader holds the same batch, whether it was
    acknowledged) and the file changes the truncation implies. Nothing is written, unless --apply:
    then the chosen rule's truncation is done on the follower's dir as `repair --apply` does its
    work (a held .lock refuses it; originals backed up first; a killed run completes when run
    again): segments cut and deleted, indexes trimmed, snapshots, leader-epoch-checkpoint and the
    log dir's checkpoints updated. Exit 0 when no rule loses data (with --apply: when it was done
    or nothing was left to do), 1 when one discards batches the leader does not have (data lost
    from the partition) or leaves the follower's log diverged from the leader's (with --apply: when
    it was refused, e.g. a damaged log; or a finding reaches --fail-on, default warning, as replicas': acknowledged
    offsets a replica exposes), 2 usage error, 3 I/O
    error.
    """
    from ..errors import UsageError
    from ..truncation import RULES, Truncation, apply_truncations, truncation_bytes, truncations

    if rule not in (*RULES, "both"):
        raise UsageError("--rule must be one of epoch, hw, both")
    if apply and rule not in RULES:
        raise UsageError("--apply needs one rule: --rule epoch (the leader-epoch protocol) or --rule hw")
    out = _output(fmt, fail_on)
    options = _options(max_decompressed, max_batch_bytes)
    lossy = False
    with out.progress(lambda: truncation_bytes(leader, follower, topic=topic, partition=partition, apply=apply),
                      "truncation") as advance:
        if apply:
            items = apply_truncations(leader, follower, rule=rule, topic=topic, partition=partition,
                                      max_lost=max_lost, options=options, backup_dir=backup_dir, progress=advance)
        else:
            items = truncations(leader, follower, rules=RULES if rule == "both" else (rule,), topic=topic,
                                partition=partition, max_lost=max_lost, options=options, progress=advance)
        for item in items:
            if isinstance(item, Truncation):
                lossy = lossy or item.data_loss or item.keeps_divergence_from is not None
            out.emit(item)
    out.close()
    return out.exit_code(fail_on, verdict=lossy and not apply)


def epochs(
    paths: Annotated[list[Path], typer.Argument(help="Partition dirs or log dirs.", show_default=False)],
    topic: Topic = None,
    partition: PartitionNo = None,
    fmt: Format = "text",
    fail_on: FailOn = "warning",
    max_decompressed: MaxDecompressed = DEFAULT_MAX_DECOMPRESSED,
    max_batch_bytes: MaxBatchBytes = DEFAULT_MAX_BATCH_BYTES,
) -> int:
    """A partition's leader-epoch history: leader-epoch-checkpoint next to the epochs stamped on its batches.

    One row per epoch: where the checkpoint starts it and the offsets of the batches carrying it, with
    disagreements flagged (an epoch missing from the checkpoint, a different start, epochs going back,
    entries beyond the log end), then the cache the broker would load. Exit 0 when they agree, 1 when
    they do not (or the log is damaged: --fail-on, default warning), 2 usage error, 3 I/O error.
    """
    from ..replicas import epoch_history, epochs_bytes

    out = _output(fmt, fail_on)
    with out.progress(lambda: epochs_bytes(paths, topic=topic, partition=partition), "epochs") as advance:
        out.emit_all(epoch_history(paths, topic=topic, partition=partition,
                                   options=_options(max_decompressed, max_batch_bytes), progress=advance))
    return out.exit_code(fail_on)
