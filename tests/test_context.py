"""Output that keeps its context (issue 26): ``--out`` never replaces what exists without ``--force``; JSONL batch and
record lines name their file, topic and partition; control batch lines name their marker; text tables fit the
terminal's width. Every case runs the CLI in a subprocess on corpus data (read in place, or copied to ``tmp_path``)."""

from __future__ import annotations

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
