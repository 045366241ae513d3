"""``kafkatool offsets`` on a generated ``__consumer_offsets`` partition, against the same command reading every key
and value with the Construct declarations alone (``make bench``).

The partition (``bench/out/offsets/__consumer_offsets-7``, written once and reused while its stamp matches) holds
what a cluster's group coordinator writes for ``--groups`` consumer groups of 20 partitions each committing
``--rounds`` times: one uncompressed batch of 20 ``OffsetCommitKey`` v1 / ``OffsetCommitValue`` v3 records per
commit (what Kafka 2.1+ writes), with the group-metadata record of each group first.

Each side is a whole process, best of ``--repeat`` (``kafkatool offsets DIR`` to /dev/null):

- ``kafkatool offsets``: as installed (keys and values read by the readers ``kafkatool.fastparse`` derives from
  the declarations; each distinct key decoded once);
- ``declarations alone``: the same command with those readers switched off and the key cache emptied before each
  call, so that every key and value is parsed by Construct's interpreter, as before the readers.

Both outputs must be byte-identical (checked). Prints a row and writes ``bench/out/offsets_results.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
T0 = 1_700_000_000_000
PARTITIONS = 20

# the command with the derived readers off and every key decoded again (what it did before them)
DECLARED = """import sys
from kafkatool import internal
internal._fast = {}
_decode = internal.decode_offsets_key.__wrapped__
internal.decode_offsets_key = _decode
from kafkatool.cli.main import main
sys.argv = ["kafkatool", "offsets", sys.argv[1]]
main()
"""


def generate(root: Path, groups: int, rounds: int) -> dict:
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.formats import internal_topics as it

    part = root / "__consumer_offsets-7"
    stamp = root / "stamp.json"
    meta = {"groups": groups, "rounds": rounds, "partitions": PARTITIONS, "version": 1}
    if stamp.exists() and json.loads(stamp.read_text()) == meta:
        return meta

    def s(text: str) -> dict:
        return {"length": len(text.encode()), "value": text}

    part.mkdir(parents=True, exist_ok=True)
    out = bytearray()
    offset, t = 0, T0
    for g in range(groups):
        key = it.GroupMetadataKey.build({"version": 2, "group": s(f"group-{g}")})
        value = it.GroupMetadataValue.build({"version": 0, "body": {
            "protocol_type": s("consumer"), "generation": 1, "protocol": s("range"), "leader": s("member-0"),
            "members": {"count": 0, "entries": []}}})
        out += record_batch(offset, [RecordSpec(key, value, t)])
        offset += 1
    keys = [[it.OffsetCommitKey.build({"version": 1, "group": s(f"group-{g}"), "topic": s(f"topic-{g % 5}"),
                                       "partition": p}) for p in range(PARTITIONS)] for g in range(groups)]
    for r in range(rounds):
        for g in range(groups):
            records = [RecordSpec(keys[g][p], it.OffsetCommitValue.build(
                {"version": 3, "body": {"offset": r * 1000 + p, "leader_epoch": 5, "metadata": s(""),
                                        "commit_timestamp": t}}), t) for p in range(PARTITIONS)]
            out += record_batch(offset, records)
            offset += PARTITIONS
            t += 7
    (part / "00000000000000000000.log").write_bytes(out)
    meta_out = {**meta, "records": offset, "bytes": len(out)}
    stamp.write_text(json.dumps(meta))
    (root / "meta.json").write_text(json.dumps(meta_out))
    return meta


def timed(argv: list[str], repeat: int) -> tuple[float, bytes]:
    best, out = None, b""
    for _ in range(repeat):
        t = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, check=False)
        seconds = time.perf_counter() - t
        if proc.returncode != 0:
            sys.exit(f"{argv} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
        best, out = (seconds, proc.stdout) if best is None or seconds < best else (best, out)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=200, help="commits per group (default 200: 200,000 records)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = OUT / "offsets"
    generate(root, args.groups, args.rounds)
    meta = json.loads((root / "meta.json").read_text())
    kafkatool = str(Path(sys.executable).with_name("kafkatool"))
    fast, fast_out = timed([kafkatool, "offsets", str(root)], args.repeat)
    declared, declared_out = timed([sys.executable, "-c", DECLARED, str(root)], max(1, args.repeat - 2))
    if fast_out != declared_out:
        sys.exit("kafkatool offsets: the output differs with the declarations alone")
    results = {"data": meta, "kafkatool_offsets_s": round(fast, 3), "declarations_alone_s": round(declared, 3),
               "records_per_s": round(meta["records"] / fast), "speedup": round(declared / fast, 2)}
    OUT.mkdir(exist_ok=True)
    (OUT / "offsets_results.json").write_text(json.dumps(results, indent=2))
    print(f"| offsets, {meta['records']:,} commit records ({meta['bytes'] / 1e6:.1f} MB) | kafkatool {fast:.2f} s "
          f"({results['records_per_s']:,} rec/s) | declarations alone {declared:.2f} s | {results['speedup']}x |")


if __name__ == "__main__":
    main()
