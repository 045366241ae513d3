"""The text format's lines for each command's own reports (a group, a delivery verdict, a location, a repair plan,
replicas compared, a truncation, an epoch history), and :data:`_TEXT`: the renderer of every value type."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .jsonl import _json
from .terminal import escape
from .text import _batch, _cell, _fields, _file, _finding, _generic, _iso, _min_isr, _record, _trailing

if TYPE_CHECKING:
    from . import Output

def _group(o: Output, d: dict[str, Any]) -> str:
    """``offsets``: a consumer group's latest GroupMetadataValue, one line per member below it."""
    lines = [f"[bold]group {escape(d['group'])}[/bold]  {escape(str(d['protocol_type']))}  generation {d['generation']}"
             f"  protocol {escape(d['protocol'] or '-')}  leader {escape(d['leader'] or '-')}"
             f"  {len(d['members'])} members  (v{d['value_version']}, {escape(d['coordinator_partition'])}"
             f" @ {d['log_offset']}, {_iso(d['timestamp'])})"]
    for m in d["members"]:
        lines.append(f"    member {escape(str(m['member_id']))}  client {escape(str(m['client_id']))}"
                     f"  host {escape(str(m['client_host']))}  session {m['session_timeout']} ms")
    return "\n".join(lines)


def _parts(assigned: dict[str, list[int]] | None) -> str:
    """``{topic or subtopology: [partitions]}`` as ``t:0,1 u:2`` (``-`` when empty)."""
    return " ".join(f"{escape(str(t))}:{','.join(map(str, ps))}" for t, ps in (assigned or {}).items()) or "-"


def _group_state(o: Output, d: dict[str, Any]) -> str:
    """``groups``: a group's state as the coordinator loaded it, one line per member, then its commits."""
    kind = d["group_type"]
    head = (f"[bold]group {escape(d['group_id'])}[/bold]  {kind}  {d['state']}  "
            + (f"generation {d['epoch']}  protocol {escape(d.get('protocol_type') or '-')}/"
               f"{escape(d.get('protocol') or '-')}  leader {escape(d.get('leader') or '-')}" if kind == "classic"
               else f"epoch {d['epoch']}  assignment epoch {d['assignment_epoch']}")
            + f"  {len(d['members'])} members  ({escape(d['coordinator_partition'])} @ {d['log_offset']})"
            + ("  [yellow]deleted[/yellow]" if d["deleted"] else "") + ("  (offsets only)" if d["simple"] else ""))
    lines = [head]
    names = d.get("topic_names") or {}
    for m in d["members"]:
        assigned = {names.get(t, t): ps for t, ps in m["assigned_partitions"].items()}
        line = (f"    member {escape(str(m['member_id']))}  epoch {m['member_epoch']}"
                + (f" (previous {m['previous_member_epoch']}, {m.get('state')})"
                   if "previous_member_epoch" in m else "")
                + f"  client {escape(str(m['client_id']))}")
        if m["subscribed_topic_names"] is not None or m.get("subscribed_topic_regex"):
            line += f"  subscribed {escape(','.join(m['subscribed_topic_names'] or []))}"
            if m.get("subscribed_topic_regex"):
                line += f" regex {escape(m['subscribed_topic_regex'])}"
        line += f"  {'active tasks' if kind == 'streams' else 'assigned'} {_parts(assigned)}"
        pending = m.get("partitions_pending_revocation") or m.get("active_tasks_pending_revocation")
        if pending:
            line += f"  pending revocation {_parts({names.get(t, t): ps for t, ps in pending.items()})}"
        if kind == "streams":
            line += f"  standby {_parts(m.get('standby_tasks'))}  warmup {_parts(m.get('warmup_tasks'))}"
        if "target_assignment" in m and m["target_assignment"] != m["assigned_partitions"]:
            line += f"  target {_parts({names.get(t, t): ps for t, ps in m['target_assignment'].items()})}"
        lines.append(line)
    if "topology" in d:
        lines.append(f"    topology epoch {d['topology']['epoch']}: " + ", ".join(
            f"{escape(s['subtopology_id'])} <- {escape(','.join(s.get('source_topics') or []))}"
            for s in d["topology"]["subtopologies"]))
    for tp, offset in d["committed_offsets"].items():
        lag = d["lag"].get(tp)
        lines.append(f"    committed {escape(tp)} {offset}" + ("" if lag is None else f"  lag {lag:,}"))
    return "\n".join(lines)


def _metadata_record(o: Output, d: dict[str, Any]) -> str:
    """``metadata --all``: a record other than a partition's, with its decoded fields (if any)."""
    fields = _fields(d["fields"]) if d["decoded"] else "[dim](layout not declared here)[/dim]"
    offset = "snapshot" if d["offset"] is None else d["offset"]  # a KRaft snapshot's records have no log offset
    cluster = f"{d['cluster']}  " if "cluster" in d else ""  # one of several clusters' metadata logs
    return (f"{cluster}{offset}  {_iso(d['timestamp'])}  {escape(d['name'])} v{d['version']}"
            + (f"  {fields}" if fields else ""))


def _partition_state(o: Output, d: dict[str, Any]) -> str:
    """``metadata --all``: a partition's step as a line among the other records (no table to interleave)."""
    offset = f"snapshot {d['snapshot_end_offset']}" if d["offset"] is None else d["offset"]
    cluster = f"{d['cluster']}  " if "cluster" in d else ""  # one of several clusters' metadata logs
    return (f"{cluster}{offset}  {_iso(d['timestamp'])}  {escape(d['record'])}  {escape(d['topic'])}-{d['partition']}  "
            f"leader {d['leader']}  ISR {','.join(map(str, d['isr']))}  replicas {','.join(map(str, d['replicas']))}"
            f"  leader epoch {_cell('', d['leader_epoch'])}  partition epoch {_cell('', d['partition_epoch'])}"
            + ("".join(f"  {label} {','.join(map(str, d[k])) or '-'}" for k, label in
                       (("elr", "ELR"), ("last_known_elr", "last known ELR")) if k in d))
            + f"  min ISR {escape(_min_isr(d))}" + ("  unclean election" if d["election"] else ""))


def _txn_clock(o: Output, d: dict[str, Any]) -> str:
    """``txn-state``: the time open transactions are judged at, and where it comes from."""
    source = "--now" if d["source"] == "--now" else "the newest record time in the log; --now to choose another"
    return f"judged at {_iso(d['now'])} ({source})"


def _ranges(items: list[list[int]], limit: int = 8, total: int | None = None) -> str:
    """``lo..hi`` ranges (``lo..hi xN`` with a times), the first ``limit``; ``total``: how many there are in all,
    when the list itself was cut."""
    def one(r: list[int]) -> str:
        return (str(r[0]) if r[0] == r[1] else f"{r[0]}..{r[1]}") + (f" x{r[2]}" if len(r) > 2 else "")

    more = (len(items) if total is None else total) - limit
    return ", ".join(one(r) for r in items[:limit]) + (f", ... ({more:,} more ranges)" if more > 0 else "")


def _delivery(o: Output, d: dict[str, Any]) -> str:
    """``delivery``: one partition's verdict, then what is wrong with it, each kind as at most 8 ranges."""
    def listed(kind: str) -> str:
        return _ranges(d[kind], total=d[f"{kind}_ranges"])

    style = "green" if d["verdict"] == "exactly-once" else "bold red"
    lines = [f"[bold]{escape(d['topic'])}-{d['partition']}[/bold]  offsets {d['from_offset']}..{d['to_offset']}  "
             f"{d['isolation']}  expected {d['expected']:,}  processed {d['delivered']:,}  "
             f"[{style}]{d['verdict']}[/{style}]"]
    def counted(kind: str, label: str, indent: str = "    ") -> None:
        if d[f"{kind}_count"]:
            lines.append(f"{indent}{label} {d[f'{kind}_count']:,}: {listed(kind)}")

    counted("missing", "missing")
    if d["duplicates_count"]:
        lines.append(f"    duplicates: {d['duplicates_count']:,} offsets processed more than once "
                     f"({d['duplicates_extra']:,} extra times): {listed('duplicates')}")
    counted("aborted_delivered", "[bold red]aborted or control records processed[/bold red]")
    counted("unexpected", "offsets the log does not hold for this consumer")
    if d.get("group") is not None:
        commit = "-" if d["committed_offset"] is None else d["committed_offset"]
        lines.append(f"    group {escape(d['group'])}: committed offset {commit}")
        counted("redelivered_on_restart", "processed at or past the commit, delivered again on restart", "      ")
        counted("committed_not_processed", "[bold red]committed but never processed (lost)[/bold red]", "      ")
    return "\n".join(lines)


def _offset_ranges(items: list[dict[str, Any]]) -> str:
    def one(r: dict[str, Any]) -> str:
        span = str(r["first_offset"]) if r["first_offset"] == r["last_offset"] else \
            f"{r['first_offset']}..{r['last_offset']}"
        producers = ", ".join(map(str, r["producer_ids"])) or "none"
        return f"{span} ({r['records']:,} records, producers {producers})"

    return "; ".join(one(r) for r in items) or "nothing"


def _unclean_election(o: Output, d: dict[str, Any]) -> str:
    """``replicas``: what electing one replica uncleanly would lose."""
    where = "in the ISR" if d["in_isr"] else "out of the ISR"
    style = "bold red" if d["lost"] else "green"
    kind = "election" if d["in_isr"] else "unclean election"
    lines = [f"{kind} of [bold]{escape(d['candidate'])}[/bold] ({where}, LEO {d['candidate_leo']}, "
             f"high watermark {d['high_watermark']}; new leader epoch {d['new_epoch']} from {d['candidate_leo']}): "
             f"[{style}]acknowledged offsets lost: {_offset_ranges(d['lost'])}[/{style}]"]
    for f in d["followers"]:
        if f["offsets_removed"]:
            lines.append(f"    {escape(f['replica'])} truncates to {f['truncate_to']} "
                         f"({f['offsets_removed']:,} offsets): acknowledged {_offset_ranges(f['acknowledged'])}; "
                         f"not acknowledged {_offset_ranges(f['unacknowledged'])}")
        else:
            lines.append(f"    {escape(f['replica'])} keeps its log (truncates to its LEO {f['leo']})")
    return "\n".join(lines)


def _locate_step(o: Output, d: dict[str, Any]) -> str:
    if d["step"] == "fallback":
        return f"  [yellow]fallback:[/yellow] {escape(d['message'])}"
    return f"  {escape(d['message'])}"


def _location(o: Output, d: dict[str, Any]) -> str:
    """``locate``: the target, each step of the search, then the batch and the record (or why not found)."""
    t = d["target"]
    if "offset" in t:
        what = f"offset {t['offset']}"
    elif "name" in t:
        what = f"timestamp {t['name']}"
    else:
        what = f"timestamp {t['timestamp']} ({_iso(t['timestamp'])})"
    lines = [f"[bold]locate {what}[/bold] in {escape(d['partition'])}"]
    lines.extend(_locate_step(o, s) for s in d["steps"])
    lines.append(f"  read {d['bytes_read']:,} bytes of .log files")
    if d["batch"] is not None:
        lines.append(_batch(o, d["batch"]))
    if d["record"] is not None:
        lines.append(_record(o, d["record"]))
    if not d["found"]:
        lines.append(f"[bold red]not found:[/bold red] {escape(d['note'] or '')}")
    else:
        if d["note"]:
            lines.append(f"[yellow]note:[/yellow] {escape(d['note'])}")
        if d["batch"] is None:  # latest / earliest of an empty log: an offset without a record
            lines.append(f"[bold]offset {d['offset']}[/bold]")
    return "\n".join(lines)


_ACTION_STYLE = {"delete": "red", "truncate": "bold red", "rename": "yellow"}


def _action(o: Output, d: dict[str, Any]) -> str:
    """``repair``: one planned or applied step."""
    style = _ACTION_STYLE.get(d["action"], "cyan")
    to = f" → {escape(d['to'])}" if d.get("to") else ""
    return f"  [{style}]{d['action']:8}[/{style}] {escape(d['path'])}{to}: {escape(d['reason'])}"


def _repair_partition(o: Output, d: dict[str, Any]) -> str:
    """``repair``: what it comes to for one partition."""
    note = d.get("recovery_point_note")
    rp = f"; recovery point {d['recovery_point']} {escape(note)}" if note else ""
    if d.get("index_interval_note"):
        rp += f"; index interval {d['index_interval_bytes']} bytes {escape(d['index_interval_note'])}"
    if d.get("clean_shutdown") and not d["actions"]:
        u = d["unclean_start"]
        return (f"[yellow]nothing repaired[/yellow] in {escape(d['path'])}: {escape(d['clean_shutdown'])} makes the "
                f"broker skip recovery and keep what it would cut (above); an unclean start would take "
                f"{u['actions']} actions, log end offset {d['leo_before']} → {u['leo_after']}: run again with "
                f"--recovery-point {u['recovery_point']} to plan them\n")
    if not d["actions"] and d.get("blocked"):
        return f"[red]cannot repair[/red] {escape(d['path'])}: the errors above; nothing is changed there\n"
    if not d["actions"]:
        return f"[green]nothing to repair[/green] in {escape(d['path'])} (log end offset {d['leo_after']}{rp})"
    removed = ""
    if d["bytes_removed"]:
        rng = d["offsets_removed"]
        offsets = f", offsets {rng[0]}..{rng[1]}" if rng else ""
        removed = f"; removes {d['bytes_removed']:,} bytes ({d['batches_removed']} batches{offsets})"
    salvaged = f"; {d['salvaged_batches']} batches after the cut can be salvaged" if d["salvaged_batches"] else ""
    done = (f"[green]applied[/green] (originals in {escape(d['backup_dir'])})" if d["applied"]
            else "[red]blocked[/red]: the errors above refuse --apply here; nothing is changed" if d.get("blocked")
            else "[yellow]dry run[/yellow]: run again with --apply (broker stopped) to do it")
    return (f"[bold]{escape(d['path'])}[/bold]: {d['actions']} actions, log end offset {d['leo_before']} → "
            f"{d['leo_after']}{removed}{salvaged}{rp}; {done}\n")


def _partition(o: Output, d: dict[str, Any]) -> str:
    if "leo_before" in d:
        return _repair_partition(o, d)
    if "isr_hw" in d:
        return _replicas_partition(o, d)
    return escape(_json(d))


def _runs(side: dict[str, Any]) -> str:
    """``replicas``: the runs of batches one replica has and the other has not."""
    parts = []
    for r in side["runs"]:
        what = {"divergent": "", "ahead": ", past the other's end", "below-log-start": ", below the other's log start"}
        parts.append(f"{r['first_offset']}..{r['last_offset']} (epoch {r['partition_leader_epoch']}, {r['batches']} "
                     f"batches{what.get(r['kind'], '')})")
    if side["more_runs"]:
        parts.append(f"and {side['more_runs']} more batches")
    return ", ".join(parts)


def _replicas_partition(o: Output, d: dict[str, Any]) -> str:
    """``replicas``: after the table of replicas, the ISR's high watermark and how each pair compares."""
    lines = [f"[bold]{escape(d['topic'])}-{d['partition']}[/bold]: {len(d['replicas'])} replicas; ISR high watermark "
             f"[bold]{d['isr_hw']}[/bold] (min LEO of {escape(', '.join(d['isr']))}); the longest log ends at "
             f"{d['max_leo']}"]
    if d["isr_from"] != "--isr":  # where the ISR came from when the command line did not name it
        lines.append(f"  ISR {'assumed' if d['isr_from'] == 'assumed' else 'from ' + escape(d['isr_from'])}: "
                     f"{escape(d['isr_basis'])}")
    for dv in d["divergence"]:
        a, b = escape(dv["a_name"]), escape(dv["b_name"])
        rel, only_a, only_b = dv["relation"], dv["only_in_a"], dv["only_in_b"]
        if rel == "divergent":
            line = (f"  [bold red]{a} and {b} diverge at offset {dv['first_divergent_offset']}[/bold red] "
                    f"({dv['common_batches']} batches in common)")
            if only_a["batches"]:
                line += f"; only {a}: {_runs(only_a)}"
            if only_b["batches"]:
                line += f"; only {b}: {_runs(only_b)}"
        elif rel in ("a-ahead", "b-ahead"):
            ahead, behind, side = (a, b, only_a) if rel == "a-ahead" else (b, a, only_b)
            line = f"  {behind} is a prefix of {ahead}, which also has {_runs(side)}"
        else:
            line = f"  {a} and {b} hold the same {dv['common_batches']} batches"
            extra = [f"only {n}: {_runs(s)}" for n, s in ((a, only_a), (b, only_b)) if s["batches"]]
            if extra:
                line += "; " + "; ".join(extra)
        lines.append(line)
    return "\n".join(lines) + "\n"


_RULES = {"epoch": "leader-epoch rule (KIP-101/279)", "hw": "high-watermark rule (before KIP-101)"}


def _truncation_step(i: int, s: dict[str, Any]) -> str:
    if "requested_epoch" in s and s.get("leader_epoch") is not None:
        follower = ("knows no epoch at or below it" if s.get("follower_epoch") is None
                    else f"its epoch {s['follower_epoch']} ends at {s['follower_end_offset']}")
        line = (f"    round {i}: asks for epoch {s['requested_epoch']}; leader: epoch {s['leader_epoch']} ends at "
                f"{s['leader_end_offset']}; follower: {follower} → truncate to {s['truncate_to']}")
    elif "follower_high_watermark" in s:
        line = f"    truncate to its high watermark {s['follower_high_watermark']} → {s['truncate_to']}"
    else:
        line = f"    → {s['truncate_to']}"
    return line + (f" ({escape(s['note'])})" if s.get("note") else "")


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "es" if word.endswith("ch") else "s")


def _truncation(o: Output, d: dict[str, Any]) -> str:
    """``truncation``: one rule's outcome: the offset, how it was reached, what is discarded, the plan."""
    head = (f"[bold]{_RULES.get(d['rule'], d['rule'])}[/bold]: {escape(d['follower_name'])} "
            f"({escape(d['topic'])}-{d['partition']}, LEO {d['follower_leo']}) following "
            f"{escape(d['leader_name'])} (LEO {d['leader_leo']}) truncates to [bold]{d['truncate_to']}[/bold]")
    discards = (f": discards {_n(d['offsets_removed'], 'offset')}, {_n(d['lost_batches'], 'batch')}, "
                f"{_n(d['lost_records'], 'record')}")
    head += discards if d["lost_batches"] or d["offsets_removed"] else ": nothing discarded"
    lines = [head, *(_truncation_step(i, s) for i, s in enumerate(d["steps"], 1))]
    shown = d["lost"][:20]
    for b in shown:
        offsets = f"{b['base_offset']}..{b['last_offset']}" if b["last_offset"] != b["base_offset"] else str(
            b["base_offset"])
        producer = f"  producer {b['producer_id']}" if b["producer_id"] is not None and b["producer_id"] >= 0 else ""
        where = "on the leader (fetched again)" if b["on_leader"] else "[bold red]not on the leader[/bold red]"
        acked = "  [yellow]acknowledged[/yellow]" if b["acknowledged"] else ""
        lines.append(f"    discard offset {offsets}  epoch {b['partition_leader_epoch']}{producer}  "
                     f"{b['record_count']} rec  {where}{acked}")
    if d["lost_batches"] > len(shown):
        lines.append(f"    ... {d['lost_batches'] - len(shown)} more batches (all of them: --format jsonl)")
    if d["data_loss"]:
        acked = ", ".join(f"{a}..{b}" for a, b in d["acknowledged_lost"])
        lines.append(f"  [bold red]data loss[/bold red]: {_n(d['lost_not_on_leader'], 'discarded batch')} not on the "
                     "leader" + (f"; acknowledged offsets lost: {acked}" if acked else ""))
    if d["acknowledged_at_risk"]:
        risk = ", ".join(f"{a}..{b}" for a, b in d["acknowledged_at_risk"])
        lines.append(f"  [yellow]acknowledged offsets {risk} are then only on the leader[/yellow]: lost if it fails "
                     "before the follower fetches them again")
    if d["keeps_divergence_from"] is not None:
        lines.append(f"  [bold red]stays inconsistent[/bold red]: keeps its own batches from offset "
                     f"{d['keeps_divergence_from']}, which differ from the leader's")
    elif d["lost_batches"] and not d["data_loss"]:
        lines.append("  [green]no data lost[/green]: the leader holds every discarded batch")
    plan = d.get("plan") or {}
    if plan.get("changes"):
        acts = [f"{s['action']} {escape(os.path.basename(s['log']))}" + (
            f" to {s['keep_bytes']:,} of {s['size']:,} bytes" if s["action"] == "truncate" else "")
            for s in plan["segments"]]
        if plan["epoch_checkpoint"] is not None:
            acts.append("leader-epoch-checkpoint → " + (", ".join(f"{e}@{s}" for e, s in plan["epoch_checkpoint"])
                                                       or "empty"))
        acts += [f"delete {escape(os.path.basename(x))}" for x in plan["delete_snapshots"]]
        acts += [f"{escape(os.path.basename(k))} → {v}" for k, v in plan["checkpoints"].items()]
        done = (f"[green]applied[/green] (originals in {escape(d['backup_dir'])})" if d.get("applied")
                else "plan (not applied)")
        lines.append(f"  {done}: " + "; ".join(acts))
    return "\n".join(lines) + "\n"


def _epochs(o: Output, d: dict[str, Any]) -> str:
    """``epochs``: after the table, the checkpoint and the cache the broker would load, side by side."""
    def show(entries: list[list[int]] | None) -> str:
        return "none" if entries is None else (", ".join(f"{e}@{s}" for e, s in entries) or "empty")

    verdict = ("[green]they agree[/green]" if not d["disagreements"]
               else f"[bold red]{d['disagreements']} disagreements[/bold red]")
    return (f"[bold]{escape(d['path'])}[/bold] (log {d['log_start_offset']}..{d['leo']}): leader-epoch-checkpoint "
            f"{show(d['checkpoint'])}; batches {show(d['log'])}; {verdict}; the broker would load {show(d['cache'])}\n")


_TEXT: dict[str, Callable[[Output, dict[str, Any]], str]] = {
    "file": _file,
    "batch": _batch,
    "record": _record,
    "finding": _finding,
    "trailing": _trailing,
    "group": _group,
    "group_state": _group_state,
    "metadata_record": _metadata_record,
    "delivery": _delivery,
    "partition_state": _partition_state,
    "txn_clock": _txn_clock,
    "unclean_election": _unclean_election,
    "location": _location,
    "action": _action,
    "partition": _partition,
    "truncation": _truncation,
    "epochs": _epochs,
    "locate_step": _locate_step,
    "index_entry": _generic("index", "offset", "position"),
    "time_index_entry": _generic("time index", "timestamp", "offset"),
    "checkpoint": _generic("checkpoint", "version", "count"),
    "producer_snapshot": _generic("producer snapshot", "version", "crc", "crc_valid", "count"),
    "partition_metadata": _generic("partition metadata", "version", "topic_id"),
}
