"""``dump``'s search options (``--key``, ``--value``, ``--header``, ``--producer-id``, ``--from-time``,
``--to-time``) against a brute-force filter of the full dump, on Kafka-written partitions of the corpus.

The brute force reads ``dump -f jsonl --records`` (every batch and record) and applies each condition in Python;
the search must print exactly the matching records, each after its batch's line, and nothing else.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import pytest

from .clirun import cli
from .conftest import corpus_root

PARTITIONS = ["kafka/logdir/headers-0", "kafka/logdir/txn-0", "kafka/logdir/codecs-3",
              "kafka/recovery/missing-indexes/after/rtopic-0", "kafka/recovery/missing-indexes/before/rtopic-0"]


def rows(*args: str | Path) -> list[dict]:
    return cli("dump", "-f", "jsonl", *args).jsonl()


def everything(part: Path) -> list[tuple[dict, dict]]:
    """(batch, record) of every record of the partition, from the full dump."""
    out, batch = [], None
    for r in rows("--records", part):
        if r["type"] == "batch":
            batch = r
        elif r["type"] == "record":
            out.append((batch, r))
    return out


def text(b64: str | None) -> str | None:
    return None if b64 is None else base64.b64decode(b64).decode("utf-8", "replace")


def searched(part: Path, *args: str) -> list[tuple[int, int]]:
    """(batch base offset, record offset) of what the search printed; each record follows its batch's line."""
    out, batch = [], None
    for r in rows(*args, part):
        if r["type"] == "batch":
            batch = r
        elif r["type"] == "record":
            assert batch is not None and batch["base_offset"] <= r["offset"] <= batch["last_offset"]
            out.append((batch["base_offset"], r["offset"]))
    return out


def times(part: Path) -> tuple[int, int]:
    ts = sorted(r["timestamp"] for _b, r in everything(part))
    return ts[len(ts) // 3], ts[2 * len(ts) // 3]


@pytest.mark.parametrize("rel", PARTITIONS)
def test_each_search_equals_a_brute_force_filter(rel: str) -> None:
    part = corpus_root() / rel
    records = everything(part)
    assert records
    keys = sorted({text(r["key"]) for _b, r in records if r["key"] is not None})
    lo, hi = times(part)
    pids = sorted({b["producer_id"] for b, _r in records})
    cases: list[tuple[list[str], object]] = [
        (["--key", re.escape(keys[len(keys) // 2]) + "$"], lambda b, r: text(r["key"]) == keys[len(keys) // 2]),
        (["--value", "[13579] lorem"], lambda b, r: r["value"] is not None
         and re.search("[13579] lorem", text(r["value"]))),
        (["--header", "src"], lambda b, r: any(k == "src" for k, _v in r["headers"])),
        (["--header", "src=^Gen"], lambda b, r: any(k == "src" and v is not None and text(v).startswith("Gen")
                                                       for k, v in r["headers"])),
        (["--producer-id", str(pids[-1]), "--records"], lambda b, r: b["producer_id"] == pids[-1]),
        (["--from-time", str(lo), "--to-time", str(hi), "--records"], lambda b, r: lo <= r["timestamp"] <= hi),
        (["--from-time", str(hi), "--key", "1", "--from-offset", "5"],
         lambda b, r: r["timestamp"] >= hi and "1" in (text(r["key"]) or "") and r["offset"] >= 5),
    ]
    for args, keep in cases:
        expected = [(b["base_offset"], r["offset"]) for b, r in records if keep(b, r)]
        assert searched(part, *args) == expected, (rel, args)


def test_from_time_starts_where_the_time_index_points(tmp_path: Path, run_cli) -> None:
    """A CRC error in the first segment is never met by a search from a later time: the scan starts at the
    batch ListOffsets finds through the later segment's time index, not at the start of the log."""
    part = tmp_path / "rtopic-0"
    shutil.copytree(corpus_root() / "kafka/recovery/missing-indexes/after/rtopic-0", part)
    first = sorted(part.glob("*.log"))[0]
    batches = [r for r in rows(first) if r["type"] == "batch"]
    data = bytearray(first.read_bytes())
    data[batches[len(batches) // 2]["position"] + 40] ^= 0xFF  # past byte 21: covered by the batch's CRC
    first.write_bytes(bytes(data))
    assert "crc-mismatch" in {r.get("code") for r in rows(first)}
    last_segment = sorted(part.glob("*.log"))[-1]
    start = rows("--records", last_segment)[1]["timestamp"]
    p = run_cli("dump", "-f", "jsonl", "--records", "--from-time", str(start), part)
    out = [json.loads(line) for line in p.stdout.splitlines()]
    assert p.returncode == 0 and not [r for r in out if r["type"] == "finding"]
    assert {Path(r["path"]).name for r in out if r["type"] == "file"} == {last_segment.name}
    assert min(r["timestamp"] for r in out if r["type"] == "record") >= start


@pytest.mark.parametrize("rel", PARTITIONS)
def test_an_offset_range_equals_a_brute_force_filter(rel: str) -> None:
    """``--from-offset``/``--to-offset``: the batches that reach into the range, with their records in it, exactly as
    a filter of the full dump keeps them, though the read starts where the offset index puts the first one and
    stops after the last; only the record files holding them are named."""
    part = corpus_root() / rel
    records = everything(part)
    offsets = sorted(r["offset"] for _b, r in records)
    leo = offsets[-1] + 1
    cuts = [offsets[0], offsets[len(offsets) // 3], offsets[2 * len(offsets) // 3], offsets[-1]]
    for lo, hi in [(cuts[1], cuts[2]), (cuts[2], None), (None, cuts[1]), (cuts[1], cuts[1]), (cuts[3], leo + 10),
                   (leo, None), (leo + 5, leo + 9), (0, 0)]:
        args = [*(["--from-offset", str(lo)] if lo is not None else []),
                *(["--to-offset", str(hi)] if hi is not None else [])]
        expected = [(b["base_offset"], r["offset"]) for b, r in records
                    if (lo is None or r["offset"] >= lo) and (hi is None or r["offset"] <= hi)]
        assert searched(part, "--records", *args) == expected, (rel, args)
        out = rows("--records", *args, part)
        named = [Path(r["path"]).name for r in out if r["type"] == "file"]
        assert all(name.endswith(".log") for name in named), (rel, args, named)
        assert len(named) == len(set(named)) and (not expected) == (not named), (rel, args, named)


def test_inverted_ranges_and_bad_patterns_are_usage_errors(run_cli) -> None:
    part = corpus_root() / "kafka/logdir/headers-0"
    for args in (["--from-offset", "10", "--to-offset", "5"], ["--from-time", "2023-11-15", "--to-time", "2023-11-14"],
                 ["--key", "("], ["--header", "=x"], ["--from-time", "yesterday"]):
        p = run_cli("dump", *args, part)
        assert p.returncode == 2 and "Traceback" not in p.stderr, args
