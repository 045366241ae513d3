"""Latency and bytes read of ``locate`` on a generated 1 GiB segment (``make bench``).

The partition is written once with :class:`kafkatool.logwriter.PartitionWriter`, as a broker writes it,
and reused from ``bench/out/locate/`` while its stamp matches:

- segment 0: ``--size`` bytes (default 1 GiB) of uncompressed ~16 KiB batches (16 records of 1 KiB,
  batch timestamps 20 ms apart), ``index.interval.bytes`` 4096 (Kafka's default), so the offset and
  time indexes get an entry per batch; rolled, so its indexes are trimmed;
- an active segment of 64 more batches, left as a killed broker leaves it (index files preallocated
  to 10 MiB with zero slots after the written entries).

Then ``--lookups`` random offsets and as many random timestamps are located, each timed, and the bytes
read from ``.log`` files are counted twice: by ``locate`` itself (``Location.bytes_read``, a counting
wrapper around the unbuffered file) and by the kernel (the ``rchar`` delta of ``/proc/self/io`` around
the call: every ``read``, not mmap page faults, so index reads are not in it). A few lookups with
``--no-index`` show what the indexes save. The files sit in the page cache after generation: this
measures CPU cost, not disk seeks. It prints measurements and writes ``bench/out/locate_results.json``;
it asserts nothing (answers that disagree with the generator are counted and printed).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import struct
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
T0 = 1_700_000_000_000
RECORDS_PER_BATCH = 16
BATCH_MS = 20  # batch timestamps this far apart: above the 16 ms a batch spans, so time only goes forward
ACTIVE_BATCHES = 64


def _template() -> bytes:
    from kafkatool.build import RecordSpec, record_batch

    records = [RecordSpec(f"key-{i:04d}".encode(), bytes([65 + i % 26]) * 1000, T0 + i)
               for i in range(RECORDS_PER_BATCH)]
    return record_batch(0, records, partition_leader_epoch=1)


def generate(root: Path, size: int) -> dict:
    """Write (or reuse) the partition; return its shape."""
    import shutil

    from crc32c import crc32c

    from kafkatool.logwriter import PartitionWriter

    template = _template()
    per = len(template)
    rolled = size // per
    meta = {"batch_bytes": per, "segment_batches": rolled, "active_batches": ACTIVE_BATCHES,
            "records_per_batch": RECORDS_PER_BATCH, "segment_bytes": rolled * per, "batch_ms": BATCH_MS,
            "indexes": "sparse"}  # the active segment's preallocated as Kafka leaves them
    part = root / "bench-0"
    stamp = root / "bench-0.json"
    if part.is_dir() and stamp.exists() and json.loads(stamp.read_text()) == meta:
        return meta
    shutil.rmtree(part, ignore_errors=True)
    stamp.unlink(missing_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    batch = bytearray(template)
    view = memoryview(batch)
    pack = struct.pack_into
    writer = PartitionWriter(part, topic="bench", partition=0, topic_id=bytes(range(16)),
                             segment_bytes=rolled * per, index_interval_bytes=4096)
    for i in range(rolled + ACTIVE_BATCHES):
        ts = T0 + BATCH_MS * i
        pack(">q", batch, 0, i * RECORDS_PER_BATCH)                  # base offset
        pack(">qq", batch, 27, ts, ts + RECORDS_PER_BATCH - 1)       # base timestamp, max timestamp
        pack(">I", batch, 17, crc32c(view[21:]))                     # CRC32C over attributes..end
        writer.append(bytes(batch))
    writer.close(clean=False)
    assert writer.segment_base_offsets == [0, rolled * RECORDS_PER_BATCH], writer.segment_base_offsets
    stamp.write_text(json.dumps(meta))
    print(f"generated {part} in {time.perf_counter() - t:.1f} s")
    return meta


def _rchar() -> int:
    with open("/proc/self/io", "rb") as fh:
        for line in fh.read().splitlines():
            if line.startswith(b"rchar:"):
                return int(line.split()[1])
    raise RuntimeError("no rchar in /proc/self/io")


def measure(fn, targets: list[int], check) -> dict:
    """Time ``fn(target)`` for each target; bytes read by locate and by the kernel; wrong answers."""
    base = _rchar()
    overhead = _rchar() - base  # what reading /proc/self/io itself adds to rchar
    times, own, kernel, scanned = [], [], [], []
    wrong = 0
    for target in targets:
        before = _rchar()
        t = time.perf_counter()
        loc = fn(target)
        times.append((time.perf_counter() - t) * 1000)
        kernel.append(_rchar() - before - overhead)
        own.append(loc.bytes_read)
        scanned.append(loc.bytes_scanned)
        wrong += not check(target, loc)
    times.sort()
    return {
        "lookups": len(targets),
        "median_ms": statistics.median(times),
        "p99_ms": times[min(len(times) - 1, int(len(times) * 0.99))],
        "max_ms": times[-1],
        "max_bytes_read": max(own),
        "median_bytes_read": statistics.median(own),
        "max_kernel_rchar": max(kernel),
        "max_bytes_scanned": max(scanned),
        "wrong": wrong,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1 << 30, help="bytes of the big segment (default 1 GiB)")
    parser.add_argument("--lookups", type=int, default=1000)
    parser.add_argument("--no-index-lookups", type=int, default=3)
    args = parser.parse_args()

    from kafkatool.locate import LocateOptions, locate_offset, locate_timestamp

    meta = generate(OUT / "locate", args.size)
    part = OUT / "locate" / "bench-0"
    batches = meta["segment_batches"] + meta["active_batches"]
    leo = batches * RECORDS_PER_BATCH
    rng = random.Random(1)
    offsets = [rng.randrange(leo) for _ in range(args.lookups)]
    # any millisecond up to the last record's; the answer is the first record at or after it
    stamps = [T0 + rng.randrange(BATCH_MS * (batches - 1) + RECORDS_PER_BATCH) for _ in range(args.lookups)]

    def offset_ok(n: int, loc) -> bool:
        return loc.found and loc.record is not None and loc.record.offset == n and loc.fallback is None

    def timestamp_ok(t: int, loc) -> bool:
        i, j = divmod(t - T0, BATCH_MS)
        expected = i * RECORDS_PER_BATCH + j if j < RECORDS_PER_BATCH else (i + 1) * RECORDS_PER_BATCH
        return loc.found and loc.offset == expected and loc.fallback is None

    def scanned_ok(n: int, loc) -> bool:  # --no-index: the same answer, reached by scanning
        return loc.found and loc.record is not None and loc.record.offset == n

    locate_offset(part, 0)  # warm up imports and the page cache of the index files
    no_index = LocateOptions(use_indexes=False)
    results = {
        "segment": meta,
        "offset": measure(lambda n: locate_offset(part, n), offsets, offset_ok),
        "timestamp": measure(lambda t: locate_timestamp(part, t), stamps, timestamp_ok),
        "offset_no_index": measure(lambda n: locate_offset(part, n, no_index), offsets[: args.no_index_lookups],
                                   scanned_ok),
    }
    seg = meta["segment_bytes"]
    print(f"partition: one rolled segment of {seg:,} bytes ({seg / (1 << 30):.2f} GiB, {meta['segment_batches']:,}"
          f" batches of {meta['batch_bytes']:,} B), then an active segment of {meta['active_batches']} batches"
          " with preallocated indexes")
    print(f"{'lookup':<22}{'n':>6}{'median ms':>11}{'p99 ms':>9}{'max ms':>9}{'max read B':>13}"
          f"{'max rchar B':>13}{'max scanned B':>15}{'wrong':>7}")
    for name, r in results.items():
        if name == "segment":
            continue
        print(f"{name:<22}{r['lookups']:>6}{r['median_ms']:>11.2f}{r['p99_ms']:>9.2f}{r['max_ms']:>9.2f}"
              f"{r['max_bytes_read']:>13,}{r['max_kernel_rchar']:>13,}{r['max_bytes_scanned']:>15,}{r['wrong']:>7}")
    OUT.mkdir(exist_ok=True)
    (OUT / "locate_results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
