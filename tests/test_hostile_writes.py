"""Writes on a hostile disk: ``--out`` never replaces what is not a regular file, never leaves a temp file behind;
``repair --restore`` writes only inside the partition dirs of its own log dir, whatever its manifest says.

Every case runs the CLI in a subprocess on corpus data (read in place, or copied to ``tmp_path`` when it is
changed). Device nodes are made in ``tmp_path`` with ``mknod`` (the numbers of /dev/full, /dev/null), so a
kafkatool that replaced them would damage nothing of the machine's.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from .clirun import KAFKATOOL, cli
from .conftest import read_manifest

PART = "kafka/logdir/codecs-0"   # about 64 KB of CSV
TEMP_SUFFIXES = (".tmp", ".kafkatool-tmp")


def temps(*dirs: Path) -> list[str]:
    return sorted(str(p) for d in dirs for p in d.rglob("*") if p.name.endswith(TEMP_SUFFIXES))


def device(path: Path, kind: int, major: int, minor: int) -> Path:
    try:
        os.mknod(path, kind | 0o666, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD)")
    return path


@pytest.fixture
def expected_csv(corpus: Path, tmp_path: Path) -> bytes:
    """What ``dump -f csv --out`` writes into a new regular file."""
    out = tmp_path / "reference.csv"
    done = cli("dump", "-f", "csv", "--out", out, corpus / PART)
    assert done.returncode == 0 and out.stat().st_size > 10_000, done.stderr
    data = out.read_bytes()
    out.unlink()
    return data


# --- --out to something that is not a regular file ------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_out_to_a_full_device_is_an_io_error_and_the_device_stays(corpus: Path, tmp_path: Path, fmt: str,
                                                                   run_cli) -> None:
    full = device(tmp_path / "full", stat.S_IFCHR, 1, 7)  # /dev/full: every write fails with ENOSPC
    done = run_cli("dump", "-f", fmt, "--out", full, corpus / PART)
    assert done.returncode == 3, done.stderr
    assert f"{full}: No space left on device" in done.stderr and "Traceback" not in done.stderr
    st = full.lstat()
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 7)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_out_to_a_null_device_writes_in_place(corpus: Path, tmp_path: Path, fmt: str, run_cli) -> None:
    null = device(tmp_path / "null", stat.S_IFCHR, 1, 3)
    done = run_cli("dump", "-f", fmt, "--out", null, corpus / PART)
    assert done.returncode == 0, done.stderr
    st = null.lstat()
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1"])
def test_out_to_stdout_appends_to_what_the_shell_opened(corpus: Path, tmp_path: Path, expected_csv: bytes,
                                                         name: str, run_cli) -> None:
    """``--out /dev/stdout >> file``: the rows go where stdout goes, after what was there (an append stays one)."""
    target = tmp_path / "shell.csv"
    target.write_bytes(b"kept\n")
    with open(target, "ab") as stdout:
        done = run_cli("dump", "-f", "csv", "--out", name, corpus / PART, stdout=stdout)
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == b"kept\n" + expected_csv
    assert os.path.islink("/dev/stdout") and temps(tmp_path) == []


def fifo_with_reader(path: Path) -> int:
    """A FIFO with a reader already there (us; opened read-write, which never blocks on Linux), 1 MiB of pipe."""
    os.mkfifo(path)
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    return fd


def drain(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return b"".join(chunks)
        chunks.append(chunk)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_out_to_a_fifo_with_a_reader_writes_into_it(corpus: Path, tmp_path: Path, expected_csv: bytes,
                                                     fmt: str, run_cli) -> None:
    fifo = tmp_path / "fifo"
    fd = fifo_with_reader(fifo)
    try:
        done = run_cli("dump", "-f", fmt, "--out", fifo, corpus / PART)
        data = drain(fd)
    finally:
        os.close(fd)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]
    if fmt == "csv":
        assert data == expected_csv
    else:
        import pyarrow as pa  # noqa: TID251 - the test reads the Parquet written through the FIFO
        import pyarrow.parquet as pq  # noqa: TID251

        ref = tmp_path / "ref.parquet"
        assert run_cli("dump", "-f", "parquet", "--out", ref, corpus / PART).returncode == 0
        assert pq.read_table(pa.BufferReader(data)).equals(pq.read_table(ref))


def test_out_to_a_fifo_without_a_reader_is_refused_without_waiting(corpus: Path, tmp_path: Path, run_cli) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = run_cli("dump", "-f", "csv", "--out", fifo, corpus / PART, timeout=120)
    assert done.returncode == 3 and "no reader" in done.stderr, done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


@pytest.mark.parametrize("what", ["directory", "block device", "dangling symlink", "symlink loop", "socket"])
def test_out_refused_changes_nothing(corpus: Path, tmp_path: Path, what: str, run_cli) -> None:
    out = tmp_path / "out"
    if what == "directory":
        out.mkdir()
        (out / "inside").write_bytes(b"x")
    elif what == "block device":
        device(out, stat.S_IFBLK, 7, 250)  # a loop device number no loop device has
    elif what == "dangling symlink":
        out.symlink_to(tmp_path / "elsewhere" / "nothing.csv")
    elif what == "symlink loop":
        out.symlink_to(out)
    else:
        import socket

        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(out))
        sock.close()
    before = {p.name: (p.lstat().st_mode, p.lstat().st_ino) for p in tmp_path.rglob("*")}
    for fmt in ("csv", "parquet"):
        done = run_cli("dump", "-f", fmt, "--out", out, corpus / PART)
        assert done.returncode == 2 and f"--out {out}: " in done.stderr, (fmt, done.stderr)
    assert {p.name: (p.lstat().st_mode, p.lstat().st_ino) for p in tmp_path.rglob("*")} == before


def test_out_through_a_symlink_replaces_its_target_in_the_target_dir(corpus: Path, tmp_path: Path,
                                                                    expected_csv: bytes, run_cli) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "real" / "rows.csv"
    target.write_bytes(b"old\n")
    target.chmod(0o640)
    link = tmp_path / "links" / "out.csv"
    link.symlink_to("../real/rows.csv")
    done = run_cli("dump", "-f", "csv", "--out", link, "--force", corpus / PART)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == "../real/rows.csv"
    assert target.read_bytes() == expected_csv and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["links", "out.csv", "real", "rows.csv"]


def test_spark_scan_refuses_an_out_that_is_no_directory(corpus: Path, tmp_path: Path, run_cli) -> None:
    """``spark scan --out`` is a directory of tables: anything else is refused before a Spark session starts."""
    pytest.importorskip("pyspark")
    full = device(tmp_path / "full", stat.S_IFCHR, 1, 7)
    (tmp_path / "file").write_bytes(b"mine")
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    for out in (full, tmp_path / "file", tmp_path / "dangling"):
        done = run_cli("spark", "scan", corpus / PART, "--out", out)
        assert done.returncode == 2 and f"--out {out}: " in done.stderr, done.stderr
    assert stat.S_ISCHR(full.lstat().st_mode) and (tmp_path / "file").read_bytes() == b"mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "file", "full"]


# --- failures while writing: the temp file goes, the old file stays ---------------------------------------------


def small_fsize_limit() -> None:
    """In the child: files may not grow past 16 KiB (writes past it fail with EFBIG), SIGXFSZ ignored."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 10, 16 << 10))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_failed_write_leaves_no_temp_file_and_the_old_output(corpus: Path, tmp_path: Path, fmt: str,
                                                               run_cli) -> None:
    out = tmp_path / f"rows.{fmt}"
    out.write_bytes(b"the previous output\n")
    done = run_cli("dump", "-f", fmt, "--out", out, "--force", corpus / "kafka/logdir",
                   preexec_fn=small_fsize_limit)
    assert done.returncode == 3 and "File too large" in done.stderr, done.stderr
    assert out.read_bytes() == b"the previous output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def findings_after_the_rows(corpus: Path, tmp_path: Path) -> Path:
    """A copy of a partition whose rows are all written before 400 findings (5-byte indexes named after its
    segments), which go to stderr: a child whose stderr pipe is not read stops there, its temp file open."""
    part = tmp_path / "in" / "codecs-0"
    shutil.copytree(corpus / PART, part)
    for i in range(400):
        (part / f"{10_000 + i:020d}.index").write_bytes(b"12345")
    return part


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_write_leaves_no_temp_file_and_the_old_output(corpus: Path, tmp_path: Path,
                                                                      sig: signal.Signals) -> None:
    part = findings_after_the_rows(corpus, tmp_path)
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = outdir / "rows.csv"
    out.write_bytes(b"the previous output\n")
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)  # the findings fill it: the child waits, its temp file open
    child = subprocess.Popen([*KAFKATOOL, "dump", "-f", "csv", "--out", str(out), "--force", str(part)],
                             stdout=subprocess.DEVNULL, stderr=write_end)
    os.close(write_end)
    try:
        while not glob.glob(f"{out}.*") and child.poll() is None:  # until its temp file is there
            time.sleep(0.01)
        assert child.poll() is None, "the child ended before its stderr filled"
        child.send_signal(sig)
        with os.fdopen(read_end, "rb") as stderr:
            err = stderr.read()
        child.wait(timeout=120)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 130 and b"interrupted" in err, err[-500:]
    assert out.read_bytes() == b"the previous output\n"
    assert sorted(p.name for p in outdir.iterdir()) == ["rows.csv"]


# --- repair --restore with a hostile manifest -------------------------------------------------------------------

CASE = "kafka/recovery/torn-tail/before"   # a log dir whose repair cuts a segment and rebuilds its indexes


def snapshot(top: Path) -> dict[str, object]:
    """Everything under ``top``: each path's kind and content (a link's target, a file's bytes)."""
    return snapshot_without(top, ())


def snapshot_without(top: Path, unread: tuple[str, ...]) -> dict[str, object]:
    """:func:`snapshot`, but the files whose names end with one of ``unread`` are listed, not read."""
    seen: dict[str, object] = {}
    for p in sorted(top.rglob("*")):
        rel = p.relative_to(top).as_posix()
        mode = p.lstat().st_mode
        seen[rel] = (("link", os.readlink(p)) if stat.S_ISLNK(mode) else None if rel.endswith(unread) else
                     p.read_bytes() if stat.S_ISREG(mode) else (stat.S_IFMT(mode),))
    return seen


@pytest.fixture
def applied(corpus: Path, tmp_path: Path) -> tuple[Path, Path, dict]:
    """A writable copy of a corpus log dir, repaired with ``repair --apply`` (its backup dir beside it, by the
    default name); the backup dir and its manifest."""
    logdir = tmp_path / "logdir"
    shutil.copytree(corpus / CASE, logdir)
    for p in logdir.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    logdir.chmod(0o755)
    done = cli("repair", "--apply", logdir)
    assert done.returncode == 0, done.stdout + done.stderr
    (backup,) = tmp_path.glob("kafkatool-backup-logdir-*")
    (tmp_path / "outside").mkdir()
    return logdir, backup, read_manifest(backup)


def write_lines(backup: Path, doc: dict) -> None:
    """``doc`` as the manifest an apply writes (version 3: a header line, one entry a line)."""
    header = {k: v for k, v in doc.items() if k != "files"}
    (backup / "MANIFEST.json").write_text("".join(json.dumps(x) + "\n" for x in [header, *doc["files"]]))


def hostile(backup: Path, manifest: dict, /, **change: object) -> None:
    """The manifest with one more entry: the real whole copy's, changed as told; after the apply the file was
    absent (so a restore writes the copy there)."""
    whole = next(e for e in manifest["files"] if e["backup"] == "whole")
    entry = {**whole, "after": None, **change}
    write_lines(backup, {**manifest, "files": [*manifest["files"], entry]})


def assert_refused(tmp_path: Path, backup: Path, *extra: str | Path, says: str) -> None:
    before = snapshot(tmp_path)
    for args in (["--restore", backup, *extra], ["--restore", backup, *extra, "--apply"]):
        done = cli("repair", *args)
        assert done.returncode == 2 and says in done.stderr and "nothing was restored" in done.stderr, (
            args, done.stdout, done.stderr)
        assert snapshot(tmp_path) == before, args


@pytest.mark.parametrize("where", ["dotdot", "absolute", "deep dotdot"])
def test_restore_refuses_an_entry_outside_the_log_dir(tmp_path: Path, applied: tuple[Path, Path, dict],
                                                      where: str) -> None:
    logdir, backup, manifest = applied
    path = {"dotdot": "../outside/pwned", "absolute": str(tmp_path / "outside" / "pwned"),
            "deep dotdot": "rtopic-0/../../outside/pwned"}[where]
    hostile(backup, manifest, path=path)
    assert_refused(tmp_path, backup, says="not a relative path without '..'")
    assert not (tmp_path / "outside" / "pwned").exists()


def test_restore_refuses_a_symlink_on_the_way(tmp_path: Path, applied: tuple[Path, Path, dict]) -> None:
    logdir, backup, manifest = applied
    (logdir / "evil-0").symlink_to(tmp_path / "outside")
    hostile(backup, manifest, path="evil-0/00000000000000000000.log")
    assert_refused(tmp_path, backup, says="is not a directory (a symlink is not followed)")


@pytest.mark.parametrize("name", ["rtopic-0/authorized_keys", "meta.properties", "rtopic-0/x/00000000000000000000.log",
                                  "no-partition/00000000000000000000.log", "rtopic-1/00000000000000000000.log"])
def test_restore_refuses_an_entry_that_is_no_partition_file(tmp_path: Path, applied: tuple[Path, Path, dict],
                                                            name: str) -> None:
    logdir, backup, manifest = applied
    hostile(backup, manifest, path=name)
    assert_refused(tmp_path, backup, says=f"entry {name!r}: ")


def test_restore_refuses_a_copy_outside_the_backup_dir(tmp_path: Path, applied: tuple[Path, Path, dict]) -> None:
    """A copy named ``../outside/secret`` (its true size and sha256 given) would be read into the log dir."""
    logdir, backup, manifest = applied
    secret = tmp_path / "outside" / "secret"
    secret.write_bytes(b"not kafka's\n")
    state = {"size": secret.stat().st_size, "sha256": hashlib.sha256(secret.read_bytes()).hexdigest()}
    hostile(backup, manifest, path="rtopic-0/00000000000000000300.log", copy="../outside/secret", before=state,
            **state)
    assert_refused(tmp_path, backup, says="is not the name the apply gives it")


def test_restore_refuses_a_log_dir_that_is_not_the_backups_own(tmp_path: Path,
                                                               applied: tuple[Path, Path, dict]) -> None:
    """The manifest's root names another log dir (a copy of this one, where its files are as the apply left
    them): beside the backup dir but not the one its name says, or elsewhere; and the backup dir copied away
    from its log dir (an incident's disk) no longer restores into it."""
    logdir, backup, manifest = applied
    for other in (tmp_path / "other", tmp_path / "far" / "logdir"):
        shutil.copytree(logdir, other)
        write_lines(backup, {**manifest, "files": [{**e, "root": str(other)} for e in manifest["files"]]})
        assert_refused(tmp_path, backup, says="which is not this backup's own")
    write_lines(backup, manifest)
    away = tmp_path / "incident" / backup.name
    shutil.copytree(backup, away)
    assert_refused(tmp_path, away, says="which is not this backup's own")


def test_restore_refuses_a_malformed_entry(tmp_path: Path, applied: tuple[Path, Path, dict]) -> None:
    logdir, backup, manifest = applied
    for change in ({"apply": "1"}, {"before": [1, 2]}, {"backup": "all"}, {"copy": None}, {"root": ["x"]},
                   {"sha256": "../x"}):
        hostile(backup, manifest, path="rtopic-0/00000000000000000300.log", **change)
        assert_refused(tmp_path, backup, says="MANIFEST.json")


def test_a_backup_kept_elsewhere_restores_into_the_log_dir_named(corpus: Path, tmp_path: Path, run_cli) -> None:
    logdir = tmp_path / "logdir"
    shutil.copytree(corpus / CASE, logdir)
    for p in logdir.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    originals = snapshot(logdir)
    backup = tmp_path / "far" / "bk"
    assert run_cli("repair", "--apply", "--backup-dir", backup, logdir).returncode == 0
    assert snapshot(logdir) != originals
    assert_refused(tmp_path, backup, says="kafkatool repair --restore")
    assert_refused(tmp_path, backup, tmp_path / "far", says="which is not this backup's own")
    done = run_cli("repair", "--restore", backup, logdir, "--apply")
    assert done.returncode == 0, done.stdout + done.stderr
    assert {k: v for k, v in snapshot(logdir).items() if k != ".lock"} == originals  # the lock a repair takes stays


# --- repair --apply on a disk with planted temp names and journals -----------------------------------------------


@pytest.fixture
def damaged(corpus: Path, tmp_path: Path) -> Path:
    """A writable copy of a corpus log dir that ``repair --apply`` changes, and a dir beside it with a file."""
    logdir = tmp_path / "logdir"
    shutil.copytree(corpus / CASE, logdir)
    for p in logdir.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "precious").write_bytes(b"not the log dir's\n")
    return logdir


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_repair_never_writes_through_a_planted_temp_name(tmp_path: Path, damaged: Path, plant: str, run_cli) -> None:
    """``<file>.kafkatool-tmp`` is ours by its name: one found there (a symlink out, a FIFO) is removed, never
    opened: the rebuilt time index is written in the partition dir, nothing outside changes."""
    tmp = damaged / "rtopic-0" / "00000000000000000259.timeindex.kafkatool-tmp"
    if plant == "symlink":
        tmp.symlink_to(tmp_path / "outside" / "precious")
    else:
        os.mkfifo(tmp)
    done = run_cli("repair", "--apply", damaged, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "outside" / "precious").read_bytes() == b"not the log dir's\n"
    index = damaged / "rtopic-0" / "00000000000000000259.timeindex"
    assert stat.S_ISREG(index.lstat().st_mode) and not tmp.exists()
    assert run_cli("verify", damaged).returncode == 0


@pytest.mark.parametrize("plant", ["dangling symlink", "symlink", "fifo"])
def test_repair_never_takes_a_planted_lock_file(tmp_path: Path, damaged: Path, plant: str, run_cli) -> None:
    """``.lock`` is opened to be created and locked: a symlink there (to nothing: the open would create its target
    outside the log dir; to a file: the lock would be taken on another file) or a FIFO refuses the apply, changing
    nothing and creating nothing."""
    lock, target = damaged / ".lock", tmp_path / "outside" / "created"
    lock.unlink(missing_ok=True)
    if plant == "dangling symlink":
        lock.symlink_to(target)
    elif plant == "symlink":
        lock.symlink_to(tmp_path / "outside" / "precious")
    else:
        os.mkfifo(lock)
    before = {p: p.read_bytes() for p in damaged.rglob("*") if p.is_file() and not p.is_symlink()
              and stat.S_ISREG(p.lstat().st_mode)}
    done = run_cli("repair", "--apply", damaged, timeout=120)
    # a link: refused (2); a FIFO: the one rule for what is not a regular file, an I/O error (3)
    assert done.returncode == (3 if plant == "fifo" else 2), done.stderr
    assert ".lock" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not target.exists() and (tmp_path / "outside" / "precious").read_bytes() == b"not the log dir's\n"
    assert {p: p.read_bytes() for p in before} == before


def _small_address_space() -> None:
    """The child's address space capped at 1 GiB: a file of 4 GiB read whole is a MemoryError (an internal error,
    70), not a slow success."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("case", ["journal", "staged"])
def test_repair_reads_a_journal_and_its_staged_contents_bounded(tmp_path: Path, damaged: Path, case: str,
                                                                 run_cli) -> None:
    """A 4 GiB journal (sparse), or a staged content far longer than its journal says, is refused as such: neither
    is read whole (bounded memory), nothing changes."""
    backup = tmp_path / "bk"
    staged = backup / "staged" / ("0" * 16)
    path = damaged / ".kafkatool-apply.journal"
    if case == "journal":
        with path.open("wb") as fh:
            fh.truncate(4 << 30)
        why = "larger than any journal kafkatool writes"
    else:
        staged.mkdir(parents=True)
        with (staged / "000000").open("wb") as fh:
            fh.truncate(4 << 30)
        path.write_text(journal(root=str(damaged), backup_dir=str(backup), staged_dir=str(staged), ops=[
            {"kind": "write", "path": "rtopic-0/partition.metadata", "staged": "000000", "length": 10,
             "sha256": "0" * 64, "reason": ""}]))
        why = "is damaged"
    def state() -> dict[str, object]:  # the 4 GiB file by its size and extents, not read here either
        return {rel: (os.stat(tmp_path / rel).st_size, os.stat(tmp_path / rel).st_blocks) if rel.endswith(
            ("journal", "000000")) else v for rel, v in snapshot_without(tmp_path, ("journal", "000000")).items()}

    before = state()
    done = run_cli("repair", "--apply", damaged, timeout=120, preexec_fn=_small_address_space)
    assert done.returncode not in (0, 70) and why in done.stderr, done.stdout + done.stderr
    assert state() == {**before, "logdir/.lock": b""}


def journal(**header: object) -> str:
    return json.dumps({"format": "kafkatool-apply-journal", "version": 1, "ops": [], "backups": [], **header})


@pytest.mark.parametrize("case", ["delete outside", "staged dir outside", "rename outside", "fifo"])
def test_repair_refuses_a_hostile_journal(tmp_path: Path, damaged: Path, case: str, run_cli) -> None:
    """A journal left in the log dir is completed before planning; one that names paths outside the log dir, or
    whose staged contents (deleted once done) are not in a backup dir's ``staged/<id>``, is refused: nothing
    outside changes, and a FIFO in its place is never opened."""
    outside = tmp_path / "outside"
    backup = tmp_path / "bk"
    staged = backup / "staged" / ("0" * 16)
    path = damaged / ".kafkatool-apply.journal"
    common = {"root": str(damaged), "backup_dir": str(backup), "staged_dir": str(staged)}
    if case == "delete outside":
        path.write_text(journal(**common, ops=[{"kind": "delete", "path": "../outside/precious", "reason": ""}]))
    elif case == "staged dir outside":
        path.write_text(journal(**{**common, "backup_dir": str(tmp_path), "staged_dir": str(outside)}))
    elif case == "rename outside":
        path.write_text(journal(**common, ops=[{"kind": "rename", "path": "rtopic-0/partition.metadata",
                                                "dest": "../outside/precious", "reason": ""}]))
    else:
        os.mkfifo(path)
    before = snapshot(tmp_path)
    done = run_cli("repair", "--apply", damaged, timeout=120)
    assert done.returncode not in (0, 70) and ".kafkatool-apply.journal" in done.stderr, done.stdout + done.stderr
    assert snapshot(tmp_path) == {**before, "logdir/.lock": b""}  # the lock a repair takes, nothing else
