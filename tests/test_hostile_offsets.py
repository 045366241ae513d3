"""Offsets a damaged disk can hold (issue 24): a flipped bit in a base offset (no CRC covers it), a last offset that
does not fit its segment or passes 2^63-1, a file named past 2^63-1. Every command gives a finding or a clear
refusal, never exit 70; no log end offset above 2^63-1 is reported and no such offset names a file; ``repair
--apply`` then ``verify`` converge.

Each case is built at test time from a copy of the corpus partition ``kafka/logdir/codecs-0`` (three segments at
0, 95 and 190, batches of 5 offsets). Copied alone, the partition has no recovery point: every segment is
recovered (``LogLoader.recoverLog``), so the loader's rule for a batch that does not fit its segment
(``LogSegment.ensureOffsetInRange``) decides what ``repair`` plans.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from kafkatool.errors import IndexAppendError
from kafkatool.segment_indexes import INT64_MAX, SegmentIndexes

from .clirun import cli

# DefaultRecordBatch: baseOffset (0, int64), length (8), ..., crc (17, uint32, over attributes..end from 21),
# attributes (21), lastOffsetDelta (23, int32)
_BASE, _CRC, _CRC_FROM, _DELTA = 0, 17, 21, 23


def jsonl(*args: str) -> tuple[int, list[dict]]:
    run = cli(*args, "-f", "jsonl")
    assert run.returncode != 70, run.stderr
    assert "Traceback" not in run.stderr
    return run.returncode, [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


def batches(log: Path) -> list[tuple[int, int]]:
    """(position, base offset) of each batch of a segment, from its length fields."""
    data, out, pos = log.read_bytes(), [], 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        out.append((pos, base))
        pos += 12 + length
    return out


def patch(log: Path, base_offset: int, *, new_base: int | None = None, delta: int | None = None,
          recompute_crc: bool = True) -> int:
    """Change the batch of ``log`` starting at ``base_offset``: its base offset (outside the CRC) and/or its
    lastOffsetDelta (inside it: the CRC32C is recomputed unless told not to). Returns the batch's position."""
    pos = next(p for p, b in batches(log) if b == base_offset)
    data = bytearray(log.read_bytes())
    length = struct.unpack_from(">i", data, pos + 8)[0]
    if new_base is not None:
        struct.pack_into(">q", data, pos + _BASE, new_base)
    if delta is not None:
        struct.pack_into(">i", data, pos + _DELTA, delta)
        if recompute_crc:
            struct.pack_into(">I", data, pos + _CRC, crc32c(bytes(data[pos + _CRC_FROM: pos + 12 + length])))
    log.write_bytes(bytes(data))
    return pos


@pytest.fixture
def part(corpus: Path, tmp_path: Path) -> Path:
    """The partition dir alone (no log dir checkpoints: every segment is recovered)."""
    dest = tmp_path / "codecs-0"
    shutil.copytree(corpus / "kafka" / "logdir" / "codecs-0", dest)
    return dest


@pytest.fixture
def logdir(corpus: Path, tmp_path: Path) -> Path:
    """The whole log dir (its recovery point for codecs-0 is 190: segments 0 and 95 are trusted)."""
    dest = tmp_path / "logdir"
    shutil.copytree(corpus / "kafka" / "logdir", dest)
    return dest


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but the log dir's ``.lock`` (an apply takes it)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != ".lock"}


def seg(part: Path, base: int) -> Path:
    return part / f"{base:020d}.log"


def leo_of(items: list[dict]) -> int:
    return next(i["log_end_offset"] for i in items if i.get("scope") == "partition")


def codes(items: list[dict]) -> set[str]:
    return {i["code"] for i in items if i.get("type") == "finding"}


def assert_no_file_past_int64(part: Path) -> None:
    for p in part.iterdir():
        stem = p.name.split(".")[0]
        if stem.isdigit():
            assert int(stem) <= INT64_MAX, p.name


def converge(part: Path, leo: int) -> None:
    """``repair --apply`` then ``verify`` clean, at log end ``leo``; a second apply has nothing to do."""
    code, items = jsonl("repair", "--apply", str(part))
    assert code == 0, items
    assert next(i for i in items if i["type"] == "partition")["leo_after"] == leo
    assert_no_file_past_int64(part)
    code, items = jsonl("verify", str(part))
    assert code == 0, [i for i in items if i.get("type") == "finding"]
    assert leo_of(items) == leo
    code, items = jsonl("repair", "--apply", str(part))
    assert code == 0 and next(i for i in items if i["type"] == "partition")["actions"] == 0


# --- one flipped bit in a base offset: 90 -> 2^32 + 90 -----------------------------------------------------------


def test_flipped_base_offset_bit_is_cut_by_recovery(part: Path) -> None:
    pos = patch(seg(part, 0), 90, new_base=90 + 2**32)
    code, items = jsonl("verify", str(part))
    assert code == 1
    beyond = [i for i in items if i.get("code") == "offset-beyond-segment-range"]
    assert beyond and beyond[0]["position"] == pos and beyond[0]["path"].endswith(seg(part, 0).name)
    assert leo_of(items) == 90
    code, items = jsonl("repair", str(part))
    assert code == 1
    cut = next(i for i in items if i.get("action") == "truncate")
    assert cut["bad_position"] == pos and cut["size_after"] == pos and "ensureOffsetInRange" in cut["reason"]
    assert next(i for i in items if i["type"] == "partition")["leo_after"] == 90
    code, items = jsonl("overview", str(part))
    row = next(i for i in items if i["type"] == "partition_overview")
    assert row["log_end_offset"] == 90 and row["problems"] >= 1
    converge(part, 90)


def test_flipped_base_offset_in_a_trusted_segment_refuses_the_apply(logdir: Path) -> None:
    part = logdir / "codecs-0"
    patch(seg(part, 0), 90, new_base=90 + 2**32)
    before = files(logdir)
    code, items = jsonl("repair", "--apply", str(part))
    assert code == 1
    finding = next(i for i in items if i.get("code") == "offset-beyond-segment-range")
    assert "--recovery-point" in finding["message"]
    assert not next(i for i in items if i["type"] == "partition")["applied"]
    assert files(logdir) == before
    code, items = jsonl("overview", str(logdir))
    row = next(i for i in items if i["type"] == "partition_overview" and i["path"].endswith("codecs-0"))
    assert row["log_end_offset"] == 200 and row["problems"] >= 1
    # recovered from the start, the segment is cut there as in the partition copied alone
    code, items = jsonl("repair", "--apply", "--recovery-point", "0", str(part))
    assert code == 0 and next(i for i in items if i["type"] == "partition")["leo_after"] == 90
    converge(part, 90)


# --- a last offset at or past 2^63 -------------------------------------------------------------------------------


@pytest.mark.parametrize("new_base", [2**63 - 4, 2**63 - 5, 2**63 - 1, 195 - 2**63],
                         ids=["last-2^63", "last-2^63-1", "base-2^63-1", "sign-bit"])
def test_last_offset_past_the_segment_every_command(part: Path, new_base: int, run_cli) -> None:
    pos = patch(seg(part, 190), 195, new_base=new_base)
    for cmd in (["verify"], ["verify", "--deep"], ["txns"], ["producers"], ["epochs"], ["overview"], ["repair"],
                ["dump"], ["locate", "--timestamp", "latest"]):
        run = run_cli(*cmd, str(part))
        assert run.returncode in (0, 1), (cmd, run.returncode, run.stderr)
        assert "Traceback" not in run.stderr
    code, items = jsonl("verify", str(part))
    assert code == 1 and leo_of(items) == 195
    assert codes(items) & {"offset-beyond-segment-range", "offset-not-increasing"}
    code, items = jsonl("overview", str(part))
    row = next(i for i in items if i["type"] == "partition_overview")
    assert row["log_end_offset"] == 195 and row["problems"] >= 1
    code, items = jsonl("repair", str(part))
    cut = next(i for i in items if i.get("action") == "truncate")
    assert cut["bad_position"] == pos
    assert all(int(Path(i["path"]).name.split(".")[0]) <= INT64_MAX for i in items if i["type"] == "action"
               and Path(i["path"]).name.split(".")[0].isdigit())
    converge(part, 195)


@pytest.mark.parametrize("moved", [False, True], ids=["past-2^31-above-base", "past-2^63"])
def test_run_of_following_batches_passing_the_segment(part: Path, moved: bool) -> None:
    """Segment 0's batches shifted together (base offsets only: the CRCs hold), so they still follow each other (a
    native stretch) and only the last ones pass what the segment can hold: 2^31-1 above its base 0 (shifted by
    2^31-80: batches from offset 80 on), or, the segment moved to base 2^63-93, 2^63-1 (its last batch). Recovery
    cuts at the first batch past it."""
    shift = 2**63 - 93 if moved else 2**31 - 80
    base = shift if moved else 0
    if moved:
        for ext in ("log", "index", "timeindex"):
            (part / f"{0:020d}.{ext}").rename(part / f"{base:020d}.{ext}")
    log = seg(part, base)
    for _pos, b in batches(log):
        patch(log, b, new_base=shift + b)
    first_bad = 90 if moved else 80
    pos = next(p for p, b in batches(log) if b == shift + first_bad)
    leo = shift + first_bad  # the cut ends the log (every segment is recovered; later ones are deleted)
    code, items = jsonl("repair", str(part))
    assert code == 1 and next(i for i in items if i.get("action") == "truncate")["bad_position"] == pos
    code, items = jsonl("verify", "--deep", str(part))
    assert code == 1 and leo_of(items) == leo
    code, items = jsonl("repair", "--apply", str(part))
    assert code == 0
    assert_no_file_past_int64(part)
    code, items = jsonl("verify", str(part))
    assert leo_of(items) == leo and leo <= INT64_MAX
    assert not codes(items) & {"offset-beyond-segment-range", "recovery-truncates-log"}
    code, items = jsonl("repair", "--apply", str(part))
    assert code == 0 and next(i for i in items if i["type"] == "partition")["actions"] == 0


def test_last_offset_delta_beyond_the_segment_with_a_valid_crc(part: Path) -> None:
    """lastOffsetDelta is inside the CRC: a valid batch (CRC recomputed) whose last offset is 2^31 past the base."""
    pos = patch(seg(part, 190), 195, delta=2**31 - 1)
    code, items = jsonl("verify", str(part))
    assert code == 1 and "crc-mismatch" not in codes(items)
    assert leo_of(items) == 195
    code, items = jsonl("repair", str(part))
    cut = next(i for i in items if i.get("action") == "truncate")
    assert cut["bad_position"] == pos and "offset-beyond-segment-range" in cut["reason"]
    converge(part, 195)


def test_flipped_last_offset_delta_without_crc_is_a_crc_cut(part: Path) -> None:
    pos = patch(seg(part, 190), 195, delta=2**31 - 1, recompute_crc=False)
    code, items = jsonl("repair", str(part))
    cut = next(i for i in items if i.get("action") == "truncate")
    assert cut["bad_position"] == pos and "crc-mismatch" in cut["reason"]
    converge(part, 195)


def test_trusted_last_segment_past_2_63_after_a_clean_shutdown(logdir: Path, run_cli) -> None:
    """Nothing is recovered after a clean shutdown; the log end offset still never passes 2^63-1."""
    (logdir / ".kafka_cleanshutdown").touch()
    part = logdir / "codecs-0"
    patch(seg(part, 190), 195, new_base=2**63 - 4)
    for cmd in ("verify", "overview"):
        code, items = jsonl(cmd, str(part))
        assert code == 1
        leo = leo_of(items) if cmd == "verify" else next(
            i for i in items if i["type"] == "partition_overview")["log_end_offset"]
        assert leo == 195
    code, items = jsonl("overview", str(part))
    assert next(i for i in items if i["type"] == "partition_overview")["problems"] >= 1
    code, items = jsonl("repair", "--apply", str(part))
    assert code == 1 and "offset-beyond-segment-range" in codes(items)
    assert_no_file_past_int64(part)
    run = run_cli("locate", "--timestamp", "latest", str(part))
    assert run.returncode in (0, 1) and "offset 195" in run.stdout


# --- a file named past 2^63-1 ------------------------------------------------------------------------------------


def test_segment_named_past_2_63(part: Path, run_cli) -> None:
    for ext in ("log", "index", "timeindex"):
        (part / f"{190:020d}.{ext}").rename(part / f"{10**19 - 1:020d}.{ext}")
    assert run_cli("txns", str(part)).returncode in (0, 1)  # (its transactions: none)
    for cmd in (["verify"], ["verify", "--deep"], ["overview"], ["epochs"], ["repair", "--apply"]):
        run = run_cli(*cmd, str(part))
        assert run.returncode == 1, (cmd, run.returncode, run.stderr)
        assert "base-offset-overflow" in run.stdout + run.stderr or cmd == ["overview"], cmd
    code, items = jsonl("verify", str(part))
    assert leo_of(items) == 190
    assert not (part / f"{10**19 - 1:020d}.snapshot").exists()


# --- offsets given on the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["locate", "--offset", str(2**63)], ["locate", "--offset", "-1"],
                                  ["dump", "--from-offset", str(2**63)], ["dump", "--from-offset", "-5"],
                                  ["dump", "--to-offset", "9" * 30]])
def test_offsets_outside_int64_are_usage_errors(part: Path, args: list[str], run_cli) -> None:
    run = run_cli(*args, str(part))
    assert run.returncode == 2 and "Traceback" not in run.stderr


# --- the writers --------------------------------------------------------------------------------------------------


def test_index_entry_that_does_not_fit_32_bits_is_refused() -> None:
    """``OffsetIndex.append`` / ``TimeIndex.maybeAppend``: IndexOffsetOverflowException, never a struct error."""
    indexes = SegmentIndexes(0, 0)
    indexes.append(0, 100, 4, 10, 4)
    indexes.append(100, 100, 9, 11, 9)
    with pytest.raises(IndexAppendError, match="IndexOffsetOverflowException"):
        indexes.append(200, 100, 2**32 + 4, 12, 2**32 + 4)
    assert len(indexes.index_bytes()) == 8
