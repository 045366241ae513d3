"""One verdict for the same bytes (issue 26): ``verify``, ``repair`` and ``dump`` tell the same story of a partition,
from the command line, on copies of the corpus."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _findings(lines: list[dict], code: str) -> list[dict]:
    return [d for d in lines if d["type"] == "finding" and d["code"] == code]


# --- a .kafka_cleanshutdown marker beside a CRC error -------------------------------------------------------------


@pytest.fixture
def clean_crc(corpus: Path, tmp_path: Path) -> Path:
    """``crc-flip/before`` (a flipped CRC in the active segment, no recovery point checkpoint) with the marker the
    broker writes when it shuts down cleanly."""
    logdir = _copy(corpus / "kafka" / "recovery" / "crc-flip" / "before", tmp_path / "data")
    (logdir / ".kafka_cleanshutdown").write_bytes(b"")
    return logdir


def test_clean_shutdown_repair_names_the_marker_and_agrees_with_verify(clean_crc: Path, run_cli) -> None:
    """LogLoader.recoverLog skips recovery with the marker: repair plans nothing of its own, but reports the invalid
    batch verify reports (same code, file and byte: both exit 1), names the marker, and shows the unclean start's
    plan (marked, never applied)."""
    verify = run_cli("verify", "-f", "jsonl", clean_crc)
    assert verify.returncode == 1, verify.stderr
    [crc] = _findings(verify.jsonl(), "crc-mismatch")

    before = _files(clean_crc)
    repair = run_cli("repair", "-f", "jsonl", clean_crc)
    assert repair.returncode == 1, repair.stdout + repair.stderr
    lines = repair.jsonl()
    [same] = _findings(lines, "crc-mismatch")
    assert (same["path"], same["position"], same["severity"]) == (crc["path"], crc["position"], crc["severity"])
    [marker] = _findings(lines, "clean-shutdown-skips-recovery")
    assert marker["path"] == str(clean_crc / ".kafka_cleanshutdown")
    assert "--recovery-point 0" in marker["message"]
    actions = [d for d in lines if d["type"] == "action"]
    assert actions and all(d.get("unclean_start") for d in actions)
    cut = [d for d in actions if d["action"] == "truncate"]
    assert [d["bad_position"] for d in cut] == [crc["position"]] and cut[0]["path"] == crc["path"]
    [part] = [d for d in lines if d["type"] == "partition"]
    assert part["actions"] == 0 and part["clean_shutdown"] == marker["path"]
    assert part["unclean_start"]["leo_after"] < part["leo_before"]

    text = run_cli("repair", clean_crc)
    assert text.returncode == 1 and ".kafka_cleanshutdown" in text.stdout and "nothing to repair" not in text.stdout

    applied = run_cli("repair", "--apply", "--backup-dir", clean_crc.parent / "backup", clean_crc)
    assert applied.returncode == 1, applied.stdout + applied.stderr
    after = _files(clean_crc)
    after.pop(".lock", None)  # the apply's lock file (log_dir_lock), as the broker's
    assert after == before  # the broker would change nothing: neither does the apply


def test_clean_shutdown_explicit_recovery_point_plans_from_it(clean_crc: Path, run_cli) -> None:
    """--recovery-point overrides the marker: the recovery an unclean start makes is planned, and applied."""
    plan = run_cli("repair", "-f", "jsonl", "--recovery-point", "0", clean_crc)
    assert plan.returncode == 1, plan.stdout + plan.stderr
    lines = plan.jsonl()
    assert not _findings(lines, "clean-shutdown-skips-recovery")
    actions = [d for d in lines if d["type"] == "action"]
    assert any(d["action"] == "truncate" for d in actions) and not any(d.get("unclean_start") for d in actions)
    [part] = [d for d in lines if d["type"] == "partition"]
    assert part["actions"] == len(actions) and part["recovery_point_source"] == "option"
    assert ".kafka_cleanshutdown" in part["recovery_point_note"]

    applied = run_cli("repair", "--apply", "--recovery-point", "0", "--backup-dir", clean_crc.parent / "backup",
                      clean_crc)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    verify = run_cli("verify", "-f", "jsonl", clean_crc)
    assert not _findings(verify.jsonl(), "crc-mismatch")
    again = run_cli("repair", "-f", "jsonl", clean_crc)
    assert again.returncode == 0 and not _findings(again.jsonl(), "clean-shutdown-skips-recovery")


# --- one index.interval.bytes for verify and repair ---------------------------------------------------------------


def test_verify_and_repair_take_the_same_index_interval(corpus: Path, tmp_path: Path, run_cli) -> None:
    """Without --index-interval-bytes both take the interval the partition's offset indexes fit (codecs-0 was written
    with 1024): a 1,698-byte segment without indexes is more than one interval to verify, as to repair's rebuild."""
    part = _copy(corpus / "kafka" / "logdir" / "codecs-0", tmp_path / "codecs-0")
    small = part / "00000000000000000190.log"
    assert 1024 < small.stat().st_size <= 4096
    (part / "00000000000000000190.index").unlink()
    (part / "00000000000000000190.timeindex").unlink()

    [plan] = [d for d in run_cli("repair", "-f", "jsonl", part).jsonl() if d["type"] == "partition"]
    assert (plan["index_interval_bytes"], plan["index_interval_source"]) == (1024, "inferred")
    inferred = {d["code"] for d in run_cli("verify", "-f", "jsonl", part).jsonl() if d["type"] == "finding"}
    assert {"index-missing-large", "timeindex-missing-large"} <= inferred
    given = {d["code"] for d in run_cli("verify", "-f", "jsonl", "--index-interval-bytes", "4096", part).jsonl()
             if d["type"] == "finding"}
    assert {"index-missing", "timeindex-missing"} <= given and not given & {"index-missing-large"}


# --- read_committed with the .txnindex files deleted ----------------------------------------------------------------


def _committed_batches(run_cli, part: Path) -> tuple[set[int], list[dict], int]:
    done = run_cli("dump", "-r", "--isolation", "read_committed", "-f", "jsonl", part)
    lines = done.jsonl()
    return ({d["base_offset"] for d in lines if d["type"] == "batch"}, _findings(lines, "read-committed-view-differs"),
            done.returncode)


def test_read_committed_view_follows_the_txnindex_the_broker_serves(corpus: Path, tmp_path: Path, run_cli) -> None:
    """txn-0's recovery point is 174: without its .txnindex files, segment 0 (trusted) serves no abort, so a
    read_committed consumer receives its aborted records (verify: txnindex-missing), while segment 174 is recovered
    at start-up and its index rebuilt (verify: txnindex-missing-rebuilt). dump's view is that, and says so."""
    logdir = _copy(corpus / "kafka" / "logdir", tmp_path / "data")
    part = logdir / "txn-0"
    shown, differs, code = _committed_batches(run_cli, part)
    assert not differs and code == 0
    assert 0 not in shown and 176 not in shown  # aborted: producer 1000 at 0..7, producer 2000 at 176..179

    for index in part.glob("*.txnindex"):
        index.unlink()
    verify = run_cli("verify", "-f", "jsonl", part)
    assert verify.returncode == 1
    lines = verify.jsonl()
    assert [d["path"] for d in _findings(lines, "txnindex-missing")] == [str(part / "00000000000000000000.txnindex")]
    assert [d["path"] for d in _findings(lines, "txnindex-missing-rebuilt")] == [
        str(part / "00000000000000000174.txnindex")]

    shown_now, differs, code = _committed_batches(run_cli, part)
    assert code == 1 and len(differs) == 1 and differs[0]["severity"] == "error"
    assert "16 aborted transactions" in differs[0]["message"]
    assert 0 in shown_now and 176 not in shown_now and shown < shown_now


# --- 4,096 zero bytes after the last batch ------------------------------------------------------------------------


@pytest.mark.parametrize("fail_on", ["warning", "error", None])
def test_zero_filled_tail_one_verdict_in_dump_and_verify(corpus: Path, tmp_path: Path, run_cli,
                                                         fail_on: str | None) -> None:
    """The same code at the same byte with the same severity (the catalogue's), and the same exit code by the one
    exit policy for the same --fail-on, and by default (both default to error: the same bytes, the same exit)."""
    part = _copy(corpus / "kafka" / "logdir" / "codecs-0", tmp_path / "codecs-0")
    log = part / "00000000000000000190.log"
    end = log.stat().st_size
    with open(log, "ab") as fh:
        fh.write(bytes(4096))
    seen = {}
    for command in ("dump", "verify"):
        done = run_cli(command, "-f", "jsonl", *(("--fail-on", fail_on) if fail_on else ()), part)
        [zero] = _findings(done.jsonl(), "zero-filled-tail")
        seen[command] = (zero["path"], zero["position"], zero["severity"], done.returncode)
    assert seen["dump"] == seen["verify"] == (str(log), end, "warning", 1 if fail_on == "warning" else 0)


# --- a log dir's malformed checkpoint ------------------------------------------------------------------------------


@pytest.mark.parametrize("named", ["log dir", "partition dirs"])
def test_a_malformed_checkpoint_is_said_once_by_every_command_that_loads_from_it(corpus: Path, tmp_path: Path,
                                                                                 run_cli, named: str) -> None:
    """Kafka's LogManager reads a malformed recovery-point or log-start checkpoint as none (it recovers from 0), and
    so do the loads of ``repair``, ``producers``, ``txns`` and ``delivery``: each says what ``verify`` says of the
    file (same code, byte and severity), once for the log dir whether the log dir or its partition dirs are named,
    and exits 1; so does ``locate`` of the log start's. They were silent (exit 0 for producers and txns), and so was
    ``verify`` of partition dirs named alone."""
    logdir = _copy(corpus / "real" / "DonaldY_kafka-2.7.1" / "kafka-logs", tmp_path / "data")
    bad = {logdir / "recovery-point-offset-checkpoint": "0\n2\nbar\n",
           logdir / "log-start-offset-checkpoint": "0\n3\nfoo 0 x\n"}
    for path, text in bad.items():
        path.write_text(text)
    paths = [logdir] if named == "log dir" else sorted(p for p in logdir.iterdir() if p.is_dir())[:3]

    def said(lines: list[dict]) -> list[tuple]:
        return sorted((d["code"], d["path"], d["position"], d["severity"]) for d in lines
                      if d["type"] == "finding" and Path(d["path"]) in bad and d["code"] == "checkpoint-malformed")

    verify = run_cli("verify", "-f", "jsonl", *paths)
    expected = said(verify.jsonl())
    assert [Path(p).name for _c, p, _pos, _sev in expected] == ["log-start-offset-checkpoint",
                                                                "recovery-point-offset-checkpoint"]
    for command in (["repair"], ["producers"], ["txns"], ["txns", "--hanging"]):
        done = run_cli(*command, "-f", "jsonl", *paths)
        assert done.returncode == 1 and said(done.jsonl()) == expected, (command, done.stdout[-2000:], done.stderr)
    sink = tmp_path / "sink.csv"
    sink.write_text("topic,partition,offset\nmyTopic,0,0\n")
    where = [logdir] if named == "log dir" else [logdir / "myTopic-0"]
    delivered = run_cli("delivery", "-f", "jsonl", "--sink", sink, *where)
    assert delivered.returncode == 1 and said(delivered.jsonl()) == expected, delivered.stdout + delivered.stderr
    # locate takes only the log start from them: it says that one
    part = paths[0] if named == "partition dirs" else sorted(p for p in logdir.iterdir() if p.is_dir())[0]
    located = run_cli("locate", "--offset", "0", "-f", "jsonl", part)
    log_start = [e for e in expected if e[1].endswith("log-start-offset-checkpoint")]
    assert said(located.jsonl()) == log_start, located.stdout
