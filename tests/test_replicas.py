"""``replicas``, ``truncation`` and ``epochs``: against the corpus cases Kafka's classes computed, and on scenarios
built with the project's own writer (the HW-truncation data loss, divergence, an unclean election).

Expected values come from ``case.json`` or from how a scenario was built (which batches each broker got), never
from the code under test.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from kafkatool.build import RecordSpec, end_transaction_marker, record_batch
from kafkatool.epochs import EpochCache
from kafkatool.formats.checkpoints import build_epoch_checkpoint
from kafkatool.logwriter import LogDirWriter
from kafkatool.model import Batch, Finding
from kafkatool.partition import PartitionReplicas, ReplicaState, inspect_replicas
from kafkatool.records import scan
from kafkatool.replicas import EpochHistory, EpochRow, epoch_history
from kafkatool.smallfiles import (
    TimeIndexEntry,
    read_offset_checkpoint,
    read_offset_index,
    read_time_index,
    read_txn_index,
)
from kafkatool.truncation import Truncation, truncations
from kafkatool.verify import verify_paths

from .conftest import corpus_root
from .test_min_isr import isr_change, metadata_log, partition_record, topic_record

CASES = corpus_root() / "kafka" / "replicas"
T0 = 1_700_000_000_000
TOPIC_ID = bytes(range(1, 17))


def case_names() -> list[str]:
    names = sorted(p.name for p in CASES.iterdir() if (p / "case.json").is_file())
    assert {"in-sync", "lagging", "divergent", "hw-loss"} <= set(names)
    return names


def load(case: str) -> dict:
    return json.loads((CASES / case / "case.json").read_text())


def report(paths: list[Path], **kw) -> tuple[dict[str, ReplicaState], PartitionReplicas, list[Finding]]:
    items = list(inspect_replicas(paths, **kw))
    states = {x.name: x for x in items if isinstance(x, ReplicaState)}
    (part,) = [x for x in items if isinstance(x, PartitionReplicas)]
    return states, part, [x for x in items if isinstance(x, Finding)]


def truncate(leader: Path, follower: Path, **kw) -> dict[str, Truncation]:
    return {t.rule: t for t in truncations(leader, follower, **kw) if isinstance(t, Truncation)}


def pair(part: PartitionReplicas, a: str, b: str):
    (d,) = [d for d in part.divergence if {d.a_name, d.b_name} == {a, b}]
    return d


# --- the corpus cases ----------------------------------------------------------------------------------


def epoch_at(epochs: list[list[int]], offset: int) -> int:
    return [e for e, start in epochs if start <= offset][-1]


def expected_divergence(a: dict, b: dict) -> int | None:
    """From case.json alone: the first offset both replicas hold whose leader epoch differs (a leader epoch is one
    leader's writes, so the same epoch at an offset is the same batch; these cases have one log start, 0)."""
    for offset in range(min(a["leo"], b["leo"])):
        if epoch_at(a["epochs"], offset) != epoch_at(b["epochs"], offset):
            return offset
    return None


@pytest.mark.parametrize("case", case_names())
def test_replica_state_and_isr_high_watermark_equal_case_json(case: str) -> None:
    c = load(case)
    states, part, _findings = report([CASES / case], isr=c["isr"])
    assert set(states) == set(c["brokers"])
    for name, exp in c["brokers"].items():
        s = states[name]
        assert (s.leo, s.log_start_offset, s.hw_checkpoint, s.recovery_point) == (
            exp["leo"], exp["log_start_offset"], exp["hw_checkpoint"], exp["recovery_point"]), name
        assert ([list(e) for e in s.epochs], s.latest_epoch) == (exp["epochs"], exp["latest_epoch"]), name
        assert s.in_isr == (name in c["isr"])
        assert s.lag == max(e["leo"] for e in c["brokers"].values()) - exp["leo"]
    assert part.isr_hw == c["high_watermark"]
    topic, number = c["topic_partition"].rsplit("-", 1)
    assert (part.topic, part.partition) == (topic, int(number))


@pytest.mark.parametrize("case", case_names())
def test_divergence_equals_what_case_json_implies(case: str) -> None:
    c = load(case)
    _states, part, findings = report([CASES / case])
    names = sorted(c["brokers"])
    diverged = 0
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            want = expected_divergence(c["brokers"][a], c["brokers"][b])
            d = pair(part, a, b)
            assert d.first_divergent_offset == want, (a, b)
            diverged += want is not None
            if want is None:  # one is a prefix of the other: the longer one holds exactly the rest
                ends = sorted([(c["brokers"][a]["leo"], a), (c["brokers"][b]["leo"], b)])
                side = d.only_a if ends[1][1] == d.a_name else d.only_b
                assert side.offsets == ends[1][0] - ends[0][0]
    assert len([f for f in findings if f.code == "replicas-diverge"]) == diverged
    assert (case == "divergent") == (diverged > 0)


@pytest.mark.parametrize("case", case_names())
def test_truncation_under_both_rules_equals_case_json(case: str) -> None:
    c = load(case)
    leader = CASES / case / c["leader"]
    followers = {n: b for n, b in c["brokers"].items() if "truncation" in b}
    assert followers
    for name, exp in followers.items():
        got = truncate(leader, CASES / case / name)
        t = exp["truncation"]
        assert got["epoch"].truncate_to == t["epoch_rule_truncate_to"], name
        assert got["hw"].truncate_to == t["hw_rule_truncate_to"], name
        assert got["epoch"].steps == t["steps"], name
        assert got["epoch"].offsets_removed == t["offsets_removed_by_epoch_rule"]
        assert got["hw"].offsets_removed == t["offsets_removed_by_hw_rule"]
        for rule in ("epoch", "hw"):  # what is listed as discarded is exactly [truncate_to, LEO)
            r = got[rule]
            covered = sum(b.last_offset - b.base_offset + 1 for b in r.lost)
            assert r.follower_leo == exp["leo"] and covered == r.offsets_removed == exp["leo"] - r.truncate_to
            assert all(b.last_offset >= r.truncate_to for b in r.lost)
        acked = t["acknowledged_offsets_lost_by_hw_rule"]
        if acked:  # the acknowledged offsets the HW rule drops: discarded by it, flagged acknowledged
            flagged = {o for b in got["hw"].lost if b.acknowledged for o in range(b.base_offset, b.last_offset + 1)}
            assert set(range(acked[0], acked[1] + 1)) <= flagged
            assert got["hw"].acknowledged_at_risk == [acked]


def test_truncation_plan_cuts_at_the_first_discarded_batch() -> None:
    """divergent: broker-1 follows broker-2; the epoch rule cuts its only segment where offset 40 starts."""
    follower = CASES / "divergent" / "broker-1" / "orders-0"
    log = follower / "00000000000000000000.log"
    with open(log, "rb") as fh:
        position = next(b.position for b in scan(fh, str(log)) if isinstance(b, Batch) and b.last_offset >= 40)
    plan = truncate(CASES / "divergent" / "broker-2", follower)["epoch"].plan
    assert plan is not None and plan.truncate_to == 40
    (seg,) = plan.segments
    assert (seg.action, seg.keep_bytes, seg.size) == ("truncate", position, log.stat().st_size)
    assert plan.delete_snapshots == (str(follower / "00000000000000000050.snapshot"),)
    assert dict(plan.checkpoints) == {str(follower.parent / "replication-offset-checkpoint"): 40,
                                      str(follower.parent / "recovery-point-offset-checkpoint"): 40}
    assert plan.epoch_checkpoint is None  # [(0, 0)] stays as it is


# --- scenarios built with the writer ------------------------------------------------------------------------


class Msg(NamedTuple):
    base: int
    last: int
    raw: bytes


def msg(offset: int, value: str, epoch: int, n: int = 1) -> Msg:
    recs = [RecordSpec(f"k{offset + i}".encode(), f"{value}/{i}".encode(), T0 + offset + i) for i in range(n)]
    return Msg(offset, offset + n - 1, record_batch(offset, recs, partition_leader_epoch=epoch))


def broker(root: Path, name: str, batches: list[Msg], hw: int | None) -> Path:
    """A log dir holding ``orders-0`` with these batches, shut down cleanly, with this high watermark."""
    with LogDirWriter(root / name, cluster_id="c1", node_id=1) as logdir:
        p = logdir.partition("orders", 0, TOPIC_ID)
        for b in batches:
            p.append(b.raw)
        p.high_watermark = hw
    return root / name


def log_bytes(logdir: Path) -> bytes:
    return b"".join(f.read_bytes() for f in sorted((logdir / "orders-0").glob("*.log")))


def test_hw_rule_loses_an_acknowledged_message_that_the_epoch_rule_keeps(tmp_path: Path) -> None:
    """KIP-101 scenario 1. B leads, A follows; both hold m0, m1, so m1 is acknowledged (B's HW 2), but A's HW
    checkpoint still says 1 when A restarts. Then B fails and A becomes the leader."""
    m = [msg(0, "m0", 0), msg(1, "m1", 0)]
    b = broker(tmp_path / "before", "broker-b", m, hw=2)
    a = broker(tmp_path / "before", "broker-a", m, hw=1)

    rejoin = truncate(b, a)  # A restarts and follows B
    assert rejoin["epoch"].truncate_to == 2 and rejoin["epoch"].lost == []
    hw = rejoin["hw"]
    assert hw.truncate_to == 1
    assert [(x.base_offset, x.on_leader, x.acknowledged) for x in hw.lost] == [(1, True, True)]
    assert hw.acknowledged_at_risk == [[1, 1]] and not hw.data_loss

    # HW world: A truncated m1 away, B fails, A leads (its log is what the HW rule left); B comes back as follower.
    a_hw = broker(tmp_path / "hw", "broker-a", [x for x in m if x.last < hw.truncate_to], hw=1)
    back = truncate(a_hw, b, rules=("hw",))["hw"]
    assert back.truncate_to == 1  # its fetch from HW 2 is out of range: truncate to A's log end
    assert [(x.base_offset, x.on_leader, x.acknowledged) for x in back.lost] == [(1, False, True)]
    assert back.data_loss and back.acknowledged_lost == [[1, 1]]
    assert m[1].raw not in log_bytes(a_hw)  # the acknowledged m1 is on no replica any more

    # Epoch world: A kept m1, leads in epoch 1 and takes m2; B comes back and keeps everything.
    a_ep = broker(tmp_path / "epoch", "broker-a",
                  [x for x in m if x.last < rejoin["epoch"].truncate_to] + [msg(2, "m2", 1)], hw=3)
    back = truncate(a_ep, b)["epoch"]
    assert back.truncate_to == 2 and back.lost == [] and not back.data_loss
    assert m[1].raw in log_bytes(a_ep)
    _s, part, _f = report([a_ep, b])
    assert pair(part, "broker-a", "broker-b").relation in ("a-ahead", "b-ahead")  # a prefix, no divergence


def test_divergence_stays_with_the_hw_rule_and_converges_with_the_epoch_rule(tmp_path: Path, run_cli) -> None:
    """KIP-101 scenario 2. A leads in epoch 0 and writes m0, m1 (A's HW 2, B's HW 1). Both crash; B restarts first,
    keeps only m0 (its HW), leads in epoch 1 and writes m3 at offset 1. Then A comes back as a follower."""
    m = [msg(0, "m0", 0), msg(1, "m1", 0)]
    a = broker(tmp_path, "broker-a", m, hw=2)
    b_log = [m[0], msg(1, "m3", 1)]
    b = broker(tmp_path, "broker-b", b_log, hw=2)

    _s, part, findings = report([a, b])
    assert pair(part, "broker-a", "broker-b").first_divergent_offset == 1
    assert [f.code for f in findings] == ["replicas-diverge"]

    got = truncate(b, a)
    hw, ep = got["hw"], got["epoch"]
    assert hw.truncate_to == 2 and hw.lost == [] and hw.keeps_divergence_from == 1  # m1 stays, m3 never arrives
    assert ep.truncate_to == 1 and ep.keeps_divergence_from is None
    assert ep.steps[0]["leader_epoch"] == 0 and ep.steps[0]["leader_end_offset"] == 1
    assert [(x.base_offset, x.partition_leader_epoch, x.on_leader) for x in ep.lost] == [(1, 0, False)]

    # Each rule applied, then the follower fetches the leader's batches from the truncation offset on:
    for rule, diverges in (("epoch", None), ("hw", 1)):
        t = got[rule].truncate_to
        after = broker(tmp_path / rule, "broker-a", [x for x in m if x.last < t] + [x for x in b_log if x.base >= t],
                       hw=2)
        _s, part, _f = report([after, b])
        d = pair(part, "broker-a", "broker-b")
        assert d.first_divergent_offset == diverges, rule
        if diverges is None:
            assert d.relation == "identical"

    proc = run_cli("truncation", "--leader", b, "--follower", a)
    assert proc.returncode == 1 and "stays inconsistent" in proc.stdout, proc.stderr
    assert run_cli("truncation", "--rule", "epoch", "--leader", b, "--follower", a).returncode == 1  # m1 is lost


def test_unclean_election_reports_the_offsets_the_old_isr_loses(tmp_path: Path, run_cli) -> None:
    """L leads epoch 0 with F in sync: offsets 0..9, HW 10. O fell out of sync at 4. L and F fail; O is elected
    (unclean), leads epoch 1 and writes 4..7. L comes back as a follower."""
    isr_log = [msg(o, f"isr-{o}", 0, n=2) for o in range(0, 10, 2)]
    old = broker(tmp_path, "broker-l", isr_log, hw=10)
    f = broker(tmp_path, "broker-f", isr_log, hw=10)
    new_leader_log = [x for x in isr_log if x.last < 4] + [msg(4, "o-4", 1, n=2), msg(6, "o-6", 1, n=2)]
    o = broker(tmp_path, "broker-o", new_leader_log, hw=8)
    isr_raw = {x.raw for x in isr_log}
    kept_by_o = {off for x in new_leader_log if x.raw in isr_raw for off in range(x.base, x.last + 1)}
    lost_from_isr = {off for x in isr_log for off in range(x.base, x.last + 1)} - kept_by_o

    states, part, _f = report([old, f, o], isr=["broker-l", "broker-f"])
    assert part.isr_hw == 10 and not states["broker-o"].in_isr
    assert pair(part, "broker-l", "broker-o").first_divergent_offset == 4
    assert pair(part, "broker-l", "broker-f").relation == "identical"

    for follower in (old, f):
        got = truncate(o, follower)
        ep = got["epoch"]
        assert ep.truncate_to == 4
        lost = {x for b in ep.lost for x in range(b.base_offset, b.last_offset + 1)}
        assert lost == lost_from_isr and min(lost) == 4
        assert ep.acknowledged_lost == [[4, 9]] and ep.data_loss and all(not b.on_leader for b in ep.lost)
        hw = got["hw"]  # truncates to the new leader's end, keeps its own 4..7 next to the leader's: inconsistent
        assert hw.truncate_to == 8 and hw.keeps_divergence_from == 4

    proc = run_cli("truncation", "-f", "jsonl", "--rule", "epoch", "--leader", o, "--follower", old)
    assert proc.returncode == 1, proc.stderr
    (line,) = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [(b["base_offset"], b["last_offset"], b["partition_leader_epoch"]) for b in line["lost"]] == [
        (x.base, x.last, 0) for x in isr_log if x.base >= 4]


@pytest.mark.parametrize("seed", range(12))
def test_epoch_rule_truncates_to_the_end_of_the_common_history(tmp_path: Path, seed: int) -> None:
    """Random histories: a common prefix, then epochs only the leader or only the follower led (the leader's
    last epoch is the newest). KIP-279's loop must end exactly where the two logs stop sharing batches, as
    the batch-by-batch comparison sees it, however many rounds it takes."""
    rng = random.Random(seed)
    common: list[tuple[int, str]] = [(e, f"c{e}") for e in sorted(rng.sample(range(4), rng.randint(1, 3)))]
    last_common = common[-1][0]
    extra = [(last_common, f"x{i}") for i in range(rng.randint(0, 3))]  # more of the last shared epoch
    pool = list(range(last_common + 1, last_common + 7))
    owners = {e: rng.choice(("leader", "follower", None)) for e in pool}
    owners[pool[-1]] = "leader"
    k_l, k_f = rng.randint(0, len(extra)), rng.randint(0, len(extra))

    def build(side: str, keep_extra: int) -> list[Msg]:
        plan = common + extra[:keep_extra] + [(e, f"{side}{e}") for e in pool if owners[e] == side]
        out, offset = [], 0
        for epoch, tag in plan:
            n = rng.randint(1, 3) if tag[0] not in "cx" else 2
            out.append(msg(offset, tag, epoch, n))
            offset += n
        return out

    leader_log, follower_log = build("leader", k_l), build("follower", k_f)
    common_end = 2 * (len(common) + min(k_l, k_f))
    leader = broker(tmp_path, "broker-l", leader_log, hw=0)
    follower = broker(tmp_path, "broker-f", follower_log, hw=0)
    _s, part, _f = report([leader, follower])
    d = pair(part, "broker-l", "broker-f")
    shared = d.first_divergent_offset if d.first_divergent_offset is not None else min(
        leader_log[-1].last, follower_log[-1].last) + 1
    ep = truncate(leader, follower, rules=("epoch",))["epoch"]
    assert ep.truncate_to == shared == min(common_end, follower_log[-1].last + 1), ep.steps
    assert len(ep.steps) >= 1 and ep.steps[-1]["truncate_to"] == ep.truncate_to


def _leader_past_the_follower(tmp_path: Path) -> tuple[int, Path]:
    """broker-l whose retention deleted its first two segments, and broker-f holding only offsets 0..1: the
    leader's new log start offset, and the follower's log dir."""
    with LogDirWriter(tmp_path / "broker-l", cluster_id="c1", node_id=1) as logdir:
        p = logdir.partition("orders", 0, TOPIC_ID, segment_bytes=250)
        for o in range(0, 20, 2):
            p.append(msg(o, "l", 0, n=2).raw)
    for base in p.segment_base_offsets[:2]:
        for f in (tmp_path / "broker-l" / "orders-0").glob(f"{base:020d}.*"):
            f.unlink()
    return p.segment_base_offsets[2], broker(tmp_path, "broker-f", [msg(0, "l", 0, n=2)], hw=2)


def test_a_follower_behind_the_leaders_log_start_starts_over_there(tmp_path: Path) -> None:
    """The leader's retention removed everything the follower has: its fetch is out of range and it empties its
    log (``truncateFullyAndStartAt``). Not data lost by the truncation: the leader had dropped it already."""
    start, follower = _leader_past_the_follower(tmp_path)
    for rule, t in truncate(tmp_path / "broker-l", follower).items():
        assert t.full_truncation and not t.data_loss, rule
        assert [(b.base_offset, b.below_leader_log_start) for b in t.lost] == [(0, True)]
        assert t.plan is not None and t.plan.start_fresh_at == start
        assert [s.action for s in t.plan.segments] == ["delete"]


def test_epoch_cache_follows_leader_epoch_file_cache() -> None:
    cache = EpochCache([(0, 0), (2, 50), (1, 40)])  # assign(1, 40) drops (2, 50): epochs and offsets increase
    assert cache.entries == [(0, 0), (1, 40)]
    cache = EpochCache([(0, 0), (1, 40), (3, 60)])
    assert cache.end_offset_for(3, 90) == (3, 90)    # the latest epoch: the log end
    assert cache.end_offset_for(2, 90) == (1, 60)    # unknown: the floor epoch, ending where the next starts
    assert cache.end_offset_for(4, 90) == (-1, -1)   # above every epoch
    low = EpochCache([(5, 100)])
    assert low.end_offset_for(2, 200) == (2, 100)    # below every epoch: the requested one, the first start
    cache.truncate_from_start(45)
    assert cache.entries == [(1, 45), (3, 60)]
    cache.truncate_from_end(60)
    assert cache.entries == [(1, 45)]


def test_last_stable_offset_from_snapshot_and_from_the_log(tmp_path: Path) -> None:
    """An open transaction from offset 2 (no marker): the LSO stops there, whether the producer state comes
    from the snapshot taken at shutdown or from replaying the log; a COMMIT marker releases it.

    ``UnifiedLog.rebuildProducerState``: after a clean shutdown with no snapshot file at all (the upgrade path) the
    broker assumes no producer state and replays nothing, so without the marker file the log is replayed."""
    txn = record_batch(2, [RecordSpec(b"k", b"v", T0), RecordSpec(b"k", b"w", T0 + 1)], producer_id=7000,
                       producer_epoch=0, base_sequence=0, transactional=True)
    batches = [msg(0, "a", 0, n=2), Msg(2, 3, txn), msg(4, "b", 0)]
    open_ = broker(tmp_path / "open", "broker-1", batches, hw=5)
    marker = end_transaction_marker(5, True, producer_id=7000, producer_epoch=0, coordinator_epoch=0, timestamp=T0)
    closed = broker(tmp_path / "closed", "broker-1", [*batches, Msg(5, 5, marker)], hw=6)
    copy = shutil.copytree(open_, tmp_path / "copy" / "broker-1")
    for snap in (copy / "orders-0").glob("*.snapshot"):
        snap.unlink()
    upgraded = shutil.copytree(copy, tmp_path / "upgraded" / "broker-1")
    (copy / ".kafka_cleanshutdown").unlink()
    states, _p, _f = report([open_, closed, copy, upgraded])
    by_path = {s.path: s for s in states.values()}
    s_open, s_closed, s_copy, s_upgraded = (by_path[str(d / "orders-0")] for d in (open_, closed, copy, upgraded))
    assert (s_open.lso, s_open.first_unstable_offset, s_open.open_transactions) == (2, 2, 1)
    assert (s_copy.lso, s_copy.first_unstable_offset) == (2, 2)
    assert (s_upgraded.lso, s_upgraded.first_unstable_offset) == (5, None)
    assert (s_closed.lso, s_closed.first_unstable_offset) == (6, None)


def test_a_transaction_open_before_the_log_start_is_known_from_the_snapshot(tmp_path: Path) -> None:
    """Retention deleted the segment where producer 7000's transaction began; only the producer snapshot taken at
    the next segment's base remembers it. The broker loads that snapshot, so the LSO stays at the log start."""
    txn = record_batch(2, [RecordSpec(b"k", b"v", T0)], producer_id=7000, producer_epoch=0, base_sequence=0,
                       transactional=True)
    batches = [msg(0, "a", 0, n=2), Msg(2, 2, txn)] + [msg(o, "b", 0, n=2) for o in range(3, 15, 2)]
    with LogDirWriter(tmp_path / "broker-1", cluster_id="c1", node_id=1) as logdir:
        p = logdir.partition("orders", 0, TOPIC_ID, segment_bytes=300)
        for b in batches:
            p.append(b.raw)
    bases = p.segment_base_offsets
    assert len(bases) >= 3 and bases[1] > 2
    shutil.copytree(tmp_path / "broker-1", tmp_path / "broker-2")  # a replica whose retention has not run yet
    for f in (tmp_path / "broker-1" / "orders-0").glob(f"{0:020d}.*"):
        f.unlink()  # retention
    states, part, _f = report([tmp_path])
    assert (states["broker-1"].log_start_offset, states["broker-1"].lso) == (bases[1], bases[1])
    assert (states["broker-2"].log_start_offset, states["broker-2"].lso) == (0, 2)
    assert states["broker-1"].leo == states["broker-2"].leo == batches[-1].last + 1
    d = pair(part, "broker-1", "broker-2")  # what retention removed is not divergence
    assert d.first_divergent_offset is None and d.relation == "identical"
    side = d.only_a if d.a_name == "broker-2" else d.only_b
    assert [(r.kind, r.first_offset, r.last_offset) for r in side.runs] == [("below-log-start", 0, bases[1] - 1)]


def test_same_epoch_different_bytes_is_divergence_the_epoch_rule_cannot_see(tmp_path: Path) -> None:
    m = [msg(0, "m0", 0), msg(1, "m1", 0)]
    a = broker(tmp_path, "broker-a", m, hw=2)
    c = broker(tmp_path, "broker-c", [m[0], msg(1, "not-m1", 0)], hw=2)
    _s, part, _f = report([a, c])
    assert pair(part, "broker-a", "broker-c").first_divergent_offset == 1
    ep = truncate(c, a, rules=("epoch",))["epoch"]
    assert ep.truncate_to == 2 and ep.keeps_divergence_from == 1  # same epochs: the protocol keeps offset 1


def test_damage_ends_the_log_where_recovery_would(tmp_path: Path, run_cli) -> None:
    src = CASES / "divergent"
    for name in ("broker-2", "broker-3"):
        shutil.copytree(src / name, tmp_path / name)
    log = tmp_path / "broker-2" / "orders-0" / "00000000000000000000.log"
    log.chmod(0o644)
    with open(log, "rb") as fh:
        batches = [b for b in scan(fh, str(log)) if isinstance(b, Batch)]
    victim = next(b for b in batches if b.base_offset >= 60)
    data = bytearray(log.read_bytes())
    data[victim.position + victim.size - 1] ^= 0xFF  # inside the records: the CRC no longer matches
    log.write_bytes(bytes(data))

    states, part, findings = report([tmp_path])
    s = states["broker-2"]
    assert s.leo == victim.base_offset and s.damaged_at == {"path": str(log), "position": victim.position,
                                                            "code": "crc-mismatch"}
    assert ("crc-mismatch", victim.position) in {(f.code, f.position) for f in findings}
    d = pair(part, "broker-2", "broker-3")  # the undamaged copy just has more: no divergence
    assert d.first_divergent_offset is None and d.relation == ("a-ahead" if d.a_name == "broker-3" else "b-ahead")
    assert run_cli("replicas", tmp_path).returncode == 1


def test_epochs_flags_an_epoch_missing_from_the_checkpoint(tmp_path: Path, run_cli) -> None:
    logdir = broker(tmp_path, "broker-1", [msg(0, "a", 0, n=2), msg(2, "b", 2, n=2)], hw=4)
    part = logdir / "orders-0"
    (part / "leader-epoch-checkpoint").write_bytes(build_epoch_checkpoint([(0, 0)]))
    items = list(epoch_history([part]))
    rows = {x.epoch: x for x in items if isinstance(x, EpochRow)}
    assert (rows[0].status, rows[2].status, rows[2].log_start) == ("ok", "missing from checkpoint", 2)
    assert any(isinstance(x, Finding) and x.code == "epoch-missing-from-checkpoint" for x in items)
    (history,) = [x for x in items if isinstance(x, EpochHistory)]
    assert history.cache == ((0, 0),)  # a clean shutdown: the broker loads the checkpoint as it is
    (logdir / ".kafka_cleanshutdown").unlink()
    (history,) = [x for x in epoch_history([part]) if isinstance(x, EpochHistory)]
    assert history.cache == ((0, 0), (2, 2))  # unclean: recovery re-reads the batches and assigns their epochs
    proc = run_cli("epochs", part)
    assert proc.returncode == 1 and "missing from checkpoint" in proc.stdout, proc.stderr


# --- the command line ---------------------------------------------------------------------------------------

REPLICA_KEYS = {"type", "path", "topic", "partition", "log_start_offset", "leo", "hw_checkpoint", "recovery_point",
                "lso", "latest_epoch"}
TRUNCATION_KEYS = {"type", "rule", "truncate_to", "follower_leo", "lost"}


def test_cli_replicas_jsonl_contract_and_exit_codes(run_cli) -> None:
    c = load("divergent")
    args = [a for name in c["isr"] for a in ("--isr", name)]
    proc = run_cli("replicas", "-f", "jsonl", *args, CASES / "divergent")
    assert proc.returncode == 1, proc.stderr  # broker-1 diverges
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    replicas = [x for x in lines if x["type"] == "replica"]
    assert len(replicas) == 3 and all(REPLICA_KEYS <= set(r) for r in replicas)
    (part,) = [x for x in lines if x["type"] == "partition"]
    assert part["isr_hw"] == c["high_watermark"]
    assert {"a", "b", "first_divergent_offset"} <= set(part["divergence"][0])
    # after the partition: the unclean election of the replica outside the ISR
    assert [x["candidate"] for x in lines[lines.index(part) + 1:]] == ["broker-1"]
    text = run_cli("replicas", CASES / "in-sync" / "broker-1", CASES / "in-sync" / "broker-2" / "orders-0")
    assert text.returncode == 0 and "ISR high watermark 60" in text.stdout, text.stderr


def test_cli_truncation_and_epochs(run_cli) -> None:
    proc = run_cli("truncation", "-f", "jsonl", "--leader", CASES / "hw-loss" / "broker-1", "--follower",
                   CASES / "hw-loss" / "broker-2")
    # the HW rule drops 45..49, but the leader has them: no data lost, yet the exposure is a warning, and truncation
    # exits on it by default as replicas does on the same bytes
    assert proc.returncode == 1, proc.stderr
    found = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [x["code"] for x in found if x["type"] == "finding"] == ["acknowledged-offsets-exposed"]  # a warning
    lines = [x for x in found if x["type"] == "truncation"]
    assert [x["rule"] for x in lines] == ["epoch", "hw"] and all(TRUNCATION_KEYS <= set(x) for x in lines)
    assert {k for x in lines for b in x["lost"] for k in b} >= {"base_offset", "last_offset", "partition_leader_epoch"}
    assert run_cli("epochs", CASES / "divergent" / "broker-2" / "orders-0").returncode == 0


def test_cli_usage_errors_and_help(run_cli) -> None:
    one = CASES / "in-sync" / "broker-1"
    assert run_cli("replicas", one).returncode == 2  # one replica: nothing to compare
    assert run_cli("replicas", "--isr", "broker-9", CASES / "in-sync").returncode == 2
    assert run_cli("truncation", "--leader", one, "--follower", one).returncode == 2
    other = CASES / "in-sync" / "broker-2"
    assert run_cli("truncation", "--rule", "x", "--leader", one, "--follower", other).returncode == 2
    assert run_cli("epochs", "/no/such/dir").returncode == 2
    for cmd in ("replicas", "truncation", "epochs"):
        proc = run_cli(cmd, "--help")
        assert proc.returncode == 0 and "Examples" in proc.stdout


# --- truncation --apply -------------------------------------------------------------------------------------

DIVERGENT = CASES / "divergent"


def copy_brokers(dst: Path, *names: str) -> Path:
    """Writable copies of the divergent case's log dirs (the corpus is read-only and stays untouched)."""
    for name in names:
        shutil.copytree(DIVERGENT / name, dst / name)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> sha256), skipping the lock file."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


def batches_of(log: Path) -> list[Batch]:
    with open(log, "rb") as fh:
        return [b for b in scan(fh, str(log)) if isinstance(b, Batch)]


def no_errors(path: Path) -> bool:
    return not [f for f in verify_paths([path]) if getattr(f, "severity", None) == "error"]


@pytest.mark.parametrize("rule", ["epoch", "hw"])
def test_apply_truncates_the_follower_to_the_rules_offset(tmp_path: Path, rule: str, run_cli) -> None:
    """divergent: broker-1 follows broker-2. Applied, the follower's log is its old log's first bytes up to the first
    discarded batch, its indexes the entries below the cut, the backup has the originals, and nothing is left to
    do; the expected offsets come from case.json."""
    want = load("divergent")["brokers"]["broker-1"]["truncation"][f"{rule}_rule_truncate_to"]
    root = copy_brokers(tmp_path, "broker-1", "broker-2")
    follower, leader, backup = root / "broker-1", root / "broker-2", tmp_path / "backup"
    seg = follower / "orders-0" / "00000000000000000000"
    original = tree(follower)
    original_log = seg.with_suffix(".log").read_bytes()
    original_index = read_offset_index(seg.with_suffix(".index"))
    original_time = read_time_index(seg.with_suffix(".timeindex"))
    cut = next(b.position for b in batches_of(seg.with_suffix(".log")) if b.last_offset >= want)

    proc = run_cli("truncation", "-f", "jsonl", "--rule", rule, "--apply", "--backup-dir", backup, "--leader", leader,
                   "--follower", follower)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (line,) = [json.loads(x) for x in proc.stdout.splitlines()]
    assert TRUNCATION_KEYS <= set(line) and line["type"] == "truncation" and line["rule"] == rule
    assert (line["truncate_to"], line["applied"], line["backup_dir"]) == (want, True, str(backup))

    assert seg.with_suffix(".log").read_bytes() == original_log[:cut]
    index, time_index = read_offset_index(seg.with_suffix(".index")), read_time_index(seg.with_suffix(".timeindex"))
    assert all(e.offset < want for e in index) and index == original_index[:len(index)]
    kept_time = [e for e in original_time if e.offset < want]
    assert all(e.offset < want for e in time_index) and time_index[:len(kept_time)] == kept_time
    # then the entry LogSegment.close appends: the largest timestamp of the batches kept, where it was reached
    largest = max((b for b in batches_of(seg.with_suffix(".log"))), key=lambda b: b.max_timestamp)
    assert time_index[len(kept_time):] in ([], [TimeIndexEntry(largest.max_timestamp, largest.last_offset)])
    assert time_index[-1].timestamp == largest.max_timestamp
    assert [e for e in original_index if e.offset < want] == index  # nothing below the cut was dropped
    assert not list((follower / "orders-0").glob("*.snapshot"))  # the one at 50 was past the cut
    states, _p, _f = report([leader, follower])
    assert (states["broker-1"].leo, states["broker-1"].hw_checkpoint) == (want, want)
    assert states["broker-1"].recovery_point == want
    assert no_errors(follower)

    after = tree(follower)
    changed = {rel for rel, digest in original.items() if after.get(rel) != digest}
    assert "orders-0/00000000000000000000.log" in changed
    # the segment's backup is the bytes cut, not the segment
    assert (backup / "orders-0/00000000000000000000.log.removed").read_bytes() == original_log[cut:]
    assert not (backup / "orders-0/00000000000000000000.log").exists()

    again = truncate(leader, follower, rules=(rule,))[rule]  # idempotent: nothing left to do
    assert again.truncate_to == again.follower_leo == want and again.plan is not None and not again.plan.changes
    rerun = run_cli("truncation", "-f", "jsonl", "--rule", rule, "--apply", "--backup-dir", backup, "--leader", leader,
                    "--follower", follower)
    assert rerun.returncode == 0 and json.loads(rerun.stdout)["applied"] is False, rerun.stderr
    assert tree(follower) == after
    # ... and the backup gives every original byte back
    assert run_cli("repair", "--restore", backup, "--apply").returncode == 0
    assert tree(follower) == original


def test_apply_text_output_and_dry_run_change_nothing(tmp_path: Path, run_cli) -> None:
    root = copy_brokers(tmp_path, "broker-1", "broker-2")
    before = tree(root)
    args = ("--leader", root / "broker-2" / "orders-0", "--follower", root / "broker-1" / "orders-0")
    dry = run_cli("truncation", "--rule", "epoch", *args)
    assert dry.returncode == 1 and "plan (not applied)" in dry.stdout, dry.stderr  # 40..44 lost: acknowledged
    assert run_cli("truncation", *args).returncode == 1
    for bad in (("--apply",), ("--apply", "--rule", "both")):
        proc = run_cli("truncation", *bad, *args)
        assert proc.returncode == 2 and "--rule" in proc.stderr, (bad, proc.stderr)
    assert tree(root) == before
    done = run_cli("truncation", "--rule", "hw", "--apply", "--backup-dir", tmp_path / "bk", *args)
    assert done.returncode == 0, done.stderr
    assert f"applied (originals in {tmp_path / 'bk'})" in done.stdout and "plan (not applied)" not in done.stdout


HOLD_LOCK = """
import fcntl, sys, time
fh = open(sys.argv[1], "a+")
fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a Kafka broker takes (FileChannel.tryLock)
print("locked", flush=True)
time.sleep(60)
"""


def test_apply_refuses_a_follower_whose_lock_is_held(tmp_path: Path, run_cli) -> None:
    root = copy_brokers(tmp_path, "broker-1", "broker-2")
    lock = root / "broker-1" / ".lock"
    lock.touch()
    args = ("truncation", "--rule", "epoch", "--apply", "--backup-dir", tmp_path / "bk", "--leader", root / "broker-2",
            "--follower", root / "broker-1")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = tree(root)
        proc = run_cli(*args)
        assert proc.returncode == 2 and ".lock" in proc.stderr, proc.stderr
        assert tree(root) == before and lock.exists() and not (tmp_path / "bk").exists()
    finally:
        holder.kill()
        holder.communicate()
    assert run_cli(*args).returncode == 0


@pytest.mark.slow
def test_apply_killed_at_any_point_completes_when_run_again(tmp_path: Path, run_cli) -> None:
    """SIGKILL a real ``truncation --apply`` before one of its durable steps (counted on an uninterrupted run; a
    spread of them), then run it again: the follower must end as the uninterrupted apply left it, with every
    original byte in the backup and no temporary file left."""
    from kafkatool.safewrite import durable
    from kafkatool.safewrite.restore import restore
    from kafkatool.truncation import apply_truncations

    ref = copy_brokers(tmp_path / "reference", "broker-1", "broker-2")
    start = durable.steps_taken()
    items = list(apply_truncations(ref / "broker-2", ref / "broker-1", rule="epoch", backup_dir=tmp_path / "ref-bk"))
    total = durable.steps_taken() - start
    assert isinstance(items[-1], Truncation) and items[-1].applied and total > 20
    expected = tree(ref / "broker-1")
    points = sorted({1, 2, *range(3, total, max(1, total // 6)), total - 1, total})  # about 10
    for step in points:
        run = copy_brokers(tmp_path / f"run-{step}", "broker-1", "broker-2")
        follower, backup = run / "broker-1", run / "backup"
        originals = tree(follower)
        args = ("truncation", "--rule", "epoch", "--apply", "--backup-dir", backup, "--leader", run / "broker-2",
                "--follower", follower)
        crashed = run_cli(*args, env={"KAFKATOOL_CRASH_AT": str(step)})
        assert crashed.returncode == -9, (step, crashed.stdout, crashed.stderr)
        finished = list(apply_truncations(run / "broker-2", follower, rule="epoch", backup_dir=backup))
        assert not [f for f in finished if isinstance(f, Finding) and f.severity == "error"], step
        assert tree(follower) == expected, f"killed before step {step} of {total}"
        assert [p.name for p in follower.rglob("*") if "kafkatool" in p.name] == []
        restore(backup, apply=True)  # every original byte is in the backup
        assert tree(follower) == originals, step
        shutil.rmtree(run)


def test_apply_refuses_a_damaged_follower(tmp_path: Path, run_cli) -> None:
    root = copy_brokers(tmp_path, "broker-1", "broker-2")
    log = root / "broker-1" / "orders-0" / "00000000000000000000.log"
    victim = batches_of(log)[2]
    data = bytearray(log.read_bytes())
    data[victim.position + victim.size - 1] ^= 0xFF
    log.write_bytes(bytes(data))
    before = tree(root)
    proc = run_cli("truncation", "-f", "jsonl", "--rule", "epoch", "--apply", "--backup-dir", tmp_path / "bk",
                   "--leader", root / "broker-2", "--follower", root / "broker-1")
    assert proc.returncode == 1, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert "truncation-not-applied" in {x.get("code") for x in lines} and lines[-1]["applied"] is False
    assert tree(root) == before


def test_trim_index_drops_the_entries_at_or_past_the_target() -> None:
    """``OffsetIndex``/``TimeIndex.truncateTo``: entries with offset >= target go (relative offsets in the file);
    zero-filled preallocated slots end the entries. ``TransactionIndex.truncateTo``: cut at the first aborted
    transaction whose last offset is >= target, else unchanged."""
    from kafkatool.filetypes import FileKind
    from kafkatool.smallfiles import entry_struct
    from kafkatool.truncation import trim_index

    off = entry_struct(FileKind.INDEX)
    index = b"".join(off.pack(r, p) for r, p in ((9, 100), (19, 200), (29, 300))) + bytes(off.size * 3)
    assert trim_index(index, FileKind.INDEX, 100, 119) == off.pack(9, 100)
    assert trim_index(index, FileKind.INDEX, 100, 120) == index[:2 * off.size]
    assert trim_index(index, FileKind.INDEX, 100, 500) == index[:3 * off.size]  # the preallocated tail goes too
    assert trim_index(index, FileKind.INDEX, 100, 109) == b""
    tim = entry_struct(FileKind.TIME_INDEX)
    times = b"".join(tim.pack(t, r) for t, r in ((T0, 4), (T0 + 5, 9)))
    assert trim_index(times, FileKind.TIME_INDEX, 10, 19) == tim.pack(T0, 4)
    assert trim_index(times, FileKind.TIME_INDEX, 10, 20) == times
    txn = entry_struct(FileKind.TXN_INDEX)
    txns = b"".join(txn.pack(0, 7, first, last, last) for first, last in ((10, 12), (15, 30), (20, 25)))
    assert trim_index(txns, FileKind.TXN_INDEX, 0, 25) == txns[:txn.size]  # (15, 30) ends past 25: cut there
    assert trim_index(txns, FileKind.TXN_INDEX, 0, 31) is None
    assert trim_index(txns + b"\x00\x01", FileKind.TXN_INDEX, 0, 12) == b""


def test_apply_across_segments_equals_a_log_written_with_only_the_kept_batches(tmp_path: Path) -> None:
    """Several segments, an aborted transaction before the cut and one after it in the same segment, a second
    partition in the follower's log dir. Applied, the follower's segments, offset indexes, transaction indexes and
    leader epochs are those of a log written from scratch with the batches below the cut; its time indexes a
    the same too (the cut segment ends with its largest timestamp, as Kafka closes it); the other partition's
    checkpoint entries are untouched."""
    def txn(offset: int, value: str, pid: int, epoch: int = 0) -> Msg:
        raw = record_batch(offset, [RecordSpec(b"k", value.encode(), T0 + offset)], partition_leader_epoch=epoch,
                           producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True)
        return Msg(offset, offset, raw)

    def abort(offset: int, pid: int, epoch: int = 0) -> Msg:
        raw = end_transaction_marker(offset, False, producer_id=pid, producer_epoch=0, coordinator_epoch=0,
                                     timestamp=T0 + offset, partition_leader_epoch=epoch)
        return Msg(offset, offset, raw)

    common = [msg(o, "c", 0, n=2) for o in range(0, 20, 2)] + [txn(20, "t", 7001), abort(21, 7001)]
    common += [msg(o, "c", 0, n=2) for o in range(22, 30, 2)]
    mine = [txn(30, "t", 7002), abort(31, 7002)] + [msg(o, "f", 0, n=2) for o in range(32, 60, 2)]
    theirs = [msg(o, "l", 1, n=2) for o in range(30, 50, 2)]

    def logdir(name: str, batches: list[Msg], hw: int, other: bool = False) -> Path:
        with LogDirWriter(tmp_path / name, cluster_id="c1", node_id=1, segment_bytes=600,
                          index_interval_bytes=150) as w:
            p = w.partition("orders", 0, TOPIC_ID)
            for b in batches:
                p.append(b.raw)
            p.high_watermark = hw
            if other:
                q = w.partition("other", 3, bytes(range(2, 18)))
                for b in common[:3]:
                    q.append(b.raw)
        return tmp_path / name

    leader = logdir("broker-l", common + theirs, 50)
    follower = logdir("broker-f", common + mine, 58, other=True)
    expected = logdir("expected", common, 30)
    part, want = follower / "orders-0", expected / "orders-0"
    bases = sorted(int(p.stem) for p in part.glob("*.log"))
    assert len(bases) >= 4 and len([b for b in bases if b > 30]) >= 2, bases  # segments after the cut
    assert 30 not in bases  # the cut falls inside a segment
    other_entries = {n: [e for e in read_offset_checkpoint(follower / n) if e.topic == "other"]
                     for n in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint")}

    from kafkatool.truncation import apply_truncations
    items = list(apply_truncations(leader, follower, rule="epoch", backup_dir=tmp_path / "bk"))
    assert not [f for f in items if isinstance(f, Finding) and f.severity == "error"], items
    (t,) = [x for x in items if isinstance(x, Truncation)]
    assert t.truncate_to == 30 and t.applied

    assert sorted(p.name for p in part.glob("*.log")) == sorted(p.name for p in want.glob("*.log"))
    for log in sorted(want.glob("*.log")):
        stem = log.with_suffix("")
        mine_stem = part / stem.name
        assert mine_stem.with_suffix(".log").read_bytes() == log.read_bytes(), log.name
        assert read_offset_index(mine_stem.with_suffix(".index")) == read_offset_index(stem.with_suffix(".index"))
        mine_t, want_t = read_time_index(mine_stem.with_suffix(".timeindex")), read_time_index(
            stem.with_suffix(".timeindex"))
        assert mine_t == want_t, log.name  # incl. the largest timestamp, appended when a segment is closed
        want_txn = read_txn_index(stem.with_suffix(".txnindex")) if stem.with_suffix(".txnindex").exists() else []
        have_txn = (read_txn_index(mine_stem.with_suffix(".txnindex"))
                    if mine_stem.with_suffix(".txnindex").exists() else [])
        assert have_txn == want_txn, log.name
    assert any(read_txn_index(p) for p in part.glob("*.txnindex"))  # the abort at 21 stays
    assert (part / "leader-epoch-checkpoint").read_bytes() == (want / "leader-epoch-checkpoint").read_bytes()
    assert all(int(p.stem) <= 30 for p in part.glob("*.snapshot"))
    for name, entries in other_entries.items():
        now = read_offset_checkpoint(follower / name)
        assert [e for e in now if e.topic == "other"] == entries
        assert [e.offset for e in now if e.topic == "orders"] == [30]
    assert no_errors(follower)
    again = truncate(leader, follower, rules=("epoch",))["epoch"]
    assert again.truncate_to == again.follower_leo == 30 and again.plan is not None and not again.plan.changes


def test_apply_a_full_truncation_starts_an_empty_log_at_the_leaders_log_start(tmp_path: Path) -> None:
    """``truncateFullyAndStartAt``: every segment and snapshot goes; an empty segment at the new offset remains."""
    from kafkatool.truncation import apply_truncations

    start, follower = _leader_past_the_follower(tmp_path)
    items = list(apply_truncations(tmp_path / "broker-l", follower, rule="hw", backup_dir=tmp_path / "bk"))
    (t,) = [x for x in items if isinstance(x, Truncation)]
    assert t.applied and t.full_truncation and t.plan is not None and t.plan.start_fresh_at == start
    part = follower / "orders-0"
    stem = f"{start:020d}"
    segment_files = sorted(p.name for p in part.iterdir() if p.suffix in (".log", ".index", ".timeindex",
                                                                           ".txnindex", ".snapshot"))
    assert segment_files == [f"{stem}.index", f"{stem}.log", f"{stem}.timeindex"]
    assert all((part / n).stat().st_size == 0 for n in segment_files)
    assert (part / "leader-epoch-checkpoint").read_bytes() == build_epoch_checkpoint([])
    states, _p, _f = report([tmp_path / "broker-l", follower])
    assert (states["broker-f"].leo, states["broker-f"].log_start_offset, states["broker-f"].hw_checkpoint) == (
        start, start, start)
    assert no_errors(follower)
    for rule in ("epoch", "hw"):
        again = truncate(tmp_path / "broker-l", follower, rules=(rule,))[rule]
        assert again.truncate_to == again.follower_leo == start and not again.full_truncation
        assert again.plan is not None and not again.plan.changes


# --- a live leader's epoch entry at its log end (KIP-279) ----------------------------------------------------


def live_leader(root: Path, name: str, batches: list[Msg], hw: int, epoch: int) -> Path:
    """A broker that has just become leader of ``epoch`` and is still running: ``Partition.makeLeader`` ->
    ``UnifiedLog.maybeAssignEpochStartOffset(epoch, logEndOffset)`` -> ``LeaderEpochFileCache.assign``, which
    writes ``leader-epoch-checkpoint`` at once; no batch of ``epoch`` yet. A live broker's log dir has no
    ``.kafka_cleanshutdown`` (deleted when it started)."""
    with LogDirWriter(root / name, cluster_id="c1", node_id=1) as logdir:
        p = logdir.partition("orders", 0, TOPIC_ID)
        for b in batches:
            p.append(b.raw)
        p.high_watermark = hw
    assert p.leader_epochs[-1][0] < epoch
    (root / name / "orders-0" / "leader-epoch-checkpoint").write_bytes(
        build_epoch_checkpoint([*p.leader_epochs, (epoch, p.log_end_offset)]))
    (root / name / ".kafka_cleanshutdown").unlink()
    return root / name


def test_a_live_leaders_entry_at_its_log_end_answers_an_epoch_it_never_wrote(tmp_path: Path, run_cli) -> None:
    """KIP-279. L and F share epoch 0 (0..9) and epoch 1 (10..14). F then led epoch 2 and wrote 15..19, which
    nobody replicated; L became leader of epoch 3 at its log end 15 and has written nothing since. F restarts (HW
    checkpoint 12) and asks for its latest epoch, 2. L's cache holds (3, 15) (``Partition.makeLeader``), so
    ``LeaderEpochFileCache.endOffsetFor(2)`` is the floor epoch 1 ending where epoch 3 starts: (1, 15); F's own
    ``endOffsetFor(1)`` is (1, 15) too, and ``AbstractFetcherThread.getOffsetTruncationState`` truncates to
    min(15, 15, F's LEO 20) = 15: exactly F's epoch-2 batches go, nothing L has. Without that entry (a leader that
    had reloaded its log: ``LogLoader`` ``truncateFromEnd(LEO)``) L would know no epoch >= 2, answer undefined, and
    F would truncate to its high watermark 12 instead."""
    shared = [msg(0, "a", 0, n=5), msg(5, "b", 0, n=5), msg(10, "c", 1, n=5)]
    led_by_f = msg(15, "f", 2, n=5)
    leader = live_leader(tmp_path, "broker-l", shared, hw=15, epoch=3)
    follower = broker(tmp_path, "broker-f", [*shared, led_by_f], hw=12)

    ep = truncate(leader, follower, rules=("epoch",))["epoch"]
    assert ep.steps == [{"requested_epoch": 2, "leader_epoch": 1, "leader_end_offset": 15, "follower_epoch": 1,
                         "follower_end_offset": 15, "truncate_to": 15}]
    assert ep.truncate_to == 15 == shared[-1].last + 1
    assert [(b.base_offset, b.last_offset, b.partition_leader_epoch, b.on_leader) for b in ep.lost] == [
        (led_by_f.base, led_by_f.last, 2, False)]
    # what the `replicas` report shows is each log as LogLoader loads it: the entry at the LEO is gone there
    states, part, _f = report([leader, follower])
    assert states["broker-l"].epochs == ((0, 0), (1, 10))
    assert pair(part, "broker-l", "broker-f").relation == "b-ahead"  # F's extra batches, no divergence below 15

    proc = run_cli("truncation", "-f", "jsonl", "--rule", "epoch", "--leader", leader, "--follower", follower)
    assert proc.returncode == 1, proc.stderr  # F's epoch-2 batches exist nowhere else: data lost
    (line,) = [json.loads(x) for x in proc.stdout.splitlines()]
    assert line["truncate_to"] == 15 and line["steps"] == ep.steps


@pytest.mark.parametrize("follower_extra", [5, 0])
def test_a_follower_in_the_leaders_previous_epoch_stops_at_the_leaders_log_end(tmp_path: Path,
                                                                                follower_extra: int) -> None:
    """L led epoch 1 (10..14) and was elected again for epoch 2 at its log end 15 (no batch of epoch 2 yet). F's
    latest epoch is 1; it holds L's batches and ``follower_extra`` more of epoch 1 that L lost (0: its epoch 1 ends
    exactly at L's log end). ``LeaderEpochFileCache.endOffsetFor(1)`` on L: not the latest epoch (2 is), so the
    start of the next one, 15 = L's LEO; F's own answer is (1, its LEO); it truncates to min of the two
    (``getOffsetTruncationState``): its extra batches go, and with none nothing changes."""
    shared = [msg(0, "a", 0, n=5), msg(5, "b", 0, n=5), msg(10, "c", 1, n=5)]
    extra = [msg(15, "lost-by-l", 1, n=follower_extra)] if follower_extra else []
    leader = live_leader(tmp_path, "broker-l", shared, hw=15, epoch=2)
    follower = broker(tmp_path, "broker-f", [*shared, *extra], hw=15)

    ep = truncate(leader, follower, rules=("epoch",))["epoch"]
    f_leo = 15 + follower_extra
    assert ep.steps == [{"requested_epoch": 1, "leader_epoch": 1, "leader_end_offset": 15, "follower_epoch": 1,
                         "follower_end_offset": f_leo, "truncate_to": 15}]
    assert ep.truncate_to == 15 and ep.follower_leo == f_leo
    assert [(b.base_offset, b.last_offset, b.on_leader) for b in ep.lost] == [(x.base, x.last, False) for x in extra]
    assert ep.plan is not None and ep.plan.changes == bool(extra)


def test_the_follower_asks_again_with_the_older_epoch_the_live_leader_answered(tmp_path: Path) -> None:
    """Unclean elections: L led epoch 1 and wrote 10..14; F, without them, led epoch 2 from 10 and wrote other
    batches 10..14; L then became leader of epoch 3 at its log end 15. F asks for epoch 2: L's
    ``endOffsetFor(2)`` = (1, 15) (floor epoch 1, epoch 3 starts at 15). F does not know epoch 1: its
    ``endOffsetFor(1)`` is (0, 10), so F truncates to 10 and asks again with its now latest epoch 0
    (``getOffsetTruncationState``, ``truncationCompleted = false``); L answers (0, 10), the same epoch: done at 10,
    where the two logs stop sharing batches. The leader-epoch entry at L's log end is what makes L answer at all:
    without it epoch 2 is above every epoch L knows, and F would keep its divergent batches below its HW 12."""
    shared = [msg(0, "a", 0, n=5), msg(5, "b", 0, n=5)]
    leader = live_leader(tmp_path, "broker-l", [*shared, msg(10, "l", 1, n=5)], hw=15, epoch=3)
    follower = broker(tmp_path, "broker-f", [*shared, msg(10, "f", 2, n=5)], hw=12)

    ep = truncate(leader, follower, rules=("epoch",))["epoch"]
    assert ep.steps == [
        {"requested_epoch": 2, "leader_epoch": 1, "leader_end_offset": 15, "follower_epoch": 0,
         "follower_end_offset": 10, "truncate_to": 10},
        {"requested_epoch": 0, "leader_epoch": 0, "leader_end_offset": 10, "follower_epoch": 0,
         "follower_end_offset": 10, "truncate_to": 10}]
    _s, part, _f = report([leader, follower])
    assert ep.truncate_to == pair(part, "broker-l", "broker-f").first_divergent_offset == shared[-1].last + 1
    assert ep.keeps_divergence_from is None
    assert [(b.base_offset, b.partition_leader_epoch, b.on_leader) for b in ep.lost] == [(10, 2, False)]


@pytest.mark.parametrize("seed", range(8))
def test_the_epoch_rule_with_a_new_leader_that_has_written_nothing_yet(tmp_path: Path, seed: int) -> None:
    """Random histories as above (a common prefix, then epochs only one side led), but the leader's newest epoch
    is the one it has just been elected for: an entry at its log end in ``leader-epoch-checkpoint``
    (``Partition.makeLeader``) and no batch. KIP-279's loop must still end where the logs stop sharing batches."""
    rng = random.Random(1000 + seed)
    common = [(e, f"c{e}") for e in sorted(rng.sample(range(4), rng.randint(1, 3)))]
    pool = list(range(common[-1][0] + 1, common[-1][0] + 7))
    owners = {e: rng.choice(("leader", "follower", None)) for e in pool[:-1]}

    def build(side: str) -> list[Msg]:
        out, offset = [], 0
        for epoch, tag in common + [(e, f"{side}{e}") for e in pool[:-1] if owners[e] == side]:
            n = 2 if tag[0] == "c" else rng.randint(1, 3)
            out.append(msg(offset, tag, epoch, n))
            offset += n
        return out

    leader_log, follower_log = build("leader"), build("follower")
    leader = live_leader(tmp_path, "broker-l", leader_log, hw=0, epoch=pool[-1])
    follower = broker(tmp_path, "broker-f", follower_log, hw=0)
    _s, part, _f = report([leader, follower])
    d = pair(part, "broker-l", "broker-f")
    shared = d.first_divergent_offset if d.first_divergent_offset is not None else min(
        leader_log[-1].last, follower_log[-1].last) + 1
    ep = truncate(leader, follower, rules=("epoch",))["epoch"]
    assert ep.truncate_to == shared == min(2 * len(common), follower_log[-1].last + 1), ep.steps
    assert all(s["leader_end_offset"] != -1 for s in ep.steps)  # the leader always answers


# --- progress --------------------------------------------------------------------------------------------------


def log_sizes(*dirs: Path) -> int:
    return sum(p.stat().st_size for d in dirs for p in d.rglob("*.log"))


def crashed_copies(tmp_path: Path) -> tuple[Path, Path]:
    """Two replicas of crc-flip's partition (an unclean shutdown: every segment recovered): one as it is (cut in its
    last segment), one with a CRC flipped in its first batch too (cut at 0, its three later segments deleted)."""
    src = corpus_root() / "kafka" / "recovery" / "crc-flip" / "before"
    a, b = shutil.copytree(src, tmp_path / "broker-a"), shutil.copytree(src, tmp_path / "broker-b")
    for p in b.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    first = b / "rtopic-0" / "00000000000000000000.log"
    data = bytearray(first.read_bytes())
    data[70] ^= 0xFF  # in the first batch's records: its CRC no longer matches
    first.write_bytes(bytes(data))
    return a, b


def test_progress_counts_every_segment_byte_replicas_truncation_and_epochs_read(tmp_path: Path) -> None:
    """What a progress bar is told (``progress=``): replicas reads each replica's segments twice (its load, the
    comparison), truncation both logs three times (the loads, the comparison, the discarded batches from the
    truncation offset on: the segments before it, or all when nothing is discarded, counted as skipped), epochs
    once (the load). A pass stopped by a cut counts the rest when it skips it, so that the bar reaches the total it
    was given (``replicas_bytes``, ``truncation_bytes``, ``epochs_bytes``)."""
    from kafkatool.partition import replicas_bytes
    from kafkatool.replicas import epoch_history, epochs_bytes
    from kafkatool.truncation import truncation_bytes

    crashed = crashed_copies(tmp_path)
    cases = [(CASES / c, CASES / c / "broker-2", CASES / c / "broker-1") for c in case_names()]
    for d, leader, follower in [*cases, (tmp_path, *crashed), (tmp_path, *reversed(crashed))]:
        for unclean in (False, True):  # (an election's look at the batches from an offset on is not counted)
            seen: list[int] = []
            list(inspect_replicas([d], unclean=unclean, progress=seen.append))
            assert seen and sum(seen) == 2 * log_sizes(d) == replicas_bytes([d]), d
        seen = []
        list(epoch_history([d], progress=seen.append))
        assert sum(seen) == log_sizes(d) == epochs_bytes([d]), d
        seen = []
        list(truncations(leader, follower, progress=seen.append))
        assert sum(seen) == 3 * log_sizes(leader, follower) == truncation_bytes(leader, follower), d


def test_progress_of_an_applied_truncation_counts_the_check_after_it(tmp_path: Path) -> None:
    """``apply_truncations``: the reads of the plan, then the same reads again of the truncated follower (the check
    that nothing is left to do); the bytes the truncation removed, and the whole check where nothing was applied,
    counted as skipped: six passes of the logs as they were (``truncation_bytes(apply=True)``)."""
    from kafkatool.truncation import apply_truncations, truncation_bytes

    for case, applied in (("divergent", True), ("in-sync", False)):
        run = tmp_path / case
        for name in ("broker-1", "broker-2"):
            shutil.copytree(CASES / case / name, run / name)
        for p in run.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        leader, follower = run / "broker-2", run / "broker-1"
        before, follower_before = log_sizes(leader, follower), log_sizes(follower)
        assert truncation_bytes(leader, follower, apply=True) == 6 * before
        seen: list[int] = []
        items = list(apply_truncations(leader, follower, rule="epoch", backup_dir=tmp_path / f"{case}-bk",
                                       progress=seen.append))
        (result,) = [t for t in items if isinstance(t, Truncation)]
        assert result.applied == applied and (log_sizes(follower) < follower_before) == applied, case
        assert sum(seen) == 6 * before, case


# --- the ISR when --isr does not name it (issue 26) ------------------------------------------------------------


@pytest.mark.parametrize("case", case_names())
def test_without_isr_the_isr_and_its_high_watermark_come_from_the_checkpoints(case: str, run_cli) -> None:
    """Kafka's HW is the min LEO over the ISR (``Partition.maybeIncrementLeaderHW``): taking every replica as in
    sync gave 50 on ``divergent`` and 30 on ``hw-loss``; case.json's ISR and HW are what Kafka computed."""
    c = load(case)
    proc = run_cli("replicas", "-f", "jsonl", CASES / case)
    (part,) = [x for x in proc.jsonl() if x["type"] == "partition"]
    assert (sorted(part["isr"]), part["isr_hw"]) == (sorted(c["isr"]), c["high_watermark"])
    assert part["isr_from"] == "checkpoints" and str(c["high_watermark"]) in part["isr_basis"]
    states = {x["name"]: x["in_isr"] for x in proc.jsonl() if x["type"] == "replica"}
    assert states == {name: name in c["isr"] for name in c["brokers"]}
    text = run_cli("replicas", CASES / case)
    assert f"ISR high watermark {c['high_watermark']} " in text.stdout and "ISR from checkpoints" in text.stdout


def test_hw_loss_exposure_is_one_finding_replicas_and_truncation_agree_on(run_cli) -> None:
    """KIP-101 scenario 1: broker-2's HW checkpoint 45 is below the HW 50 consumers read up to; the HW rule
    would leave 45..49 (case.json's acknowledged_offsets_lost_by_hw_rule) on the leader alone."""
    c = load("hw-loss")
    first, last = c["brokers"]["broker-2"]["truncation"]["acknowledged_offsets_lost_by_hw_rule"]
    want = f"acknowledged offsets {first}..{last} "
    proc = run_cli("replicas", "-f", "jsonl", CASES / "hw-loss")
    assert proc.returncode == 1, proc.stderr
    (exposed,) = [x for x in proc.jsonl() if x["type"] == "finding" and x["code"] == "acknowledged-offsets-exposed"]
    assert exposed["path"].endswith("broker-2/orders-0") and want in exposed["message"]
    trunc = run_cli("truncation", "-f", "jsonl", "--rule", "hw", "--leader", CASES / "hw-loss" / "broker-1",
                    "--follower", CASES / "hw-loss" / "broker-2")
    (same,) = [x for x in trunc.jsonl() if x["type"] == "finding"]
    assert (same["code"], same["path"], same["severity"]) == (exposed["code"], exposed["path"], exposed["severity"])
    assert want in same["message"]
    # lagging: broker-3's HW checkpoint 40 is below 45, but broker-1 and broker-2 both keep 40..44: not exposed
    lagging = run_cli("replicas", "-f", "jsonl", CASES / "lagging")
    assert lagging.returncode == 0 and not [x for x in lagging.jsonl() if x["type"] == "finding"]


def test_without_checkpoints_every_replica_is_assumed_in_sync_and_it_says_so(tmp_path: Path, run_cli) -> None:
    shutil.copytree(CASES / "divergent", tmp_path / "divergent")
    for ckpt in (tmp_path / "divergent").glob("broker-*/replication-offset-checkpoint"):
        ckpt.unlink()
    proc = run_cli("replicas", "-f", "jsonl", tmp_path / "divergent")
    (part,) = [x for x in proc.jsonl() if x["type"] == "partition"]
    assert part["isr_from"] == "assumed" and len(part["isr"]) == 3
    assert part["isr_hw"] == min(b["leo"] for b in load("divergent")["brokers"].values())
    assert "ISR assumed: " in run_cli("replicas", tmp_path / "divergent").stdout


def test_without_isr_the_isr_comes_from_the_kraft_metadata_beside_the_replicas(tmp_path: Path, run_cli) -> None:
    """The ISR of the latest PartitionRecord / PartitionChangeRecord in a ``__cluster_metadata-0`` of the log
    dirs, each replica known by its log dir's node.id (meta.properties): here {2}, not the checkpoints' {2, 3}."""
    root = tmp_path / "divergent"
    shutil.copytree(CASES / "divergent", root)
    for n in (1, 2, 3):
        (root / f"broker-{n}" / "meta.properties").write_text(f"version=1\nnode.id={n}\ncluster.id=c1\n")
    metadata_log(root / "broker-2", [topic_record("orders"), partition_record(0, [1, 2, 3], [1, 2, 3], 2),
                                     isr_change(0, [2])])
    proc = run_cli("replicas", "-f", "jsonl", "--topic", "orders", root)
    (part,) = [x for x in proc.jsonl() if x["type"] == "partition"]
    assert (part["isr"], part["isr_from"], part["isr_hw"]) == (["broker-2"], "metadata", 70)
    assert "ISR 2 of " in part["isr_basis"]


def test_a_malformed_checkpoint_is_said_once_by_replicas_truncation_and_epochs(tmp_path: Path) -> None:
    """A replica's high watermark comes from its log dir's replication-offset-checkpoint: when that file cannot be
    parsed the high watermark is missing, and each command that compares replicas says why (verify's finding,
    once for the log dir) and exits 1, where it used to show "-" and exit 0."""
    from .clirun import cli

    case = tmp_path / "case"
    shutil.copytree(CASES / "lagging", case)
    brokers = sorted(p for p in case.iterdir() if p.is_dir())
    hw = brokers[1] / "replication-offset-checkpoint"

    def said(*args: str | Path) -> tuple[int, list[tuple[str, str]]]:
        p = cli(*args, "--format", "jsonl")
        return p.returncode, [(r["code"], r["severity"]) for r in p.jsonl()
                              if r["type"] == "finding" and r["path"] == str(hw)]

    commands = (("replicas", *brokers), ("epochs", brokers[1]),
                ("truncation", "--leader", brokers[0], "--follower", brokers[1]))
    for args in commands:
        assert said(*args)[1] == [], args
    hw.write_bytes(b"0\n1\ngarbage\n")
    _code, verified = said("verify", brokers[1])
    assert verified == [("checkpoint-malformed", "error")]
    for args in (*commands, ("replicas", *(b / "orders-0" for b in brokers))):  # a partition dir named alone too
        assert said(*args) == (1, verified), args


def test_apply_refuses_an_index_no_broker_writes_without_reading_it_whole(tmp_path: Path, run_cli) -> None:
    """The follower's segment to cut has a 4 GiB (sparse) offset index: --apply refuses it by its size (verify's
    index-too-large) and changes nothing, where it used to read all of it into memory (a MemoryError under a
    1 GiB address space, exit 70)."""
    import resource

    def small_address_space() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    root = copy_brokers(tmp_path, "broker-1", "broker-2")
    follower, leader = root / "broker-1", root / "broker-2"
    index = follower / "orders-0" / "00000000000000000000.index"
    with index.open("r+b") as fh:
        fh.truncate(4 << 30)
    before = {p: p.stat().st_size for p in follower.rglob("*") if p.is_file()}
    proc = run_cli("truncation", "--rule", "epoch", "--apply", "--backup-dir", tmp_path / "backup", "--leader", leader,
                   "--follower", follower, preexec_fn=small_address_space)
    assert proc.returncode == 2 and f"{index}: 4,294,967,296 bytes" in proc.stderr, proc.stdout + proc.stderr
    assert {p: p.stat().st_size for p in follower.rglob("*") if p.is_file() and p.name != ".lock"} == before
