"""``kafkatool.safewrite``: ops, backups, the log dir lock, and a real process killed before every durable step.

No filesystem mocks: every test works on real files under ``tmp_path``; the crash test SIGKILLs a real
subprocess (``KAFKATOOL_CRASH_AT``) and lets :func:`resume` finish what it left.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import random
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kafkatool.errors import ApplyRefused, JournalError, LogDirLocked, RestoreRefused
from kafkatool.logdir import JOURNAL_NAME, TMP_SUFFIX
from kafkatool.safewrite import durable
from kafkatool.safewrite.backup import load_manifest
from kafkatool.safewrite.durable import atomic_write
from kafkatool.safewrite.journal import FileOp, apply_ops, resume
from kafkatool.safewrite.lock import log_dir_lock
from kafkatool.safewrite.restore import restore

from .conftest import read_manifest

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root``: relative path -> content."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def temp_files(*dirs: Path) -> list[str]:
    return [str(p) for d in dirs if d.exists() for p in d.rglob("*") if p.name.endswith(TMP_SUFFIX)]


def noise(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def rebase(ops: list[FileOp], base: Path) -> list[FileOp]:
    return [dataclasses.replace(op, path=base / op.path, dest=None if op.dest is None else base / op.dest)
            for op in ops]


# --- ops --------------------------------------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "logdir"
    write_tree(root, {"p-0/a.log": b"0123456789", "p-0/b.index": b"old index", "p-0/c.snapshot": b"snap",
                      "p-0/d.log.swap": b"swapped", "p-0/e.log": b"replaced", "p-0/f.log.cleaned": b"cleaned",
                      "p-0/untouched.log": b"same", "recovery-point-offset-checkpoint": b"0\n1\np 0 5\n"})
    return root, tmp_path / "backup"


def small_ops(root: Path) -> list[FileOp]:
    p = root / "p-0"
    return [
        FileOp("truncate", p / "a.log", size=4, reason="torn tail"),
        FileOp("write", p / "b.index", data=b"new index"),
        FileOp("write", p / "new.txnindex", data=b"fresh"),
        FileOp("delete", p / "c.snapshot"),
        FileOp("delete", p / "never-there.snapshot"),
        FileOp("rename", p / "d.log.swap", dest=p / "d.log"),
        FileOp("rename", p / "f.log.cleaned", dest=p / "e.log"),
        FileOp("write", root / "recovery-point-offset-checkpoint", data=b"0\n1\np 0 4\n"),
    ]


def test_ops_do_what_they_say(small: tuple[Path, Path]) -> None:
    root, backup = small
    report = apply_ops(root, small_ops(root), backup)
    assert tree(root) == {
        "p-0/a.log": b"0123", "p-0/b.index": b"new index", "p-0/new.txnindex": b"fresh", "p-0/d.log": b"swapped",
        "p-0/e.log": b"cleaned", "p-0/untouched.log": b"same", "recovery-point-offset-checkpoint": b"0\n1\np 0 4\n",
    }
    assert report.ops_run == 8 and not report.resumed and report.backup_dir == backup
    assert not (root / JOURNAL_NAME).exists() and temp_files(root, backup) == []
    assert not (backup / "staged").exists()


def test_reapplying_applied_ops_changes_nothing(small: tuple[Path, Path]) -> None:
    root, backup = small
    apply_ops(root, small_ops(root), backup)
    after = tree(root)
    apply_ops(root, small_ops(root), backup.with_name("backup-2"))
    assert tree(root) == after
    # Into the same backup dir: the copies of the first apply stay, and nothing is copied: the same writes and
    # cuts change no byte (the files they name are still recorded, unchanged, in the manifest).
    first = tree(backup)
    report = apply_ops(root, small_ops(root), backup)
    assert tree(root) == after and report.bytes_backed_up == 0
    now = tree(backup)
    assert {k: v for k, v in now.items() if k != "MANIFEST.json"} == {
        k: v for k, v in first.items() if k != "MANIFEST.json"}
    second = [e for e in read_manifest(backup)["files"] if e["apply"] == 2]
    assert second and all(e["before"] == e["after"] for e in second if e["before"])


def test_backup_holds_every_original_byte_and_nothing_else(small: tuple[Path, Path]) -> None:
    root, backup = small
    originals = tree(root)
    report = apply_ops(root, small_ops(root), backup)
    whole = {"p-0/b.index", "p-0/c.snapshot", "p-0/d.log.swap", "p-0/e.log", "p-0/f.log.cleaned",
             "recovery-point-offset-checkpoint"}
    assert set(tree(backup)) == whole | {"p-0/a.log.removed", "MANIFEST.json"}
    for rel in whole:
        assert (backup / rel).read_bytes() == originals[rel], rel
    assert (backup / "p-0/a.log.removed").read_bytes() == b"456789"  # only what the cut to 4 bytes removed
    manifest = {e["path"]: e for e in read_manifest(backup)["files"]}
    assert {rel: (e["before"]["size"], e["before"]["sha256"]) for rel, e in manifest.items() if e["before"]} == {
        rel: (len(originals[rel]), hashlib.sha256(originals[rel]).hexdigest()) for rel in whole | {"p-0/a.log"}}
    assert manifest["p-0/a.log"]["after"] == {"size": 4, "sha256": hashlib.sha256(b"0123").hexdigest()}
    assert manifest["p-0/new.txnindex"]["before"] is None  # created: a restore deletes it
    assert report.bytes_backed_up == sum(len(originals[rel]) for rel in whole) + 6
    assert {b.copy for b in report.backups} == {backup / rel for rel in whole} | {backup / "p-0/a.log.removed"}


def test_backup_dir_inside_root_is_refused(small: tuple[Path, Path]) -> None:
    root, _ = small
    before = tree(root)
    for inside in (root / "backup", root / "p-0" / "bk", root):
        with pytest.raises(ApplyRefused, match="inside"):
            apply_ops(root, small_ops(root), inside)
    assert tree(root) == before


@pytest.mark.parametrize("op, match", [
    (FileOp("truncate", Path("p-0/a.log"), size=11), "never extends"),
    (FileOp("truncate", Path("p-0/nope.log"), size=0), "no such file"),
    (FileOp("rename", Path("p-0/a.log"), dest=Path("elsewhere.log")), "stay in its directory"),
    (FileOp("rename", Path("p-0/gone.log"), dest=Path("p-0/gone2.log")), "no such file"),
    (FileOp("write", Path("p-0/.lock"), data=b""), "lock file"),
    (FileOp("write", Path("../outside.log"), data=b""), "not under"),
    (FileOp("write", Path("p-9/new.log"), data=b""), "no such directory"),
    (FileOp("delete", Path("p-0")), "not a regular file"),
    (FileOp("write", Path("p-0/a.log")), "no data"),
])
def test_impossible_ops_are_refused_before_anything_changes(small: tuple[Path, Path], op: FileOp,
                                                            match: str) -> None:
    root, backup = small
    before = tree(root)
    ops = [FileOp("write", root / "p-0/b.index", data=b"x"), rebase([op], root)[0]]
    with pytest.raises(ApplyRefused, match=match):
        apply_ops(root, ops, backup)
    assert tree(root) == before and not backup.exists()


def test_a_pending_journal_must_be_resumed_first(small: tuple[Path, Path]) -> None:
    root, backup = small
    (root / JOURNAL_NAME).write_bytes(b"{}\n")
    with pytest.raises(ApplyRefused, match="resume"):
        apply_ops(root, small_ops(root), backup)
    with pytest.raises(JournalError, match="unreadable"):
        resume(root)
    assert (root / JOURNAL_NAME).exists()


def test_resume_with_nothing_pending_returns_none(small: tuple[Path, Path]) -> None:
    root, _ = small
    before = tree(root)
    assert resume(root) is None and tree(root) == before


def test_atomic_write_creates_parents_keeps_the_mode_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "file"
    atomic_write(target, b"one")
    assert target.read_bytes() == b"one"
    target.chmod(0o640)
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two" and target.stat().st_mode & 0o777 == 0o640
    assert temp_files(tmp_path) == []


# --- killed at every durable step ---------------------------------------------------------------------------

CRASH_FILES = {  # about 3 MiB: backing up means copying
    "p-0/00000000000000000000.log": noise(1, 1 << 20),
    "p-0/00000000000000000000.index": noise(2, 40 << 10),
    "p-0/00000000000000000000.timeindex": noise(3, 60 << 10),
    "p-0/leader-epoch-checkpoint": b"0\n2\n0 0\n1 500\n",
    "p-1/00000000000000000000.log": noise(4, 512 << 10),
    "p-1/00000000000000000000.log.cleaned": noise(5, 384 << 10),
    "p-1/00000000000000000100.log": noise(6, 512 << 10),
    "p-1/00000000000000000100.index": noise(7, 10 << 10),
    "p-1/00000000000000000200.log.swap": noise(8, 256 << 10),
    "recovery-point-offset-checkpoint": b"0\n2\np 0 900\np 1 250\n",
    "meta.properties": b"version=1\nbroker.id=0\n",
    ".lock": b"",
}
P0, P1 = Path("root/p-0"), Path("root/p-1")
CRASH_OPS = [  # paths relative to the trial dir (the subprocess runs there): relative paths are resolved too
    FileOp("truncate", P0 / "00000000000000000000.log", size=654_321, reason="torn tail"),
    FileOp("write", P0 / "00000000000000000000.index", data=noise(9, 8 << 10)),
    FileOp("write", P0 / "00000000000000000000.txnindex", data=noise(10, 34)),
    FileOp("delete", P1 / "00000000000000000100.log"),
    FileOp("delete", P1 / "00000000000000000100.index"),
    FileOp("rename", P1 / "00000000000000000200.log.swap", dest=P1 / "00000000000000000200.log"),
    FileOp("rename", P1 / "00000000000000000000.log.cleaned", dest=P1 / "00000000000000000000.log"),
    # Moving a file away and writing a new one in its place: replaying from the first op would be wrong here.
    FileOp("rename", P0 / "00000000000000000000.timeindex", dest=P0 / "00000000000000000000.timeindex.deleted"),
    FileOp("write", P0 / "00000000000000000000.timeindex", data=noise(11, 12)),
    FileOp("write", Path("root/recovery-point-offset-checkpoint"), data=b"0\n2\np 0 800\np 1 250\n"),
    FileOp("delete", P0 / "00000000000000000005.snapshot"),
]
TOUCHED = {str(op.path.relative_to("root")) for op in CRASH_OPS} | {
    str(op.dest.relative_to("root")) for op in CRASH_OPS if op.dest is not None}
ORIGINALLY_TOUCHED = TOUCHED & set(CRASH_FILES)
CUT = "p-0/00000000000000000000.log"

RUN_APPLY = """
import pickle, sys
from pathlib import Path
from kafkatool.safewrite.journal import apply_ops, resume
ops = pickle.loads(Path("ops.pickle").read_bytes())
if sys.argv[1] == "apply":
    apply_ops(Path("root"), ops, Path("backup"))
elif sys.argv[1] == "restore":
    from kafkatool.safewrite.restore import restore
    restore(Path("backup"), apply=True)
else:
    resume(Path("root"))
"""


def new_trial(base: Path, name: str) -> Path:
    trial = base / name
    write_tree(trial / "root", CRASH_FILES)
    (trial / "ops.pickle").write_bytes(pickle.dumps(CRASH_OPS))
    return trial


def run(trial: Path, what: str, crash_at: int | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "KAFKATOOL_CRASH_AT"}
    if crash_at is not None:
        env["KAFKATOOL_CRASH_AT"] = str(crash_at)
    done = subprocess.run([sys.executable, "-c", RUN_APPLY, what], cwd=trial, env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode in (0, -9), done.stderr
    return done.returncode


def assert_complete(trial: Path, expected: dict[str, bytes], where: str) -> None:
    root, backup = trial / "root", trial / "backup"
    assert tree(root) == expected, where
    assert temp_files(root, backup) == [], where
    assert not (root / JOURNAL_NAME).exists() and not (backup / "staged").exists(), where
    entries = read_manifest(backup)["files"]
    assert {e["path"] for e in entries if e["before"]} == ORIGINALLY_TOUCHED, where
    for e in entries:  # one apply, or a killed one and its re-run: each saw the originals
        if e["before"]:
            original = CRASH_FILES[e["path"]]
            assert e["before"]["sha256"] == hashlib.sha256(original).hexdigest(), (where, e)
    whole = ORIGINALLY_TOUCHED - {CUT}
    for rel in whole:
        assert (backup / rel).read_bytes() == CRASH_FILES[rel], (where, rel)
    assert (backup / f"{CUT}.removed").read_bytes() == CRASH_FILES[CUT][654_321:], where  # only the bytes cut
    assert set(tree(backup)) == whole | {f"{CUT}.removed", "MANIFEST.json"}, where
    # ... and what was backed up restores the originals exactly (files the apply created are deleted).
    changed = {rel for rel in TOUCHED if CRASH_FILES.get(rel) != expected.get(rel)}
    assert {s.path for s in restore(backup)} == changed, where  # a dry run, then for real
    restore(backup, apply=True)
    assert tree(root) == CRASH_FILES, where
    assert restore(backup) == [], where


def finish_like_a_caller(trial: Path) -> str:
    """What a re-run does: resume; when there was nothing to resume, the dir is untouched or done."""
    root = trial / "root"
    if resume(root) is not None:
        return "resumed"
    now = tree(root)
    if now == CRASH_FILES:  # killed before the journal was committed: plan and apply again, same backup dir
        apply_ops(root, rebase(CRASH_OPS, trial), trial / "backup")
        return "re-applied"
    return "was done"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], int]:
    """The uninterrupted result, and how many durable steps it takes."""
    trial = new_trial(tmp_path_factory.mktemp("reference"), "t")
    before = durable.steps_taken()
    apply_ops(trial / "root", rebase(CRASH_OPS, trial), trial / "backup")
    steps = durable.steps_taken() - before
    expected = tree(trial / "root")
    assert_complete(trial, expected, "uninterrupted")
    assert expected["p-0/00000000000000000000.timeindex.deleted"] == CRASH_FILES["p-0/00000000000000000000.timeindex"]
    return expected, steps


@pytest.mark.slow
def test_killed_before_any_durable_step_resume_completes_the_apply(
        tmp_path: Path, reference: tuple[dict[str, bytes], int]) -> None:
    expected, steps = reference
    assert steps > 40

    def kill_then_finish(n: int) -> str:
        trial = new_trial(tmp_path, f"n{n}")
        assert run(trial, "apply", n) == (-9 if n <= steps else 0), f"crash at {n} of {steps}"
        how = finish_like_a_caller(trial)
        assert_complete(trial, expected, f"killed before step {n} of {steps} ({how})")
        shutil.rmtree(trial)
        return how

    with ThreadPoolExecutor(max_workers=4) as pool:  # the subprocesses mostly wait for fsync
        outcomes = Counter(pool.map(kill_then_finish, range(1, steps + 2)))
    # Every phase was hit: before the commit, after it (resumed), after the journal was removed.
    assert outcomes["re-applied"] > 10 and outcomes["resumed"] > 10 and outcomes["was done"] >= 2, outcomes


RUN_TWO = """
import pickle, sys
from pathlib import Path
from kafkatool.safewrite import durable
from kafkatool.safewrite.journal import apply_ops
for ops in pickle.loads(Path("two.pickle").read_bytes()):
    apply_ops(Path("root"), ops, Path("backup"))
    print(durable.steps_taken(), flush=True)
"""


@pytest.mark.slow
def test_a_second_apply_killed_while_appending_to_the_manifest_leaves_it_readable(tmp_path: Path) -> None:
    """A log dir's partitions are applied one by one into one backup dir, each apply appending its entries to the
    manifest (version 3: JSON lines, fsynced; rewriting it whole for each was quadratic). Killed at every durable
    step of the second apply of a process, between the two halves of its append too: the manifest still reads (a
    torn last line is an apply that changed nothing yet, left out), a re-run finishes, and the restore gives every
    original back."""
    second = [op for op in CRASH_OPS if "p-1" in op.path.parts]
    two = [[op for op in CRASH_OPS if op not in second], second]

    def trial_of(name: str) -> Path:
        trial = new_trial(tmp_path, name)
        (trial / "two.pickle").write_bytes(pickle.dumps(two))
        return trial

    def run_two(trial: Path, crash_at: int | None) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != "KAFKATOOL_CRASH_AT"}
        env.update({"KAFKATOOL_CRASH_AT": str(crash_at)} if crash_at else {})
        return subprocess.run([sys.executable, "-c", RUN_TWO], cwd=trial, env=env, capture_output=True, text=True,
                              check=False)

    done = run_two(trial_of("reference"), None)
    assert done.returncode == 0, done.stderr
    after_first, total = map(int, done.stdout.split())
    expected = tree(tmp_path / "reference" / "root")
    torn = 0
    for n in range(after_first + 1, total + 1):
        trial = trial_of(f"n{n}")
        assert run_two(trial, n).returncode == -9, n
        manifest = (trial / "backup" / "MANIFEST.json").read_bytes()
        torn += not manifest.endswith(b"\n")
        entries = load_manifest(trial / "backup")  # reads, torn or not
        assert {e["apply"] for e in entries} <= {1, 2} and any(e["apply"] == 1 for e in entries), n
        if resume(trial / "root") is None and tree(trial / "root") != expected:  # killed before the commit
            apply_ops(trial / "root", rebase(second, trial), trial / "backup")
        assert tree(trial / "root") == expected, n
        restore(trial / "backup", apply=True)
        assert tree(trial / "root") == CRASH_FILES, n
        shutil.rmtree(trial)
    assert torn == 1  # one kill fell between the two halves of the append


def test_killed_while_resuming_a_resume_still_completes(tmp_path: Path,
                                                        reference: tuple[dict[str, bytes], int]) -> None:
    """Kill the apply in the middle of its ops, then kill the resume before each of its own steps."""
    expected, steps = reference
    crash_at = steps - 12  # after the commit, a few ops in
    probe = new_trial(tmp_path, "probe")
    assert run(probe, "apply", crash_at) == -9 and (probe / "root" / JOURNAL_NAME).exists()
    before = durable.steps_taken()
    assert resume(probe / "root") is not None
    resume_steps = durable.steps_taken() - before
    assert_complete(probe, expected, "resumed")

    def kill_resume_then_finish(m: int) -> None:
        trial = new_trial(tmp_path, f"m{m}")
        assert run(trial, "apply", crash_at) == -9
        assert run(trial, "resume", m) == (-9 if m <= resume_steps else 0), m
        resume(trial / "root")  # None when killed after the journal went: then the job was done
        assert_complete(trial, expected, f"resume killed before its step {m} of {resume_steps}")
        shutil.rmtree(trial)

    assert resume_steps > 10
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(kill_resume_then_finish, range(1, resume_steps + 2)))


def test_a_copy_of_an_interrupted_tree_resumes_without_robbing_the_original(
        tmp_path: Path, reference: tuple[dict[str, bytes], int]) -> None:
    expected, steps = reference
    original = new_trial(tmp_path, "original")
    assert run(original, "apply", steps - 20) == -9
    copy = tmp_path / "copy"
    shutil.copytree(original / "root", copy)
    assert resume(copy) is not None and tree(copy) == expected
    assert resume(original / "root") is not None
    assert_complete(original, expected, "original resumed after its copy")


def test_resume_refuses_damaged_staged_content(tmp_path: Path, reference: tuple[dict[str, bytes], int]) -> None:
    _, steps = reference
    trial = new_trial(tmp_path, "t")
    assert run(trial, "apply", steps - 20) == -9
    header = json.loads((trial / "root" / JOURNAL_NAME).read_bytes().split(b"\n")[0])
    staged = Path(header["staged_dir"])
    victim = [staged / r["staged"] for r in header["ops"] if r["kind"] == "write"][-1]  # not yet written
    victim.write_bytes(b"garbage")
    with pytest.raises(JournalError, match="damaged"):
        resume(trial / "root")
    assert (trial / "root" / JOURNAL_NAME).exists()


@pytest.mark.slow
def test_a_restore_killed_at_any_step_completes_when_run_again(tmp_path: Path,
                                                               reference: tuple[dict[str, bytes], int]) -> None:
    """Kill ``restore(apply=True)`` before each of its durable steps, run it again: the originals, exactly."""
    probe = new_trial(tmp_path, "probe")
    assert run(probe, "apply", None) == 0
    before = durable.steps_taken()
    restore(probe / "backup", apply=True)
    restore_steps = durable.steps_taken() - before
    assert tree(probe / "root") == CRASH_FILES and restore_steps > 5

    def kill_restore_then_finish(m: int) -> None:
        trial = new_trial(tmp_path, f"r{m}")
        assert run(trial, "apply", None) == 0
        assert run(trial, "restore", m) == (-9 if m <= restore_steps else 0), m
        restore(trial / "backup", apply=True)
        assert tree(trial / "root") == CRASH_FILES, f"restore killed before its step {m} of {restore_steps}"
        assert temp_files(trial / "root") == []
        shutil.rmtree(trial)

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(kill_restore_then_finish, range(1, restore_steps + 2)))


def test_an_index_rebuilt_over_its_preallocated_zeros_is_backed_up_as_nothing(tmp_path: Path) -> None:
    """A killed broker leaves the active segment's indexes preallocated (``AbstractIndex``: entries, then zeros
    to ``segment.index.bytes``); a rebuild writes the same entries and one more over the zeros. Nothing but the
    manifest is written to the backup, and the restore gives the preallocated file back."""
    root, backup = tmp_path / "root", tmp_path / "backup"
    entries = noise(20, 120)
    write_tree(root, {"p-0/00000000000000000000.timeindex": entries + bytes(1 << 20)})
    report = apply_ops(root, [FileOp("write", root / "p-0/00000000000000000000.timeindex",
                                     data=entries + noise(21, 12))], backup)
    assert report.bytes_backed_up == 0 and set(tree(backup)) == {"MANIFEST.json"}
    assert [(b.kind, b.offset, b.size) for b in report.backups] == [("zeros", 120, 1 << 20)]
    restore(backup, apply=True)
    assert tree(root)["p-0/00000000000000000000.timeindex"] == entries + bytes(1 << 20)


def test_restore_refuses_a_file_changed_since_and_changes_nothing(small: tuple[Path, Path]) -> None:
    root, backup = small
    apply_ops(root, small_ops(root), backup)
    (root / "p-0/b.index").write_bytes(b"written by a broker since")
    (root / ".lock").touch()  # the restore takes the log dir's lock (creating it as a broker does)
    now = tree(root)
    with pytest.raises(RestoreRefused, match="b.index: changed since apply 1"):
        restore(backup, apply=True)
    assert tree(root) == now


# --- the log dir lock -----------------------------------------------------------------------------------------

HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
if sys.argv[2] == "flock":
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
else:  # a broker's FileChannel.tryLock(): a POSIX record lock over 0..Long.MAX_VALUE
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, (1 << 63) - 1, 0)
print("locked", flush=True)
sys.stdin.read()  # hold until the test closes our stdin
"""

TRY_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    if sys.argv[2] == "flock":
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    else:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    sys.exit(1)
"""


@pytest.fixture
def holder(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[subprocess.Popen[str]]:
    lock = tmp_path / "logdir" / ".lock"
    lock.parent.mkdir()
    with subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock), request.param], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as proc:  # closes the pipes, waits
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
            yield proc
        finally:
            assert proc.stdin is not None
            proc.stdin.close()  # the holder exits
            proc.wait(timeout=30)


def can_lock(lock: Path, kind: str) -> bool:
    return subprocess.run([sys.executable, "-c", TRY_LOCK, str(lock), kind], check=False).returncode == 0


@pytest.mark.parametrize("holder", ["lockf", "flock"], indirect=True)
def test_a_held_lock_refuses_and_is_left_alone(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    logdir = tmp_path / "logdir"
    with pytest.raises(LogDirLocked, match=r"\.lock is locked") as refused:
        with log_dir_lock(logdir):
            pytest.fail("entered a locked log dir")
    assert refused.value.exit_code == 2 and refused.value.lock_file == str(logdir / ".lock")
    if holder.args[-1] == "lockf":
        assert f"process {holder.pid}" in str(refused.value)
    assert (logdir / ".lock").exists()
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=30)
    with log_dir_lock(logdir) as lock:
        assert lock == logdir / ".lock"


@pytest.mark.parametrize("kind", ["lockf", "flock"])
def test_the_lock_is_held_for_the_whole_block_and_released_after(tmp_path: Path, kind: str) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    with log_dir_lock(logdir) as lock:
        assert lock == logdir / ".lock" and lock.exists()  # created, as the broker does
        assert not can_lock(lock, kind)
        with pytest.raises(LogDirLocked, match="already held by this process"):
            with log_dir_lock(logdir):
                pass
        assert not can_lock(lock, kind)  # the refused inner attempt did not release the outer lock
    assert can_lock(lock, kind) and lock.exists()


def test_a_partition_dir_is_guarded_by_its_log_dirs_lock(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    (logdir / "topic-0").mkdir(parents=True)
    (logdir / ".lock").touch()
    with log_dir_lock(logdir / "topic-0") as lock:
        assert lock == logdir / ".lock" and not can_lock(lock, "lockf")
    assert not (logdir / "topic-0" / ".lock").exists()


# --- backups of sparse files -------------------------------------------------------------------------------------


def _preallocated(path: Path, data: bytes, size: int = 10 << 20) -> Path:
    """``data`` then a hole up to ``size``: an index as a killed broker leaves it (``setLength``)."""
    with path.open("wb") as fh:
        fh.write(data)
        fh.truncate(size)
    return path


def _blocks(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def test_a_trimmed_preallocated_index_is_backed_up_without_writing_its_zeros(tmp_path: Path) -> None:
    """Trimming a 10 MiB preallocated index to its entries backs up nothing (the bytes cut are zeros, the manifest
    says so) and writes nothing on the way: no temp copy of the zeros is made and removed (the broker's disk may be
    full). With one byte past the zeros, the copy holds it, the zeros before it a hole."""
    from kafkatool.safewrite.backup import backup_tail

    index = _preallocated(tmp_path / "00000000000000000000.index", bytes(range(1, 65)))
    backup = tmp_path / "backup"
    opened: list[str] = []

    def hook(event: str, args: tuple) -> None:
        if event == "open" and isinstance(args[0], str) and args[0].startswith(str(backup)):
            opened.append(args[0])

    sys.addaudithook(hook)
    tail = backup_tail(index, backup, "p-0/00000000000000000000.index", 64)
    seen, opened[:] = list(opened), []
    assert tail.copy is None and tail.size == (10 << 20) - 64 and seen == [] and not backup.exists()
    # the zeros are not hashed: the state before is the kept prefix's hash, zeros from where it ends
    assert tail.before == (10 << 20, hashlib.sha256(bytes(range(1, 65))).hexdigest(), 64) and tail.sha256 is None

    with index.open("r+b") as fh:  # a stray byte at the end: that tail is copied, sparse
        fh.seek((10 << 20) - 1)
        fh.write(b"\x01")
    tail = backup_tail(index, backup, "p-0/00000000000000000000.index", 64)
    assert tail.copy is not None and tail.copy.read_bytes() == index.read_bytes()[64:]
    assert _blocks(tail.copy) <= 1 << 20 < tail.size  # the one MiB chunk that holds the byte


def test_a_whole_backup_keeps_a_preallocated_file_sparse(tmp_path: Path) -> None:
    """A whole copy (the backup of an index rebuilt with other entries; a restore copies back through the same
    durable.copy_to_temp) leaves the runs of zeros holes: the same bytes, without 10 MiB of real zeros in the
    backup dir."""
    from kafkatool.safewrite.backup import backup_copy

    index = _preallocated(tmp_path / "00000000000000000000.index", bytes(range(1, 65)) * 3)
    copy = tmp_path / "backup" / "copy.index"
    copy.parent.mkdir()
    size, digest = backup_copy(index, copy)
    assert (size, digest) == (10 << 20, hashlib.sha256(index.read_bytes()).hexdigest())
    assert copy.read_bytes() == index.read_bytes() and _blocks(copy) <= 1 << 20  # the first MiB only
