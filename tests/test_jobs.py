"""``verify --jobs``: partitions checked side by side in threads, the output byte for byte that of one job, each
segment read once, no worker process, and Ctrl-C still 130 and quiet (``kafkatool.verify_files.Runner``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.logwriter import LogDirWriter
from kafkatool.verify_files import POOLED_FROM, Runner, VerifyOptions
from kafkatool.walk import discover, partition_dirs

from .clirun import KAFKATOOL, PROJECT_ROOT

T0 = 1_700_000_000_000


def write_logdir(root: Path, partitions: int, batches: int) -> Path:
    """A log dir of ``partitions`` partitions of ``batches`` 8-record batches each as a killed broker leaves it (1 MiB
    segments; 64 KiB index files, since the active segment's stay preallocated and Kafka's 10 MiB would be most of
    the bytes), written by the project's own writer: one batch built once, appended at each offset (the base offset
    is outside the CRC)."""
    batch = record_batch(0, [RecordSpec(b"k%d" % i, b"v" * 2000, T0 + i) for i in range(8)])
    writer = LogDirWriter(root, cluster_id="jobs", node_id=1, segment_index_bytes=1 << 16)
    for p in range(partitions):
        part = writer.partition("jobs", p, bytes(range(16)), segment_bytes=1 << 20)
        for i in range(batches):
            part.append(struct.pack(">q", 8 * i) + batch[8:])
    writer.close(clean=False)
    return root


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Path:
    """A log dir of many partitions, some damaged: written ones (a CRC flipped in one, a torn tail in another, a
    middle segment gone from a third) beside copies of corpus partitions (every codec, transactions)."""
    root = write_logdir(tmp_path_factory.mktemp("jobs") / "logdir", 6, 300)
    for name in ("codecs-0", "codecs-1", "codecs-2", "codecs-3", "codecs-4", "txn-0", "headers-0"):
        shutil.copytree(corpus / "kafka" / "logdir" / name, root / name)
    flip = sorted((root / "jobs-1").glob("*.log"))[0]
    with open(flip, "r+b") as fh:
        fh.seek(200)
        byte = fh.read(1)
        fh.seek(200)
        fh.write(bytes([byte[0] ^ 0xFF]))
    torn = sorted((root / "jobs-3").glob("*.log"))[-1]
    with open(torn, "r+b") as fh:
        fh.truncate(torn.stat().st_size - 100)
    sorted((root / "jobs-4").glob("*.log"))[1].unlink()
    return root


def verify(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([*KAFKATOOL, "verify", *map(str, args)], capture_output=True, cwd=PROJECT_ROOT,
                          timeout=600, check=False)


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_the_output_is_the_same_byte_for_byte_whatever_the_jobs(fmt: str, corpus: Path, mixed: Path) -> None:
    """Log dirs, partition dirs and files named alone, damaged or not: one job, two, three and the default (the
    CPUs) print the same bytes, findings in the same order, and exit alike."""
    logdir = corpus / "kafka" / "logdir"
    paths = [mixed, logdir, corpus / "kafka" / "legacy", *sorted((corpus / "kafka" / "recovery").glob("*/before")),
             *sorted((corpus / "kafka" / "replicas").glob("*/broker-*")), PROJECT_ROOT / "fixtures" / "incident",
             logdir / "codecs-0", mixed / "jobs-1", *sorted((logdir / "codecs-2").glob("*.log")),
             *sorted((logdir / "codecs-3").glob("*.index"))]
    one = verify("-f", fmt, "-j", "1", *paths)
    assert one.returncode == 1 and b"crc-mismatch" in one.stdout, one.stderr  # the damage is seen
    for jobs in (["-j", "2"], ["-j", "3"], []):
        other = verify("-f", fmt, *jobs, *paths)
        assert (other.returncode, other.stdout, other.stderr) == (one.returncode, one.stdout, one.stderr), jobs
    # the record files named alone, side by side
    logs = sorted(mixed.glob("jobs-*/*.log"))
    assert verify("-f", fmt, "-j", "2", *logs).stdout == verify("-f", fmt, "-j", "1", *logs).stdout


MEASURE = """
import json, resource, sys
out = sys.argv.pop(1)
sys.argv = ["kafkatool", *sys.argv[1:]]
from kafkatool.cli import main
try:
    main()
except SystemExit:
    pass
io = dict(line.split(": ") for line in open("/proc/self/io").read().splitlines())
children = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as fh:
    json.dump({"read": int(io["rchar"]), "children_cpu": children.ru_utime + children.ru_stime}, fh)
"""


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="bytes read are counted by Linux's /proc/PID/io")
def test_jobs_run_in_this_process_and_read_each_segment_once(tmp_path: Path) -> None:
    """Two jobs read what one job reads (each segment once: its checks feed its partition's load) and start no
    process (nothing imported again, nothing pickled)."""
    logdir = write_logdir(tmp_path / "logdir", 4, 400)
    size = sum(p.stat().st_size for p in logdir.rglob("*.log"))
    measured = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.json"
        subprocess.run([sys.executable, "-c", MEASURE, str(out), "verify", "-f", "jsonl", "-j", jobs, str(logdir)],
                       stdout=subprocess.DEVNULL, check=False, timeout=600)
        measured[jobs] = json.loads(out.read_text())
    assert measured["2"]["children_cpu"] == 0, measured
    assert size < measured["1"]["read"] and measured["2"]["read"] < measured["1"]["read"] + size // 10, measured


def test_ctrl_c_stops_the_jobs_at_once_130_and_quiet(tmp_path: Path) -> None:
    """Ctrl-C once the first partitions are out, to the whole process group as a terminal sends it: the threads stop
    at their next window, the exit is 130 with the one line, no traceback (no worker process to get one)."""
    logdir = write_logdir(tmp_path / "logdir", 60, 70)  # 1.1 MiB each: every partition is a thread's (POOLED_FROM)
    with subprocess.Popen([*KAFKATOOL, "verify", "-f", "jsonl", "-j", "2", str(logdir)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, start_new_session=True) as proc:
        assert proc.stdout is not None
        proc.stdout.readline()  # running: the first block of output (a pipe's, ~20 partitions of 200) is out
        os.killpg(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err.decode().strip() == "kafkatool: interrupted", err


def test_only_partitions_with_bytes_to_read_go_to_a_thread(tmp_path: Path) -> None:
    """A partition (or a file named alone) is a thread's work only when its record files hold ``POOLED_FROM`` bytes:
    the checks of a small one are Python holding the GIL, which a second thread only slows (10,000 one-batch
    partitions cost 1.6x the CPU with ``-j 2`` before). One job never pools."""
    big = write_logdir(tmp_path / "logdir", 1, 140) / "jobs-0"  # 140 batches of 16 KiB: 2.2 MiB in 3 segments
    logs = sorted(big.glob("*.log"))
    small, joined = tmp_path / "small" / "jobs-0", tmp_path / "joined"
    small.mkdir(parents=True)
    joined.mkdir()
    (small / logs[0].name).write_bytes(logs[0].read_bytes()[:300_000])
    (joined / logs[0].name).write_bytes(b"".join(log.read_bytes() for log in logs))  # one file named alone
    two, one = Runner(VerifyOptions(jobs=2), None), Runner(VerifyOptions(jobs=1), None)
    assert max(log.stat().st_size for log in logs) < POOLED_FROM <= sum(log.stat().st_size for log in logs)
    parts = {p.path: p for p in partition_dirs([big, small])}
    assert two.worth_a_thread(parts[big]) and not two.worth_a_thread(parts[small])
    assert not one.worth_a_thread(parts[big])
    named = discover([joined / logs[0].name, logs[0]])
    assert [two.worth_a_thread(u) for u in named] == [True, False]
