"""The committed ``fixtures/logdir`` is what ``fixtures/generate.py`` writes, reads cleanly, and holds what the
generator's docstring says (checked from the data, independently of the writer that produced it)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from .clirun import cli
from .conftest import PROJECT_ROOT

FIXTURE = PROJECT_ROOT / "fixtures" / "logdir"
GENERATOR = PROJECT_ROOT / "fixtures" / "generate.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("fixtures_generate", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = load_generator()


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_regenerating_gives_the_committed_bytes(tmp_path: Path) -> None:
    out = tmp_path / "logdir"
    subprocess.run([sys.executable, str(GENERATOR), str(out)], cwd=PROJECT_ROOT, check=True)
    committed, fresh = tree(FIXTURE), tree(out)
    assert sorted(fresh) == sorted(committed)
    assert [name for name in committed if fresh[name] != committed[name]] == []
    assert 10_000 < sum(map(len, committed.values())) < 100_000  # tens of KB


@pytest.fixture(scope="module")
def dumped() -> dict[str, list[dict]]:
    """``kafkatool dump --format jsonl --records fixtures/logdir``: lines per file (path relative to the log dir)."""
    proc = cli("dump", "--format", "jsonl", "--records", "fixtures/logdir")
    assert proc.returncode == 0, proc.stderr
    by_file: dict[str, list[dict]] = {}
    for line in proc.stdout.splitlines():
        obj = json.loads(line)
        if obj["type"] == "file":
            current = by_file.setdefault(str(Path(obj["path"]).relative_to("fixtures/logdir")), [])
        else:
            current.append(obj)
    return by_file


def test_dump_reads_every_file_without_findings(dumped: dict[str, list[dict]]) -> None:
    assert sorted(dumped) == sorted(tree(FIXTURE))
    assert [line for lines in dumped.values() for line in lines if line["type"] == "finding"] == []


def lines(dumped: dict[str, list[dict]], partition: str, suffix: str, kind: str) -> list[tuple[str, dict]]:
    """(file name, line) for every line of ``kind`` in the partition's files ending in ``suffix``, in file order."""
    return [(Path(f).name, line) for f, ls in sorted(dumped.items())
            if f.startswith(partition + "/") and f.endswith(suffix) for line in ls if line["type"] == kind]


def test_log_end_offsets(dumped: dict[str, list[dict]]) -> None:
    hw = {f"{e['topic']}-{e['partition']}": e["offset"] for e in dumped["replication-offset-checkpoint"]
          if e["type"] == "offset"}
    assert hw == gen.LOG_END_OFFSETS
    for partition, leo in gen.LOG_END_OFFSETS.items():
        batches = lines(dumped, partition, ".log", "batch")
        assert batches[-1][1]["last_offset"] + 1 == leo
        assert f"{partition}/{leo:020d}.snapshot" in dumped  # clean shutdown: a snapshot at the log end


def test_events_has_one_codec_per_segment(dumped: dict[str, list[dict]]) -> None:
    by_segment = defaultdict(set)
    for name, batch in lines(dumped, "events-0", ".log", "batch"):
        by_segment[name].add(batch["compression"])
    assert [sorted(codecs) for _, codecs in sorted(by_segment.items())] == [[c] for c in gen.CODECS]


def test_leader_epochs_change_mid_log(dumped: dict[str, list[dict]]) -> None:
    for partition in ("orders-0", "payments-0"):
        epochs = [e["epoch"] for e in dumped[f"{partition}/leader-epoch-checkpoint"] if e["type"] == "epoch"]
        assert epochs == [0, 1, 3]
        stamped = [b["partition_leader_epoch"] for _, b in lines(dumped, partition, ".log", "batch")]
        assert stamped == sorted(stamped) and set(stamped) == {0, 1, 3}


def test_records_with_headers_null_keys_and_null_values(dumped: dict[str, list[dict]]) -> None:
    records = [r for _, r in lines(dumped, "orders-0", ".log", "record") + lines(dumped, "orders-1", ".log", "record")]
    assert any(r["key"] is None for r in records)
    assert any(r["value"] is None for r in records)
    assert any(value is None for r in records for _, value in r["headers"])
    assert any(len(r["headers"]) == 2 for r in records)


def transactions_from_the_log(dumped: dict[str, list[dict]]) -> tuple[list[tuple], dict[int, int]]:
    """Aborted transactions (producer, first, marker offset, LSO) and the transactions left open, from the
    batches alone: a transactional data batch opens its producer's transaction, a marker closes it; the LSO
    is the first offset of the earliest transaction of another producer still open, else marker + 1."""
    open_txns: dict[int, int] = {}
    aborted = []
    control_types = {r["offset"]: r["control_type"] for _, r in lines(dumped, "payments-0", ".log", "record")
                     if "control_type" in r}
    for _, b in lines(dumped, "payments-0", ".log", "batch"):
        pid = b["producer_id"]
        if b["transactional"] and not b["control"]:
            open_txns.setdefault(pid, b["base_offset"])
        elif b["control"] and pid in open_txns:
            first = open_txns.pop(pid)
            if control_types[b["base_offset"]] == "ABORT":
                lso = min(open_txns.values(), default=b["base_offset"] + 1)
                aborted.append((pid, first, b["base_offset"], lso))
    return aborted, open_txns


def test_aborted_transactions_are_in_the_txnindex_of_their_marker_segment(dumped: dict[str, list[dict]]) -> None:
    aborted, _ = transactions_from_the_log(dumped)
    assert len(aborted) == 8 and any(lso < marker for _, _, marker, lso in aborted)  # overlapping ones
    indexed = lines(dumped, "payments-0", ".txnindex", "aborted_txn")
    assert [(t["producer_id"], t["first_offset"], t["last_offset"], t["last_stable_offset"])
            for _, t in indexed] == aborted
    bases = sorted(int(Path(f).stem) for f in dumped if f.startswith("payments-0/") and f.endswith(".log"))
    for name, t in indexed:
        base = int(Path(name).stem)
        following = [b for b in bases if b > base]
        assert base <= t["last_offset"] < (following[0] if following else gen.LOG_END_OFFSETS["payments-0"])


def test_open_transaction_is_in_the_last_snapshot(dumped: dict[str, list[dict]]) -> None:
    _, open_txns = transactions_from_the_log(dumped)
    assert open_txns == {gen.OPEN_TXN_PRODUCER: gen.OPEN_TXN_FIRST_OFFSET}
    last = max(f for f in dumped if f.startswith("payments-0/") and f.endswith(".snapshot"))
    header, *producers = dumped[last]
    assert header["crc_valid"] and header["count"] == len(producers) == 3
    state = {p["producer_id"]: p["current_txn_first_offset"] for p in producers}
    assert state == {7000: gen.OPEN_TXN_FIRST_OFFSET, 7001: -1, 7002: -1}


# --- the incident log dir (fixtures/incident, fixtures/sinks) ---------------------------------------------------

INCIDENT = PROJECT_ROOT / "fixtures" / "incident"
SINK = PROJECT_ROOT / "fixtures" / "sinks" / "billing.csv"


def kt_jsonl(*args: str | Path) -> tuple[int, list[dict]]:
    p = cli(*args, "-f", "jsonl")
    return p.returncode, p.jsonl()


def test_regenerating_the_incident_gives_the_committed_bytes(tmp_path: Path) -> None:
    out = tmp_path / "incident"
    subprocess.run([sys.executable, str(GENERATOR), "--incident", str(out)], cwd=PROJECT_ROOT, check=True)
    committed, fresh = tree(INCIDENT), tree(out)
    assert sorted(fresh) == sorted(committed)
    assert [name for name in committed if fresh[name] != committed[name]] == []
    assert (tmp_path / "sinks" / "billing.csv").read_bytes() == SINK.read_bytes()


def test_incident_reads_cleanly_and_holds_what_the_generator_says() -> None:
    code, rows = kt_jsonl("verify", INCIDENT)
    assert code == 0 and [r for r in rows if r["type"] == "finding" and r["severity"] != "info"] == []
    leo = {Path(r["path"]).name: r["log_end_offset"] for r in rows if r.get("scope") == "partition"}
    assert leo == {"clicks-0": 70, "__cluster_metadata-0": 8, "__consumer_offsets-0": 3, "__transaction_state-0": 3,
                   "__share_group_state-0": 4}
    # the idempotent producer's gap and duplicate, where the unclean election put them
    code, rows = kt_jsonl("producers", INCIDENT / "clicks-0")
    found = [(r["code"], r["message"].split(": batch at offsets ")[1].split(" ")[0]) for r in rows
             if r["type"] == "finding"]
    first_after, second = gen.CLICKS_AFTER_ELECTION[:2]
    assert code == 1 and found == [("sequence-gap", f"{first_after[0]}..{first_after[0] + 1}"),
                                   ("duplicate-sequence-number", f"{second[0]}..{second[0] + 1}")]
    # the ISR below the topic's min.insync.replicas from the shrink to one replica until one came back
    code, rows = kt_jsonl("metadata", "--under-min-isr", INCIDENT)
    assert [r["code"] for r in rows if r["type"] == "finding"] == ["unclean-leader-election"]  # broker 3 at 02:14
    intervals = [r for r in rows if r["type"] == "under_min_isr"]
    assert code == 1 and [(r["topic"], r["isr"], r["min_insync_replicas"], r["min_isr_source"], r["from_offset"],
                           r["to_offset"]) for r in intervals] == [("clicks", [1], 2, "topic", 4, 5),
                                                                   ("clicks", [3], 2, "topic", 5, 6)]
    # the group's last commit and the coordinator's view of the transactions
    code, rows = kt_jsonl("offsets", INCIDENT)
    assert [(r["group"], r["offset"]) for r in rows if r["type"] == "committed_offset"] == [
        ("billing", gen.BILLING_COMMITS[-1][0])]
    code, rows = kt_jsonl("txn-state", INCIDENT)
    assert [(r["transactional_id"], r["state"]) for r in rows if r["type"] == "transaction_state"] == [
        ("payments-writer-a", "Ongoing"), ("payments-writer-b", "CompleteCommit"), ("stale-writer", "Dead")]


def test_incident_sink_is_loss_and_duplicates() -> None:
    processed = gen.BILLING_PROCESSED
    twice = sorted({o for o in processed if processed.count(o) > 1})
    never = sorted(set(range(max(processed) + 1)) - set(processed))
    code, rows = kt_jsonl("delivery", "--group", "billing", "--sink", SINK, INCIDENT)
    (d,) = [r for r in rows if r["type"] == "delivery"]
    assert code == 1 and d["verdict"] == "loss-and-duplicates"
    assert twice == list(range(twice[0], twice[-1] + 1)) and d["duplicates"] == [[twice[0], twice[-1], 2]]
    assert d["missing"] == [[never[0], never[-1]]] == d["committed_not_processed"]
