"""``verify`` linear in segments and cheap per partition (``python bench/bench_linear.py``; issue 30's two "Must
show" ratios, CPU time of whole processes, in one run).

1. ``verify`` of one partition of ``--segments`` one-batch segments against the same of a quarter as many: linear
   is 4x, the target at most 5x. The partitions are written by :class:`kafkatool.logwriter.PartitionWriter` with a
   ``segment.bytes`` one batch fits (every append rolls: a ``.log``, ``.index``, ``.timeindex`` and producer
   snapshot per segment), no checkpoints, so every segment is recovered and replayed.
2. ``verify`` of a log dir of ``--partitions`` one-batch partitions (:class:`kafkatool.logwriter.LogDirWriter`,
   cleanly shut down: checkpoints, ``meta.properties``, each partition's ``.log``, indexes, producer snapshot,
   ``leader-epoch-checkpoint``, ``partition.metadata``) against ``bench/floor_scan_crc.py`` over the same dir: a
   scandir walk that reads each ``.log`` and checks each batch's CRC32C with the ``crc32c`` package, the least an
   honest check does; the target at most 5x.

kafkatool runs as a wheel installs it, bytecode compiled (``bench_cli.installed``, as ``bench_internal`` times it),
and the floor script by the same interpreter. Inputs are written under ``bench/out/linear/`` once and reused. Each
figure is the CPU time (user + system) of the fastest of ``--runs`` runs, the runs of all commands interleaved.
Prints the figures and writes ``bench/out/linear_results.json``; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench_cli import ROOT, installed
from bench_loader import OUT, T0

FLOOR = Path(__file__).resolve().parent / "floor_scan_crc.py"


def _stamped(root: Path, meta: dict) -> bool:
    stamp = root.with_suffix(".json")
    if stamp.exists() and json.loads(stamp.read_text()) == meta and root.is_dir():
        return True
    shutil.rmtree(root, ignore_errors=True)
    return False


def generate_segments(root: Path, segments: int) -> Path:
    """One partition of ``segments`` one-batch segments (the module doc, 1)."""
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.logwriter import PartitionWriter

    part = root / f"segments{segments}" / "bench-0"
    meta = {"segments": segments}
    if _stamped(part.parent, meta):
        return part
    with PartitionWriter(part, topic="bench", partition=0, topic_id=bytes(range(16)), segment_bytes=150) as w:
        for i in range(segments):  # a 109-byte batch: the next one does not fit, every append rolls
            w.append(record_batch(i, [RecordSpec(b"k", b"v" * 40, T0 + i)]))
    part.parent.with_suffix(".json").write_text(json.dumps(meta))
    return part


def generate_partitions(root: Path, partitions: int) -> Path:
    """A log dir of ``partitions`` one-batch partitions, 10 topics (the module doc, 2)."""
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.logwriter import LogDirWriter

    logdir = root / f"partitions{partitions}"
    meta = {"partitions": partitions, "topic_ids": "1-10"}
    if _stamped(logdir, meta):
        return logdir
    with LogDirWriter(logdir, cluster_id="bench-linear-cluster-0", node_id=1) as d:
        for i in range(partitions):  # topic ids 1..10: the zero UUID is an error (a tenth of the partitions was)
            w = d.partition(f"topic{i % 10}", i // 10, bytes([i % 10 + 1] * 16))
            w.append(record_batch(0, [RecordSpec(f"key-{i}".encode(), b"v" * 100, T0 + i)]))
            w.close()  # one open segment file per partition otherwise
    logdir.with_suffix(".json").write_text(json.dumps(meta))
    return logdir


# the children's environment: no PYTHONPATH, which would put a checkout before the installed copy
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def cpu(argv: list[str], cwd: Path) -> float:
    """CPU seconds (user + system) of one whole process, run in ``cwd`` (not a checkout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_ENV, cwd=cwd, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--segments", type=int, default=20_000)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    root = OUT / "linear"
    small, large = generate_segments(root, args.segments // 4), generate_segments(root, args.segments)
    logdir = generate_partitions(root, args.partitions)
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as d:
        python, kafkatool = installed(ROOT, Path(d) / "installed")
        verify = [*kafkatool, "verify"]
        cmds = {"small": [*verify, str(small)], "large": [*verify, str(large)],
                "partitions": [*verify, str(logdir)], "floor": [*python, str(FLOOR), str(logdir)]}
        times = {name: [] for name in cmds}
        for _ in range(args.runs):  # interleaved: a load spike hits every command alike
            for name, argv in cmds.items():
                times[name].append(cpu(argv, Path(d)))
    t = {name: min(ts) for name, ts in times.items()}
    segments_ratio, partitions_ratio = t["large"] / t["small"], t["partitions"] / t["floor"]
    print(f"verify, one partition of one-batch segments, CPU s (best of {args.runs}, interleaved):")
    print(f"  {args.segments // 4:>7,} segments {t['small']:7.2f} s\n  {args.segments:>7,} segments {t['large']:7.2f} s"
          f"  ratio {segments_ratio:.2f}x (linear 4x, target <= 5x)")
    print(f"verify of {args.partitions:,} one-batch partitions: {t['partitions']:.2f} s; "
          f"{FLOOR.name} (scandir + read + CRC32C) {t['floor']:.2f} s: ratio {partitions_ratio:.2f}x (target <= 5x)")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "linear_results.json").write_text(json.dumps({
        "segments": [args.segments // 4, args.segments], "partitions": args.partitions, "runs": args.runs,
        "cpu_s": t, "segments_ratio": segments_ratio, "partitions_ratio": partitions_ratio,
        "floor": FLOOR.name}, indent=2) + "\n")


if __name__ == "__main__":
    main()
