"""Small-file readers against the corpus goldens (produced by Kafka's own classes; see PROVENANCE.md).

Every golden whose input is an index, producer snapshot, text checkpoint or ``partition.metadata``
(leftover suffixes included, dumped as the inner type) must match the reader line by line: every
field of a golden line equal, and a golden ``{"type":"error"}`` line matched by an error Finding
that ends the output. Warnings would be extra lines, so the corpus must produce none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatool.filetypes import FileKind, classify
from kafkatool.smallfiles import read_small_file

from .conftest import golden_params, read_jsonl

SMALL_KINDS = (
    FileKind.INDEX,
    FileKind.TIME_INDEX,
    FileKind.TXN_INDEX,
    FileKind.PRODUCER_SNAPSHOT,
    FileKind.OFFSET_CHECKPOINT,
    FileKind.EPOCH_CHECKPOINT,
    FileKind.PARTITION_METADATA,
)
SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot", "-checkpoint", "partition.metadata")

CASES = golden_params(SUFFIXES, keep=lambda src: classify(src).kind in SMALL_KINDS)


@pytest.mark.parametrize(("src", "golden"), CASES)
def test_matches_golden(src: Path, golden: Path, corpus: Path) -> None:
    rel = str(src.relative_to(corpus))
    info = classify(src)
    got = [v.as_dict() for v in read_small_file(src, info.kind, rel, info.base_offset)]
    expected = read_jsonl(golden)

    for i, want in enumerate(expected):
        assert i < len(got), f"line {i}: missing, expected {want}"
        line = got[i]
        if want["type"] == "error":
            assert line["type"] == "finding" and line["severity"] == "error", f"line {i}: {line} for {want}"
            assert i == len(expected) - 1, "golden error line is not the last line"
            assert len(got) == i + 1, f"output continues after the error: {got[i + 1:]}"
            continue
        assert line["type"] == want["type"], f"line {i}: {line} != {want}"
        different = {k: (line.get(k), v) for k, v in want.items() if line.get(k) != v}
        assert not different, f"line {i}: (got, golden) differ: {different}"
    assert len(got) == len(expected), f"extra lines: {got[len(expected):]}"


def test_every_small_kind_has_goldens() -> None:
    kinds = {classify(param.values[0]).kind for param in CASES}
    assert kinds == set(SMALL_KINDS)


def test_every_small_input_has_a_golden(corpus: Path) -> None:
    """PROVENANCE.md promises a golden for each such file under real/ and kafka/: none may be skipped."""
    covered = {param.values[0] for param in CASES}
    missing = [
        str(p.relative_to(corpus))
        for top in ("real", "kafka")
        for p in (corpus / top).rglob("*")
        if p.is_file() and classify(p).kind in SMALL_KINDS and p not in covered
    ]
    assert not missing
