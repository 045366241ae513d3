"""``replicas``: the unclean election of a replica outside the ISR, and what it would lose.

Expected values come from the corpus's ``case.json`` (Kafka-computed replica states: LEO, epochs, ISR, high
watermark) and from the batches each replica holds as ``dump`` lists them, or from how a scenario was built
with the project's writer; never from the code under test. Kafka's behaviour: ``Partition.makeLeader`` assigns
the new leader epoch at the elected replica's log end offset; followers truncate by the leader-epoch protocol
(``AbstractFetcherThread.truncateToEpochEndOffsets``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.election import UncleanElection
from kafkatool.logwriter import LogDirWriter
from kafkatool.partition import inspect_replicas

from .clirun import cli
from .conftest import corpus_root

CASES = corpus_root() / "kafka" / "replicas"
T0 = 1_700_000_000_000


def held(partition: Path) -> dict[int, tuple]:
    """offset -> the batch holding it (base, last, crc, leader epoch), from ``dump``."""
    lines = cli("dump", "-f", "jsonl", partition).jsonl()
    return {o: (b["base_offset"], b["last_offset"], b["crc"], b["partition_leader_epoch"])
            for b in lines if b["type"] == "batch" for o in range(b["base_offset"], b["last_offset"] + 1)}


def ranges(offsets: set[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for o in sorted(offsets):
        if out and out[-1][1] + 1 == o:
            out[-1][1] = o
        else:
            out.append([o, o])
    return out


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir() if (p / "case.json").is_file()))
def test_unclean_loss_is_what_the_candidate_lacks_below_the_high_watermark(case: str, run_cli) -> None:
    """Every corpus replica case, every replica elected (``--unclean``): the acknowledged offsets lost are those
    below the case's high watermark where the candidate does not hold the ISR leader's batch."""
    c = json.loads((CASES / case / "case.json").read_text())
    hw, leader = c["high_watermark"], c["leader"]
    truth = held(CASES / case / leader / "orders-0")
    args = [a for name in c["isr"] for a in ("--isr", name)]
    proc = run_cli("replicas", "-f", "jsonl", "--unclean", *args, CASES / case)
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    elections = {x["candidate"]: x for x in lines if x["type"] == "unclean_election"}
    assert sorted(elections) == sorted(c["brokers"])
    for name, e in elections.items():
        mine = held(CASES / case / name / "orders-0")
        lacks = {o for o in range(hw) if mine.get(o) != truth[o]}
        assert [[r["first_offset"], r["last_offset"]] for r in e["lost"]] == ranges(lacks), (case, name)
        assert e["lost_offsets"] == len(lacks) and e["high_watermark"] == hw
        assert e["in_isr"] == (name in c["isr"]) and e["candidate_leo"] == c["brokers"][name]["leo"]
        if name in c["isr"]:
            assert e["lost"] == []  # an ISR member holds everything acknowledged
    # without --unclean, only the replicas outside the ISR are elected
    proc = run_cli("replicas", "-f", "jsonl", *args, CASES / case)
    names = [x["candidate"] for x in map(json.loads, proc.stdout.splitlines()) if x["type"] == "unclean_election"]
    assert names == sorted(set(c["brokers"]) - set(c["isr"]))


def broker(root: Path, name: str, batches: list[bytes], hw: int) -> Path:
    with LogDirWriter(root / name, cluster_id="c1", node_id=1) as logdir:
        p = logdir.partition("orders", 0, bytes(range(1, 17)))
        for b in batches:
            p.append(b)
        p.high_watermark = hw
    return root / name


def test_loss_names_records_producers_and_what_followers_truncate(tmp_path: Path, run_cli) -> None:
    """Leader L and follower F (the ISR) hold 0..11: idempotent producer 4000 wrote 0..7 in 2-record batches,
    producer 5000 wrote 8..11 in one batch; HW 12. O fell out of sync after offset 3 and, in a later epoch of its
    own, wrote 4..5 (never replicated). Electing O loses 4..11 (8 records, producers 4000 and 5000); L and F
    truncate to 4; O's own 4..5 become the log."""
    def batch(offset: int, n: int, pid: int, epoch: int = 0) -> bytes:
        recs = [RecordSpec(f"k{offset + i}".encode(), b"v", T0 + offset + i) for i in range(n)]
        return record_batch(offset, recs, partition_leader_epoch=epoch, producer_id=pid, producer_epoch=0,
                            base_sequence=offset)

    isr_log = [batch(o, 2, 4000) for o in range(0, 8, 2)] + [batch(8, 4, 5000)]
    lead = broker(tmp_path, "broker-l", isr_log, hw=12)
    fol = broker(tmp_path, "broker-f", isr_log, hw=12)
    other = broker(tmp_path, "broker-o", isr_log[:2] + [batch(4, 2, 6000, epoch=1)], hw=4)
    items = list(inspect_replicas([lead, fol, other], isr=["broker-l", "broker-f"]))
    (e,) = [x for x in items if isinstance(x, UncleanElection)]
    d = e.as_dict()
    assert (d["candidate"], d["candidate_leo"], d["high_watermark"], d["new_epoch"]) == ("broker-o", 6, 12, 2)
    assert d["lost"] == [{"first_offset": 4, "last_offset": 11, "records": 8, "batches": 3,
                          "producer_ids": [4000, 5000]}]
    assert [(f["replica"], f["truncate_to"], f["offsets_removed"]) for f in d["followers"]] == [
        ("broker-l", 4, 8), ("broker-f", 4, 8)]
    text = run_cli("replicas", "--isr", "broker-l,broker-f", lead, fol, other).stdout
    assert "unclean election of broker-o" in text and "4..11 (8 records, producers 4000, 5000)" in text
