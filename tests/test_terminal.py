"""What a person sees on a terminal: tables without trailing spaces, and ``NO_COLOR`` meaning no escape codes at
all (colours and bold), on a real pseudo-terminal."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import PROJECT_ROOT, corpus_root

CASE = str(corpus_root() / "kafka" / "recovery" / "crc-flip" / "before")


def on_a_terminal(*args: str, env: dict[str, str]) -> bytes:
    leader, follower = os.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "kafkatool", *args], stdout=follower, stderr=follower,
                              env={**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, "COLUMNS": "200",
                                   "TERM": "xterm-256color", **env}, timeout=120)
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
    assert proc.returncode == 1  # the CRC error
    return out


def test_no_color_means_no_escape_codes() -> None:
    assert b"\x1b[" in on_a_terminal("verify", CASE, env={})
    assert b"\x1b[" not in on_a_terminal("verify", CASE, env={"NO_COLOR": "1"})


def test_tables_have_no_trailing_spaces() -> None:
    for args in (["verify", CASE], ["producers", CASE], ["txns", CASE],
                 ["offsets", str(PROJECT_ROOT / "fixtures" / "incident")]):
        out = subprocess.run([sys.executable, "-m", "kafkatool", *args], capture_output=True, text=True).stdout
        assert out.strip() and [line for line in out.splitlines() if line != line.rstrip()] == [], args


def test_findings_and_tables_speak_kafka_not_python() -> None:
    """No ``None``, ``True``/``False`` or Python list spelling in what verify, producers and txns print on the
    corpus (a finding once said ``offsets None..88`` for a transaction begun before the log start)."""
    import re

    roots = [str(corpus_root() / "kafka"), str(corpus_root() / "real")]
    for command in ("verify", "producers", "txns"):
        out = subprocess.run([sys.executable, "-m", "kafkatool", command, *roots], capture_output=True,
                             text=True).stdout
        assert out and not re.search(r"\bNone\b|\bTrue\b|\bFalse\b|\['", out), (command, re.findall(
            r".*(?:\bNone\b|\bTrue\b|\bFalse\b|\[').*", out)[:3])


def test_delivery_counts_sink_rows_on_a_terminal(tmp_path) -> None:
    """Millions of sink rows take a while: on a terminal (stdout redirected) a running count of rows is shown on
    stderr, and the result on stdout is unchanged."""
    sink = tmp_path / "sink.csv"
    sink.write_text("topic,partition,offset\n" + "".join(f"payments,0,{o % 122}\n" for o in range(300_000)))
    leader, follower = os.openpty()
    out = tmp_path / "out.jsonl"
    with open(out, "w") as fh:
        proc = subprocess.run([sys.executable, "-m", "kafkatool", "delivery", "-f", "jsonl", "--sink", str(sink),
                               str(PROJECT_ROOT / "fixtures" / "logdir")], stdout=fh, stderr=follower,
                              env={**os.environ, "TERM": "xterm-256color"}, timeout=300)
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
