"""The commands that write, on hostile disks (issue 24): corpus partitions copied to ``tmp_path`` and mutated with a
seed (bit flips, cuts, zeroed ranges, huge length fields and record counts, deleted and added files, FIFOs, segments
that are symlinks out of the log dir, base offsets near 2^63), then ``repair --apply``, ``repair --restore BACKUP
--apply``, ``truncation --apply`` and ``dump -f csv|parquet --out`` run on them through the CLI.

Asserted for every run: a documented exit code (never 70) and no traceback; nothing written outside the log dir,
the backup dir and the output path (the whole ``tmp_path`` tree, with a sibling ``outside/`` dir and symlinks
pointing into it, compared before and after: each path, its type, size and mtime); re-runs converge (a second
``repair --apply`` changes nothing and backs nothing up, ``verify`` then finds no error, a restore gives the mutated
bytes back). Seeded and deterministic; the ``slow`` variant runs more seeds.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from crc32c import crc32c

from .clirun import cli
from .conftest import corpus_root, read_manifest

EXIT_CODES = {0, 1, 2, 3}  # clean, findings, usage / nothing to read, I/O error; never 70


def kt(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    proc = cli(*args, timeout=timeout, stdin=subprocess.DEVNULL)
    assert proc.returncode in EXIT_CODES, f"{args}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}"
    assert "Traceback" not in proc.stderr, f"{args}:\n{proc.stderr[-4000:]}"
    return proc


# --- what is on disk -------------------------------------------------------------------------------------------

def snapshot(root: Path) -> dict[str, tuple]:
    """Every path below ``root`` (symlinks not followed): its type, size and mtime, a symlink's target."""
    seen: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                seen[str(p)] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                seen[str(p)] = ("dir", st.st_mtime_ns)
            else:
                seen[str(p)] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns)
    return seen


def assert_writes_only_under(before: dict[str, tuple], after: dict[str, tuple], *allowed: Path) -> None:
    """Every path added, removed or changed between the two snapshots is one of ``allowed`` or below one."""
    def inside(path: str) -> bool:
        return any(path == str(a) or path.startswith(str(a) + os.sep) for a in allowed)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p) and not inside(p))
    assert not changed, f"written outside {[str(a) for a in allowed]}: " + ", ".join(
        f"{p}: {before.get(p)} -> {after.get(p)}" for p in changed[:10])


def contents(root: Path) -> dict[str, str]:
    """Every regular file below ``root`` (relative path -> sha256; symlinks and FIFOs by type), but the lock."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.name == ".lock":
            continue
        if p.is_symlink():
            out[str(p.relative_to(root))] = "link:" + os.readlink(p)
        elif stat.S_ISFIFO(p.lstat().st_mode):
            out[str(p.relative_to(root))] = "fifo"
        elif p.is_file():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def backed_up(backup: Path) -> list:
    """The manifest entries of a backup dir (none when it was never made)."""
    manifest = backup / "MANIFEST.json"
    return read_manifest(backup)["files"] if manifest.exists() else []


# --- hostile copies --------------------------------------------------------------------------------------------

def batch_positions(data: bytes) -> list[int]:
    """Where the entries of a log segment begin, by their length fields (as far as they hold)."""
    positions, pos = [], 0
    while pos + 61 <= len(data):
        positions.append(pos)
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        if length < 49:
            break
        pos += 12 + length
    return positions


def fix_crc(data: bytearray, pos: int) -> None:
    """Make the CRC of the batch at ``pos`` cover its (mutated) bytes again, so the damage reaches the decoders."""
    length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
    end = min(len(data), pos + 12 + max(length, 0))
    data[pos + 17:pos + 21] = crc32c(bytes(data[pos + 21:end])).to_bytes(4, "big")


def set_field(data: bytearray, pos: int, at: int, width: int, value: int, recrc: bool) -> None:
    if pos + at + width <= len(data):
        data[pos + at:pos + at + width] = (value % (1 << 8 * width)).to_bytes(width, "big")
        if recrc and at != 17:
            fix_crc(data, pos)


@dataclass(frozen=True)
class Hostile:
    """One seeded way to damage a log dir: which mutations, how many."""
    source: str                # a corpus log dir, relative to the corpus root
    seed: int
    kinds: tuple[str, ...]
    count: int = 3


MUTATIONS = ("flip", "cut", "zero", "length", "count", "delete", "add", "fifo-index", "symlink-out")
# A FIFO or a symlink where a segment file or index is makes the plan and `repair --apply` refuse that partition
# alike (repair-impossible, test_repair_plan_and_apply_agree_on_a_file_that_is_not_regular) and write nothing there,
# so the cases of WRITES leave them out: their damage reaches the writes.
WRITES = tuple(k for k in MUTATIONS if k not in ("fifo-index", "symlink-out"))


def mutate(logdir: Path, outside: Path, h: Hostile) -> list[str]:
    """Apply ``h.count`` mutations of ``h.kinds`` to the partitions of ``logdir``; returns what was done."""
    rng = random.Random(h.seed)
    done = []
    for _ in range(h.count):
        files = sorted(p for p in logdir.rglob("*") if p.is_file() and not p.is_symlink()
                       and not stat.S_ISFIFO(p.lstat().st_mode))
        logs = [p for p in files if p.suffix == ".log" and p.stat().st_size >= 61]
        kind = rng.choice(h.kinds)
        if kind in ("flip", "cut", "zero") or (kind in ("length", "count") and not logs):
            f = rng.choice(files)
            data = bytearray(f.read_bytes())
            if not data:
                continue
            if kind == "flip":
                for _ in range(rng.randint(1, 4)):
                    i = rng.randrange(len(data))
                    data[i] ^= 1 << rng.randrange(8)
            elif kind == "cut":
                del data[rng.randrange(len(data)):]
            else:
                at, n = rng.randrange(len(data)), rng.randint(1, 256)
                data[at:at + n] = bytes(len(data[at:at + n]))
            f.write_bytes(bytes(data))
            done.append(f"{kind} {f.relative_to(logdir)}")
        elif kind in ("length", "count"):
            f = rng.choice(logs)
            data = bytearray(f.read_bytes())
            pos = rng.choice(batch_positions(data))
            if kind == "length":  # batchLength
                value = rng.choice([0x7FFFFFFF, -1, 0, 48, 1 << 30, len(data)])
                set_field(data, pos, 8, 4, value, recrc=False)
            else:  # recordsCount, the CRC made valid again: the decoders see it
                value = rng.choice([0x7FFFFFFF, -1, 0, 1 << 20, 2])
                set_field(data, pos, 57, 4, value, recrc=True)
            f.write_bytes(bytes(data))
            done.append(f"{kind}={value} {f.relative_to(logdir)}@{pos}")
        elif kind == "delete":
            f = rng.choice(files)
            f.unlink()
            done.append(f"delete {f.relative_to(logdir)}")
        elif kind == "add":
            part = rng.choice(sorted(p for p in logdir.iterdir() if p.is_dir()))
            name = rng.choice(["00000000000000009000.log", "00000000000000009000.index", "junk.txt",
                               "00000000000000000001.snapshot", "00000000000000009000.log.swap"])
            (part / name).write_bytes(rng.randbytes(rng.choice([0, 12, 61, 700])))
            done.append(f"add {part.name}/{name}")
        elif kind == "fifo-index":
            indexes = [p for p in files if p.suffix in (".index", ".timeindex")]
            f = rng.choice(indexes or files)
            f.unlink()
            os.mkfifo(f)
            done.append(f"fifo {f.relative_to(logdir)}")
        elif kind == "symlink-out":
            # a segment file that is a symlink to a file outside the log dir: never written through
            f = rng.choice(logs or files)
            target = outside / f"victim-{len(done)}{f.suffix}"
            shutil.copyfile(f, target)
            f.unlink()
            f.symlink_to(target)
            done.append(f"symlink {f.relative_to(logdir)} -> {target}")
    return done


def hostile_root(tmp_path: Path, h: Hostile) -> tuple[Path, Path, list[str]]:
    """``tmp_path/logdir`` (a writable copy of ``h.source``, mutated), ``tmp_path/outside`` beside it with a file,
    and a symlink in a partition dir pointing there (a dir the broker ignores)."""
    logdir, outside = tmp_path / "logdir", tmp_path / "outside"
    shutil.copytree(corpus_root() / h.source, logdir)
    for p in [logdir, *logdir.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    outside.mkdir()
    (outside / "precious").write_bytes(b"not kafkatool's")
    first = sorted(p for p in logdir.iterdir() if p.is_dir())[0]
    (first / "escape").symlink_to(outside)
    return logdir, outside, mutate(logdir, outside, h)


# --- the cases -------------------------------------------------------------------------------------------------

SOURCES = ("kafka/recovery/crc-flip/before", "kafka/recovery/leftovers/before", "kafka/recovery/torn-tail/before",
           "kafka/recovery/bad-snapshot/before", "kafka/logdir")

# seeds whose mutations reach a failure of issue 24 that another change fixes (the mark goes when it is merged)
KNOWN: dict[tuple[str, int], str] = {}

FAST = [Hostile("kafka/recovery/crc-flip/before", 1, WRITES),
        Hostile("kafka/logdir", 4, MUTATIONS, count=5)]
SLOW = [Hostile(SOURCES[seed % len(SOURCES)], seed, WRITES if seed % 3 else MUTATIONS, count=1 + seed % 6)
        for seed in range(100, 140)]


def params(cases: list[Hostile], *marks: pytest.MarkDecorator) -> list:
    out = []
    for h in cases:
        extra = [pytest.mark.xfail(strict=True, reason=KNOWN[h.source, h.seed])] if (h.source, h.seed) in KNOWN else []
        out.append(pytest.param(h, id=f"{h.source.split('/')[-2 if h.source.endswith('before') else -1]}-{h.seed}",
                                marks=[*marks, *extra]))
    return out


# Every segment recovered (LogLoader.recoverLog from the log start), so that verify and repair judge the same bytes.
REPAIR = ("--index-interval-bytes", "1024", "--recovery-point", "0")
# What the recovery rebuilds or cuts, and the findings about batches whose CRC holds that it keeps as Kafka's does
# (LogSegment.recover checks each batch's size and CRC, never its records).
RECOVERED = (".log", ".index", ".timeindex", ".txnindex")
KEPT_BY_RECOVERY = {"record-count-mismatch", "control-batch-invalid"}


def repair_converges(tmp_path: Path, h: Hostile) -> None:
    logdir, outside, done = hostile_root(tmp_path, h)
    mutated = contents(logdir)
    backup, again = tmp_path / "backup", tmp_path / "backup-again"
    before = snapshot(tmp_path)
    first = kt("repair", "--apply", "--backup-dir", backup, *REPAIR, logdir)
    applied = snapshot(tmp_path)
    assert_writes_only_under(before, applied, logdir, backup)
    repaired = contents(logdir)
    if h.kinds == WRITES and h.source.startswith("kafka/recovery/"):  # damaged before the mutations: work to do
        assert backed_up(backup), f"{done}: nothing applied\n{first.stdout}{first.stderr}"

    # a second apply has nothing to do: no file changes, nothing backed up
    second = kt("repair", "--apply", "--backup-dir", again, *REPAIR, logdir)
    assert contents(logdir) == repaired, f"{done}\n{second.stdout}"
    assert not backed_up(again), f"{done}\n{second.stdout}"
    assert second.returncode == first.returncode or second.returncode == 0, f"{done}\n{first.stdout}\n{second.stdout}"
    assert_writes_only_under(applied, snapshot(tmp_path), logdir, again)
    # verify agrees: a repair with nothing left to do leaves no error in what it recovers behind
    dry = kt("repair", *REPAIR, logdir)
    verify = kt("verify", "-f", "jsonl", logdir)
    errors = [x for x in map(json.loads, verify.stdout.splitlines()) if x.get("severity") == "error"
              and x.get("code") not in KEPT_BY_RECOVERY and Path(x.get("path", "")).suffix in RECOVERED]
    if dry.returncode == 0:
        assert not errors, f"{done}\nrepair: {dry.stdout}\nverify: {errors}"

    # the restore gives every mutated byte back, writing nowhere else
    before_restore = snapshot(tmp_path)
    restored = kt("repair", "--restore", backup, "--apply")
    assert_writes_only_under(before_restore, snapshot(tmp_path), logdir, backup)
    if restored.returncode == 0 and backed_up(backup):
        assert contents(logdir) == mutated, f"{done}\n{restored.stdout}"
    assert (outside / "precious").read_bytes() == b"not kafkatool's"


@pytest.mark.parametrize("h", params(FAST))
def test_repair_apply_restore_on_a_mutated_log_dir(tmp_path: Path, h: Hostile) -> None:
    repair_converges(tmp_path, h)


@pytest.mark.parametrize("h", params(SLOW, pytest.mark.slow))
def test_repair_apply_restore_on_many_mutated_log_dirs(tmp_path: Path, h: Hostile) -> None:
    repair_converges(tmp_path, h)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_dump_out_on_a_mutated_partition_writes_only_its_output(tmp_path: Path, fmt: str) -> None:
    logdir, outside, done = hostile_root(tmp_path, Hostile("kafka/logdir", 5, MUTATIONS, count=6))
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(tmp_path)
    proc = kt("dump", "-f", fmt, "--out", out / f"records.{fmt}", logdir)
    assert_writes_only_under(before, snapshot(tmp_path), out)
    if proc.returncode in (0, 1):
        assert (out / f"records.{fmt}").stat().st_size > 0, done
    assert not list(out.glob("*.tmp")), done


def test_truncation_apply_on_a_mutated_follower(tmp_path: Path) -> None:
    """divergent: broker-1 follows broker-2, both damaged; applied, then applied again (nothing to do)."""
    case = corpus_root() / "kafka/replicas/divergent"
    for name in ("broker-1", "broker-2"):
        shutil.copytree(case / name, tmp_path / name)
    for p in tmp_path.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    outside = tmp_path / "outside"
    outside.mkdir()
    follower, leader, backup = tmp_path / "broker-1", tmp_path / "broker-2", tmp_path / "backup"
    done = [*mutate(follower, outside, Hostile("", 6, ("flip", "count", "add", "symlink-out"), count=3)),
            *mutate(leader, outside, Hostile("", 7, ("flip", "cut"), count=2))]
    before = snapshot(tmp_path)
    args = ("truncation", "--rule", "epoch", "--apply", "--backup-dir", backup, "--leader", leader,
            "--follower", follower)
    kt(*args)
    applied = snapshot(tmp_path)
    assert_writes_only_under(before, applied, follower, backup)
    kept = contents(follower)
    kt(*args)
    assert contents(follower) == kept, done
    assert_writes_only_under(applied, snapshot(tmp_path), follower, backup)


def test_restore_of_a_tampered_manifest_writes_nowhere_else(tmp_path: Path) -> None:
    """A backup whose manifest sends the files its apply deleted (the leftovers) to ``../outside/pwned-N``, or to
    another root: the restore refuses or stays in the partition dirs its own apply touched."""
    logdir, outside, _ = hostile_root(tmp_path, Hostile("kafka/recovery/leftovers/before", 8, ("flip",), count=0))
    backup = tmp_path / "backup"
    kt("repair", "--apply", "--backup-dir", backup, *REPAIR, logdir)
    doc = read_manifest(backup)
    deleted = [e for e in doc["files"] if e.get("after") is None]
    assert deleted
    for i, entry in enumerate(deleted):
        if i % 2:
            entry["root"] = str(outside)
        else:
            entry["path"] = f"../outside/pwned-{i}"
    (backup / "MANIFEST.json").write_text(json.dumps(doc))
    before = snapshot(tmp_path)
    kt("repair", "--restore", backup, "--apply")
    assert_writes_only_under(before, snapshot(tmp_path), logdir, backup)


def test_restore_of_a_4_gib_manifest_is_refused_unread(tmp_path: Path) -> None:
    """A backup dir's manifest is read from a disk that may be hostile: one of 4 GiB (sparse) is refused as
    unreadable, not read whole (a MemoryError, exit 70, under a 1 GiB address space before), and nothing moves."""
    import resource

    logdir, _outside, _ = hostile_root(tmp_path, Hostile("kafka/recovery/leftovers/before", 8, ("flip",), count=0))
    backup = tmp_path / "backup"
    kt("repair", "--apply", "--backup-dir", backup, *REPAIR, logdir)
    with (backup / "MANIFEST.json").open("r+b") as fh:
        fh.truncate(4 << 30)
    before = contents(logdir)
    proc = cli("repair", "--restore", backup, "--apply", timeout=120, stdin=subprocess.DEVNULL,
               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)))
    assert proc.returncode == 2 and "MANIFEST.json: unreadable" in proc.stderr, proc.stdout + proc.stderr
    assert contents(logdir) == before


def test_dump_out_to_a_symlink_is_written_in_place_or_refused(tmp_path: Path) -> None:
    logdir, outside, _ = hostile_root(tmp_path, Hostile("kafka/logdir", 9, ("flip",), count=0))
    link = tmp_path / "records.csv"
    link.symlink_to(outside / "records.csv")
    kt("dump", "-f", "csv", "--out", link, logdir / "codecs-0")
    assert link.is_symlink(), "the symlink given to --out was replaced"


def test_repair_with_a_fifo_checkpoint_does_not_hang(tmp_path: Path) -> None:
    logdir, _outside, _ = hostile_root(tmp_path, Hostile("kafka/logdir", 10, ("flip",), count=0))
    checkpoint = logdir / "recovery-point-offset-checkpoint"
    checkpoint.unlink()
    os.mkfifo(checkpoint)
    before = snapshot(tmp_path)
    kt("repair", "--apply", "--backup-dir", tmp_path / "backup", logdir, timeout=8)
    assert_writes_only_under(before, snapshot(tmp_path), logdir, tmp_path / "backup")
    assert stat.S_ISFIFO(checkpoint.lstat().st_mode)


def _offset_case(tmp_path: Path, last_offset: int) -> tuple[Path, Path]:
    """codecs-0 with the base offset of its last segment's second batch set so that its last offset is
    ``last_offset`` (the CRC does not cover the base offset), the recovery point 0."""
    logdir, _outside, _ = hostile_root(tmp_path, Hostile("kafka/logdir", 11, ("flip",), count=0))
    seg = sorted((logdir / "codecs-0").glob("*.log"))[-1]
    data = bytearray(seg.read_bytes())
    pos = batch_positions(data)[1]
    delta = int.from_bytes(data[pos + 23:pos + 27], "big", signed=True)
    data[pos:pos + 8] = (last_offset - delta).to_bytes(8, "big", signed=True)
    seg.write_bytes(bytes(data))
    return logdir, logdir / "codecs-0"


@pytest.mark.parametrize("last_offset", [
    pytest.param(4294967386 + 4, id="bit-32-flipped"),
    pytest.param(2**63 - 1, id="last-2^63-1"),
    pytest.param(2**63 + 3, id="last-past-2^63"),
])
def test_repair_apply_on_offsets_near_2_63_names_no_file_past_it(tmp_path: Path, last_offset: int) -> None:
    """A base offset no CRC covers, set so the batch's last offset is near or past 2^63 - 1: the repair refuses or
    cuts there, never names a file by an offset above 2^63 - 1, and writes only in the log dir and its backup."""
    logdir, partition = _offset_case(tmp_path, last_offset)
    backup = tmp_path / "backup"
    before = snapshot(tmp_path)
    kt("repair", "--apply", "--backup-dir", backup, *REPAIR, partition)
    assert_writes_only_under(before, snapshot(tmp_path), logdir, backup)
    assert all(int(p.name.split(".")[0]) < 2**63 for p in partition.iterdir() if p.name[:1].isdigit())
    kt("verify", partition)


@pytest.mark.parametrize("plant", ["fifo-index", "symlink-log"])
def test_repair_plan_and_apply_agree_on_a_file_that_is_not_regular(corpus: Path, tmp_path: Path, plant: str) -> None:
    """A FIFO where the plan rebuilds an index, a segment that is a link out of the log dir where it truncates: the
    dry run names what the apply would refuse (it planned "create" over the FIFO, then the apply exited 2), the apply
    refuses that partition alone, changing nothing of it, and repairs the other one."""
    logdir, outside = tmp_path / "logdir", tmp_path / "outside"
    shutil.copytree(corpus / "kafka/recovery/crc-flip/before", logdir)
    shutil.copytree(corpus / "kafka/recovery/torn-tail/before/rtopic-0", logdir / "other-0")
    outside.mkdir()
    for p in logdir.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    if plant == "fifo-index":
        victim = logdir / "rtopic-0" / "00000000000000000259.index"
        victim.unlink()
        os.mkfifo(victim)
        what = "a FIFO"
    else:
        victim = logdir / "rtopic-0" / "00000000000000000259.log"
        shutil.move(victim, outside / victim.name)
        victim.symlink_to(outside / victim.name)
        what = "a symbolic link"
    mine = contents(logdir / "rtopic-0")
    outside_before = snapshot(outside)

    def refusal(proc: subprocess.CompletedProcess[str]) -> list[dict]:
        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        return [x for x in lines if x.get("code") == "repair-impossible" and f"({what})" in x["message"]]

    dry = kt("repair", "-f", "jsonl", logdir)
    assert dry.returncode == (3 if plant == "fifo-index" else 1) and refusal(dry), dry.stdout  # a FIFO: io-error too
    parts = {Path(x["path"]).name: x for x in map(json.loads, dry.stdout.splitlines()) if x["type"] == "partition"}
    assert parts["rtopic-0"]["blocked"] and not parts["other-0"]["blocked"] and parts["other-0"]["actions"]
    applied = kt("repair", "-f", "jsonl", "--apply", "--backup-dir", tmp_path / "backup", logdir)
    assert applied.returncode == dry.returncode and refusal(applied) == refusal(dry), applied.stdout + applied.stderr
    parts = {Path(x["path"]).name: x for x in map(json.loads, applied.stdout.splitlines()) if x["type"] == "partition"}
    assert parts["other-0"]["applied"] and not parts["rtopic-0"]["applied"]
    assert contents(logdir / "rtopic-0") == mine and snapshot(outside) == outside_before
