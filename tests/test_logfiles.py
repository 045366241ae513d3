"""kafkatool.logfiles: a partition dir's files by role and LogLoader's leftover passes, and every reader (the loader,
verify, Spark's planner) sorting the same dir the same way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kafkatool.filetypes import FileKind
from kafkatool.loader import _next_offset, load_partition
from kafkatool.logfiles import (
    CLEANED,
    DELETED,
    INDEX_KINDS,
    SWAP,
    TMP,
    leftover_passes,
    misnamed,
    offset_from_file_name,
    segment_file,
    sort_files,
    without_swap,
)
from kafkatool.records import ScanOptions
from kafkatool.segment_indexes import INT64_MAX
from kafkatool.walk import dir_files, partition_dirs

OVERFLOW = "99999999999999999999"          # 20 digits, above 2^63-1
HOSTILE = {  # name -> what sort_files makes of it
    "00000000000000000000.log.swap.deleted": ("leftover", DELETED),   # the last suffix decides (endsWith)
    "00000000000000000005.log.cleaned": ("leftover", CLEANED),
    "00000000000000000007.index.deleted": ("leftover", DELETED),
    "00000000000000000009.snapshot.swap": ("leftover", SWAP),
    "00000000000000000003.timeindex.tmp": ("leftover", TMP),
    "foo.deleted": ("leftover", DELETED),
    f"{OVERFLOW}.log": ("segment", None),
    "000000000000000000001.log": ("unknown", "misnamed"),              # 21 digits
    "5.log": ("unknown", "misnamed"),
    "-0000000000000000001.log": ("unknown", None),                     # negative: no Kafka name
    "server.log": ("unknown", None),
    "notes.txt": ("unknown", None),
    ".lock": ("unknown", None),
    "00000000000000000002.txnindex": ("index", FileKind.TXN_INDEX),    # an orphan: a role all the same
}


def _hostile_dir(corpus: Path, dst: Path) -> Path:
    """codecs-0 of the corpus with a file of every hostile name beside its own (copies of its first segment)."""
    part = dst / "codecs-0"
    shutil.copytree(corpus / "kafka/logdir/codecs-0", part)
    data = (part / "00000000000000000000.log").read_bytes()
    for name in HOSTILE:
        (part / name).write_bytes(data)
    return part


def test_every_role(corpus, tmp_path):
    part = tmp_path / "__cluster_metadata-0"
    shutil.copytree(corpus / "kafka/logdir/codecs-0", part)
    (part / "00000000000000000200-0000000003.checkpoint").write_bytes(b"")
    (part / "quorum-state").write_bytes(b"{}")
    files = sort_files(dir_files(part, "p"))
    logs = sorted(p.name for p in part.iterdir() if p.suffix == ".log")
    assert [files.segments[b][0].name for b in sorted(files.segments)] == logs
    assert files.active_base == max(files.segments)
    for (base, kind), (path, display) in files.indexes.items():
        assert kind in INDEX_KINDS and path.name == segment_file(Path(), base, kind.value).name
        assert display == f"p/{path.name}"
    assert {k for _, k in files.indexes} == {FileKind.INDEX, FileKind.TIME_INDEX}
    assert sorted(p.name for p, _ in files.snapshots.values()) == sorted(
        p.name for p in part.iterdir() if p.suffix == ".snapshot")
    assert files.epoch_checkpoint[0].name == "leader-epoch-checkpoint"
    assert files.partition_metadata[0].name == "partition.metadata"
    assert sorted((p.name, k) for p, _, k in files.others) == [
        ("00000000000000000200-0000000003.checkpoint", FileKind.KRAFT_SNAPSHOT),
        ("quorum-state", FileKind.QUORUM_STATE)]
    assert files.leftovers == [] and files.unknown == []
    assert [p for p, _, _ in files.files] == [p for p, _ in dir_files(part, "p")]


def test_hostile_names_and_every_leftover(corpus, tmp_path):
    part = _hostile_dir(corpus, tmp_path)
    files = sort_files(dir_files(part, str(part)))
    leftovers = {p.name: i.leftover for p, _, i in files.leftovers}
    unknown = {p.name for p, _ in files.unknown}
    for name, (role, what) in HOSTILE.items():
        if role == "leftover":
            assert leftovers[name] == what, name
        elif role == "unknown":
            assert name in unknown and misnamed(name) == (what == "misnamed"), name
        elif role == "segment":
            assert files.segments[int(OVERFLOW)][0].name == name and int(OVERFLOW) > INT64_MAX
        else:
            assert files.indexes[(2, what)][0].name == name
    assert set(leftovers.values()) == {DELETED, CLEANED, SWAP, TMP}
    # a leftover has no other role, whatever its inner name
    roles = [*files.segments.values(), *files.indexes.values(), *files.snapshots.values(), *files.unknown]
    assert not {p.name for p, _ in roles} & set(leftovers)
    assert files.active_base == int(OVERFLOW)


def test_file_names():
    assert segment_file(Path("d"), 86, "log") == Path("d/00000000000000000086.log")
    assert offset_from_file_name("00000000000000000086.log.swap") == 86
    assert offset_from_file_name("leader-epoch-checkpoint") is None
    assert offset_from_file_name("-1.log") is None and offset_from_file_name("\u00b2.log") is None
    assert without_swap(Path("d/00000000000000000086.log.swap")) == Path("d/00000000000000000086.log")
    assert without_swap(Path("d/00000000000000000086.log")) == Path("d/00000000000000000086.log")


def test_leftover_passes(corpus, tmp_path):
    """removeTempFilesAndCollectSwapFiles, then load's swap passes, on the corpus's interrupted swap and cleaning,
    with an extra .swap above the .cleaned offset (KAFKA-6264) and a .tmp (no pass)."""
    part = tmp_path / "rtopic-0"
    shutil.copytree(corpus / "kafka/recovery/leftovers/before/rtopic-0", part)
    shutil.copy(part / "00000000000000000174.log", part / "00000000000000000300.log.swap")
    (part / "00000000000000000174.index.tmp").write_bytes(b"")
    files = sort_files(dir_files(part, "p"))
    left = leftover_passes(files, lambda p, d, base: _next_offset(p, d, base, ScanOptions()))
    swap_end = _next_offset(part / "00000000000000000086.log.swap", "p", 86, ScanOptions())
    deleted = {p.name: why for p, _, why in left.deleted}
    for p, _, info in files.leftovers:
        if info.leftover in (DELETED, CLEANED):
            assert p.name in deleted
    assert "KAFKA-6264" in deleted["00000000000000000300.log.swap"]
    assert "00000000000000000174.index.tmp" not in deleted
    replaced = {p.name for p, _, i in files.files if i.leftover is None and i.base_offset is not None
                and 86 <= i.base_offset < swap_end}
    assert replaced and replaced <= set(deleted)
    assert [(p.name, dest.name) for p, _, dest in left.renamed] == [
        ("00000000000000000086.log.swap", "00000000000000000086.log")]
    assert list(left.swapped_logs) == [86]
    assert load_partition(part, "p").leftovers == left   # the loader's passes are these


def test_verify_loader_and_spark_sort_a_dir_alike(corpus, tmp_path):
    """verify's segment tasks, the loader's segments and Spark's planned partitions come from one sorting."""
    pytest.importorskip("pyspark")
    from kafkatool.spark.plan import plan
    from kafkatool.verify import _sort_files

    part_dir = _hostile_dir(corpus, tmp_path)
    (part_dir / "00000000000000000009.snapshot.swap").unlink()   # no swap: the loader's segments are the dir's
    (part_dir / "00000000000000000095.log.swap").write_bytes(b"")  # ...but a leftover log beside a live one
    (part_dir / "00000000000000000000.log.swap.deleted").rename(part_dir / "00000000000000000000.log.deleted")
    part = next(partition_dirs([part_dir]))
    verified, _findings = _sort_files(part)
    loaded = load_partition(part.path, files=part.files)
    planned = [p for p in plan([str(part_dir)], include_leftovers=True) if p.segment is not None]

    live = {b: p for b, (p, _d) in verified.segments.items()}
    assert {s.base_offset for s in loaded.segments} == {b for b in live if b <= INT64_MAX}
    assert {p.segment for p in planned if not p.path.endswith((SWAP, DELETED, CLEANED, TMP))} == set(live)
    assert {p.segment for p in planned if p.active} == {verified.active_base}
    for p in planned:
        on_disk = {k: verified.indexes.get((p.segment, k), (None, None))[0] for k in INDEX_KINDS}
        expected = [str(v) if v is not None and Path(p.path) == live.get(p.segment) else None
                    for v in on_disk.values()]
        assert [p.index, p.timeindex, p.txnindex] == expected, p.path
    leftover_logs = {p.path for p in planned if p.path.endswith((SWAP, DELETED, CLEANED, TMP))}
    assert leftover_logs == {str(p) for p, _, i in verified.leftovers if i.kind is FileKind.LOG}


def test_spark_plans_a_url_as_the_local_dir(corpus, tmp_path):
    """A dir read through its URL (walk.url_files over pyarrow.fs) plans the same partitions as read locally."""
    pytest.importorskip("pyarrow")
    from kafkatool.spark.fs import ArrowStore
    from kafkatool.spark.plan import plan
    from kafkatool.walk import url_files

    part_dir = _hostile_dir(corpus, tmp_path)
    url = f"file://{part_dir}"
    root, listed = url_files(url, ArrowStore(url))
    assert root == str(part_dir)
    assert [name for name, _ in listed] == sorted(str(p) for p, _ in dir_files(part_dir, str(part_dir)))
    assert all(u == "file://" + name for name, u in listed)
    assert url_files(f"file://{tmp_path}/nothing", ArrowStore(f"file://{tmp_path}/nothing")) is None
    for leftovers in (False, True):
        local = plan([str(part_dir)], include_leftovers=leftovers)
        remote = plan([url], include_leftovers=leftovers)
        assert sorted(local, key=lambda p: p.path) == sorted(
            (p.__class__(**{k: (v[len("file://"):] if isinstance(v, str) and v.startswith("file://") else v)
                            for k, v in vars(p).items()}) for p in remote), key=lambda p: p.path)
