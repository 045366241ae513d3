"""`kafkatool dump --format jsonl --records` over EVERY corpus file that has a golden, compared
line by line and field by field with what Kafka's own classes made of the same file.

One real subprocess dumps all files (relative paths, run from the corpus root, so the ``file`` lines
name them the way the goldens' paths do); each golden is then its own test case.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkatool.walk import partition_of

from .clirun import cli
from .conftest import corpus_root, golden_files, golden_params, read_jsonl

ALL_SUFFIXES = (
    ".log", ".checkpoint", ".index", ".timeindex", ".txnindex", ".snapshot",
    "replication-offset-checkpoint", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint", "leader-epoch-checkpoint", "partition.metadata",
)
PAIRS = golden_files(ALL_SUFFIXES)
PARAMS = golden_params(ALL_SUFFIXES)


def test_every_golden_is_covered() -> None:
    """Every golden in expected/ is one of the kinds above (a new kind must not go untested)."""
    root = corpus_root()
    total = sum(1 for _ in (root / "expected").rglob("*.jsonl"))
    assert total == len(PAIRS) > 1000


@pytest.fixture(scope="module")
def dumped() -> dict[str, list[dict]]:
    root = corpus_root()
    rel = [str(src.relative_to(root)) for src, _ in PAIRS]
    proc = cli("dump", "--format", "jsonl", "--records", *rel, cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    out: dict[str, list[dict]] = {}
    current: list[dict] | None = None
    for line in proc.stdout.splitlines():
        obj = json.loads(line)  # every stdout line is one plain JSON object
        if obj["type"] == "file":
            current = out.setdefault(obj["path"], [])
        else:
            assert current is not None, "output must start with a file line when dumping several files"
            current.append(obj)
    return out


CONTEXT = ("topic", "partition", "path")  # what kafkatool's batch and record lines add: the file they come from
MARKER = ("control_type", "coordinator_epoch")  # what a control batch's line adds: the marker record's own fields


def without_context(got: list[dict], where: str) -> list[dict]:
    """The lines as the goldens hold them: the fields only kafkatool writes taken off, each checked on the way (the
    file is ``where``, its topic and partition its dir's; a batch's marker is the record that follows it)."""
    out = []
    for i, g in enumerate(got):
        if g["type"] in ("batch", "record"):
            assert list(g)[-3:] == list(CONTEXT) and g["path"] == where, (where, g)
            assert (g["topic"], g["partition"]) == (partition_of(Path(where).parent.name) or (None, None)), g
            g = {k: v for k, v in g.items() if k not in CONTEXT}
        if g["type"] == "batch" and "control_type" in g:
            record = next(r for r in got[i + 1:] if r["type"] == "record")
            assert [g[k] for k in MARKER] == [record[k] for k in MARKER], (where, g, record)
            g = {k: v for k, v in g.items() if k not in MARKER}
        out.append(g)
    return out


def assert_matches_golden(got: list[dict], expected: list[dict], where: str) -> None:
    got = without_context(got, where)
    values = [g for g in got if g["type"] != "finding"]
    # Kafka's reader fails on a zero-filled tail too ("record size 0 smaller than minimum record overhead"), but
    # the broker's recovery ends the log there and nothing was written in it: kafkatool's finding is a warning.
    errors = [g for g in got if g["type"] == "finding"
              and (g["severity"] == "error" or g["code"] == "zero-filled-tail")]
    want = [e for e in expected if e["type"] != "error"]
    for i, (g, e) in enumerate(zip(values, want, strict=False)):
        assert g == e, f"{where}: line {i} differs"
    assert len(values) == len(want), f"{where}: {len(values)} lines, golden has {len(want)}"
    if any(e["type"] == "error" for e in expected):
        assert errors, f"{where}: Kafka fails on this file ({expected[-1]['message']}), kafkatool reported no error"
    damaged = any(e["type"] in ("error", "trailing") or e.get("crc_valid") is False for e in expected)
    if not damaged:
        problems = [g for g in got if g["type"] == "finding" and g["severity"] != "info"]
        assert not problems, f"{where}: findings on a file Kafka reads cleanly: {problems}"


@pytest.mark.parametrize(("src", "golden"), PARAMS)
def test_dump_matches_golden(dumped: dict[str, list[dict]], src: Path, golden: Path) -> None:
    rel = str(src.relative_to(corpus_root()))
    assert rel in dumped, f"{rel} was not dumped"
    assert_matches_golden(dumped[rel], read_jsonl(golden), rel)
