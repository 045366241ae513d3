"""Output that keeps its context (issue 26): ``--out`` never replaces what exists without ``--force``; JSONL batch and
record lines name their file, topic and partition; control batch lines name their marker; text tables fit the
terminal's width. Every case runs the CLI in a subprocess on corpus data (read in place, or copied to ``tmp_path``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PART = "kafka/logdir/codecs-0"


# --- --out and --force ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_dump_out_refuses_an_existing_file_without_force(corpus: Path, tmp_path: Path, fmt: str, run_cli) -> None:
    out = tmp_path / f"rows.{fmt}"
    out.write_bytes(b"mine\n")
    done = run_cli("dump", "-f", fmt, "--out", out, corpus / PART)
    assert done.returncode == 2 and f"--out {out}: the file exists; give --force" in done.stderr, done.stderr
    assert out.read_bytes() == b"mine\n" and sorted(p.name for p in tmp_path.iterdir()) == [out.name]
    done = run_cli("dump", "-f", fmt, "--out", out, "--force", corpus / PART)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() != b"mine\n" and sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_dump_force_without_out_is_a_usage_error(corpus: Path, run_cli) -> None:
    done = run_cli("dump", "--force", corpus / PART)
    assert done.returncode == 2 and "--force is for --out" in done.stderr, done.stderr


def test_spark_scan_refuses_a_dir_holding_anything_without_force(corpus: Path, tmp_path: Path, run_cli) -> None:
    """Refused before a Spark session starts: nothing in the dir changes."""
    pytest.importorskip("pyspark")
    out = tmp_path / "scan"
    out.mkdir()
    (out / "summary.json").write_bytes(b"{}")
    done = run_cli("spark", "scan", corpus / PART, "--out", out)
    assert done.returncode == 2 and f"--out {out}: the directory is not empty; give --force" in done.stderr, \
        done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"] and (out / "summary.json").read_bytes() == b"{}"


# --- JSON lines name their file; control batches their marker --------------------------------------------------


@pytest.mark.parametrize("pure", ["", "1"])
@pytest.mark.parametrize("records", [True, False])
def test_every_batch_and_record_line_names_its_topic_partition_and_file(corpus: Path, pure: str, records: bool,
                                                                         run_cli) -> None:
    """A log dir's JSON lines, native and pure: each batch and record line ends with the topic and partition of its
    partition dir and the path of its file, the one the ``file`` line before it names."""
    import json

    args = ["dump", "-f", "jsonl", *(["-r"] if records else []), corpus / "kafka/logdir"]
    done = run_cli(*args, env={"KAFKATOOL_PURE_PYTHON": pure or None})
    assert done.returncode == 0, done.stderr
    current, kinds = None, set()
    for line in done.stdout.splitlines():
        d = json.loads(line)
        if d["type"] == "file":
            current = d["path"]
        elif d["type"] in ("batch", "record"):
            kinds.add(d["type"])
            topic, _, partition = Path(current).parent.name.rpartition("-")
            assert list(d)[-3:] == ["topic", "partition", "path"], line
            assert (d["topic"], d["partition"], d["path"]) == (topic, int(partition), current), line
    assert kinds == ({"batch", "record"} if records else {"batch"})


def test_a_single_file_s_lines_name_it_too(corpus: Path, run_cli) -> None:
    """No ``file`` line for one file, but its lines still say where they come from (null outside a partition dir)."""
    import json

    seg = corpus / "kafka/logdir/txn-0/00000000000000000000.log"
    lines = [json.loads(x) for x in run_cli("dump", "-f", "jsonl", "-r", seg).stdout.splitlines()]
    assert lines and lines[0]["type"] == "batch"
    assert {(d["topic"], d["partition"], d["path"]) for d in lines} == {("txn", 0, str(seg))}


@pytest.mark.parametrize("pure", ["", "1"])
def test_control_batch_lines_name_their_marker(corpus: Path, pure: str, run_cli) -> None:
    """txn-0's markers: each control batch's line names ABORT or COMMIT and the coordinator epoch, in text and in JSON,
    the same as its marker record (what kafka-dump-log prints as ``endTxnMarker: COMMIT coordinatorEpoch: 7``)."""
    import json
    import re

    part = corpus / "kafka/logdir/txn-0"
    env = {"KAFKATOOL_PURE_PYTHON": pure or None}
    lines = [json.loads(x) for x in run_cli("dump", "-f", "jsonl", "-r", part, env=env).stdout.splitlines()]
    markers = {}
    for i, d in enumerate(lines):
        if d["type"] == "batch" and d.get("control"):
            record = lines[i + 1]
            assert record["control_type"] in ("ABORT", "COMMIT"), record
            assert (d["control_type"], d["coordinator_epoch"]) == (record["control_type"], record["coordinator_epoch"])
            markers[d["base_offset"]] = (d["control_type"], d["coordinator_epoch"])
    assert {t for t, _e in markers.values()} == {"ABORT", "COMMIT"}
    text = run_cli("dump", part, env=env).stdout
    line = re.compile(r"^offset (\d+) .*  transactional (ABORT|COMMIT) coordinator epoch (\d+)  crc ok$", re.M)
    shown = {int(m[1]): (m[2], int(m[3])) for m in line.finditer(text)}
    assert shown == markers and "control" not in text
    dump_log = run_cli("dump", "-f", "dump-log", "-r", part, env=env).stdout
    assert len(re.findall(r"endTxnMarker: (?:ABORT|COMMIT) coordinatorEpoch: \d+", dump_log)) == len(markers)


# --- text tables fit the terminal --------------------------------------------------------------------------------

TABLES = [("verify", "kafka/logdir"), ("verify", "kafka/replicas/divergent"), ("overview", "real"),
          ("offsets", "real"), ("txns", "kafka/logdir"), ("producers", "real"), ("metadata", "real"),
          ("replicas", "kafka/replicas/divergent")]
# lines that are not a table's (findings, dump's and offsets' lines of their own): a terminal wraps them as prose
PROSE = re.compile(r"^(INFO|WARNING|ERROR) |^group |^    member ")
WHOLE = re.compile(r"-?[\d,]{3,}|\d{4}-\d\d-\d\dT[\d:.]+Z(\.\.\S+)?")


@pytest.mark.parametrize(("command", "rel"), TABLES)
def test_tables_fit_80_columns_without_cutting_a_number_or_timestamp(corpus: Path, command: str, rel: str,
                                                                     run_cli) -> None:
    """``COLUMNS=80``: every table line fits (a line of prose, single-spaced, is the terminal's to wrap); every number
    and timestamp the full-width table shows is there whole; a path cut short keeps its two ends."""
    wide = run_cli(command, corpus / rel, env={"COLUMNS": None})
    narrow = run_cli(command, corpus / rel, env={"COLUMNS": "80"})
    assert narrow.returncode == wide.returncode and narrow.returncode in (0, 1), narrow.stderr
    def table_lines_over_80(text: str) -> list[str]:
        return [line for line in text.splitlines() if len(line) > 80 and not PROSE.match(line) and "  " in line.strip()]

    long = table_lines_over_80(narrow.stdout)
    assert not long, "\n".join(long)
    tokens = set(narrow.stdout.split())
    assert {t for t in wide.stdout.split() if WHOLE.fullmatch(t)} <= tokens
    wide_tokens = set(wide.stdout.split())
    for t in (t for t in tokens if "…" in t):
        head, _, tail = t.partition("…")
        assert any(w.startswith(head) and w.endswith(tail) and len(w) > len(t) for w in wide_tokens), t
    assert table_lines_over_80(wide.stdout), "no table wider than 80 columns here: the case shows nothing"
