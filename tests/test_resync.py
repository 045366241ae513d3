"""A corrupt length in the middle of a segment (issue 26): not a torn tail. ``dump`` shows the damage, a finding where
whole batches begin again (``records.resync``) and the batches after it; ``verify`` names the damage and counts the
intact batches after it that ``LogSegment.recover`` would drop; ``repair`` still cuts where the broker cuts, and
counts what that removes. Built from a copy of a corpus partition, with the native core and without (the same
output)."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from kafkatool import native
from kafkatool.records import scan

from .conftest import CORE
from .test_repair_salvage import framing

PARTITION = "kafka/logdir/codecs-0"  # segments 0 (offsets 0..94), 95 (95..189), 190 (190..199): 40 batches of 5
SEGMENT = "00000000000000000000.log"
MODES = [pytest.param({"KAFKATOOL_PURE_PYTHON": "1"}, id="pure"), pytest.param({"KAFKATOOL_PURE_PYTHON": "0"},
                                                                                id="native")]


@pytest.fixture
def damaged(corpus: Path, tmp_path: Path) -> tuple[Path, int, int, int]:
    """A copy of the partition whose 5th batch (offsets 20..24) of its first segment declares 2 GiB: the partition,
    the damaged position, where the next batch begins, and how many whole batches follow in that segment."""
    part = tmp_path / "logdir" / "codecs-0"
    shutil.copytree(corpus / PARTITION, part)
    for f in part.iterdir():
        f.chmod(0o644)
    log = part / SEGMENT
    data = bytearray(log.read_bytes())
    found = framing(bytes(data))
    at, size = found[4]
    assert struct.unpack_from(">q", data, at)[0] == 20
    struct.pack_into(">i", data, at + 8, 0x7FFF0000)
    log.write_bytes(bytes(data))
    return part, at, at + size, len(found) - 5


@pytest.mark.parametrize("env", MODES)
def test_dump_shows_what_follows_the_damage(run_cli, damaged, env) -> None:
    part, at, again, after = damaged
    done = run_cli("dump", "-f", "jsonl", part / SEGMENT, env=env)
    assert done.returncode == 1, done.stderr
    lines = done.jsonl()
    codes = [(d["code"], d["position"]) for d in lines if d["type"] == "finding"]
    assert codes == [("corrupt-length", at), ("resynchronised", again)]
    batches = [d for d in lines if d["type"] == "batch"]
    assert len(batches) == 4 + after
    assert [b["base_offset"] for b in batches][3:6] == [15, 25, 30]
    # the finding comes between the last batch before the damage and the first after it
    kinds = [d.get("code", d.get("base_offset")) for d in lines]
    assert kinds[3:7] == [15, "corrupt-length", "resynchronised", 25]


@pytest.mark.parametrize("env", MODES)
def test_verify_reports_the_damage_and_what_recovery_drops(run_cli, damaged, env) -> None:
    part, at, again, after = damaged
    done = run_cli("verify", "-f", "jsonl", part, env=env)
    assert done.returncode == 1, done.stderr
    found = {d["code"]: d for d in done.jsonl() if d["type"] == "finding"}
    assert "torn-tail" not in found
    assert found["corrupt-length"]["position"] == at
    resynced = found["resynchronised"]
    assert resynced["position"] == again
    assert resynced["message"].startswith(f"{after} intact batches (offsets 25..94) from byte {again} on, after the "
                                          f"damage at byte {at}: LogSegment.recover truncates the segment at byte "
                                          f"{at}")
    # the segment's own verdict stays the broker's: it ends at the damage
    assert "offsets 20..199 are lost" in found["recovery-truncates-log"]["message"]


@pytest.mark.parametrize("env", MODES)
def test_repair_cuts_where_the_broker_cuts_and_counts_what_it_removes(run_cli, damaged, env) -> None:
    part, at, _again, after = damaged
    done = run_cli("repair", "--salvage", "-f", "jsonl", part, env=env)
    assert done.returncode == 1, done.stderr
    lines = done.jsonl()
    cut = next(d for d in lines if d["type"] == "action" and d["action"] == "truncate")
    assert (cut["bad_position"], cut["size_after"]) == (at, at)
    assert "corrupt-length" in cut["reason"]
    summary = next(d for d in lines if d["type"] == "partition")
    # 14 intact batches after the damage in its segment, 21 in the two segments deleted after it
    assert summary["batches_removed"] == after + 19 + 2
    assert summary["offsets_removed"] == [20, 199]
    assert (summary["leo_before"], summary["leo_after"]) == (200, 20)
    assert summary["salvaged_batches"] == after


def test_scan_resynchronises_alike_with_and_without_the_native_core(damaged) -> None:
    part, at, again, after = damaged
    views = []
    for core in ([None, CORE] if CORE is not None else [None]):
        with native.using(core), open(part / SEGMENT, "rb") as fh:
            items = list(scan(fh, "x", resynchronise=True))
            views.append([(i.code, i.position) if i.__class__.__name__ == "Finding" else i.position for i in items])
            fh.seek(0)
            assert not any(getattr(i, "position", None) == again for i in scan(fh, "x"))  # without: it ends there
    assert views[0][4:6] == [("corrupt-length", at), ("resynchronised", again)]
    assert len(views[0]) == 4 + 2 + after
    assert all(v == views[0] for v in views)


@pytest.mark.parametrize("env", MODES)
def test_two_damages_counted_alike_by_verify_and_salvage(run_cli, damaged, env) -> None:
    """A negative length, then a shortened one further on (a bogus batch with a bad CRC, then lost framing): verify
    reports each resynchronisation with the intact batches after it, and their sum is what salvage finds."""
    part, at, _again, _after = damaged
    log = part / SEGMENT
    data = bytearray(log.read_bytes())
    struct.pack_into(">i", data, at + 8, -5)
    pos = 10062  # the 13th batch of the segment (offsets 60..64): 300 bytes declared
    assert struct.unpack_from(">q", data, pos)[0] == 60
    struct.pack_into(">i", data, pos + 8, 300)
    log.write_bytes(bytes(data))
    found = [d for d in run_cli("verify", "-f", "jsonl", part, env=env).jsonl() if d["type"] == "finding"]
    codes = [d["code"] for d in found if d["path"].endswith(SEGMENT)]
    assert codes[:5] == ["size-below-minimum", "resynchronised", "crc-mismatch", "corrupt-length", "resynchronised"]
    counts = [int(d["message"].split()[0]) for d in found if d["code"] == "resynchronised"]
    assert counts == [7, 6]
    done = run_cli("repair", "--salvage", "-f", "jsonl", part, env=env)
    summary = next(d for d in done.jsonl() if d["type"] == "partition")
    assert summary["salvaged_batches"] == sum(counts)
