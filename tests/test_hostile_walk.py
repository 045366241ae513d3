"""Discovery and opening files on a hostile disk (issue 24): a symbolic link loop, a FIFO or a socket in the place
of any file kafkatool reads, a partition dir that cannot be listed. Each is a finding naming its path (never a
hang, never an empty run), and every command that reads log dirs still reads everything else.

The trees are tmp copies of corpus log dirs (``kafka/logdir`` plus a ``__cluster_metadata-0``, a
``__consumer_offsets`` partition with commits and a copy of it named ``__transaction_state-0``, from
``real/``), broken at test time. Commands run as the CLI in a child process; the timeout only turns a hang into
a failure.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
import typer

from kafkatool.cli.exits import EXIT_INTERNAL, command
from kafkatool.errors import InputIOError, UsageError
from kafkatool.filetypes import (
    MAX_SMALL_FILE_BYTES,
    FileTooLarge,
    NotRegularFile,
    holds,
    is_all_zero,
    open_regular,
    read_regular,
)

from .clirun import cli

HANG = 300  # seconds: only a child stuck on a FIFO gets near it

# The command, its arguments for a log dir (``other``: an intact copy, for the commands that compare two), and
# what in its JSONL output shows the partitions that were not broken were still read.
COMMANDS: dict[str, tuple[Callable[[Path, Path], list[str]], str]] = {
    "verify": (lambda d, other: [str(d)], "/codecs-2"),
    "dump": (lambda d, other: [str(d)], "/codecs-2"),
    "repair": (lambda d, other: [str(d)], "/codecs-2"),
    "overview": (lambda d, other: [str(d)], "/codecs-2"),
    "txns": (lambda d, other: [str(d)], "/txn-0"),
    "producers": (lambda d, other: [str(d)], '"type": "producer"'),
    "replicas": (lambda d, other: [str(d), str(other)], "/codecs-2"),
    "truncation": (lambda d, other: ["--leader", str(other), "--follower", str(d)], "/codecs-2"),
    "epochs": (lambda d, other: [str(d)], "/codecs-2"),
    "offsets": (lambda d, other: [str(d)], '"committed_offset"'),
    "txn-state": (lambda d, other: [str(d)], "__transaction_state-0/"),
    "metadata": (lambda d, other: [str(d)], '"partition_state"'),
}
READ_CODECS_0 = ("verify", "dump", "repair", "overview", "txns", "producers", "replicas", "truncation", "epochs")


def _writable(root: Path) -> None:
    """The corpus is read-only; its copies must not be (links and FIFOs are made in them)."""
    for d, _dirs, files in os.walk(root):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)


def _logdir(corpus: Path, dest: Path) -> Path:
    real = corpus / "real"
    shutil.copytree(corpus / "kafka" / "logdir", dest)
    shutil.copytree(real / "hiage_kafka-raft/c5f680e5/kafka1/__cluster_metadata-0", dest / "__cluster_metadata-0")
    offsets = real / "iechenyb_data/kafka-logs/__consumer_offsets-36"
    shutil.copytree(offsets, dest / "__consumer_offsets-36")
    shutil.copytree(offsets, dest / "__transaction_state-0")  # records txn-state cannot decode: findings on them
    _writable(dest)
    return dest


@pytest.fixture
def trees(corpus: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(the log dir to break, an intact copy of it)."""
    return _logdir(corpus, tmp_path / "ld"), _logdir(corpus, tmp_path / "intact")


def _kt(name: str, d: Path, other: Path, **kwargs) -> tuple[subprocess.CompletedProcess, list[dict]]:
    build, _ = COMMANDS[name]
    proc = cli(name, "-f", "jsonl", *build(d, other), timeout=HANG, **kwargs)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, (name, proc.stderr)
    return proc, [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _findings(lines: list[dict], path: Path, *words: str) -> list[dict]:
    return [x for x in lines if x.get("type") == "finding" and x["code"] == "io-error" and x["path"] == str(path)
            and all(w in x["message"] for w in words)]


def _check(name: str, proc: subprocess.CompletedProcess, lines: list[dict], path: Path, *words: str) -> None:
    """Exit 3 (a file could not be read), the finding naming ``path``, and the rest read."""
    assert proc.returncode == 3, (name, proc.returncode, proc.stdout[-2000:], proc.stderr)
    assert _findings(lines, path, *words), (name, path, proc.stdout[-3000:])
    assert COMMANDS[name][1] in proc.stdout, (name, proc.stdout[-3000:])


# --- symbolic link loops ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*COMMANDS, "locate"])
def test_a_link_loop_is_a_finding_and_the_walk_goes_on(trees: tuple[Path, Path], name: str, run_cli) -> None:
    ld, intact = trees
    (ld / "loopy").symlink_to("loopy")                       # ln -s loopy loopy, in the log dir
    (ld / "codecs-0" / "a").symlink_to("b")                  # an a <-> b pair, in a partition dir
    (ld / "codecs-0" / "b").symlink_to("a")
    if name == "locate":  # one partition named: its own loop, and the offset still found
        proc = run_cli("locate", "-f", "jsonl", str(ld / "codecs-0"), "--offset", "120", timeout=HANG)
        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert _findings(lines, ld / "codecs-0" / "a", "loop") and _findings(lines, ld / "codecs-0" / "b", "loop")
        assert lines[0]["type"] == "location" and lines[0]["found"] and lines[0]["offset"] == 120
        return
    proc, lines = _kt(name, ld, intact)
    _check(name, proc, lines, ld / "loopy", "symbolic link loop")
    if name in READ_CODECS_0:
        assert _findings(lines, ld / "codecs-0" / "a", "loop"), proc.stdout[-3000:]


def test_a_link_back_to_a_dir_above_is_a_loop_not_followed(trees: tuple[Path, Path], run_cli) -> None:
    """A dir above log dirs is looked into; a link in it to itself or to a dir it is in was followed until the
    recursion limit."""
    ld, _ = trees
    top = ld.parent / "disks"
    (top / "a").mkdir(parents=True)
    ld.rename(top / "a" / "data-1")
    (top / "a" / "up").symlink_to("..")
    (top / "self").symlink_to(".")
    proc = run_cli("verify", "-f", "jsonl", str(top), timeout=HANG)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr
    assert _findings(lines, top / "a" / "up", f"the same directory as {top}")
    assert _findings(lines, top / "self", f"the same directory as {top}")
    assert f"{top}/a/data-1/codecs-2" in proc.stdout


# --- FIFOs and sockets where a file is read ------------------------------------------------------------------

LOGDIR_ROLES = ["recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
                "cleaner-offset-checkpoint", "meta.properties", ".kafka_cleanshutdown", ".lock"]
PARTITION_ROLES = ["codecs-0/00000000000000000000.log", "codecs-0/00000000000000000000.index",
                   "codecs-0/00000000000000000000.timeindex", "txn-0/00000000000000000000.txnindex",
                   "codecs-0/00000000000000000095.snapshot", "codecs-0/leader-epoch-checkpoint",
                   "codecs-0/partition.metadata", "__cluster_metadata-0/quorum-state",
                   "__cluster_metadata-0/00000000000000000000-0000000001.checkpoint"]


def _fifo(path: Path) -> Path:
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("name", COMMANDS)
def test_a_fifo_recovery_point_checkpoint_is_a_finding_on_every_command(trees: tuple[Path, Path], name: str) -> None:
    """The issue's case: repair waited forever opening it. A writer is never attached: opening it for reading
    without O_NONBLOCK blocks until the timeout fails the test."""
    ld, intact = trees
    fifo = _fifo(ld / "recovery-point-offset-checkpoint")
    proc, lines = _kt(name, ld, intact)
    _check(name, proc, lines, fifo, "file type not supported: a FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("name", ["verify", "repair"])
@pytest.mark.parametrize("role", [*LOGDIR_ROLES, *PARTITION_ROLES])
def test_a_fifo_in_each_file_role_is_never_opened(trees: tuple[Path, Path], role: str, name: str) -> None:
    ld, intact = trees
    fifo = _fifo(ld / role)
    proc, lines = _kt(name, ld, intact)
    _check(name, proc, lines, fifo, "file type not supported: a FIFO")


@pytest.mark.parametrize(("name", "role"), [("metadata", "__cluster_metadata-0/00000000000000000000.log"),
                                            ("metadata", "__cluster_metadata-0/quorum-state"),
                                            ("offsets", "__consumer_offsets-36/00000000000000000000.log"),
                                            ("txn-state", "__transaction_state-0/00000000000000000000.log"),
                                            ("dump", "codecs-0/00000000000000000000.index"),
                                            ("locate", "codecs-0/00000000000000000000.index")])
def test_a_fifo_read_by_the_internal_topic_commands_dump_and_locate(trees: tuple[Path, Path], name: str,
                                                                   role: str, run_cli) -> None:
    ld, intact = trees
    fifo = _fifo(ld / role)
    if name == "locate":
        proc = run_cli("locate", "-f", "jsonl", str(ld / "codecs-0"), "--offset", "50", timeout=HANG)
        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        assert proc.returncode == 3 and _findings(lines, fifo, "a FIFO"), proc.stdout + proc.stderr
        assert lines[0]["found"] and lines[0]["offset"] == 50
        return
    proc, lines = _kt(name, ld, intact)
    assert proc.returncode == 3 and _findings(lines, fifo, "a FIFO"), (proc.stdout[-3000:], proc.stderr)
    if name == "metadata" and role.endswith("quorum-state"):  # the log is still replayed
        assert '"partition_state"' in proc.stdout


@pytest.mark.parametrize("args", [["dump"], ["verify"], ["metadata"], ["locate", "--offset", "1"]])
def test_a_fifo_named_on_the_command_line_is_refused_not_waited_on(tmp_path: Path, args: list[str], run_cli) -> None:
    """Named as a segment: locate and metadata took it for a dir (usage error, exit 2) where it is a file they
    cannot read."""
    fifo = _fifo(tmp_path / "00000000000000000000.log")
    proc = run_cli(args[0], str(fifo), *args[1:], timeout=HANG)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"{fifo}: " in proc.stdout + proc.stderr and "file type not supported: a FIFO" in proc.stdout + proc.stderr


def test_a_socket_in_a_file_role_is_a_finding(trees: tuple[Path, Path]) -> None:
    ld, intact = trees
    path = ld / "codecs-0" / "leader-epoch-checkpoint"
    path.unlink()
    short = Path(tempfile.mkdtemp(dir="/tmp"))  # a socket's path holds at most 108 bytes: bound there, then moved
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(short / "s"))
            os.rename(short / "s", path)
            proc, lines = _kt("verify", ld, intact)
    finally:
        shutil.rmtree(short)
    _check("verify", proc, lines, path, "file type not supported: a socket")


# --- a file read whole that is far too large (a sparse hole: 4 GiB that cost nothing on disk) --------------------

SPARSE = 4 << 30
AS_LIMIT = 2 << 30  # the child's address space: a 4 GiB file read whole does not fit (it was a MemoryError, exit 70)
SPARSE_ROLES = [(role, "index-too-large" if role.endswith("index") else "file-too-large")
                for role in ("recovery-point-offset-checkpoint", "meta.properties",
                             "codecs-0/00000000000000000000.index", "codecs-0/00000000000000000000.timeindex",
                             "txn-0/00000000000000000000.txnindex", "codecs-0/00000000000000000095.snapshot",
                             "codecs-0/leader-epoch-checkpoint", "codecs-0/partition.metadata",
                             "__cluster_metadata-0/quorum-state")]


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


@pytest.mark.parametrize(("role", "code"), SPARSE_ROLES)
def test_a_huge_sparse_small_file_is_a_finding_not_read(trees: tuple[Path, Path], role: str, code: str) -> None:
    """Every file kafkatool reads whole (filetypes.MAX_SMALL_FILE_BYTES): one of 4 GiB is a finding naming it, its
    size and the limit, and the rest is read; no command reads it into memory."""
    ld, intact = trees
    with open(ld / role, "ab") as f:  # meta.properties is not in the copied log dir: made here
        f.truncate(SPARSE)
    for name in ("verify", "dump", "repair", "overview", "producers", "epochs", "txns"):
        proc, lines = _kt(name, ld, intact, preexec_fn=_bounded)  # no traceback, no internal error
        assert proc.returncode in (0, 1) and (proc.returncode == 1 or name not in ("verify", "dump")), (
            name, proc.returncode, proc.stderr[-2000:])
        assert COMMANDS[name][1] in proc.stdout, (name, proc.stdout[-3000:])
        if name in ("verify", "dump") or name == "txns" and role.endswith(".txnindex"):
            assert [x for x in lines if x.get("code") == code and x["path"] == str(ld / role)
                    and f"{SPARSE} bytes" in x["message"] and str(MAX_SMALL_FILE_BYTES) in x["message"]], (
                name, proc.stdout[-3000:])


def test_a_sparse_zero_tail_is_found_where_it_starts(trees: tuple[Path, Path]) -> None:
    """The hole of a sparse segment (16 GiB here) is a zero-filled tail, found where it starts
    (``filetypes.is_all_zero`` skips holes with ``SEEK_DATA``: read, it cost ~1 s of CPU a GiB for each reader; what
    it costs now is measured by hand in docs/performance.md, not asserted here)."""
    ld, _ = trees
    log = ld / "codecs-0" / "00000000000000000190.log"
    end = log.stat().st_size
    os.truncate(log, end + 4 * SPARSE)
    proc = cli("verify", "-f", "jsonl", str(ld / "codecs-0"), timeout=HANG)
    assert proc.returncode == 0, proc.stderr  # a warning
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(x["path"], x["position"]) for x in lines if x.get("code") == "zero-filled-tail"] == [(str(log), end)]


@pytest.mark.parametrize("gap", [0, 1 << 20, 1 << 30])
def test_data_after_a_hole_is_no_zero_filled_tail(tmp_path: Path, gap: int) -> None:
    """Bytes that are not zero after zeros (written, or a hole of a sparse file): not a zero-filled tail, wherever
    they are, the first, middle or last byte of a MiB read."""
    for at in (0, (1 << 19) + 7, (1 << 20) - 1):
        path = tmp_path / f"{gap}-{at}"
        with open(path, "wb") as f:
            f.write(b"\x00" * 100)
            f.seek(100 + gap + at)
            f.write(b"\x01")
            f.write(b"\x00" * 10)
        size = path.stat().st_size
        with open(path, "rb") as f:
            f.seek(3)
            assert not is_all_zero(f, 0, size) and is_all_zero(f, 0, 100 + gap + at)
            assert is_all_zero(f, 101 + gap + at, 10) and not is_all_zero(f, 101 + gap + at, 11)  # past the end
            assert f.tell() == 3 and f.read(1) == b"\x00"  # its position is its own
        data = path.read_bytes() if gap < 1 << 30 else None
        if data is not None:  # not a file on a disk: read
            assert not is_all_zero(io.BytesIO(data), 0, size) and is_all_zero(io.BytesIO(data), 0, 100 + gap + at)


def test_read_regular_refuses_more_than_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"12345")
    assert read_regular(path, limit=5) == b"12345" and holds(path, b"12345")
    with pytest.raises(FileTooLarge) as raised:
        read_regular(path, limit=4)
    assert (raised.value.size, raised.value.limit, raised.value.filename) == (5, 4, str(path))
    assert not holds(path, b"1234") and not holds(path, b"123456")


def test_open_regular_takes_the_type_from_the_open_descriptor(tmp_path: Path) -> None:
    """The one rule behind every reader: FIFO, socket, device and directory refused (an OSError, so each reader's
    io-error path takes it), a regular file and a link to one read."""
    (tmp_path / "data").write_bytes(b"1\n0\n")
    (tmp_path / "link").symlink_to("data")
    fifo = _fifo(tmp_path / "recovery-point-offset-checkpoint")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        for path, what in ((fifo, "a FIFO"), (tmp_path / "sock", "a socket"), (Path(os.devnull), "a character device"),
                           (tmp_path, "a directory")):
            with pytest.raises(NotRegularFile, match=f"file type not supported: {what}"):
                read_regular(path)
    assert read_regular(tmp_path / "link") == b"1\n0\n"
    with open_regular(tmp_path / "data", buffering=0) as fh:  # O_NONBLOCK taken off again once it is known regular
        assert os.get_blocking(fh.fileno()) and fh.read() == b"1\n0\n"
    # a reader's refusal, in a child: were it to open the FIFO blocking, the test run would hang, not fail
    probe = ("import sys; from kafkatool.filetypes import FileKind; from kafkatool.errors import InputIOError\n"
             "from kafkatool.smallfiles import read_small_file\n"
             "try: read_small_file(sys.argv[1], FileKind.OFFSET_CHECKPOINT, sys.argv[1])\n"
             "except InputIOError as exc: print(exc)")
    out = subprocess.run([sys.executable, "-c", probe, str(fifo)], capture_output=True, text=True, timeout=HANG)
    assert out.stdout == f"{fifo}: cannot read: file type not supported: a FIFO, not read\n", out.stderr


# --- a partition dir that cannot be listed ---------------------------------------------------------------------

_PR_CAPBSET_DROP, _CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 24, 1, 2


def _without_dac() -> None:
    """In the child before exec: root's bypass of file permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) leaves
    the bounding set, so the exec'd interpreter runs with neither and ``chmod 000`` binds it as it binds any user.
    (Running it as nobody is not possible here: the interpreter lives under root's 0700 home.)"""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _unprivileged() -> dict:
    return {"preexec_fn": _without_dac} if os.geteuid() == 0 else {}


@pytest.fixture
def unreadable(trees: tuple[Path, Path]):
    ld, intact = trees
    os.chmod(ld / "codecs-1", 0)
    try:
        yield ld, intact
    finally:
        os.chmod(ld / "codecs-1", 0o755)


@pytest.mark.parametrize("name", COMMANDS)  # locate names one partition dir: unreadable, it is exit 3 with nothing
def test_an_unreadable_partition_dir_is_an_io_error_and_the_others_are_checked(unreadable: tuple[Path, Path],
                                                                               name: str) -> None:
    ld, intact = unreadable
    proc, lines = _kt(name, ld, intact, **_unprivileged())
    _check(name, proc, lines, ld / "codecs-1", "cannot list", "Permission denied")


# --- KAFKATOOL_DEBUG -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("error", "code"), [(RuntimeError("a bug"), EXIT_INTERNAL), (UsageError("bad"), 2),
                                             (InputIOError("unreadable"), 3), (OSError(5, "EIO"), 3)])
def test_debug_shows_the_traceback_and_keeps_the_exit_code(monkeypatch, capsys, error: Exception,
                                                           code: int) -> None:
    """It re-raised, and an exception leaving the interpreter exits 1: a bug looked like findings."""
    def body() -> int:
        raise error

    monkeypatch.setenv("KAFKATOOL_DEBUG", "1")
    with pytest.raises(typer.Exit) as exit_:
        command(body)()
    assert exit_.value.exit_code == code
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and type(error).__name__ in err
    monkeypatch.delenv("KAFKATOOL_DEBUG")
    with pytest.raises(typer.Exit) as exit_:
        command(body)()
    assert exit_.value.exit_code == code and "Traceback" not in capsys.readouterr().err
