"""``metadata --all`` speaks Kafka: every record type of the real KRaft logs in the corpus is named as Kafka names it
(``MetadataRecordType``: the ``apiKey`` of ``metadata/src/main/resources/common/metadata/*.json``) and decoded,
the controller's NoOpRecord heartbeats are counted rather than listed, and no Python spelling leaks out."""

from __future__ import annotations

import re

from .conftest import corpus_root


def test_every_record_type_named_and_decoded_without_python_words(run_cli) -> None:
    real = str(corpus_root() / "real")
    rows = run_cli("metadata", "--all", "-f", "jsonl", real).jsonl()
    events = [r for r in rows if r["type"] == "metadata_record"]
    names = {r["name"] for r in events}
    assert {"NoOpRecord", "RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "RegisterControllerRecord",
            "FeatureLevelRecord", "ConfigRecord", "TopicRecord"} <= names
    assert not [n for n in names if n.startswith("type ")] and all(r["decoded"] for r in events)
    text = run_cli("metadata", "--all", real)
    # exit 1 only for the real gap between MashaKosher c335121f's newest snapshot and its log start
    assert text.returncode == 1 and "kraft-snapshot-gap" in text.stderr + text.stdout
    errors = [r for r in rows if r["type"] == "finding" and r["severity"] == "error"]
    assert [r["code"] for r in errors] == ["kraft-snapshot-gap"], errors
    assert not re.search(r"\bNone\b|\bTrue\b|\bFalse\b|\['", text.stdout)
    # heartbeats: one line per run, and the runs add up to every NoOpRecord
    heartbeat_lines = [line for line in text.stdout.splitlines() if "NoOpRecord" in line]
    counted = sum(int(re.search(r"heartbeats=(\d+)", line).group(1)) for line in heartbeat_lines)
    assert counted == sum(1 for r in events if r["name"] == "NoOpRecord") > 10 * len(heartbeat_lines)
    assert "fenced=unfence" in text.stdout and "rack=null" in text.stdout
