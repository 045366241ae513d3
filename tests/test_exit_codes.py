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


def test_one_error_root() -> None:
    """Every exception class of the engines derives from ``KafkaToolError`` and lives in ``kafkatool.errors``, each with
    its exit code; outside it only ``filetypes.NotRegularFile`` and ``filetypes.FileTooLarge`` (``OSError``s on
    purpose: a reader that turns a file it cannot read into a finding catches them as one),
    the private control-flow ones (caught where raised: one
    that escaped would be a bug, an internal error, not a message mapped to an exit code)."""
    import importlib
    import inspect
    import pkgutil

    import kafkatool
    from kafkatool import errors

    outside = set()
    for m in pkgutil.walk_packages(kafkatool.__path__, "kafkatool."):
        if m.name.startswith(("kafkatool.spark", "kafkatool.formats", "kafkatool._native", "kafkatool.__main__")):
            continue
        for name, cls in vars(importlib.import_module(m.name)).items():
            if inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == m.name != errors.__name__:
                outside.add(f"{m.name}.{name}")
    assert outside == {"kafkatool.filetypes.NotRegularFile", "kafkatool.filetypes.FileTooLarge",
                       "kafkatool.fastparse._Miss", "kafkatool.internal.common.Undecodable",
                       "kafkatool.locate._BadPosition", "kafkatool.internal.groups._Inconsistent",
                       "kafkatool.delivery._RowTooLong", "kafkatool.verify_files._Stopped",
                       "kafkatool.payloads.confluent._Bad",
                       "kafkatool.payloads.registry._Invalid", "kafkatool.pattern.Declined"}
    codes = {name: cls.exit_code for name, cls in vars(errors).items()
             if inspect.isclass(cls) and issubclass(cls, errors.KafkaToolError)}
    assert codes == {"KafkaToolError": 1, "UsageError": 2, "InputIOError": 3, "LogDirLocked": 2, "FormatError": 1,
                     "DecompressionError": 1, "DecompressionLimitExceeded": 1, "AppendError": 1, "IndexAppendError": 1,
                     "PlanError": 1, "ApplyRefused": 2, "RestoreRefused": 2, "JournalError": 1, "OutputRefused": 2,
                     "NothingMatched": 0}
