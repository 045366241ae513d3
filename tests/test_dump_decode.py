"""``dump --decode``: the records of Kafka's internal topics, decoded as kafka-dump-log's decoders do.

On every real broker's ``__consumer_offsets`` partition of the corpus, replaying the decoded records (the latest
commit per group/topic/partition wins, a tombstone deletes it) gives what ``offsets`` finds; the incident
fixture's ``__transaction_state`` and ``__cluster_metadata`` records read as the generator wrote them.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from kafkatool.dump import DumpOptions, dump_paths
from kafkatool.internal import decode, offsets
from kafkatool.internal.decode import DecodedRecord
from kafkatool.model import Batch

from .conftest import PROJECT_ROOT, corpus_root

INCIDENT = PROJECT_ROOT / "fixtures" / "incident"


def test_decoded_consumer_offsets_replay_to_what_offsets_finds() -> None:
    partitions = sorted(d for d in corpus_root().glob(f"real/**/{offsets.OFFSETS_TOPIC}-*") if d.is_dir())
    assert len(partitions) > 100
    replayed: dict[tuple, tuple] = {}
    pending: dict[tuple, list] = {}   # transactional commits wait for their producer's COMMIT marker
    decoded = 0
    auto = DumpOptions(records=True, decoder=functools.partial(decode.file_decoder, "auto"))  # --decode auto
    for part in partitions:
        batch = None
        for item in dump_paths([part], auto):
            if isinstance(item, Batch):
                batch = item
            elif isinstance(item, DecodedRecord):
                decoded += 1
                d = item.decoded
                assert item.error is None, (part, item.record.offset, item.error)
                if d["kind"] != "offset_commit":
                    continue
                key = (part.name, str(part.parent), d["group"], d["topic"], d["partition"])
                value = None if d["tombstone"] else (d["offset"], d["commit_timestamp"])
                if batch.transactional:
                    pending.setdefault((part, batch.producer_id), []).append((key, value))
                else:
                    replayed[key] = value
            elif getattr(item, "control_type", None) == "COMMIT":
                for key, value in pending.pop((part, batch.producer_id), []):
                    replayed[key] = value
    assert decoded > 5000
    want = {}
    for logdir in sorted({p.parent for p in partitions}):
        for c in offsets.consumer_offsets([logdir], with_lag=False):
            if isinstance(c, offsets.CommittedOffset):
                want[(c.coordinator_partition, str(logdir), c.group, c.topic, c.partition)] = (c.offset,
                                                                                              c.commit_timestamp)
    assert {k: v for k, v in replayed.items() if v is not None} == want


def test_decode_auto_picks_the_decoder_by_topic_and_says_why_a_record_does_not_decode(run_cli) -> None:
    p = run_cli("dump", "-f", "jsonl", "--decode", "auto", INCIDENT)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    by_dir: dict[str, list[dict]] = {}
    current = None
    for r in rows:
        if r["type"] == "file":
            current = Path(r["path"]).parent.name
        elif r["type"] == "record":
            by_dir.setdefault(current, []).append(r)
    assert all("decoded" not in r for r in by_dir["clicks-0"])  # not an internal topic
    txn = [(r["decoded"]["transactional_id"], r["decoded"]["state"]) for r in by_dir["__transaction_state-0"]]
    assert txn == [("payments-writer-a", "Ongoing"), ("payments-writer-b", "CompleteCommit"), ("stale-writer", "Dead")]
    meta = [r["decoded"]["name"] for r in by_dir["__cluster_metadata-0"]]
    assert meta[:3] == ["TopicRecord", "PartitionRecord", "ConfigRecord"]
    assert by_dir["__cluster_metadata-0"][2]["decoded"]["fields"]["name"] == "min.insync.replicas"
    # a named decoder on records that are not its topic's: each record says why, nothing crashes
    p = run_cli("dump", "-f", "jsonl", "--decode", "transaction-state", INCIDENT / "clicks-0")
    recs = [json.loads(x) for x in p.stdout.splitlines() if '"record"' in x]
    assert recs and all(r["decoded"] is None and r["decode_error"] for r in recs)
    text = run_cli("dump", "--decode", "consumer-offsets", INCIDENT / "__consumer_offsets-0").stdout
    assert "group=billing" in text and "None" not in text and "True" not in text
    assert run_cli("dump", "--decode", "nope", INCIDENT).returncode == 2


def test_offsets_on_partitions_without_commits_says_so(run_cli) -> None:
    """``offsets`` on a __consumer_offsets partition holding no commit and no group printed nothing and exited 0;
    it now says so, as a warning (exit 1); a log dir with commits is unchanged (exit 0)."""
    raft = corpus_root() / "real/hiage_kafka-raft/c5f680e5/kafka1"
    empty = [p for p in sorted(raft.glob(f"{offsets.OFFSETS_TOPIC}-*"))
             if not any(isinstance(i, (offsets.CommittedOffset, offsets.GroupState))
                        for i in offsets.consumer_offsets([p], with_lag=False))]
    assert empty
    p = run_cli("offsets", empty[0])
    assert p.returncode == 1 and "offsets-empty" in p.stdout and empty[0].name in p.stdout
    p = run_cli("offsets", raft)
    assert p.returncode == 0 and "offsets-empty" not in p.stdout and "group console-consumer" in p.stdout
