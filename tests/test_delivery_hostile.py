"""``delivery --sink`` on hostile sinks: one set of row rules for CSV, JSON lines and Parquet, a finding per bad
row (file, line or row, reason) and the check going on; memory and output bounded on 10^7 rows the log does not
hold.

The partitions are the project's generated fixture log dir (``fixtures/logdir``, as in ``test_delivery.py``), and
for the bounds one batch of many records written here with the project's builder (``kafkatool.build``); every
sink is written here, at test time.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.delivery import MAX_RANGES, MAX_ROW_CHARS, MAX_ROW_FINDINGS, delivery_paths
from tests.test_delivery import truth as truth  # the fixture, shared

from .clirun import KAFKATOOL, cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "logdir"
OFFSET_MAX = (1 << 63) - 1


@pytest.fixture(scope="module")
def committed(truth: dict[str, list[int]]) -> list[int]:
    """payments-0's offsets a read_committed consumer receives (``test_delivery``'s brute force from dump and txns)."""
    return truth["committed"]


def run(*sinks: Path | str, stdin: bytes | None = None) -> tuple[int, list[dict], list[dict], str]:
    """Exit code, findings, delivery lines and stderr of ``delivery -f jsonl`` over the fixture log dir."""
    args = [a for s in sinks for a in ("--sink", str(s))]
    p = cli("delivery", "-f", "jsonl", *args, str(FIXTURES), input=stdin, text=False)
    rows = p.jsonl()
    return (p.returncode, [r for r in rows if r["type"] == "finding"], [r for r in rows if r["type"] == "delivery"],
            p.stderr.decode())


def where(findings: list[dict]) -> list[tuple[str, str, str]]:
    """(code, path, "line N"/"row N") of each finding."""
    return [(f["code"], f["path"], f["message"].split(":")[0]) for f in findings]


def test_csv_rows_breaking_the_rules_are_findings_and_the_rest_is_checked(tmp_path: Path, committed: list[int]) -> None:
    """Offsets over 64 bits, floats, bools, signs and blanks, a field of 200,000 digits, a line over the row
    limit, bad topic names and partitions: each a finding naming its line; the good rows all count. A BOM
    and a capitalised header with blanks are accepted."""
    bad = [
        "payments,0,99999999999999999999999",        # over 64 bits
        f"payments,0,{OFFSET_MAX + 1}",                # one past a Java long
        "payments,0,1e400", "payments,0,1.7", "payments,0,true", "payments,0,-1", "payments,0, 5", "payments,0,",
        "payments,2147483648,1",                       # a partition is a Java int
        '"pay ments",0,1', "..,0,1", f"{'t' * 250},0,1", "pay\x1bments,0,1",
        f'payments,0,"{"9" * 200_000}"',               # a long field: no ValueError from int()
        f"payments,0,1,{'x' * (MAX_ROW_CHARS + 10)}",  # a row over the row limit
        "payments,0",                                  # too few fields
    ]
    good = [f"payments,0,{o}" for o in committed]
    path = tmp_path / "sink.csv"
    lines = [" Topic ,PARTITION,Offset", *good[:10], *bad, *good[10:]]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    code, findings, [d], err = run(path)
    assert code == 1 and "internal error" not in err
    assert where(findings) == [("sink-row-invalid", str(path), f"line {12 + i}") for i in range(len(bad))]
    assert (d["verdict"], d["expected"], d["delivered"], d["missing"], d["duplicates"]) == (
        "exactly-once", 72, 72, [], [])
    reasons = [f["message"] for f in findings]
    assert "is not in 0..9223372036854775807" in reasons[0] and "is not in 0..9223372036854775807" in reasons[1]
    assert all("is not an integer" in r for r in reasons[2:8]) and "not in 0..2147483647" in reasons[8]
    assert all("not a Kafka topic name" in r for r in reasons[9:13]) and "\\x1b" in reasons[12]
    assert "is not in 0..9223372036854775807" in reasons[13] and "longer than" in reasons[14]
    assert all(len(r) < 300 for r in reasons)  # a hostile value is shown cut short


def test_jsonl_rows_breaking_the_rules_are_findings(tmp_path: Path, committed: list[int]) -> None:
    """1e400, 1.7, true, an integer over 64 bits, a list, a number or bytes-like topic, nesting 10^5 deep, a
    line over the row limit, not an object, a column named twice: findings; keys matched ignoring case, and an
    integer given as a string of digits is an integer."""
    bad = [
        '{"topic": "payments", "partition": 0, "offset": 1e400}',
        '{"topic": "payments", "partition": 0, "offset": 1.7}',
        '{"topic": "payments", "partition": 0, "offset": 1.0}',
        '{"topic": "payments", "partition": 0, "offset": true}',
        '{"topic": "payments", "partition": 0, "offset": NaN}',
        '{"topic": "payments", "partition": 0, "offset": 340282366920938463463374607431768211456}',
        '{"topic": "payments", "partition": 0, "offset": "12a"}',
        '{"topic": ["payments"], "partition": 0, "offset": 1}',
        '{"topic": 1.5, "partition": 0, "offset": 1}',
        '{"topic": null, "partition": 0, "offset": 1}',
        '{"topic": "payments", "partition": {"p": 0}, "offset": 1}',
        '[' * 100_000 + ']' * 100_000,
        '{"topic": "payments", "partition": 0, "offset": 1, "v": "' + "x" * MAX_ROW_CHARS + '"}',
        '"payments"',
        '{"topic": "payments", "Topic": "payments", "partition": 0, "offset": 1}',
        '{"topic": "payments", "partition": 0}',
        '{"topic": "payments", "partition": 0, "offset": 1',
    ]
    good = [json.dumps({"Topic": "payments", "PARTITION": str(0), "offset": o if o % 2 else str(o)})
            for o in committed]
    path = tmp_path / "sink.jsonl"
    path.write_text("\n".join([*good[:5], *bad, *good[5:]]) + "\n")
    code, findings, [d], err = run(path)
    assert code == 1 and "internal error" not in err
    assert where(findings) == [("sink-row-invalid", str(path), f"line {6 + i}") for i in range(len(bad))]
    assert (d["verdict"], d["delivered"]) == ("exactly-once", 72)
    assert "the offset 1e400 is not an integer" in findings[0]["message"]
    assert "RecursionError" in findings[11]["message"] and "longer than" in findings[12]["message"]


def test_parquet_rows_and_columns(tmp_path: Path, committed: list[int]) -> None:
    """A uint64 offset column: values over 2^63-1 are findings naming their row, the others count. A binary topic
    or a float offset column can hold no valid row: said once, as the header. Column names ignore case."""
    import pyarrow as pa  # noqa: TID251 - writing the Parquet sink (the [spark] extra)
    import pyarrow.parquet as pq  # noqa: TID251

    offsets = [*committed[:3], 2**64 - 1, 2**63, *committed[3:]]
    pq.write_table(pa.table({"TOPIC": ["payments"] * len(offsets), "Partition": pa.array([0] * len(offsets),
                                                                                         pa.uint64()),
                             "offset": pa.array(offsets, pa.uint64())}), tmp_path / "u64.parquet")
    code, findings, [d], err = run(tmp_path / "u64.parquet")
    assert code == 1 and "internal error" not in err
    assert where(findings) == [("sink-row-invalid", str(tmp_path / "u64.parquet"), "row 4"),
                               ("sink-row-invalid", str(tmp_path / "u64.parquet"), "row 5")]
    assert (d["verdict"], d["delivered"]) == ("exactly-once", 72)

    pq.write_table(pa.table({"topic": pa.array([b"payments"], pa.binary()), "partition": [0], "offset": [1]}),
                   tmp_path / "binary.parquet")
    pq.write_table(pa.table({"topic": ["payments"], "partition": [0], "offset": [1.0]}), tmp_path / "float.parquet")
    pq.write_table(pa.table({"topic": ["payments"], "partition": [0], "offset": [True]}), tmp_path / "bool.parquet")
    code, findings, delivery, err = run(tmp_path / "binary.parquet", tmp_path / "float.parquet",
                                        tmp_path / "bool.parquet", tmp_path / "u64.parquet")
    assert [(f["code"], f["path"]) for f in findings[:3]] == [
        ("sink-header-invalid", str(tmp_path / n)) for n in ("binary.parquet", "float.parquet", "bool.parquet")]
    assert "topic is binary" in findings[0]["message"] and "offset is double" in findings[1]["message"]
    assert code == 1 and delivery[0]["delivered"] == 72 and "internal error" not in err


def test_damaged_parquet_is_a_finding(tmp_path: Path, committed: list[int]) -> None:
    """A flipped byte in a Parquet footer (the thrift metadata pyarrow reports as an OSError without errno) is a
    sink-unreadable finding, never an I/O error (exit 3) nor an internal one; the other sinks are still read."""
    import pyarrow as pa  # noqa: TID251 - writing the Parquet sink (the [spark] extra)
    import pyarrow.parquet as pq  # noqa: TID251

    pq.write_table(pa.table({"topic": ["payments"] * 72, "partition": [0] * 72, "offset": committed}),
                   tmp_path / "ok.parquet")
    data = (tmp_path / "ok.parquet").read_bytes()
    footer = int.from_bytes(data[-8:-4], "little")
    damaged = bytearray(data)
    damaged[len(data) - 8 - footer] ^= 0xFF  # the footer's first byte: its thrift field header
    (tmp_path / "damaged.parquet").write_bytes(bytes(damaged))
    (tmp_path / "torn.parquet").write_bytes(data[: len(data) // 2])
    code, findings, [d], err = run(tmp_path / "damaged.parquet", tmp_path / "torn.parquet", tmp_path / "ok.parquet")
    assert code == 1 and "internal error" not in err and d["delivered"] == 72
    assert [(f["code"], f["path"]) for f in findings] == [
        ("sink-unreadable", str(tmp_path / "damaged.parquet")), ("sink-unreadable", str(tmp_path / "torn.parquet"))]
    assert "thrift" in findings[0]["message"]


def test_stdin_streams_with_cr_line_ends(committed: list[int]) -> None:
    """Standard input, read as it streams: CR, LF and CRLF each end a row as in a file; a BOM is skipped."""
    rows = [f"payments,0,{o}" for o in committed]
    data = ("\ufefftopic,partition,offset\r" + "\r".join(rows[:30]) + "\r\n" + "\n".join(rows[30:])).encode()
    code, findings, [d], err = run("-", stdin=data)
    assert (code, findings, d["verdict"], d["delivered"]) == (0, [], "exactly-once", 72), err
    # a CR inside a row splits it: two rows that break the rules, never an internal error
    code, findings, [d], err = run("-", stdin=b"topic,partition,offset\npayments,0,1\rx\npay\rments,0,2\n")
    assert code == 1 and "internal error" not in err
    assert where(findings) == [("sink-row-invalid", "<stdin>", "line 3"), ("sink-row-invalid", "<stdin>", "line 4"),
                               ("delivery-partition-missing", "ments-0", "the sink has 1 rows of ments-0 but no "
                                "partition dir of it is under the paths given")]


def test_headers_refused(tmp_path: Path) -> None:
    """A header without one of the columns, or naming one twice (ignoring case), is refused once: nothing to check."""
    (tmp_path / "twice.csv").write_text("topic,Topic,partition,offset\npayments,payments,0,2\n")
    (tmp_path / "none.csv").write_text("topic,part,offset\npayments,0,2\n")
    (tmp_path / "empty.csv").write_bytes(b"\xef\xbb\xbf")
    code, findings, delivery, err = run(tmp_path / "twice.csv", tmp_path / "none.csv", tmp_path / "empty.csv")
    assert code == 2 and delivery == [] and "no topic/partition/offset row to check" in err
    assert [(f["code"], f["path"]) for f in findings] == [
        ("sink-header-invalid", str(tmp_path / n)) for n in ("twice.csv", "none.csv", "empty.csv")]
    assert "topic named more than once" in findings[0]["message"] and "no partition column" in findings[1]["message"]


def test_a_fifo_sink_is_refused_unopened(tmp_path: Path, run_cli) -> None:
    """A FIFO given as a sink is never opened (nothing writes to it: opening would block): a usage error."""
    os.mkfifo(tmp_path / "fifo")
    p = run_cli("delivery", "--sink", str(tmp_path / "fifo"), str(FIXTURES), text=False)
    assert p.returncode == 2 and b"is not a regular file (for a pipe: --sink -)" in p.stderr


def test_a_fifo_in_place_of_the_high_watermark_checkpoint_is_said(tmp_path: Path, committed: list[int],
                                                                  run_cli) -> None:
    """read_committed stops at the high watermark, which comes from replication-offset-checkpoint: a FIFO there is
    never opened (a read would block) and is said as discovery says it for every command, an I/O error (exit 3, as
    verify); delivery took only discovery's partitions, and dropped what it met beside them (exit 0, silent)."""
    logdir = tmp_path / "logdir"
    shutil.copytree(FIXTURES, logdir)
    hw = logdir / "replication-offset-checkpoint"
    hw.unlink()
    os.mkfifo(hw)
    sink = tmp_path / "sink.csv"
    sink.write_text("topic,partition,offset\n" + "".join(f"payments,0,{o}\n" for o in committed))
    p = run_cli("delivery", "-f", "jsonl", "--sink", str(sink), str(logdir), timeout=60)
    said = [d for d in p.jsonl() if d["type"] == "finding" and d["path"] == str(hw)]
    assert p.returncode == 3 and [(d["code"], d["severity"]) for d in said] == [("io-error", "error")], p.stdout


def test_invalid_rows_are_counted_past_the_first_ones(tmp_path: Path, committed: list[int]) -> None:
    path = tmp_path / "sink.csv"
    path.write_text("topic,partition,offset\n" + "payments,0,x\n" * (MAX_ROW_FINDINGS + 50)
                    + "".join(f"payments,0,{o}\n" for o in committed))
    code, findings, [d], _err = run(path)
    assert code == 1 and d["delivered"] == 72 and len(findings) == MAX_ROW_FINDINGS + 1
    assert findings[-1]["message"] == f"50 more invalid rows (the first {MAX_ROW_FINDINGS} are above)"


def partition_of(logdir: Path, records: int) -> Path:
    """A partition ``big-0`` holding offsets 0..records-1 in one batch (the project's builder)."""
    part = logdir / "big-0"
    part.mkdir(parents=True)
    batch = record_batch(0, [RecordSpec(None, b"v", 1_700_000_000_000) for _ in range(records)])
    (part / "00000000000000000000.log").write_bytes(batch)
    return part


def test_ranges_are_listed_up_to_a_bound_and_all_counted(tmp_path: Path, run_cli) -> None:
    """Every other offset of 4,000 missing, the others each processed twice, 3,000 single unexpected offsets past
    the log end, rows of 150 partitions not on disk: the delivery line lists MAX_RANGES ranges of each kind and
    counts all; text lists 8; the absent partitions past the first 100 are one finding. The offsets spill in runs
    of 97 across partitions, and the answer is the one computed in memory."""
    partition_of(tmp_path / "logdir", 4000)
    rows = [o for o in range(1, 4000, 2) for _ in (0, 1)] + [5000 + 2 * i for i in range(3000)]
    sink = tmp_path / "sink.csv"
    with open(sink, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["topic", "partition", "offset"])
        w.writerows(("big", 0, o) for o in reversed(rows))
        w.writerows(("gone", p, 0) for p in range(150))
    items = list(delivery_paths([str(sink)], [tmp_path / "logdir"], run_size=97))
    [d] = [x.as_dict() for x in items if hasattr(x, "verdict")]
    assert [x.as_dict() for x in delivery_paths([str(sink)], [tmp_path / "logdir"]) if hasattr(x, "verdict")] == [d]
    assert d["verdict"] == "loss-and-duplicates" and d["delivered"] == 4000 + 3000
    assert (d["missing_count"], d["missing_ranges"]) == (2000, 2000)
    assert d["missing"] == [[o, o] for o in range(0, 2 * MAX_RANGES, 2)]
    assert (d["duplicates_count"], d["duplicates_extra"], d["duplicates_ranges"]) == (2000, 2000, 2000)
    assert d["duplicates"] == [[o, o, 2] for o in range(1, 2 * MAX_RANGES, 2)]
    assert (d["unexpected_count"], d["unexpected_ranges"], len(d["unexpected"])) == (3000, 3000, MAX_RANGES)
    absent = [f for f in items if getattr(f, "code", None) == "delivery-partition-missing"]
    assert len(absent) == 101 and absent[-1].message.startswith("the sink has 50 more rows")

    p = run_cli("delivery", "--sink", str(sink), str(tmp_path / "logdir"), text=False)
    text = p.stdout.decode()
    assert p.returncode == 1 and len(text) < 20_000
    assert "missing 2,000: 0, 2, 4, 6, 8, 10, 12, 14, ... (1,992 more ranges)" in text
    assert "duplicates: 2,000 offsets processed more than once (2,000 extra times): 1 x2, 3 x2," in text
    assert "offsets the log does not hold for this consumer 3,000: 5000, 5002," in text and "(2,992 more" in text


def test_duplicate_runs_are_ranges(tmp_path: Path) -> None:
    """A sink that processed the whole log three times: one duplicates range, whatever the log's length."""
    partition_of(tmp_path / "logdir", 5000)
    sink = tmp_path / "sink.csv"
    sink.write_text("topic,partition,offset\n" + "".join(f"big,0,{o}\n" for o in range(5000)) * 3)
    [d] = [x.as_dict() for x in delivery_paths([str(sink)], [tmp_path / "logdir"], run_size=1000)
           if hasattr(x, "verdict")]
    assert (d["duplicates"], d["duplicates_count"], d["duplicates_extra"]) == ([[0, 4999, 3]], 5000, 10000)


def test_a_record_count_no_bytes_could_hold_is_decoded_not_counted_to(tmp_path: Path) -> None:
    """A one-record batch whose last offset delta and record count say 2^31-1 records (in 70 bytes): delivery
    decodes it (a record-invalid finding, the one real record) instead of walking 2^31 offsets. Its CRC fails, and
    the segment has no index, so the broker recovers it at load and cuts the log there: nothing is expected (the
    one record was expected before the cut was applied)."""
    part = partition_of(tmp_path / "logdir", 1)
    seg = part / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    struct.pack_into(">i", data, 23, (1 << 31) - 2)  # lastOffsetDelta
    struct.pack_into(">i", data, 57, (1 << 31) - 1)  # recordsCount
    seg.write_bytes(bytes(data))
    sink = tmp_path / "sink.csv"
    sink.write_text("topic,partition,offset\nbig,0,0\nbig,0,5000000000\n")
    items = list(delivery_paths([str(sink)], [tmp_path / "logdir"], isolation="read_uncommitted"))
    [d] = [x.as_dict() for x in items if hasattr(x, "verdict")]
    assert {"record-invalid", "recovery-truncates-log"} <= {getattr(f, "code", None) for f in items}
    assert (d["expected"], d["missing_count"], d["unexpected"]) == (0, 0, [[0, 0], [5000000000, 5000000000]])



def test_a_log_the_broker_cuts_at_load_is_said_and_nothing_past_the_cut_expected(tmp_path: Path) -> None:
    """A damaged batch in a segment the broker recovers (no clean shutdown, recovery point 0): ``LogLoader`` cuts the
    log there, so no consumer fetches past it, whatever its isolation. delivery says the cut as verify says it
    (``recovery-truncates-log``, the same line), still names the damaged batch, and expects nothing past the cut:
    the sink's rows there are offsets the log does not hold. Before: no cut said, 101 records expected."""
    logdir = tmp_path / "logdir"
    shutil.copytree(FIXTURES, logdir)
    (logdir / ".kafka_cleanshutdown").unlink()
    points = logdir / "recovery-point-offset-checkpoint"
    points.write_text("".join("payments 0 0\n" if line.startswith("payments 0 ") else line + "\n"
                              for line in points.read_text().splitlines()))
    part = logdir / "payments-0"
    last = sorted(part.glob("*.log"))[-1]
    batches = [d for d in cli("dump", "-f", "jsonl", last).jsonl() if d["type"] == "batch"]
    data = bytearray(last.read_bytes())
    data[batches[1]["position"] + 60] ^= 0xFF  # inside the second batch's records: its CRC fails
    last.write_bytes(data)
    [cut] = [d for d in cli("verify", "-f", "jsonl", part).jsonl() if d.get("code") == "recovery-truncates-log"]
    end = batches[1]["base_offset"]  # the log end offset after loading
    sink = tmp_path / "sink.csv"
    sink.write_text("topic,partition,offset\n" + "".join(f"payments,0,{o}\n" for o in range(121)))
    p = cli("delivery", "-f", "jsonl", "--isolation", "read_uncommitted", "--sink", sink, part)
    lines = p.jsonl()
    assert cut in lines and any(d.get("code") == "crc-mismatch" for d in lines)
    [d] = [x for x in lines if x["type"] == "delivery"]
    every = [d for d in cli("dump", "-f", "jsonl", part).jsonl() if d["type"] == "batch" and not d["control"]]
    held = {o for b in every for o in range(b["base_offset"], b["last_offset"] + 1) if o < end}
    assert p.returncode == 1 and d["expected"] == len(held) and d["missing_count"] == 0
    assert d["unexpected"][-1] == [end, 120]

PEAK_MB = 300  # the columnar reader's constant (pyarrow, numpy, a 4 MiB block, the 2^20-offset budget) ~170 MB here;
GROWTH_MB = 48  # and from 10^6 to 10^7 rows it grows by ~17 MB: bounded by the budget, not the sink (1.26 GB before)


def _peak(tmp_path: Path, n: int) -> tuple[int, Path]:
    """kafkatool delivery's exit code and peak RSS (KB) on a sink of ``n`` rows of offsets the log does not hold (every
    other offset past the log end: each its own range), measured in a fresh process that only runs it."""
    sink = tmp_path / f"sink-{n}.csv"
    with open(sink, "w") as fh:
        fh.write("topic,partition,offset\n")
        for start in range(0, n, 1 << 16):
            fh.write("".join(f"payments,0,{1000 + 2 * o}\n" for o in range(start, min(start + (1 << 16), n))))
    out = tmp_path / f"out-{n}.jsonl"
    measure = ("import resource, subprocess, sys\n"
               "with open(sys.argv[1], 'wb') as out:\n"
               "    code = subprocess.run(sys.argv[2:], stdout=out).returncode\n"
               "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    p = subprocess.run([sys.executable, "-c", measure, str(out), *KAFKATOOL, "delivery", "-f", "jsonl", "--sink",
                        str(sink), str(FIXTURES)], capture_output=True, text=True, timeout=1800)
    code, peak_kb = map(int, p.stdout.split())
    assert code == 1, p.stderr
    sink.unlink()
    return peak_kb, out


@pytest.mark.slow
def test_ten_million_unexpected_rows_stay_bounded(tmp_path: Path) -> None:
    """10^7 sink rows of offsets the log does not hold, each its own range: the peak RSS stays under PEAK_MB and grows
    by less than GROWTH_MB from 10^6 rows (memory held by the reading budget, not by the sink's size), and the JSONL
    line lists MAX_RANGES ranges with all 10^7 counted."""
    n = 10**7
    small, _out = _peak(tmp_path, n // 10)
    peak_kb, out = _peak(tmp_path, n)
    assert peak_kb < PEAK_MB * 1024, f"peak RSS {peak_kb // 1024} MB"
    assert peak_kb - small < GROWTH_MB * 1024, f"peak RSS {small // 1024} MB at 10^6 rows, {peak_kb // 1024} MB at 10^7"
    lines = out.read_text().splitlines()
    assert max(map(len, lines)) < 100_000  # before the bound: one 200 MB line
    [d] = [x for x in map(json.loads, lines) if x["type"] == "delivery"]
    assert (d["unexpected_count"], d["unexpected_ranges"], len(d["unexpected"])) == (n, n, MAX_RANGES)
    assert d["delivered"] == n and d["unexpected"][-1] == [1000 + 2 * (MAX_RANGES - 1)] * 2


# --- a log whose offsets go back: a consumer skips what lies below its position ---------------------------------


def test_records_below_the_consumers_position_are_not_expected(tmp_path: Path) -> None:
    """Batches 0..19, 30..39, then 10..24 (below the position, 40: ``CompletedFetch.nextFetchedRecord`` skips them)
    and 50..54: the consumer can receive 35 records, not 50; one finding counts the 15 it skips, where ``verify``
    says ``offset-not-increasing`` of the same batch. (Before: 50 expected, 10..24 missing; the columnar reader says
    the same as rows: ``test_delivery_columnar``'s back-0.)"""
    part = tmp_path / "back-0"
    part.mkdir()
    batches = [record_batch(base, [RecordSpec(b"k", b"v", 1_700_000_000_000 + i) for i in range(n)])
               for base, n in ((0, 20), (30, 10), (10, 15), (50, 5))]
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    sink = tmp_path / "sink.csv"
    sink.write_text("topic,partition,offset\n" + "".join(f"back,0,{o}\n" for o in [*range(20), *range(30, 40), 12,
                                                                                     *range(50, 55)]))
    p = cli("delivery", "-f", "jsonl", "--isolation", "read_uncommitted", "--sink", sink, part)
    [skip] = [d for d in p.jsonl() if d["type"] == "finding"]
    [d] = [d for d in p.jsonl() if d["type"] == "delivery"]
    at = len(batches[0]) + len(batches[1])
    assert (skip["code"], skip["path"], skip["position"]) == ("records-below-fetch-position", str(
        part / "00000000000000000000.log"), at)
    assert skip["message"].startswith("15 records at offsets below the consumer's position, the first at offset 10 "
                                      "when it stood at 40")
    assert (p.returncode, d["expected"], d["missing_count"], d["duplicates"], d["verdict"]) == (
        1, 35, 0, [[12, 12, 2]], "at-least-once")
    [v] = [f for f in cli("verify", "-f", "jsonl", part).jsonl() if f.get("code") == "offset-not-increasing"]
    assert v["position"] == at


def test_a_small_sink_is_read_without_pyarrow(tmp_path: Path) -> None:
    """Under COLUMNS_FROM bytes of sink, rows: neither pyarrow nor numpy is imported (~60 MB and ~0.3 s of CPU, on top
    of a log's largest batch); the same sink at COLUMNS_FROM goes through the columnar reader, with the same lines."""
    sink = tmp_path / "sink.csv"
    sink.write_text("topic,partition,offset\n" + "".join(f"payments,0,{o}\n" for o in range(60)))
    probe = ("import json, sys\n"
             "from kafkatool import delivery\n"
             "delivery.COLUMNS_FROM = int(sys.argv[3])\n"
             "out = [x.as_dict() for x in delivery.delivery_paths([sys.argv[1]], [sys.argv[2]])]\n"
             "print(json.dumps([out, 'pyarrow' in sys.modules, 'numpy' in sys.modules]))\n")
    runs = [json.loads(subprocess.run([sys.executable, "-c", probe, str(sink), str(FIXTURES), str(at)], check=True,
                                      capture_output=True, text=True, env={**os.environ, "KAFKATOOL_PURE_PYTHON": ""}
                                      ).stdout) for at in (sink.stat().st_size + 1, sink.stat().st_size)]
    assert [r[1:] for r in runs] == [[False, False], [True, True]]
    assert runs[0][0] == runs[1][0] and runs[0][0][0]["type"] == "delivery"
