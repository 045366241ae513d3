"""``kafkatool spark scan`` as an operator runs it: a child process starting its own ``local[2]`` session.

A successful run leaves the terminal's stderr to kafkatool's own progress lines (no JVM warning, no log4j
line, no Python traceback from the Python workers), and its stdout is the summary the single-process CLI
gives for the same dir: batches from ``dump``, the loaded state and findings from ``verify``, producers
from ``producers``.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from .clirun import cli

pytestmark = pytest.mark.spark


def _expected(part) -> list[str]:
    """``spark scan -f jsonl``'s lines for one partition dir, from the CLI's own commands."""
    batches = [b for b in cli("dump", "-f", "jsonl", part).jsonl() if b["type"] == "batch"]
    verify = cli("verify", "-f", "jsonl", part).jsonl()
    (summary,) = [v for v in verify if v["type"] == "summary" and v["scope"] == "partition"]
    findings = [v for v in verify if v["type"] == "finding"]
    producers = [p for p in cli("producers", "-f", "jsonl", part).jsonl() if p["type"] == "producer"]
    count = {s: sum(f["severity"] == s for f in findings) for s in ("error", "warning", "info")}
    stamps = [b["first_timestamp"] for b in batches if b["first_timestamp"] >= 0]
    row = {
        "type": "summary", "scope": "partition", "topic": summary["topic"], "partition": summary["partition"],
        "dirs": 1, "bytes": sum(b["size"] for b in batches), "batches": len(batches),
        "records": sum(b["record_count"] for b in batches),
        "first_offset": min(b["base_offset"] for b in batches), "last_offset": max(b["last_offset"] for b in batches),
        "first_timestamp": min(stamps, default=None), "max_timestamp": max(b["max_timestamp"] for b in batches),
        "codecs": sorted({b["compression"] for b in batches}), "crc_failures": sum(not b["crc_valid"] for b in batches),
        "committed": sum(b.get("control_type") == "COMMIT" for b in batches),
        "aborted": sum(b.get("control_type") == "ABORT" for b in batches),
        "errors": count["error"], "warnings": count["warning"], "info": count["info"],
        "codes": sorted({f["code"] for f in findings if f["severity"] != "info"}),
        "log_start_offset": summary["log_start_offset"], "log_end_offset": summary["log_end_offset"],
        "high_watermark": summary["high_watermark"], "last_stable_offset": summary["last_stable_offset"],
        "open_transactions": summary["open_transactions"], "first_open_offset": summary["first_unstable_offset"],
        "producers": len(producers),
    }
    total = {"type": "summary", "scope": "total",
             **{k: row[k] for k in ("bytes", "batches", "records", "crc_failures", "committed", "aborted",
                                    "open_transactions", "errors", "warnings", "info")}, "partitions": 1}
    return [json.dumps(row), json.dumps(total)]


def test_spark_scan_is_quiet_and_says_what_the_cli_says(corpus, tmp_path):
    part = tmp_path / "logdir" / "txn-0"  # committed, aborted and open transactions, three producers
    shutil.copytree(corpus / "kafka" / "logdir" / "txn-0", part)
    # a JVM of its own: minutes on a loaded machine, so a guard against a hang only, far above clirun's default
    done = cli("spark", "scan", "--master", "local[2]", "-f", "jsonl", part, "--out", tmp_path / "out", timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr
    noise = [line for line in done.stderr.splitlines() if re.search(r"\bWARN(ING)?\b", line)]
    assert noise == [], done.stderr
    # what is left on stderr is kafkatool's own progress (stderr is no terminal here: plain lines)
    assert all(line.startswith("kafkatool spark scan: ") for line in done.stderr.splitlines()), done.stderr
    assert done.stdout.splitlines() == _expected(part)


def test_the_users_java_options_and_log4j_stay_theirs(corpus, tmp_path):
    """Spark's conf dir with ``spark.driver.extraJavaOptions`` naming a log4j2 file of the user's (its own layout):
    that file is the one the JVM uses (the NativeCodeLoader warning the CLI's file turns off reaches stderr in the
    user's layout), where the CLI's quiet configuration, once passed as ``spark.driver.extraJavaOptions``, replaced
    the user's Java options (and the test failed so)."""
    part = tmp_path / "logdir" / "txn-0"
    shutil.copytree(corpus / "kafka" / "logdir" / "txn-0", part)
    conf = tmp_path / "conf"
    conf.mkdir()
    mine = tmp_path / "my log4j2.properties"
    mine.write_text("rootLogger.level = info\nrootLogger.appenderRef.stderr.ref = console\n"
                    "appender.console.type = Console\nappender.console.name = console\n"
                    "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                    "appender.console.layout.pattern = MINE %p %c{1}: %m%n\n")
    (conf / "spark-defaults.conf").write_text(f'spark.driver.extraJavaOptions -Dlog4j2.configurationFile="{mine}"\n')
    done = cli("spark", "scan", "--master", "local[2]", "-f", "jsonl", part, "--out", tmp_path / "out",
               env={"SPARK_CONF_DIR": str(conf)}, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^MINE WARN NativeCodeLoader: ", done.stderr, re.M), done.stderr[-3000:]
    assert done.stdout.splitlines() == _expected(part)
