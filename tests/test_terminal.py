"""What a person sees on a terminal: tables without trailing spaces, and ``NO_COLOR`` meaning no escape codes at
all (colours and bold), progress bars on stderr whenever it is a terminal, tables that fit the terminal without
cutting a number, on a real pseudo-terminal."""

from __future__ import annotations

import os
import re

import pytest

from .clirun import cli
from .conftest import PROJECT_ROOT, corpus_root

CASE = str(corpus_root() / "kafka" / "recovery" / "crc-flip" / "before")


def on_a_terminal(*args: str, env: dict[str, str], stdout: object = None, code: int = 1) -> bytes:
    """What ``kafkatool ARGS`` writes to a terminal (stdout too, unless ``stdout`` is given); it must exit ``code``
    (1 by default: the CRC error of CASE)."""
    leader, follower = os.openpty()
    try:
        proc = cli(*args, stdout=stdout or follower, stderr=follower,
                   env={"NO_COLOR": None, "COLUMNS": "200", "TERM": "xterm-256color", **env})
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: everything has been read
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(leader)
    assert proc.returncode == code, out
    return out


def screen(raw: bytes) -> list[str]:
    """The lines a terminal shows once ``raw`` is written: carriage return, newline, erase line, cursor up (what
    rich's live display uses); colours dropped."""
    lines, row, col = [""], 0, 0
    for token in re.findall(rb"\x1b\[[0-9;?]*[A-Za-z]|\r|\n|[^\x1b\r\n]+", raw):
        if token == b"\r":
            col = 0
        elif token == b"\n":
            row += 1
            lines += [""] * (row + 1 - len(lines))
        elif token.startswith(b"\x1b["):
            if token.endswith(b"K"):
                lines[row] = lines[row][:col] if token in (b"\x1b[K", b"\x1b[0K") else ""
            elif token.endswith(b"A"):
                row = max(0, row - int(token[2:-1] or 1))
        else:
            text = token.decode("utf-8", "replace")
            line = lines[row].ljust(col)
            lines[row] = line[:col] + text + line[col + len(text):]
            col += len(text)
    return lines


def test_progress_on_a_terminal_even_when_stdout_is_it_too() -> None:
    """A bar on stderr while verify reads, drawn over by nothing: the findings and the table print above it and
    the bar is gone at the end."""
    raw = on_a_terminal("verify", CASE, env={})
    assert b"verify \x1b[" in raw and b"kB" in raw  # the bar: label, bar, bytes read
    shown = screen(raw)
    assert not [line for line in shown if "━" in line or "kB" in line], shown
    assert any(line.startswith("ERROR crc-mismatch ") for line in shown), shown
    assert any(line.startswith("partition ") for line in shown)
    assert any(line.startswith("errors: 1 partitions") for line in shown), shown


def test_progress_never_goes_to_stdout(tmp_path) -> None:
    with open(tmp_path / "out.txt", "w") as fh:
        err = on_a_terminal("verify", CASE, env={}, stdout=fh)
    out = (tmp_path / "out.txt").read_text()
    assert b"verify \x1b[" in err and "\x1b" not in out and "kB" not in out and "errors: 1 partitions" in out


def test_an_80_column_table_wraps_between_columns_and_never_cuts_a_number() -> None:
    """In an 80-column terminal a row too wide even with its path cut short goes on over an indented line, between
    whole columns: the path whole, every number whole (the table once showed ``8229…`` and ``1,07…``, then folded the
    path in its middle)."""
    shown = screen(on_a_terminal("verify", CASE, env={"COLUMNS": "80"}))
    start = next(i for i, line in enumerate(shown) if line.startswith("partition "))
    table = shown[start:shown.index("", start)]
    assert "…" not in "".join(table) and max(map(len, table)) <= 80, table
    at = next(i for i, line in enumerate(table) if line.startswith(CASE[:10]))
    assert table[at + 1].startswith("    ") and not table[at + 2:], table
    row = (table[at] + " " + table[at + 1]).split()
    assert row == [CASE + "/rtopic-0", "4", "35,157", "149", "0", "264", "-", "1", "sparse", "1", "1", "2"], table


def test_no_color_means_no_escape_codes() -> None:
    assert b"\x1b[" in on_a_terminal("verify", CASE, env={})
    assert b"\x1b[" not in on_a_terminal("verify", CASE, env={"NO_COLOR": "1"})


def test_tables_have_no_trailing_spaces(run_cli) -> None:
    for args in (["verify", CASE], ["producers", CASE], ["txns", CASE],
                 ["offsets", str(PROJECT_ROOT / "fixtures" / "incident")]):
        out = run_cli(*args).stdout
        assert out.strip() and [line for line in out.splitlines() if line != line.rstrip()] == [], args


def test_findings_and_tables_speak_kafka_not_python(run_cli) -> None:
    """No ``None``, ``True``/``False`` or Python list spelling in what verify, producers and txns print on the
    corpus (a finding once said ``offsets None..88`` for a transaction begun before the log start)."""
    import re

    roots = [str(corpus_root() / "kafka"), str(corpus_root() / "real")]
    for command in ("verify", "producers", "txns"):
        out = run_cli(command, *roots).stdout
        assert out and not re.search(r"\bNone\b|\bTrue\b|\bFalse\b|\['", out), (command, re.findall(
            r".*(?:\bNone\b|\bTrue\b|\bFalse\b|\[').*", out)[:3])


def test_delivery_counts_sink_rows_on_a_terminal(tmp_path, run_cli) -> None:
    """Millions of sink rows take a while: on a terminal (stdout redirected) a running count of rows is shown on
    stderr, and the result on stdout is unchanged."""
    sink = tmp_path / "sink.csv"
    sink.write_text("topic,partition,offset\n" + "".join(f"payments,0,{o % 122}\n" for o in range(300_000)))
    leader, follower = os.openpty()
    out = tmp_path / "out.jsonl"
    with open(out, "w") as fh:
        proc = run_cli("delivery", "-f", "jsonl", "--sink", sink, PROJECT_ROOT / "fixtures" / "logdir", stdout=fh,
                       stderr=follower, env={"TERM": "xterm-256color"})
    os.close(follower)
    err = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(leader)
    assert proc.returncode == 1 and b"rows" in err and b"reading the sink" in err
    assert '"type": "delivery"' in out.read_text()


def test_markup_escape_is_richs_and_shows_text_as_written() -> None:
    """kafkatool escapes text for its markup itself (importing rich.markup costs more than a small ``verify``):
    the same escaping as ``rich.markup.escape``, and an escaped text renders back as written, coloured or not."""
    import random

    from rich.markup import escape as rich_escape

    from kafkatool.cli.output.terminal import _markup, escape

    rng = random.Random(14)
    for _ in range(20_000):
        text = "".join(rng.choice("[]\\/ab#@ =") for _ in range(rng.randint(0, 14)))
        assert escape(text) == rich_escape(text), text
        if not text.endswith("\\"):  # (a trailing backslash is doubled, so a tag after it stays a tag)
            assert _markup(escape(text), False) == text, text
            assert _markup(f"[bold]{escape(text)}[/bold]", True) == f"\x1b[1m{text}\x1b[0m", text


def test_repair_shows_progress_while_it_loads() -> None:
    """repair loads every segment of the partitions it plans: a bar on stderr while it reads, gone at the end."""
    raw = on_a_terminal("repair", CASE, env={})
    assert b"repair \x1b[" in raw and b"kB" in raw
    shown = screen(raw)
    assert not [line for line in shown if "━" in line or "kB" in line], shown


REPLICAS = corpus_root() / "kafka" / "replicas" / "divergent"
REAL_DATA = corpus_root() / "real" / "MashaKosher_Internship" / "c335121f" / "data"
INCIDENT = PROJECT_ROOT / "fixtures" / "incident"
READING = [  # the commands that read whole partitions (or a metadata log), on input they exit on as shown
    (["producers", CASE], 1),  # the CRC error the load cuts at, as verify reports it
    (["txns", CASE], 1),
    (["epochs", CASE], 1),
    (["replicas", str(REPLICAS)], 1),
    (["truncation", "--leader", str(REPLICAS / "broker-2"), "--follower", str(REPLICAS / "broker-1")], 1),
    (["offsets", str(REAL_DATA)], 0),
    (["txn-state", str(INCIDENT)], 1),  # payments-writer-a is past its timeout
    (["metadata", str(INCIDENT)], 1),  # the unclean election at 02:14
]
BYTES = re.compile(rb"[\d.]+/[\d.]+ (?:bytes|kB|MB)")  # the bar's DownloadColumn: read / total


@pytest.mark.parametrize(("args", "code"), READING, ids=[args[0] for args, _code in READING])
def test_reading_commands_show_progress_while_they_read(args: list[str], code: int, tmp_path, run_cli) -> None:
    """A byte bar on stderr while the command reads, gone at the end; stdout (a file here) exactly what it is
    without a terminal, the exit code too: progress never goes to stdout and changes nothing."""
    label = args[0].encode()
    raw = on_a_terminal(*args, env={}, code=code)
    assert label + b" \x1b[" in raw and BYTES.search(raw), raw[-2000:]
    shown = screen(raw)
    assert not [line for line in shown if "━" in line or BYTES.search(line.encode())], shown
    with open(tmp_path / "out.txt", "w") as fh:  # no COLUMNS: a width asked for applies to a file too
        err = on_a_terminal(*args, env={"COLUMNS": None}, stdout=fh, code=code)
    assert label + b" \x1b[" in err and BYTES.search(err)
    piped = run_cli(*args)
    assert piped.returncode == code and piped.stderr == ""
    assert (tmp_path / "out.txt").read_text() == piped.stdout
