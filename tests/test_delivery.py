"""``delivery``: a consumer's sink against the log (at-most / at-least / exactly once).

The partitions are the project's generated fixture log dir (``fixtures/logdir``, written by the project's own
writer): ``payments-0`` holds committed, aborted (including a fenced producer's) and one open transaction of
two transactional producers beside an idempotent one. What a consumer receives is computed here by brute force
from ``dump``'s batch listing and ``txns``' transactions (a record is delivered under read_committed unless it
is a control record, lies in an ABORTed transaction of its producer, or is at or past the LSO), independently
of the module under test. The group's commit is written into a ``__consumer_offsets`` partition packed here
with ``struct`` (``OffsetCommitKey`` v1, ``OffsetCommitValue`` v3).
"""

from __future__ import annotations

import csv
import json
import shutil
import struct
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.delivery import delivery_paths

from .clirun import cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "logdir"


@pytest.fixture(scope="module")
def truth() -> dict[str, list[int]]:
    """payments-0's data offsets by what a consumer receives: committed, aborted, open, control."""
    part = FIXTURES / "payments-0"
    batches = [d for d in cli("dump", "-f", "jsonl", str(part)).jsonl() if d["type"] == "batch"]
    txns = [d for d in cli("txns", "-f", "jsonl", str(part)).jsonl() if d["type"] == "transaction"]
    aborted = [(t["producer_id"], t["first_offset"], t["last_offset"]) for t in txns if t["outcome"] == "ABORT"]
    lso = min(t["first_offset"] for t in txns if t["outcome"] == "OPEN")
    out: dict[str, list[int]] = {"committed": [], "aborted": [], "control": [], "beyond_lso": []}
    for b in batches:
        for o in range(b["base_offset"], b["last_offset"] + 1):
            if b["control"]:
                kind = "control"
            elif o >= lso:
                kind = "beyond_lso"
            elif b["transactional"] and any(p == b["producer_id"] and lo <= o <= hi for p, lo, hi in aborted):
                kind = "aborted"
            else:
                kind = "committed"
            out[kind].append(o)
    assert len(out["committed"]) == 72 and out["aborted"] and out["control"] and out["beyond_lso"]
    return out


def sink(tmp_path: Path, offsets: list[int], name: str = "sink.csv", topic: str = "payments") -> Path:
    path = tmp_path / name
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["key", "topic", "partition", "offset"])  # other columns are ignored
        w.writerows([f"k{o}", topic, 0, o] for o in offsets)
    return path


def check(tmp_path: Path, offsets: list[int], *args: str) -> tuple[int, dict]:
    p = cli("delivery", "-f", "jsonl", "--sink", str(sink(tmp_path, offsets)), *args, str(FIXTURES))
    rows = [d for d in p.jsonl() if d["type"] == "delivery"]
    assert len(rows) == 1, p.stdout + p.stderr
    return p.returncode, rows[0]


def ranges(offsets: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for o in sorted(set(offsets)):
        if out and out[-1][1] + 1 == o:
            out[-1][1] = o
        else:
            out.append([o, o])
    return out


def dup_runs(times: dict[int, int]) -> list[list[int]]:
    """``[lo, hi, times]``: consecutive offsets processed the same number of times, as the JSONL lists them."""
    out: list[list[int]] = []
    for o in sorted(times):
        if out and out[-1][1] + 1 == o and out[-1][2] == times[o]:
            out[-1][1] = o
        else:
            out.append([o, o, times[o]])
    return out


def test_exactly_once(tmp_path: Path, truth: dict) -> None:
    code, d = check(tmp_path, truth["committed"])
    assert code == 0
    assert (d["verdict"], d["expected"], d["delivered"], d["missing"], d["duplicates"]) == (
        "exactly-once", 72, 72, [], [])
    assert (d["from_offset"], d["to_offset"], d["isolation"]) == (0, max(truth["committed"]), "read_committed")


def test_reprocessing_after_a_crash_is_at_least_once(tmp_path: Path, truth: dict) -> None:
    """The consumer crashed after processing but before committing: the batch since the last commit came again."""
    again = truth["committed"][30:40]
    code, d = check(tmp_path, truth["committed"] + again)
    assert code == 1 and d["verdict"] == "at-least-once"
    assert d["duplicates"] == dup_runs({o: 2 for o in again}) and d["missing"] == []
    assert (d["duplicates_count"], d["duplicates_extra"]) == (10, 10)


def test_commit_before_processing_is_at_most_once(tmp_path: Path, truth: dict, run_cli) -> None:
    lost = truth["committed"][10:25]
    code, d = check(tmp_path, [o for o in truth["committed"] if o not in lost])
    assert code == 1 and d["verdict"] == "at-most-once"
    assert d["missing"] == ranges(lost) and d["missing_count"] == 15
    # also through the pure function: the text names the missing ranges
    text = run_cli("delivery", "--sink", str(sink(tmp_path, [o for o in truth["committed"] if o not in lost])),
                   str(FIXTURES))
    assert "at-most-once" in text.stdout and f"{lost[0]}" in text.stdout and text.returncode == 1


def test_loss_and_duplicates(tmp_path: Path, truth: dict) -> None:
    c = truth["committed"]
    code, d = check(tmp_path, c[:20] + c[25:] + c[50:52])
    assert code == 1 and d["verdict"] == "loss-and-duplicates"
    assert d["missing"] == ranges(c[20:25]) and d["duplicates"] == dup_runs({o: 2 for o in c[50:52]})


def test_read_uncommitted_consumer_received_aborted_transactions(tmp_path: Path, truth: dict) -> None:
    """Every data record below the LSO: exactly-once for read_uncommitted, aborted records for read_committed."""
    received = sorted(truth["committed"] + truth["aborted"])
    code, d = check(tmp_path, received, "--isolation", "read_uncommitted", "--to-offset", str(max(received)))
    assert code == 0 and d["verdict"] == "exactly-once" and d["expected"] == len(received)
    code, d = check(tmp_path, received)
    assert code == 1 and d["verdict"] == "exactly-once"  # the expected records are all there, once
    assert d["aborted_delivered"] == ranges(truth["aborted"])
    # a sink claiming control records (markers) and records past the LSO
    code, d = check(tmp_path, truth["committed"] + truth["control"][:2] + truth["beyond_lso"][:1])
    assert code == 1
    assert d["aborted_delivered"] == ranges(truth["control"][:2])
    assert d["unexpected"] == [[truth["beyond_lso"][0]] * 2]


def offsets_partition(logdir: Path, group: str, commit: int) -> None:
    key = struct.pack(">h", 1) + _s16(group) + _s16("payments") + struct.pack(">i", 0)
    value = struct.pack(">hqi", 3, commit, -1) + _s16("") + struct.pack(">q", 1_700_000_000_000)
    seg = logdir / "__consumer_offsets-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    seg.write_bytes(record_batch(0, [RecordSpec(key, value, 1_700_000_000_000)]))


def _s16(s: str) -> bytes:
    return struct.pack(">h", len(s.encode())) + s.encode()


def test_group_committed_ahead_of_processing(tmp_path: Path, truth: dict, run_cli) -> None:
    """Commit-before-process: the group committed offset 100 but the sink stops at the 40th record. The range
    runs to the commit; what lies between is lost (a restart starts at 100)."""
    logdir = tmp_path / "logdir"
    shutil.copytree(FIXTURES, logdir)
    offsets_partition(logdir, "billing", 100)
    processed = truth["committed"][:40]
    p = run_cli("delivery", "-f", "jsonl", "--group", "billing", "--sink", str(sink(tmp_path, processed)), str(logdir))
    d = [x for x in p.jsonl() if x["type"] == "delivery"][0]
    assert p.returncode == 1 and d["committed_offset"] == 100 and d["to_offset"] == 99
    lost = [o for o in truth["committed"] if processed[-1] < o < 100]
    assert d["committed_not_processed"] == ranges(lost) == d["missing"]
    assert d["redelivered_on_restart"] == [] and d["verdict"] == "at-most-once"
    # processed past the commit: those records come again after a restart (at-least-once exposure)
    offsets_partition_dir = logdir / "__consumer_offsets-0"
    shutil.rmtree(offsets_partition_dir)
    offsets_partition(logdir, "billing", 20)
    p = run_cli("delivery", "-f", "jsonl", "--group", "billing", "--sink", str(sink(tmp_path, processed)), str(logdir))
    d = [x for x in p.jsonl() if x["type"] == "delivery"][0]
    assert d["redelivered_on_restart"] == ranges([o for o in processed if o >= 20])
    assert d["committed_not_processed"] == []


def test_sink_formats_and_bad_rows(tmp_path: Path, truth: dict, run_cli) -> None:
    import pyarrow as pa  # noqa: TID251 - writing the Parquet sink (the [spark] extra)
    import pyarrow.parquet as pq  # noqa: TID251

    c = truth["committed"]
    pq.write_table(pa.table({"topic": ["payments"] * 36, "partition": [0] * 36, "offset": c[:36]}),
                   tmp_path / "a.parquet")
    lines = [json.dumps({"topic": "payments", "partition": 0, "offset": o, "v": "x"}) for o in c[36:]]
    (tmp_path / "b.jsonl").write_text("\n".join([lines[0], "{not json", '{"topic": "payments"}', *lines[1:]]))
    p = run_cli("delivery", "-f", "jsonl", "--sink", str(tmp_path / "a.parquet"), "--sink", str(tmp_path / "b.jsonl"),
                str(FIXTURES))
    rows = p.jsonl()
    bad = [(r["code"], r["message"].split(":")[0]) for r in rows if r["type"] == "finding"]
    assert bad == [("sink-row-invalid", "line 2"), ("sink-row-invalid", "line 3")]
    d = [r for r in rows if r["type"] == "delivery"][0]
    assert d["verdict"] == "exactly-once" and d["delivered"] == 72 and p.returncode == 1  # the bad rows
    # standard input, CSV
    stdin = "topic,partition,offset\n" + "".join(f"payments,0,{o}\n" for o in c)
    p = run_cli("delivery", "--sink", "-", str(FIXTURES), input=stdin)
    assert p.returncode == 0 and "exactly-once" in p.stdout
    # nothing to check, a partition not on disk, an inverted range
    (tmp_path / "empty.csv").write_text("topic,partition,offset\n")
    assert run_cli("delivery", "--sink", str(tmp_path / "empty.csv"), str(FIXTURES)).returncode == 2
    p = run_cli("delivery", "-f", "jsonl", "--sink", str(sink(tmp_path, [1], topic="nope")), str(FIXTURES))
    assert p.returncode == 1 and p.jsonl()[0]["code"] == "delivery-partition-missing"
    assert run_cli("delivery", "--sink", str(sink(tmp_path, c)), "--from-offset", "9", "--to-offset", "3",
                   str(FIXTURES)).returncode == 2


def test_sorted_runs_spill_and_agree(tmp_path: Path, truth: dict) -> None:
    """Bounded memory: with runs of 7 offsets spilled to disk, the answer is the one computed in memory."""
    c = truth["committed"]
    rows = c[::-1] + c[5:30] + c[10:12]  # unsorted, with duplicates
    path = sink(tmp_path, rows)
    small = [d.as_dict() for d in delivery_paths([str(path)], [FIXTURES], run_size=7) if hasattr(d, "verdict")]
    big = [d.as_dict() for d in delivery_paths([str(path)], [FIXTURES]) if hasattr(d, "verdict")]
    assert small == big and small[0]["verdict"] == "at-least-once"
    assert small[0]["duplicates"] == dup_runs({o: 3 if o in c[10:12] else 2 for o in c[5:30]})
