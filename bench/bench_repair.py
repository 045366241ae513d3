"""Cost of ``repair`` against ``verify`` of the same partition, and bytes its ``--apply`` backs up (``make bench``).

Partitions are built with the project's own writer (:class:`kafkatool.logwriter.LogDirWriter`, batches from
:func:`kafkatool.build.record_batch`) and left as a killed broker leaves them (``close(clean=False)``: no
checkpoints, so the recovery point is 0 and every segment is recovered; the active segment's indexes still
preallocated), then given a torn tail (the first bytes of one more batch) and a recovery-point checkpoint of 0
(the broker's periodic checkpoint taken before anything was flushed: every segment is recovered; after the
repair it holds the log end offset, so a second run has nothing to recover):

- ``tiny``: ``--batches`` (default 114 k) 1-record batches of an idempotent producer, one segment.
  Measured: ``verify``; ``repair`` dry run; ``repair --apply`` on a copy; ``repair --apply`` again on the
  repaired copy (nothing to do) against ``verify`` of that copy.
- ``big``: one ``--big-size`` segment (default 512 MiB) of ~64 KiB batches. Measured: bytes written to the
  backup dir by ``repair --apply`` against the segment's size.
- ``crashed``: a log dir of ``--crashed`` (default 1,000) partitions of five 1 KiB batches, and one of a quarter as
  many, left by a killed broker: no ``.kafka_cleanshutdown``, each active segment's ``.index`` and ``.timeindex``
  preallocated to 10 MiB, sparse as Kafka leaves them (20 GB apparent for 1,000), and a recovery-point checkpoint
  of 0 for every partition (so every partition is recovered and moves its entry). Measured: ``verify``, the
  ``repair`` dry run and ``repair --apply`` (on a sparse copy, ``cp --sparse=always``) of each; the ratio of the two
  sizes is 4x when they are linear in partitions (the dry run once read the log dir again for each partition, and
  both read the 20 MiB of holes a partition; the dry run then read and rebuilt the recovery-point checkpoint once a
  partition, and the apply rewrote and backed it up once a partition). Before 2026-11-28 this log dir was closed
  cleanly by mistake (its writer's ``with`` wrote the checkpoints and ``.kafka_cleanshutdown`` after the crash), so
  nothing in it was recovered.

Each timing runs in a fresh process (library calls, no CLI start-up), ``--repeat`` times, the fastest
counting (wall time; the CPU time of that run is kept too); ratios are taken within the same run; ``--cases``
picks which of the three run. Targets (issue 15): dry run <= 2x verify, nothing-to-do apply ~1x verify, backup
< 1 % of the segment. Results go to stdout and ``bench/out/repair.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
TOPIC_ID = bytes(range(16))
TIMESTAMP = 1_700_000_000_000


# -- generation ------------------------------------------------------------------------------------

def _generate(root: Path, kind: str, meta: dict) -> Path:
    """A log dir ``root`` holding partition ``bench-0`` as described by ``meta``; reused when already built."""
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.formats import checkpoints
    from kafkatool.logwriter import LogDirWriter

    stamp = root.with_suffix(".json")
    part = root / "bench-0"
    meta = {**meta, "indexes": "sparse"}  # preallocated as Kafka leaves them (a hole after the entries)
    if part.is_dir() and stamp.exists() and json.loads(stamp.read_text()) == meta:
        return part
    stamp.unlink(missing_ok=True)
    shutil.rmtree(root, ignore_errors=True)
    logdir = LogDirWriter(root, cluster_id="benchclusterid00000000", node_id=1)
    # no ``with``: its exit would close the log dir cleanly after the crash left below
    writer = logdir.partition("bench", 0, TOPIC_ID, segment_bytes=2**31 - 1)
    if kind == "tiny":
        for i in range(meta["batches"]):
            writer.append(record_batch(i, [RecordSpec(b"k", b"tiny-value", TIMESTAMP + i)],
                                       partition_leader_epoch=1, producer_id=1000, producer_epoch=0,
                                       base_sequence=i))
        torn = record_batch(meta["batches"], [RecordSpec(b"k", b"torn", TIMESTAMP)], partition_leader_epoch=1)
    else:
        records = [RecordSpec(f"key-{i:04d}".encode(), bytes([65 + i % 26]) * 1000, TIMESTAMP + i)
                   for i in range(64)]
        template = bytearray(record_batch(0, records, partition_leader_epoch=1))
        offset = written = 0
        while written + len(template) <= meta["size"]:
            template[:8] = offset.to_bytes(8, "big")  # the CRC does not cover the base offset
            writer.append(bytes(template))
            offset, written = offset + 64, written + len(template)
        torn = bytes(template)
    logdir.close(clean=False)
    with open(part / "00000000000000000000.log", "ab") as fh:
        fh.write(torn[: len(torn) // 2])
    # The broker's periodic checkpoint, taken before anything was flushed: recovery starts at offset 0.
    (root / "recovery-point-offset-checkpoint").write_bytes(checkpoints.build_offset_checkpoint([("bench", 0, 0)]))
    stamp.write_text(json.dumps(meta))
    return part


def _crashed(root: Path, partitions: int) -> Path:
    """The ``crashed`` log dir of ``partitions`` partitions (the module doc), written once and reused."""
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.formats import checkpoints
    from kafkatool.logwriter import LogDirWriter

    stamp, meta = root.with_suffix(".json"), {"kind": "crashed", "partitions": partitions, "indexes": "sparse",
                                              "v": 2}
    if root.is_dir() and stamp.exists() and json.loads(stamp.read_text()) == meta:
        return root
    stamp.unlink(missing_ok=True)
    shutil.rmtree(root, ignore_errors=True)
    d = LogDirWriter(root, cluster_id="bench-crashed-cluster-0", node_id=1)  # no ``with``: it would close cleanly
    keys = []
    for i in range(partitions):
        w = d.partition(f"topic{i % 10}", i // 10, bytes([i % 10 + 1] * 16))
        keys.append((f"topic{i % 10}", i // 10))
        for k in range(5):
            w.append(record_batch(k, [RecordSpec(b"key-%d" % i, b"v" * 1000, TIMESTAMP + k)]))
    d.close(clean=False)
    # The broker's periodic checkpoint, taken before anything was flushed: recovery starts at offset 0.
    (root / "recovery-point-offset-checkpoint").write_bytes(
        checkpoints.build_offset_checkpoint((t, p, 0) for t, p in keys))
    stamp.write_text(json.dumps(meta))
    return root


def _sparse_copy(src: Path, dst: Path) -> Path:
    """A copy of the crashed log dir ``src`` keeping its holes (a plain copy would write 20 GB of zeros)."""
    shutil.rmtree(dst, ignore_errors=True)
    subprocess.run(["cp", "-a", "--sparse=always", str(src), str(dst)], check=True)
    return dst


def _copy(part: Path, name: str) -> Path:
    """A fresh copy of ``part``'s log dir under ``bench/out/<name>`` (an apply changes it)."""
    dst = OUT / name
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(part.parent, dst)
    return dst / part.name


def _tree_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


# -- measurements (each runs in its own process) -----------------------------------------------------

def m_verify(path: str) -> dict:
    from kafkatool.model import Finding
    from kafkatool.verify import verify_paths
    from kafkatool.verify_files import VerifyOptions

    t, cpu = time.perf_counter(), time.process_time()
    errors = sum(1 for x in verify_paths([Path(path)], VerifyOptions())
                 if isinstance(x, Finding) and x.severity == "error")
    return {"seconds": time.perf_counter() - t, "cpu": time.process_time() - cpu, "errors": errors}


def m_repair(path: str, apply: str, backup: str = "") -> dict:
    from kafkatool.repair import Action, RepairOptions, repair_paths

    t, cpu = time.perf_counter(), time.process_time()
    actions = 0
    for x in repair_paths([Path(path)], RepairOptions(now_ms=TIMESTAMP),
                          apply=apply == "apply", backup_dir=Path(backup) if backup else None):
        actions += isinstance(x, Action)
    return {"seconds": time.perf_counter() - t, "cpu": time.process_time() - cpu, "actions": actions}


def m_profile(path: str, out: str) -> dict:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.runcall(m_repair, path, "dry")
    with open(out, "w") as fh:
        pstats.Stats(prof, stream=fh).sort_stats("tottime").print_stats(25)
    return {"seconds": 0.0}


def _child(argv: list[str]) -> None:
    name, *rest = argv
    print(json.dumps({"verify": m_verify, "repair": m_repair, "profile": m_profile}[name](*rest)))


def run(name: str, *args: object, repeat: int = 1) -> dict:
    """Best (fastest) of ``repeat`` runs, each in a fresh process."""
    results = []
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, __file__, "--child", name, *map(str, args)],
                              capture_output=True, text=True, check=True)
        results.append(json.loads(proc.stdout.splitlines()[-1]))
    return min(results, key=lambda r: r["seconds"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=114_000, help="1-record batches of the tiny partition")
    ap.add_argument("--big-size", type=int, default=512 << 20, help="bytes of the big segment (default 512 MiB)")
    ap.add_argument("--crashed", type=int, default=1000, help="partitions of the crashed log dir")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing; the fastest counts")
    ap.add_argument("--apply-repeat", type=int, default=1,
                    help="runs of each crashed --apply (minutes each at 1,000 partitions: one by default)")
    ap.add_argument("--cases", default="tiny,big,crashed", help="which cases to run (default all: tiny,big,crashed)")
    ap.add_argument("--profile", action="store_true", help="also write a cProfile of the dry run to bench/out")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child)
        return
    cases = set(args.cases.split(","))
    if not cases or cases - {"tiny", "big", "crashed"}:
        ap.error(f"--cases: tiny, big or crashed, not {args.cases!r}")
    OUT.mkdir(exist_ok=True)
    results: dict = {}
    if "tiny" in cases:
        results.update(_tiny(args))
    if "big" in cases:
        results.update(_big(args))
    if "crashed" in cases:
        results.update(_crashed_case(args))
    (OUT / "repair.json").write_text(json.dumps(results, indent=2))


def _tiny(args: argparse.Namespace) -> dict:
    sys.stderr.write("generating the tiny partition ...\n")
    tiny = _generate(OUT / "repair-tiny", "tiny", {"kind": "tiny", "batches": args.batches, "v": 3})
    verify = run("verify", tiny, repeat=args.repeat)
    dry = run("repair", tiny, "dry", repeat=args.repeat)
    assert verify["errors"] and dry["actions"], (verify, dry)
    if args.profile:
        run("profile", tiny, OUT / "repair-profile.txt")
    work = _copy(tiny, "repair-tiny-work")
    applied = run("repair", work, "apply", OUT / "repair-tiny-backup")
    shutil.rmtree(OUT / "repair-tiny-backup", ignore_errors=True)
    again = run("repair", work, "apply", OUT / "repair-tiny-backup", repeat=args.repeat)
    verify_after = run("verify", work, repeat=args.repeat)
    assert again["actions"] == 0 and verify_after["errors"] == 0, (again, verify_after)
    dry_after = run("repair", work, "dry", repeat=args.repeat)
    results = {
        "tiny_batches": args.batches,
        "verify_s": round(verify["seconds"], 3),
        "repair_dry_run_s": round(dry["seconds"], 3),
        "dry_run_vs_verify": round(dry["seconds"] / verify["seconds"], 2),
        "repair_apply_s": round(applied["seconds"], 3),
        "nothing_to_do_apply_s": round(again["seconds"], 3),
        "verify_repaired_s": round(verify_after["seconds"], 3),
        "nothing_to_do_vs_verify": round(again["seconds"] / verify_after["seconds"], 2),
        "repaired_dry_run_s": round(dry_after["seconds"], 3),
        "batches_per_s_dry_run": round(args.batches / dry["seconds"]),
    }
    print(f"tiny partition, {args.batches:,} 1-record batches, torn tail:")
    print(f"  verify {results['verify_s']} s; repair dry run {results['repair_dry_run_s']} s "
          f"= {results['dry_run_vs_verify']}x verify (target <= 2x), {results['batches_per_s_dry_run']:,} batches/s")
    print(f"  repair --apply {results['repair_apply_s']} s; again, nothing to do: {results['nothing_to_do_apply_s']} s "
          f"= {results['nothing_to_do_vs_verify']}x verify of the repaired partition ({results['verify_repaired_s']} s;"
          " target ~1x)")
    print(f"  repair dry run of the repaired partition: {results['repaired_dry_run_s']} s")
    return results


def _big(args: argparse.Namespace) -> dict:
    sys.stderr.write("generating the big segment ...\n")
    big = _generate(OUT / "repair-big", "big", {"kind": "big", "size": args.big_size, "v": 3})
    segment = (big / "00000000000000000000.log").stat().st_size
    work = _copy(big, "repair-big-work")
    backup = OUT / "repair-big-backup"
    shutil.rmtree(backup, ignore_errors=True)
    big_apply = run("repair", work, "apply", backup)
    backed_up = _tree_bytes(backup)
    shutil.rmtree(work.parent)
    shutil.rmtree(backup)
    results = {
        "big_segment_bytes": segment,
        "big_apply_s": round(big_apply["seconds"], 3),
        "big_backup_bytes": backed_up,
        "big_backup_fraction": round(backed_up / segment, 6),
    }
    print(f"big segment, {segment / (1 << 20):.0f} MiB, torn tail: repair --apply {results['big_apply_s']} s, "
          f"backup {backed_up:,} bytes = {results['big_backup_fraction']:.4%} of the segment (target < 1 %)")
    return results


def _crashed_case(args: argparse.Namespace) -> dict:
    sys.stderr.write("generating the crashed log dirs ...\n")
    crashed = {n: _crashed(OUT / f"repair-crashed-{n}", n) for n in (args.crashed // 4, args.crashed)}
    timed = {(n, what): run(what, d, *(("dry",) if what == "repair" else ()), repeat=args.repeat)
             for n, d in crashed.items() for what in ("verify", "repair")}
    for n, d in crashed.items():  # each apply on a fresh copy: the fastest of --apply-repeat
        applies = []
        for _ in range(args.apply_repeat):
            work = _sparse_copy(d, OUT / "repair-crashed-work")
            backup = OUT / "repair-crashed-backup"
            shutil.rmtree(backup, ignore_errors=True)
            applies.append(run("repair", work, "apply", backup))
            shutil.rmtree(work)
            shutil.rmtree(backup)
        timed[n, "apply"] = min(applies, key=lambda r: r["seconds"])
    small, large = sorted(crashed)

    def figures(what: str, key: str) -> list[float]:
        return [round(timed[small, what][key], 3), round(timed[large, what][key], 3)]

    results = {"crashed_partitions": [small, large]}
    for what, name in (("verify", "verify"), ("repair", "repair_dry_run"), ("apply", "repair_apply")):
        results[f"crashed_{name}_s"] = figures(what, "seconds")
        results[f"crashed_{name}_cpu_s"] = figures(what, "cpu")
        results[f"crashed_{name}_ratio"] = round(timed[large, what]["seconds"] / timed[small, what]["seconds"], 2)
    print(f"crashed log dir (sparse preallocated indexes, recovery point 0), {small:,} and {large:,} partitions, "
          "wall (CPU) s:")
    for name in ("verify", "repair_dry_run", "repair_apply"):
        wall, cpu = results[f"crashed_{name}_s"], results[f"crashed_{name}_cpu_s"]
        print(f"  {name.replace('_', ' ')}: {wall[0]} ({cpu[0]}) / {wall[1]} ({cpu[1]}) "
              f"({results[f'crashed_{name}_ratio']}x; linear 4x)")
    return results


if __name__ == "__main__":
    main()
