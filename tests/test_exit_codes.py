"""Exit codes a shell sees when the reader of stdout goes away (``| head``) or the user presses Ctrl-C: 141 and
130, quietly, never 1 (which means "findings")."""

from __future__ import annotations

import signal
import subprocess
import time

from .clirun import KAFKATOOL
from .conftest import PROJECT_ROOT, corpus_root


def test_closed_pipe_is_141_and_quiet() -> None:
    for fmt in ("text", "jsonl"):
        with subprocess.Popen([*KAFKATOOL, "dump", "-f", fmt, "--records",
                               str(PROJECT_ROOT / "fixtures" / "logdir")], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.readline()
            proc.stdout.close()  # the reader goes away after one line
            err = proc.stderr.read()
            assert proc.wait(timeout=60) == 141 and err == b"", (fmt, err)


def test_ctrl_c_is_130_with_one_line() -> None:
    """``delivery --sink -`` waits on its standard input, which the test keeps open: interrupted there."""
    with subprocess.Popen([*KAFKATOOL, "delivery", "--sink", "-",
                           str(corpus_root() / "kafka" / "logdir")], stdin=subprocess.PIPE,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        time.sleep(5)  # started and reading its stdin
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.decode().strip().endswith("kafkatool: interrupted"), err
