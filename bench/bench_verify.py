"""Cost of ``verify`` on one partition against a bare header scan of the same bytes, and of a transactional partition
against a plain idempotent one (``python bench/bench_verify.py``).

The first partition is :mod:`bench_loader`'s (``--batches`` 1-record idempotent batches of one producer, one segment,
empty indexes, no checkpoints: every batch is recovered and replayed). ``verify`` checks each segment and loads
the partition as the broker would (:mod:`kafkatool.loader`) in one read of each segment; the ratio verify/scan is
what to compare across machines and commits.

Then two partitions written through :class:`kafkatool.logwriter.PartitionWriter` from one deterministic script:
``--txn-batches`` 1-record data batches of four producers writing in bursts of 1 to 16 batches, as exactly-once
producers (Kafka Streams EOS) write them (``eos``: every data batch transactional, each producer ending its
transaction with a COMMIT, or one time in ten an ABORT, every 20 to 50 of its data batches) and as plain idempotent
producers write them (``idempotent``: the same data batches, not transactional, no markers). No checkpoints, so both
are recovered and replayed whole. verify (in process, :func:`kafkatool.verify.verify_paths`) and the load of each,
and the ratio eos/idempotent: what a transactional partition costs beyond its markers.

Last, two log dirs a broker shut down cleanly (:class:`kafkatool.logwriter.LogDirWriter`, ``close(clean=True)``:
checkpoints, producer snapshots at every roll and at the log end), each one partition of ``--txn-batches`` 1-record
batches in 1 MiB segments: ``producers`` written by ``--producers`` idempotent producers taking turns batch by batch
(many clients writing to one partition; every producer id in Kafka >= 3.0 unless turned off), ``no-producer`` the
same batches without producer ids. verify of each, in process, and the ratio: what producer ids cost a healthy
partition (the loader replays nothing below the last snapshot, and should cost about nothing for them).

And the idempotence audit (``kafkatool producers``, in process: :func:`kafkatool.producers.producers_paths`, which
loads each partition and replays it again with its rules) of ``idempotent``, ``eos`` and ``producers``, each against
verify of the same partition in the same run: what the audit costs beyond the load verify does.

Every timing is the best of ``--runs`` in this process, all in the same run. Prints the figures and writes
``bench/out/verify_results.json``; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_loader import OUT, T0, bare_scan, best, generate  # noqa: E402

PRODUCERS = (4000, 4001, 4002, 4003)


def generate_producers(root: Path, batches: int, transactional: bool) -> Path:
    """The ``eos`` (``transactional``) or ``idempotent`` partition of the module doc, written once and reused."""
    from kafkatool.build import RecordSpec, end_transaction_marker, record_batch
    from kafkatool.logwriter import PartitionWriter

    name = "eos-0" if transactional else "idempotent-0"
    part, stamp = root / name, root / f"{name}.json"
    if stamp.exists() and json.loads(stamp.read_text()) == {"batches": batches} and part.is_dir():
        return part
    if part.exists():
        for f in part.iterdir():
            f.unlink()
        part.rmdir()
    rng = random.Random(7)
    seqs = dict.fromkeys(PRODUCERS, 0)
    until_marker = {pid: rng.randint(20, 50) for pid in PRODUCERS}
    offset = written = 0
    with PartitionWriter(part, topic="bench", partition=0, topic_id=bytes(range(16)),
                         segment_bytes=4 << 20) as w:
        while written < batches:
            pid = rng.choice(PRODUCERS)
            for _ in range(min(rng.randint(1, 16), batches - written)):
                w.append(record_batch(offset, [RecordSpec(b"k", b"v" * 40, T0 + offset)], producer_id=pid,
                                      producer_epoch=0, base_sequence=seqs[pid], transactional=transactional))
                offset += 1
                written += 1
                seqs[pid] += 1
                until_marker[pid] -= 1
                if until_marker[pid] == 0:
                    until_marker[pid] = rng.randint(20, 50)
                    commit = rng.random() >= 0.1
                    if transactional:
                        w.append(end_transaction_marker(offset, commit, producer_id=pid, producer_epoch=0,
                                                        coordinator_epoch=0, timestamp=T0 + offset))
                        offset += 1
    stamp.write_text(json.dumps({"batches": batches}))
    return part


def generate_clean(root: Path, batches: int, producers: int) -> Path:
    """The ``producers`` (``producers`` > 0) or ``no-producer`` log dir of the module doc, written once and reused."""
    import shutil

    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.logwriter import LogDirWriter

    name = f"clean-{producers}" if producers else "clean-none"
    logdir, stamp = root / name, root / f"{name}.json"
    if stamp.exists() and json.loads(stamp.read_text()) == {"batches": batches} and logdir.is_dir():
        return logdir
    shutil.rmtree(logdir, ignore_errors=True)
    w = LogDirWriter(logdir, cluster_id="bench", node_id=1)
    part = w.partition("bench", 0, bytes(range(16)), segment_bytes=1 << 20)
    seqs = [0] * max(producers, 1)
    for offset in range(batches):
        k = offset % len(seqs)
        pid = 5000 + k if producers else -1
        part.append(record_batch(offset, [RecordSpec(b"k", b"v" * 40, T0 + offset)], producer_id=pid,
                                 producer_epoch=0 if producers else -1, base_sequence=seqs[k] if producers else -1))
        seqs[k] += 1
    w.close(clean=True)
    stamp.write_text(json.dumps({"batches": batches}))
    return logdir


def main() -> None:
    from kafkatool.loader import load_partition
    from kafkatool.producers import producers_paths
    from kafkatool.verify import verify_paths

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=114_000)
    ap.add_argument("--txn-batches", type=int, default=100_000)
    ap.add_argument("--producers", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    part = generate(OUT / "loader", args.batches)
    log = part / f"{0:020d}.log"
    eos = generate_producers(OUT / "verify", args.txn_batches, True)
    idempotent = generate_producers(OUT / "verify", args.txn_batches, False)
    clean = generate_clean(OUT / "verify", args.txn_batches, args.producers)
    clean_none = generate_clean(OUT / "verify", args.txn_batches, 0)

    def verify(path: Path):
        def run() -> None:
            for _ in verify_paths([path]):
                pass
        return run

    def audit(path: Path):
        def run() -> None:
            for _ in producers_paths([path]):
                pass
        return run

    scan_s = best(lambda: bare_scan(log), args.runs)
    load_s = best(lambda: load_partition(part), args.runs)
    verify_s = best(verify(part), args.runs)
    idem_verify_s = best(verify(idempotent), args.runs)
    eos_verify_s = best(verify(eos), args.runs)
    idem_load_s = best(lambda: load_partition(idempotent), args.runs)
    eos_load_s = best(lambda: load_partition(eos), args.runs)
    clean_s = best(verify(clean), args.runs)
    clean_none_s = best(verify(clean_none), args.runs)
    idem_audit_s = best(audit(idempotent), args.runs)
    eos_audit_s = best(audit(eos), args.runs)
    clean_audit_s = best(audit(clean), args.runs)
    size = lambda p: sum(f.stat().st_size for f in p.glob("*.log"))  # noqa: E731
    result = {"batches": args.batches, "bytes": log.stat().st_size, "scan_s": scan_s, "load_s": load_s,
              "verify_s": verify_s, "verify_over_scan": verify_s / scan_s, "load_over_scan": load_s / scan_s,
              "txn_batches": args.txn_batches, "eos_bytes": size(eos), "idempotent_bytes": size(idempotent),
              "eos_verify_s": eos_verify_s, "idempotent_verify_s": idem_verify_s,
              "eos_over_idempotent_verify": eos_verify_s / idem_verify_s,
              "eos_load_s": eos_load_s, "idempotent_load_s": idem_load_s,
              "eos_over_idempotent_load": eos_load_s / idem_load_s,
              "clean_producers": args.producers, "clean_producers_verify_s": clean_s,
              "clean_no_producer_verify_s": clean_none_s, "clean_producers_over_none": clean_s / clean_none_s,
              "idempotent_producers_s": idem_audit_s, "eos_producers_s": eos_audit_s,
              "clean_producers_producers_s": clean_audit_s,
              "idempotent_producers_over_verify": idem_audit_s / idem_verify_s,
              "eos_producers_over_verify": eos_audit_s / eos_verify_s,
              "clean_producers_producers_over_verify": clean_audit_s / clean_s}
    print(f"{args.batches:,} 1-record idempotent batches, {result['bytes']:,} bytes: header scan {scan_s:.3f} s, "
          f"load {load_s:.3f} s ({result['load_over_scan']:.2f}x), verify {verify_s:.3f} s "
          f"({result['verify_over_scan']:.2f}x the scan)")
    print(f"{args.txn_batches:,} 1-record data batches of {len(PRODUCERS)} producers: verify eos {eos_verify_s:.3f} s "
          f"({result['eos_bytes']:,} bytes), idempotent {idem_verify_s:.3f} s ({result['idempotent_bytes']:,} bytes): "
          f"{result['eos_over_idempotent_verify']:.2f}x; load eos {eos_load_s:.3f} s, idempotent {idem_load_s:.3f} s: "
          f"{result['eos_over_idempotent_load']:.2f}x")
    print(f"cleanly shut down, {args.txn_batches:,} 1-record batches: verify with {args.producers} idempotent "
          f"producers taking turns {clean_s:.3f} s, without producer ids {clean_none_s:.3f} s: "
          f"{result['clean_producers_over_none']:.2f}x")
    print(f"producers (the idempotence audit) against verify of the same partition: idempotent {idem_audit_s:.3f} s "
          f"({result['idempotent_producers_over_verify']:.2f}x), eos {eos_audit_s:.3f} s "
          f"({result['eos_producers_over_verify']:.2f}x), {args.producers} producers taking turns "
          f"{clean_audit_s:.3f} s "
          f"({result['clean_producers_producers_over_verify']:.2f}x)")
    (OUT / "verify_results.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
