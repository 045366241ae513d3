"""``dump``'s key/value/header search on the native path (``native/src/search.rs``, ``kafkatool.pattern``) against the
pure path, the reference: the same items (batches, records, findings) from the same files and patterns.

Records are generated here (seeded): UTF-8 text where Python's and the ``regex`` crate's Unicode rules differ (case
folding, ``\\w``, ``\\s``, digits), bytes that are not UTF-8, null keys and values, headers; the patterns have anchors,
classes, case-insensitive and other flags, and some the native path declines (they are searched in Python).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kafkatool import native
from kafkatool.build import RecordSpec, end_transaction_marker, record_batch
from kafkatool.dump import DumpOptions, dump_paths, record_filter
from kafkatool.logwriter import PartitionWriter
from kafkatool.model import Record
from kafkatool.pattern import translate
from kafkatool.txns import committed_view

from .clirun import cli

TEXTS = ["", "order-1", "Order-42\n", "café", "CAFÉ", "straße", "STRASSE", "ſ", "s", "K", "\u212a", "k", "İstanbul",
         "ı", "x²", "e\u0301", "tab\there", "\x1c", "\x85", "\u2028", "line1\nline2", "ends\n", "ends\n\n", "\ufffd",
         "日本語テキスト", "emoji 😀", "   ", "123", "٣٤", "ab" * 40, "ok", "ok!", "_ok_", "Σσς", "ǅ", "ﬀ", "Ω",
         "\u2126"]
NOT_UTF8 = [b"\xff", b"\xc3", b"caf\xe9", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"ok\x80ok", b"\x00\x01binary\xfe",
            b"\xc3\xa9\xff\xfe order", b"\xe2\x82", b"\xf4\x90\x80\x80"]
POOL = [t.encode() for t in TEXTS] + NOT_UTF8
NAMES = ["h", "H", "hé", "source"]

TRANSLATED = ["order", "^order", r"^Order-\d+$", "(?i)order", "(?i)café", "(?i)strasse", "(?i)k", "(?i)ſ", "(?i)σ",
              "(?i)ǆ", "(?i)ω", r"(?i)[a-z]+\d", r"[^\x00-\x7f]", r"\d", r"\w+", r"\W", r"\s", r"\S+$", "$", "^$", "^",
              r"\Aends\Z", "ends$", "(?m)^line2$", "(?m)1$", "(?s)line1.line2", "line1.line2", "\ufffd", "caf.",
              "[éÉ]", "(?i)[é]", r"(?a)\w+", r"(?a)\bok\b", r"(?a)\Bk", "(?ai)K", "(?ai)[k-k]", "x{2,}", "(ab){3,5}",
              "a|b|c", r"\x1c", "😀", "[😀-😂]", ".", "", "(?x) o r d e r  # verbose", "(?i:ORD)er", "(?i)o(?-i:R)",
              "[^a-z]", r"\.", r"[\d\s]", "(?i)[^k]", r"(?i)\W", "(?s).", "k*?", r"ok$|^_", r"(e|\W)$", "(?i)İ"]
DECLINED = [r"(a)\1", "(?=ord)", "(?<!x)ok", r"\bok\b", r"ok$\n", "(?>a+)", "a++", r"(a)?(?(1)b|c)"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A partition of batches of 1, 3 and 16 records (some compressed) from the pools above, written as a broker
    appends them."""
    rnd = random.Random(30)
    part = tmp_path_factory.mktemp("search") / "orders-0"
    offset = 0
    with PartitionWriter(part, topic="orders", partition=0, topic_id=bytes(16)) as writer:
        for n in range(120):
            count = (1, 3, 16)[n % 3]
            specs = [RecordSpec(rnd.choice([*POOL, None]), rnd.choice([*POOL, None]), 1_700_000_000_000 + offset + k,
                                tuple((rnd.choice(NAMES), rnd.choice([*POOL, None])) for _ in range(rnd.randrange(4))))
                     for k in range(count)]
            writer.append(record_batch(offset, specs, compression=("none", "none", "gzip", "zstd")[n % 4],
                                       producer_id=n % 5))
            offset += count
    return part


def items(part: Path, core, **conditions) -> list:
    ranges = {k: conditions.pop(k) for k in ("from_offset", "to_offset", "max_batches") if k in conditions}
    options = DumpOptions(records=True, filter=record_filter(**conditions), **ranges)
    with native.using(core):
        return list(dump_paths([part], options))


@pytest.mark.parametrize("pattern", TRANSLATED)
def test_a_translated_pattern_finds_exactly_the_records_python_finds(generated: Path, core, pattern: str) -> None:
    assert translate(pattern) is not None
    assert record_filter(value=pattern).native is not None  # the native path searches
    for field in ("key", "value", "header"):
        given = {field: f"h={pattern}" if field == "header" else pattern}
        native_items, pure_items = items(generated, core, **given), items(generated, None, **given)
        assert native_items == pure_items, (field, pattern)


@pytest.mark.parametrize("pattern", DECLINED)
def test_a_pattern_the_crate_cannot_match_as_python_stays_in_python(generated: Path, core, pattern: str) -> None:
    assert translate(pattern) is None
    assert record_filter(value=pattern).native is None
    assert items(generated, core, value=pattern) == items(generated, None, value=pattern)


def test_the_patterns_here_match_something_and_miss_something(generated: Path) -> None:
    """The data is rich enough for the comparisons to mean something: most patterns both match and miss records."""
    total = sum(isinstance(x, Record) for x in items(generated, None))
    both = [p for p in TRANSLATED if 0 < sum(isinstance(x, Record) for x in items(generated, None, value=p)) < total]
    assert len(both) >= len(TRANSLATED) * 3 // 4


@pytest.mark.parametrize("conditions", [
    {"header": "source"}, {"header": "H=^$"}, {"value": "o", "producer_id": 3},
    {"value": ".", "from_time": 1_700_000_000_040, "to_time": 1_700_000_000_100},
    {"key": "k|K", "from_offset": 30, "to_offset": 200}, {"value": "(?i)o", "max_batches": 4},
    {"key": "", "value": "", "header": "h=."}, {"producer_id": 2, "from_time": 1_700_000_000_010},
])
def test_every_other_condition_with_the_patterns(generated: Path, core, conditions: dict) -> None:
    assert items(generated, core, **conditions) == items(generated, None, **conditions)


@pytest.mark.parametrize("pattern", ["lorem", "(?i)KEY-[0-3]$", r"\d$", "no-such-thing"])
def test_the_cli_prints_the_same_bytes_on_the_corpus(corpus: Path, core, pattern: str) -> None:
    for fmt in ("text", "jsonl"):
        args = ("dump", "-f", fmt, "--value", pattern, corpus / "kafka" / "logdir", corpus / "real")
        fast, pure = cli(*args), cli(*args, env={"KAFKATOOL_PURE_PYTHON": "1"})
        assert (fast.returncode, fast.stdout, fast.stderr) == (pure.returncode, pure.stdout, pure.stderr)


def test_a_search_that_matches_nothing_still_says_so(generated: Path, core) -> None:
    done = cli("dump", "--value", "no-such-customer", generated)
    assert done.returncode == 0 and done.stdout == ""
    assert "no record matched --value no-such-customer in 1 record file" in done.stderr


@pytest.fixture(scope="module")
def transactional(tmp_path_factory) -> Path:
    """Uncompressed batches (the native core decodes them in runs) of three transactional producers taking turns,
    each transaction committed or aborted in turn, the last of producer 2 left open (the LSO: a read_committed fetch
    stops there, inside a run), and non-transactional batches between them."""
    rnd = random.Random(31)
    part = tmp_path_factory.mktemp("search-txn") / "txn-0"
    offset, sequence, ends = 0, {}, 0
    with PartitionWriter(part, topic="txn", partition=0, topic_id=bytes(16)) as writer:
        for n in range(90):
            pid = n % 4  # 3: no transaction
            count = rnd.choice((1, 3))
            specs = [RecordSpec(rnd.choice(POOL), rnd.choice(POOL), 1_700_000_000_000 + offset + k)
                     for k in range(count)]
            writer.append(record_batch(offset, specs, producer_id=1000 + pid, producer_epoch=0,
                                       base_sequence=sequence.get(pid, 0), transactional=pid < 3))
            sequence[pid] = sequence.get(pid, 0) + count
            offset += count
            if pid < 3 and n % 7 in (1, 2, 5) and not (pid == 2 and n > 70):
                writer.append(end_transaction_marker(offset, commit=ends % 2 == 0, producer_id=1000 + pid,
                                                     producer_epoch=0, coordinator_epoch=1,
                                                     timestamp=1_700_000_000_000 + offset))
                ends += 1
                offset += 1
    return part


@pytest.mark.parametrize("conditions", [{"value": "."}, {"key": "(?i)o"}, {"value": "^$"},
                                        {"value": ".", "max_batches": 9}, {"key": r"\d", "from_offset": 40}])
def test_a_read_committed_search_is_the_pure_paths(transactional: Path, core, conditions: dict) -> None:
    """The native search under a read_committed view: what matched in aborted batches dropped, the fetch stopped at
    the LSO inside a run of batches; the very items of the pure path (which differ from read_uncommitted's)."""
    committed = {"committed": committed_view}
    ranges = {k: conditions.pop(k) for k in ("from_offset", "to_offset", "max_batches") if k in conditions}
    options = DumpOptions(records=True, filter=record_filter(**conditions), **ranges, **committed)
    got = {}
    for name, c in (("native", core), ("pure", None)):
        with native.using(c):
            got[name] = list(dump_paths([transactional], options))
    assert got["native"] == got["pure"]
    assert got["pure"] != items(transactional, None, **conditions, **ranges)  # the view changes what is shown
