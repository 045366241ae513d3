"""``kafkatool offsets``, ``groups``, ``partition-for``, ``txn-state``, ``share-state``, ``tiered``, ``metadata``:
Kafka's internal topics, decoded."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated, Any

import typer

from .options import FailOn, Format, Groups, Now, PartitionNo, Topic, TransactionalIds

OFFSETS_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool offsets /var/lib/kafka/data

  kafkatool offsets /var/lib/kafka/data/__consumer_offsets-12

  kafkatool offsets -f jsonl /var/lib/kafka/data | jq -c 'select(.type=="committed_offset" and .lag > 1000)'
"""

GROUPS_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool groups /var/lib/kafka/data

  kafkatool groups --group payments-consumer /var/lib/kafka/data /var/lib/kafka/meta

  kafkatool groups --deleted -f jsonl /var/lib/kafka/data | jq -c 'select(.deleted)'

  kafkatool groups -f jsonl /var/lib/kafka/data | jq -c 'select(.group_type=="consumer") | .members[]'
"""

PARTITION_FOR_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool partition-for --group payments-consumer

  kafkatool partition-for --transactional-id order-service-0 --partitions 50

  kafkatool partition-for --group g1 --group g2 -f jsonl
"""

TXN_STATE_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool txn-state /var/lib/kafka/data

  kafkatool txn-state --transactional-id order-service-0 /var/lib/kafka/data/__transaction_state-31

  kafkatool txn-state -f jsonl /var/lib/kafka/data | jq -c 'select(.state=="Ongoing")'
"""

SHARE_STATE_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool share-state /var/lib/kafka/data

  kafkatool share-state --group audit /var/lib/kafka/data/__share_group_state-7 /var/lib/kafka/meta

  kafkatool share-state -f jsonl /var/lib/kafka/data | jq -c 'select(.type=="share_partition_state")'
"""

TIERED_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool tiered /var/lib/kafka/data

  kafkatool tiered --topic ledger --partition 0 /var/lib/kafka/data/__remote_log_metadata-3 /var/lib/kafka/data

  kafkatool tiered -f jsonl /var/lib/kafka/data | jq -c 'select(.state=="COPY_SEGMENT_STARTED")'
"""

METADATA_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool metadata /var/lib/kafka/meta/__cluster_metadata-0

  kafkatool metadata --topic orders /var/lib/kafka/meta

  kafkatool metadata --all /var/lib/kafka/meta/__cluster_metadata-0/00000000000000498211.log

  kafkatool metadata -f jsonl /var/lib/kafka/meta | jq -c 'select(.type=="partition_state")'
"""


def offsets(
    paths: Annotated[list[Path], typer.Argument(help="Log dirs or __consumer_offsets-N partition dirs (and the "
                                                     "log dirs holding the data partitions, for lag).",
                                                show_default=False)],
    fmt: Format = "text",
    group: Groups = None,
    lag: Annotated[bool, typer.Option(help="Compare commits with the data partitions in the same log dir.")] = True,
    fail_on: FailOn = "warning",
) -> int:
    """Committed offsets and consumer groups, replayed from __consumer_offsets as the group coordinator loads it.

    The latest commit per (group, topic, partition) wins, a tombstone deletes, transactional commits count
    once committed. Each group's generation, protocol, leader and members. Where the data partition is in the
    same log dir as the __consumer_offsets partition: its log start, LEO, high watermark and the lag; a commit
    beyond the LEO is an error (another log dir's copy of the partition is never compared).
    Exit 0 ok, 1 findings (--fail-on, default warning), 2 usage error, 3 I/O error.
    """
    from ..internal.offsets import CommittedOffset, GroupState, consumer_offsets, consumer_offsets_bytes
    from .exits import check_fail_on
    from .output import Output, check_format
    from .output.notes import names, nothing_shown

    check_format(fmt)
    check_fail_on(fail_on)
    wanted = set(group or ())
    out = Output(fmt)
    seen: set[str] = set()  # every group read, for a note when --group matched none of them
    with out.progress(lambda: consumer_offsets_bytes(paths, with_lag=lag), "offsets") as advance:
        items = consumer_offsets(paths, with_lag=lag, progress=advance)
        out.emit_all(_lag_labelled(i) if fmt == "text" and isinstance(i, CommittedOffset) else i for i in items
                     if not wanted or not isinstance(i, CommittedOffset | GroupState) or seen.add(i.group)
                     or i.group in wanted)
    nothing_shown(out, "commit or group", lambda: f"__consumer_offsets ({names('group', seen)})", {"--group": group})
    return out.exit_code(fail_on)


GroupsPaths = Annotated[list[Path], typer.Argument(
    help="Log dirs or __consumer_offsets-N partition dirs (and the log dirs holding the data partitions, for lag, and "
         "__cluster_metadata, for topic names).", show_default=False)]


def groups(
    paths: GroupsPaths,
    fmt: Format = "text",
    group: Groups = None,
    deleted: Annotated[bool, typer.Option("--deleted", help="Also the groups deleted by tombstones, as they were "
                                                            "last.")] = False,
    lag: Annotated[bool, typer.Option(help="Compare commits with the data partitions in the same log dir.")] = True,
    fail_on: FailOn = "warning",
) -> int:
    """The state of every group in __consumer_offsets, as the group coordinator rebuilds it at load.

    Classic groups (generation, protocol, leader, members; their subscriptions and assignments decoded
    for protocol type consumer), consumer groups (KIP-848: group and assignment epochs, members with
    member epoch, subscribed topics and regex, current and target assignment, partitions pending
    revocation), share groups (KIP-932) and streams groups (KIP-1071: topology, active, standby and
    warmup tasks); each group's committed offsets and lag, as offsets gives them. A record the coordinator
    refuses at load is group-replay-inconsistent (an error). Topic ids are named from the data
    partitions and __cluster_metadata given. Groups deleted by tombstones only with --deleted.
    Exit 0 ok, 1 findings (--fail-on, default warning), 2 usage error, 3 I/O error.
    """
    from ..internal.groups import GroupView, group_states, group_states_bytes
    from .exits import check_fail_on
    from .output import Output, check_format
    from .output.notes import names, nothing_shown

    check_format(fmt)
    check_fail_on(fail_on)
    wanted = set(group or ())
    out = Output(fmt)
    seen: list[tuple[str, bool]] = []  # every group read (id, deleted), for a note when nothing was shown
    with out.progress(lambda: group_states_bytes(paths, with_lag=lag), "groups") as advance:
        items = group_states(paths, with_lag=lag, deleted=deleted, progress=advance, read=seen)
        out.emit_all(i for i in items if not wanted or not isinstance(i, GroupView) or i.group.group_id in wanted)

    def read() -> str:
        gone = [g for g, dead in seen if dead]
        tail = f", {len(gone):,} of them deleted by tombstones: --deleted shows them" if gone and not deleted else ""
        return f"__consumer_offsets ({names('group', [g for g, _dead in seen])}{tail})"

    nothing_shown(out, "group", read, {"--group": group, "--deleted": deleted})
    return out.exit_code(fail_on)


def _lag_labelled(commit: Any) -> dict[str, Any]:
    """A commit's text row: a lag counted to the log end (no high watermark checkpoint) says so; none is "-"."""
    d = commit.as_dict()
    if d["lag_from"] == "log_end_offset":
        d["lag"] = f"{d['lag']:,} to LEO"
    return d


def partition_for(
    group: Groups = None,
    transactional_id: TransactionalIds = None,
    partitions: Annotated[int, typer.Option(
        help="Partitions of the internal topic (the broker's config named above).", min=1, metavar="N")] = 50,
    fmt: Format = "text",
) -> int:
    """Which __consumer_offsets / __transaction_state partition holds a group or transactional id.

    Kafka's rule: Utils.abs(id.hashCode()) % partitions, with Java's String.hashCode over UTF-16 code units
    and Kafka's Utils.abs (Math.abs, but 0 for Integer.MIN_VALUE). The partitions are the broker's
    offsets.topic.num.partitions for groups and transaction.state.log.num.partitions for transactional
    ids (both 50 by default). Exit 0, or 2 when no id was given.
    """
    from ..errors import UsageError
    from ..internal.common import partition_for as compute
    from ..javacompat import java_string_hash
    from .output import Output, check_format

    check_format(fmt)
    ids = [("group", "__consumer_offsets", g) for g in group or ()]
    ids += [("transactional_id", "__transaction_state", t) for t in transactional_id or ()]
    if not ids:
        raise UsageError("give --group and/or --transactional-id")
    out = Output(fmt)
    out.emit_all({"type": "partition_for", "kind": kind, "id": key, "hash_code": java_string_hash(key),
                  "partitions": partitions, "partition": compute(key, partitions),
                  "topic_partition": f"{topic}-{compute(key, partitions)}"} for kind, topic, key in ids)
    return 0


def txn_state(
    paths: Annotated[list[Path], typer.Argument(help="Log dirs or __transaction_state-N partition dirs.",
                                                show_default=False)],
    fmt: Format = "text",
    transactional_id: TransactionalIds = None,
    now: Now = None,
    fail_on: FailOn = "warning",
) -> int:
    """Transactional ids from __transaction_state: producer id and epoch, timeout, state, partitions, times.

    The latest value per transactional id wins, a tombstone (expired id) deletes. Every TransactionLogValue
    version (0, and flexible 1 with its tagged previous/next producer id and client transaction version).
    A transaction open past its timeout at --now is a finding, as the coordinator's
    TransactionStateManager.timedOutTransactions finds it (Ongoing: started + timeout < now).
    Exit 0 ok, 1 findings (--fail-on, default warning), 2 usage error, 3 I/O error.
    """
    from ..internal.transactions import transaction_states, transaction_states_bytes
    from .output import Output
    from .output.notes import names, nothing_shown

    at = _checked(fmt, fail_on, now)
    out = Output(fmt)
    seen: set[str] = set()  # every transactional id read, for a note when --transactional-id matched none
    with out.progress(lambda: transaction_states_bytes(paths), "txn-state") as advance:
        out.emit_all(transaction_states(paths, progress=advance, now=at, transactional_ids=transactional_id or (),
                                        read_ids=seen))
    nothing_shown(out, "transactional id", lambda: f"__transaction_state ({names('transactional id', seen)})",
                  {"--transactional-id": transactional_id})
    return out.exit_code(fail_on)


def _checked(fmt: str, fail_on: str, now: str | None) -> int | None:
    """--format and --fail-on checked, and --now as epoch ms (None when not given)."""
    from ..errors import UsageError
    from ..locate import parse_timestamp
    from .exits import check_fail_on
    from .output import check_format

    check_format(fmt)
    check_fail_on(fail_on)
    at = None if now is None else parse_timestamp(now)
    if at is not None and at < 0:
        raise UsageError(f"--now {now}: not a time")
    return at


def share_state(
    paths: Annotated[list[Path], typer.Argument(help="Log dirs or __share_group_state-N partition dirs (and the "
                                                     "log dirs holding the data partitions and __cluster_metadata).",
                                                show_default=False)],
    fmt: Format = "text",
    group: Groups = None,
    fail_on: FailOn = "warning",
) -> int:
    """Each share partition's state (KIP-932), replayed from __share_group_state as the share coordinator loads it.

    Per share group, topic and partition: state epoch, leader epoch, start offset and the state batches
    (offsets, delivery state, delivery count). A ShareSnapshot replaces the state, a ShareUpdate moves the start
    offset and merges its batches into the state's (where they overlap, the batch delivered more often wins, then
    the further state; batches below the start offset are dropped), a tombstone deletes it
    (ShareCoordinatorShard.replay, PersisterStateBatchCombiner). Topic ids are named from the data partitions
    and __cluster_metadata given. Where the data partition is in the same log dir: its log start and LEO; a start
    offset beyond the LEO is an error, below the log start a warning.
    Exit 0 ok, 1 findings (--fail-on, default warning), 2 usage error, 3 I/O error.
    """
    from ..internal.share_state import SharePartitionState, share_states, share_states_bytes
    from .exits import check_fail_on
    from .output import Output, check_format
    from .output.notes import names, nothing_shown

    check_format(fmt)
    check_fail_on(fail_on)
    out = Output(fmt)
    seen: set[str] = set()  # every group read, for a note when --group matched none of them
    with out.progress(lambda: share_states_bytes(paths), "share-state") as advance:
        items = share_states(paths, progress=advance, groups=group or (), read_groups=seen)
        out.emit_all(_share_row(i) if fmt == "text" and isinstance(i, SharePartitionState) else i for i in items)
    nothing_shown(out, "share partition state", lambda: f"__share_group_state ({names('group', seen)})",
                  {"--group": group})
    return out.exit_code(fail_on)


def tiered(
    paths: Annotated[list[Path], typer.Argument(help="Log dirs or __remote_log_metadata-N partition dirs (and the "
                                                     "log dirs holding the user partitions, to check them against).",
                                                show_default=False)],
    fmt: Format = "text",
    topic: Topic = None,
    partition: PartitionNo = None,
    now: Now = None,
    fail_on: FailOn = "warning",
) -> int:
    """Each partition's remote log segments (tiered storage, KIP-405), replayed from __remote_log_metadata.

    As TopicBasedRemoteLogMetadataManager's consumer replays it (RemotePartitionMetadataStore,
    RemoteLogMetadataCache): a segment's metadata, then its updates by RemoteLogSegmentState's transitions (an
    invalid one is dropped, and an error); DELETE_SEGMENT_FINISHED segments and DELETE_PARTITION_FINISHED partitions
    are gone. A segment left in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED at --now is a warning. Where the
    user partition's dir is given (by topic id): copied segments ending below the local log start leave offsets on
    no tier (an error); a copied segment whose leader epochs are not within the local leader-epoch-checkpoint is a
    warning (RemoteLogManager.isRemoteSegmentWithinLeaderEpochs).
    Exit 0 ok, 1 findings (--fail-on, default warning), 2 usage error, 3 I/O error.
    """
    from ..internal.remote_log_metadata import RemoteSegment, remote_segments, remote_segments_bytes
    from .output import Output
    from .output.notes import names, nothing_shown

    at = _checked(fmt, fail_on, now)
    out = Output(fmt)
    seen: set[str] = set()  # every partition read, for a note when --topic/--partition matched none
    with out.progress(lambda: remote_segments_bytes(paths), "tiered") as advance:
        items = remote_segments(paths, progress=advance, now=at, topic=topic, partition=partition,
                                read_partitions=seen)
        out.emit_all(_segment_row(i) if fmt == "text" and isinstance(i, RemoteSegment) else i for i in items)
    nothing_shown(out, "remote segment", lambda: f"__remote_log_metadata ({names('partition', seen)})",
                  {"--topic": topic, "--partition": partition})
    return out.exit_code(fail_on)


def _segment_row(segment: Any) -> dict[str, Any]:
    """A remote segment's text row: its topic by name where known, its leader epochs on one line (``0@0 1@20``)."""
    d = segment.as_dict()
    d["topic"] = d["topic"] or d["topic_id"]
    d["segment_leader_epochs"] = " ".join(f"{e}@{o}" for e, o in d["segment_leader_epochs"].items()) or "-"
    return d


def _share_row(state: Any) -> dict[str, Any]:
    """A share partition's text row: its topic by name where known, its batches on one line (``0-9 Acked×1``)."""
    d = state.as_dict()
    d["topic"] = d["topic"] or d["topic_id"]
    d["state_batches"] = ", ".join(f"{b['first_offset']}-{b['last_offset']} {b['delivery_state']}×"
                                   f"{b['delivery_count']}" for b in d["state_batches"]) or "-"
    return d


def _cluster_labels(groups: list) -> dict[str, str]:
    """With two metadata logs or more, each one's file names -> which cluster and node it is (its log dir's
    meta.properties: cluster.id, node.id), else its dir: rows of several clusters or controllers are never one
    anonymous table. Empty for one log (its rows as they always were)."""
    import os

    from ..smallfiles import read_meta_properties

    if len(groups) < 2:
        return {}
    labels: dict[str, str] = {}
    for group in groups:
        path, display, _kind = group[0]
        props = read_meta_properties(path.parent.parent)  # the log dir holding __cluster_metadata-0
        label = (f"{props.cluster_id} node {props.node_id}" if props is not None and props.cluster_id
                 else os.path.dirname(display) or display)
        if label in labels.values():  # two copies of one node's log: told apart by their dirs
            label = os.path.dirname(display) or display
        labels.update((d, label) for _p, d, _k in group)
    return labels


def _with_cluster(items, labels: dict[str, str]):
    """Each row of a metadata log with its ``cluster`` (:func:`_cluster_labels`) when there are several."""
    for i in items:
        source = getattr(i, "source", None)
        if not labels or source not in labels:
            yield i
            continue
        d = i.as_dict()
        yield {"type": d.pop("type"), "source": d.pop("source"), "cluster": labels[source], **d}


def _heartbeats_counted(items):
    """Text: a run of NoOpRecords (the active controller's heartbeats, one every 500 ms) as one line."""
    from dataclasses import replace

    from ..formats.internal_topics import NO_OP
    from ..internal.metadata import MetadataEvent

    run: list = []

    def flush():
        if run:
            first, last = run[0], run[-1]
            fields = {"heartbeats": len(run)}
            if len(run) > 1:
                fields.update(to_offset=last.offset, until=_iso_ms(last.timestamp))
            yield replace(first, fields=fields)
        run.clear()

    for i in items:
        if isinstance(i, MetadataEvent) and i.record_type == NO_OP:
            run.append(i)
            continue
        yield from flush()
        yield i
    yield from flush()


def _iso_ms(ts: int) -> str:
    from .output.text import _iso

    return _iso(ts)


def metadata(
    paths: Annotated[list[Path], typer.Argument(help="KRaft metadata log dirs, __cluster_metadata-0 dirs, or "
                                                     "single segments / .checkpoint snapshots.",
                                                show_default=False)],
    fmt: Format = "text",
    topic: Topic = None,
    show_all: Annotated[bool, typer.Option("--all", help="Also every other metadata record (topics, brokers, "
                                                         "features, and undecoded types).")] = False,
    under_min_isr: Annotated[bool, typer.Option(
        "--under-min-isr", help="Only the intervals during which a partition's ISR was smaller than its "
                                "min.insync.replicas (acks=all producers got NOT_ENOUGH_REPLICAS).")] = False,
    min_insync_replicas: Annotated[int | None, typer.Option(
        "--min-insync-replicas", min=1, help="The brokers' static min.insync.replicas, used where no topic or "
                                             "dynamic broker config sets it. Default: from --server-properties, "
                                             "else 1 (Kafka's default).")] = None,
    server_properties: Annotated[Path | None, typer.Option(
        "--server-properties", help="A broker's server.properties to read min.insync.replicas from.")] = None,
    fail_on: FailOn = "warning",
) -> int:
    """The partition leadership / ISR timeline from the KRaft __cluster_metadata log and snapshots.

    For a __cluster_metadata-0 dir: its latest snapshot, then the log after it, as the controller replays them.
    One row per PartitionRecord / PartitionChangeRecord: offset (for rows from a snapshot: the snapshot's end
    offset in its own column), time, topic-partition, leader, ISR, leader epoch, partition epoch, and a
    marker where the ISR falls below min.insync.replicas and where it is back; ELR and last known ELR where the
    records name them (a ClearElrRecord empties them). Record types or versions newer than the schemas are
    named by type and version (a metadata-record-unknown warning) and skipped.
    Exit 0 ok, 1 findings (--fail-on, default warning; with --under-min-isr also any interval), 2 usage error,
    3 I/O error.
    """
    from ..internal.metadata import (
        MetadataEvent,
        PartitionState,
        UnderMinIsr,
        metadata_bytes,
        metadata_sources,
        metadata_timeline,
        read_min_insync_replicas,
    )
    from .exits import check_fail_on
    from .output import Output, check_format
    from .output.notes import names, nothing_shown

    check_format(fmt)
    check_fail_on(fail_on)
    if min_insync_replicas is None:
        min_insync_replicas = (read_min_insync_replicas(server_properties) if server_properties else None) or 1
    out = Output(fmt, tables=not show_all)  # --all: one line per record, partition steps among them
    topics: set[str] = set()  # every topic read, for a note when --topic or --under-min-isr matched nothing

    def keep(i: object) -> bool:
        if isinstance(i, PartitionState):
            topics.add(i.topic)
            return not under_min_isr and (topic is None or i.topic == topic)
        if isinstance(i, MetadataEvent):
            return show_all and not under_min_isr
        if isinstance(i, UnderMinIsr):
            return under_min_isr and (topic is None or i.topic == topic)
        return True

    clusters = _cluster_labels(metadata_sources(paths))
    with out.progress(lambda: metadata_bytes(paths), "metadata") as advance:
        items = (i for i in metadata_timeline(paths, min_insync_replicas=min_insync_replicas, progress=advance,
                                               topic=topic)
                 if keep(i))
        if not under_min_isr:
            out.emit_all(_with_cluster(_heartbeats_counted(items) if fmt == "text" else items, clusters))
        else:
            # Each interval is known when it ends: shown in order of the metadata log, then of partition.
            found = sorted(items, key=lambda i: (0, i.source, i.from_offset is not None, i.from_offset or 0, i.topic,
                                                 i.partition) if isinstance(i, UnderMinIsr) else (-1,))
            out.emit_all(_with_cluster(found, clusters))
    nothing_shown(out, "interval" if under_min_isr else "partition state",
                  lambda: f"the metadata read ({names('topic', topics)})",
                  {"--under-min-isr": under_min_isr, "--topic": topic})
    return out.exit_code(fail_on, verdict=under_min_isr and out.shown > 0)
