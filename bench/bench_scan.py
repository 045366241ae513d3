"""Throughput of the record-file hot path, on generated segments (``make bench``).

Two segments of ``--size`` bytes (default 1 GiB), built with the project's own builders:
``big``: uncompressed batches of ~16 KiB (16 records of 1 KiB); ``tiny``: 1-record batches (~80 B).
Measured, each in a fresh process (so peak RSS is that measurement's own):

- ``crc32c raw``: the crc32c library over the file, read in 4 MiB chunks: this machine's ceiling.
- ``mmap floor``: one-shot ``python`` process that maps the file and runs crc32c over it in one call
  (whole process, interpreter start included): the floor the issue compares ``verify`` with.
- ``scan``: ``kafkatool.records.scan`` over the file: framing, v2 header decode, CRC32C check, with the
  native core (``kafkatool._native``) and with the pure-Python reader (``KAFKATOOL_PURE_PYTHON=1``).
- ``verify``: ``kafkatool.segment_check.check_segment`` over the same file with an ``.index`` and a
  ``.timeindex`` as the broker writes them (one entry per 4 KiB): every check of ``verify``, against
  the ``scan`` throughput (the issue asks for at least 80% of it); and ``kafkatool verify`` of that partition
  as a whole process, against the ``mmap floor`` process (the issue asks for at least 0.5x).
- ``decode``: records/s of ``scan`` + ``decode_records`` over the first ``--decode-mb`` MiB (native and
  pure), next to kafka-python's ``MemoryRecords`` iterating the same bytes (both touch offset, timestamp, key,
  value and headers of every record).
- ``compressed decode``: the same records/s on segments of zstd and lz4 batches (1-record and 16 x 1 KiB,
  ``--codec-mb`` MiB each): native (one bounded decompression pass, reused decoders) and pure, next to
  kafka-python and aiokafka's C reader (``aiokafka.record.memory_records.MemoryRecords``).

The files are written once and then read from the page cache: this measures CPU cost, not disk.
Each measurement runs ``--repeat`` times (fresh processes) and the fastest counts: this machine's
timings vary by tens of percent from run to run. Results go to stdout and ``bench/out/results.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
CHUNK = 4 << 20


# -- generation ------------------------------------------------------------------------------------

def _template(kind: str) -> bytes:
    """``big``/``tiny``, optionally ``-CODEC`` (``tiny-zstd``): that batch compressed with CODEC. CODEC
    ``lz4@kafka-python`` or ``lz4@aiokafka``: the batch as that client's producer builds it
    (``DefaultRecordBatchBuilder``), lz4 frames of its shape (FLG 0x68: content size; 0x70: block checksums)."""
    from kafkatool.build import RecordSpec, record_batch

    kind, _, codec = kind.partition("-")
    if kind == "big":
        records = [RecordSpec(f"key-{i:04d}".encode(), bytes([65 + i % 26]) * 1000, 1_700_000_000_000 + i)
                   for i in range(16)]
    else:
        records = [RecordSpec(b"k", b"tiny-value", 1_700_000_000_000)]
    codec, _, client = codec.partition("@")
    if client:
        module = importlib.import_module(f"{client.removesuffix('-python')}.record.default_records")
        builder = module.DefaultRecordBatchBuilder(
            magic=2, compression_type=3, is_transactional=False, producer_id=-1, producer_epoch=-1,
            base_sequence=-1, batch_size=1 << 30)
        for i, r in enumerate(records):
            builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value, headers=[])
        return bytes(builder.build())
    return record_batch(0, records, partition_leader_epoch=1, compression=codec or "none")


def generate(path: Path, kind: str, size: int) -> dict:
    """Write ``size`` bytes (rounded down to whole batches) of copies of one batch, offsets patched.

    The CRC covers attributes..end, not the base offset, so every copy stays valid.
    """
    template = _template(kind)
    per = len(template)
    count = size // per
    records_per = 16 if kind.startswith("big") else 1
    meta = {"kind": kind, "batch_bytes": per, "batches": count, "records": count * records_per,
            "bytes": count * per}
    stamp = path.with_suffix(".json")
    if path.exists() and stamp.exists() and json.loads(stamp.read_text()) == meta:
        return meta
    block_batches = max(1, (8 << 20) // per)
    block = bytearray(template * block_batches)
    pack = struct.Struct(">q").pack_into
    offset = 0
    with open(path, "wb") as fh:
        remaining = count
        while remaining:
            n = min(block_batches, remaining)
            for i in range(n):
                pack(block, i * per, offset)
                offset += records_per
            fh.write(memoryview(block)[: n * per])
            remaining -= n
    stamp.write_text(json.dumps(meta))
    return meta


def generate_indexes(log: Path, meta: dict, interval: int = 4096) -> Path:
    """A partition dir holding ``log`` (hard-linked) with the ``.index``/``.timeindex`` Kafka writes for it.

    One batch per append (the leader's path): an entry (last offset, position) whenever more than
    ``interval`` bytes were appended since the last one; every batch has the same timestamps, so the time
    index holds its first entry only. Entries are packed with the structs derived from the Construct
    declarations (``kafkatool.smallfiles.entry_struct``).
    """
    from kafkatool.filetypes import FileKind
    from kafkatool.smallfiles import entry_struct

    part = OUT / f"verify-{log.stem}" / "bench-0"
    part.mkdir(parents=True, exist_ok=True)
    linked, stamp = part / "00000000000000000000.log", OUT / f"verify-{log.stem}.json"
    if linked.exists() and os.path.samefile(linked, log) and stamp.exists() and json.loads(stamp.read_text()) == meta:
        return part
    stamp.unlink(missing_ok=True)
    if linked.exists():
        linked.unlink()
    os.link(log, linked)
    per, n = meta["batch_bytes"], meta["batches"]
    step = meta["records"] // n
    offset_entry, time_entry = entry_struct(FileKind.INDEX), entry_struct(FileKind.TIME_INDEX)
    index, since = bytearray(), 0
    for i in range(n):
        if since > interval:
            index += offset_entry.pack((i + 1) * step - 1, i * per)
            since = 0
        since += per
    (part / "00000000000000000000.index").write_bytes(bytes(index))
    max_ts = 1_700_000_000_000 + step - 1
    (part / "00000000000000000000.timeindex").write_bytes(time_entry.pack(max_ts, step - 1))
    stamp.write_text(json.dumps(meta))  # outside the partition dir: verify would call it an unknown file
    return part


# -- measurements (each runs in its own process) -----------------------------------------------------

def m_crc(path: str) -> dict:
    from crc32c import crc32c

    buf = bytearray(CHUNK)
    mv = memoryview(buf)
    t = time.perf_counter()
    total = 0
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            crc32c(mv[:n])
            total += n
    return {"seconds": time.perf_counter() - t, "bytes": total}


def run_process(argv: list[str], repeat: int) -> float:
    """Wall seconds of the fastest of ``repeat`` runs of a whole process (output to /dev/null)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(argv, check=False, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - t)
    return best


def run_floor(path: Path, repeat: int) -> float:
    """Seconds of the fastest whole ``python -c`` process mapping the file and CRC-ing it in one call."""
    code = ("import mmap,sys\nfrom crc32c import crc32c\nf=open(sys.argv[1],'rb')\n"
            "crc32c(mmap.mmap(f.fileno(),0,access=mmap.ACCESS_READ))")
    return run_process([sys.executable, "-c", code, str(path)], repeat)


def m_scan(path: str) -> dict:
    from kafkatool.model import Batch
    from kafkatool.records import scan

    t = time.perf_counter()
    batches = bad = 0
    with open(path, "rb", buffering=0) as fh:
        for item in scan(fh, path):
            if type(item) is Batch:
                batches += 1
                bad += not item.crc_valid
            else:
                bad += 1
    return {"seconds": time.perf_counter() - t, "bytes": os.path.getsize(path), "batches": batches, "bad": bad}


def m_verify(path: str) -> dict:
    from kafkatool.log_check import SegmentTask
    from kafkatool.segment_check import check_segment

    part = Path(path)
    t = time.perf_counter()
    report = check_segment(SegmentTask(0, str(part / "00000000000000000000.log"),
                                       str(part / "00000000000000000000.index"),
                                       str(part / "00000000000000000000.timeindex")))
    seconds = time.perf_counter() - t
    return {"seconds": seconds, "bytes": report.size, "batches": report.batches, "findings": len(report.findings),
            "index": report.index.status if report.index else None}


def m_decode(path: str, limit: int) -> dict:
    from kafkatool.records import RawBatch, decode_records, scan

    t = time.perf_counter()
    n = 0
    with open(path, "rb", buffering=0) as fh:
        for item in scan(fh, path, end=limit, with_raw=True):
            if isinstance(item, RawBatch):
                records, _ = decode_records(item.batch, item.raw, path)
                for r in records:
                    _ = (r.offset, r.timestamp, r.key, r.value, r.headers)
                n += len(records)
    return {"seconds": time.perf_counter() - t, "records": n}


def _client_decode(memory_records: type, path: str, limit: int) -> dict:
    """A client library's reader (kafka-python's pure one, aiokafka's C one: the same ``MemoryRecords`` API) over
    the segment's first ``limit`` bytes, every record's fields touched."""
    with open(path, "rb") as fh:
        data = fh.read(limit)
    t = time.perf_counter()
    n = 0
    records = memory_records(data)
    while (batch := records.next_batch()) is not None:
        for r in batch:
            _ = (r.offset, r.timestamp, r.key, r.value, r.headers)
            n += 1
    return {"seconds": time.perf_counter() - t, "records": n}


def m_kafka_python(path: str, limit: int) -> dict:
    from kafka.record.memory_records import MemoryRecords

    return _client_decode(MemoryRecords, path, limit)


def m_aiokafka(path: str, limit: int) -> dict:
    from aiokafka.record.memory_records import MemoryRecords

    return _client_decode(MemoryRecords, path, limit)


def _child(argv: list[str]) -> None:
    name, path, *rest = argv
    fn = {"crc": m_crc, "scan": m_scan, "verify": m_verify, "decode": m_decode, "kafka_python": m_kafka_python,
          "aiokafka": m_aiokafka}[name]
    result = fn(path, *(int(x) for x in rest))
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    from kafkatool import native

    result["native"] = native.CORE is not None
    print(json.dumps(result))


def run(name: str, *args: object, repeat: int = 1, pure: bool = False) -> dict:
    """Best (fastest) of ``repeat`` runs, each in a fresh process; peak RSS is the largest seen.
    ``pure``: with ``KAFKATOOL_PURE_PYTHON=1`` (the pure-Python reader)."""
    results = []
    env = {**os.environ, "KAFKATOOL_PURE_PYTHON": "1" if pure else "0"}
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, __file__, "--child", name, *map(str, args)],
                              capture_output=True, text=True, check=True, env=env)
        results.append(json.loads(proc.stdout))
    best = min(results, key=lambda r: r["seconds"])
    best["peak_rss_mib"] = max(r["peak_rss_mib"] for r in results)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1 << 30, help="bytes per generated segment (default 1 GiB)")
    ap.add_argument("--decode-mb", type=int, default=64, help="MiB of each segment to decode records from")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    ap.add_argument("--codec-mb", type=int, default=16, help="MiB per compressed (zstd, lz4) segment")
    ap.add_argument("--only-codecs", action="store_true", help="measure the compressed decode rates only")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child)
        return
    OUT.mkdir(exist_ok=True)
    results = {}
    for kind in () if args.only_codecs else ("big", "tiny"):
        path = OUT / f"{kind}.log"
        sys.stderr.write(f"generating {path} ...\n")
        meta = generate(path, kind, args.size)
        run("crc", path)  # warm the page cache
        crc = run("crc", path, repeat=args.repeat)
        floor = run_floor(path, args.repeat)
        scan = run("scan", path, repeat=args.repeat)
        assert scan["batches"] == meta["batches"] and scan["bad"] == 0, scan
        scan_pure = run("scan", path, repeat=args.repeat, pure=True)
        assert scan_pure["batches"] == meta["batches"] and scan_pure["bad"] == 0, scan_pure
        native_built = scan["native"]
        part = generate_indexes(path, meta)
        verify = run("verify", part, repeat=args.repeat)
        assert verify["batches"] == meta["batches"] and verify["findings"] == 0, verify
        assert verify["index"] == "sparse", verify
        verify_process = run_process([sys.executable, "-m", "kafkatool", "verify", str(part)], args.repeat)
        limit = (args.decode_mb << 20) // meta["batch_bytes"] * meta["batch_bytes"]  # whole batches
        ours = run("decode", path, limit, repeat=args.repeat)
        ours_pure = run("decode", path, limit, repeat=args.repeat, pure=True)
        theirs = run("kafka_python", path, limit, repeat=args.repeat)
        assert ours["records"] == theirs["records"] == ours_pure["records"], (ours, ours_pure, theirs)
        gb = meta["bytes"] / 1e9
        results[kind] = {
            "segment": meta,
            "native_built": native_built,
            "crc32c_raw_GBps": round(gb / crc["seconds"], 3),
            "mmap_crc32c_process_GBps": round(gb / floor, 3),
            "scan_GBps": round(gb / scan["seconds"], 3),
            "scan_pure_GBps": round(gb / scan_pure["seconds"], 3),
            "scan_native_vs_pure": round(scan_pure["seconds"] / scan["seconds"], 2),
            "scan_batches_per_s": round(scan["batches"] / scan["seconds"]),
            "scan_peak_rss_mib": round(scan["peak_rss_mib"], 1),
            "verify_GBps": round(gb / verify["seconds"], 3),
            "verify_vs_scan": round(scan["seconds"] / verify["seconds"], 2),
            "verify_peak_rss_mib": round(verify["peak_rss_mib"], 1),
            "verify_process_GBps": round(gb / verify_process, 3),
            "verify_process_vs_floor": round(floor / verify_process, 2),
            "decode_records_per_s": round(ours["records"] / ours["seconds"]),
            "decode_pure_records_per_s": round(ours_pure["records"] / ours_pure["seconds"]),
            "decode_native_vs_pure": round(ours_pure["seconds"] / ours["seconds"], 2),
            "kafka_python_records_per_s": round(theirs["records"] / theirs["seconds"]),
            "decode_speedup_vs_kafka_python": round(theirs["seconds"] / ours["seconds"], 2),
            "decode_sample_records": ours["records"],
        }
    compressed = codec_rates(args.codec_mb << 20, args.repeat)
    (OUT / "results.json").write_text(json.dumps({**results, "compressed": compressed}, indent=2))
    if not all(r["native_built"] for r in results.values()):
        print("(kafkatool._native is not built: the 'native' columns are the pure-Python reader too)")
    print_codec_rates(compressed)
    if not results:
        return
    cols = ["segment", "crc32c raw GB/s", "mmap+crc32c process GB/s", "scan GB/s native (pure, x)",
            "scan batches/s", "scan peak RSS MiB", "verify GB/s (vs scan)", "verify peak RSS MiB",
            "`kafkatool verify` process GB/s (vs mmap+crc32c process)",
            "decode rec/s native (pure, x)", "kafka-python rec/s", "speed-up"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for kind, r in results.items():
        seg = f"{kind}: {r['segment']['bytes'] / (1 << 30):.2f} GiB, {r['segment']['batch_bytes']} B batches"
        print(f"| {seg} | {r['crc32c_raw_GBps']} | {r['mmap_crc32c_process_GBps']} | "
              f"{r['scan_GBps']} ({r['scan_pure_GBps']}, {r['scan_native_vs_pure']}x) | "
              f"{r['scan_batches_per_s']:,} | "
              f"{r['scan_peak_rss_mib']} | {r['verify_GBps']} ({r['verify_vs_scan']:.0%}) | "
              f"{r['verify_peak_rss_mib']} | {r['verify_process_GBps']} ({r['verify_process_vs_floor']}x) | "
              f"{r['decode_records_per_s']:,} ({r['decode_pure_records_per_s']:,}, {r['decode_native_vs_pure']}x) | "
              f"{r['kafka_python_records_per_s']:,} | {r['decode_speedup_vs_kafka_python']}x |")


def codec_rates(size: int, repeat: int) -> dict:
    """Records/s decoding zstd and lz4 segments: native, pure, kafka-python, aiokafka (C), one run."""
    rates = {}
    for codec in ("zstd", "lz4"):
        for shape in ("tiny", "big"):
            kind = f"{shape}-{codec}"
            path = OUT / f"{kind}.log"
            sys.stderr.write(f"generating {path} ...\n")
            meta = generate(path, kind, size)
            got = {"native": run("decode", path, meta["bytes"], repeat=repeat),
                   "pure": run("decode", path, meta["bytes"], repeat=repeat, pure=True),
                   "kafka_python": run("kafka_python", path, meta["bytes"], repeat=repeat),
                   "aiokafka": run("aiokafka", path, meta["bytes"], repeat=repeat)}
            assert len({r["records"] for r in got.values()}) == 1 == got["native"]["native"], got
            per_s = {name: r["records"] / r["seconds"] for name, r in got.items()}
            rates[kind] = {"batch_bytes": meta["batch_bytes"], "records": meta["records"],
                           **{f"{name}_records_per_s": round(v) for name, v in per_s.items()},
                           "native_vs_pure": round(per_s["native"] / per_s["pure"], 2),
                           "native_vs_aiokafka": round(per_s["native"] / per_s["aiokafka"], 2),
                           "native_vs_kafka_python": round(per_s["native"] / per_s["kafka_python"], 2)}
    return rates


def print_codec_rates(rates: dict) -> None:
    cols = ["compressed segment", "decode rec/s native", "pure", "kafka-python", "aiokafka (C)",
            "native / pure", "native / aiokafka", "native / kafka-python"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for kind, r in rates.items():
        shape = "1-record" if kind.startswith("tiny") else "16 x 1 KiB"
        print(f"| {kind.partition('-')[2]} {shape}, {r['batch_bytes']} B batches | {r['native_records_per_s']:,} | "
              f"{r['pure_records_per_s']:,} | {r['kafka_python_records_per_s']:,} | {r['aiokafka_records_per_s']:,} | "
              f"{r['native_vs_pure']}x | {r['native_vs_aiokafka']}x | {r['native_vs_kafka_python']}x |")
    print()


if __name__ == "__main__":
    main()
