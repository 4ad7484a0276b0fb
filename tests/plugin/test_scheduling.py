"""Stable hash sharding, ``--llmeval-shard`` parsing, and the xdist hash scheduler."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_llmeval.plugin import scheduling as sharding
from pytest_llmeval.plugin.scheduling import (
    HashScheduling,
    assign,
    case_key,
    parse_shard,
    run_order,
    shard_of,
    stable_hash,
)


def _expected_hash(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "little")


IDS = [f"evals/qa.jsonl::case-{i:03d}" for i in range(200)]


# --------------------------------------------------------------------------------------------
# hashing and membership


@pytest.mark.parametrize("key", ["", "case-001", "q/7", "ünïcode-ключ", "x" * 1000])
def test_stable_hash_is_first_8_bytes_of_sha256_little_endian(key: str) -> None:
    assert stable_hash(key) == _expected_hash(key)
    assert 0 <= stable_hash(key) < 2**64


def test_stable_hash_known_value() -> None:
    # sha256(b"abc") = ba7816bf8f01cfea..., first 8 bytes read little-endian.
    assert stable_hash("abc") == 0xEACF018FBF1678BA


def test_shard_of_is_hash_mod_n() -> None:
    for key in ("a", "b", "case-42"):
        assert shard_of(key, 7) == _expected_hash(key) % 7
        assert shard_of(key, 1) == 0
    with pytest.raises(ValueError, match="1 or more"):
        shard_of("a", 0)


@pytest.mark.parametrize(
    ("nodeid", "key"),
    [
        ("evals/qa.jsonl::case-1", "case-1"),
        ("tests/test_x.py::test_f", "test_f"),
        ("tests/test_x.py::TestA::test_f[1-a]", "test_f[1-a]"),
        ("tests/test_x.py::test_f[a::b]", "test_f[a::b]"),
        ("evals/qa.jsonl::ns::q1", "q1"),
        ("plain", "plain"),
    ],
)
def test_case_key(nodeid: str, key: str) -> None:
    assert case_key(nodeid) == key


def test_case_key_ignores_the_file() -> None:
    assert shard_of(case_key("a/one.jsonl::c7"), 5) == shard_of(case_key("b/two.jsonl::c7"), 5)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_assign_covers_every_index_once_in_collection_order(n: int) -> None:
    buckets = assign(IDS, n)
    assert len(buckets) == n
    flat = [i for bucket in buckets for i in bucket]
    assert sorted(flat) == list(range(len(IDS)))
    for worker, bucket in enumerate(buckets):
        assert bucket == sorted(bucket)
        assert all(shard_of(case_key(IDS[i]), n) == worker for i in bucket)


def test_membership_unchanged_when_ids_are_reordered() -> None:
    shuffled = IDS[:]
    random.Random(1234).shuffle(shuffled)
    for n in (2, 3, 5):

        def members(ids: Sequence[str], n: int = n) -> list[set[str]]:
            return [{ids[i] for i in bucket} for bucket in assign(ids, n)]

        assert members(IDS) == members(shuffled)
        assert members(IDS) == members(list(reversed(IDS)))
        # Removing other cases does not move the remaining ones.
        kept = IDS[::3]
        assert [m & set(kept) for m in members(IDS)] == members(kept)


def test_in_shard_partitions() -> None:
    for nodeid in IDS[:20]:
        assert sum(sharding.in_shard(nodeid, i, 4) for i in range(4)) == 1


def test_shard_count_spreads_one_shard_over_all_workers() -> None:
    shard0 = [nodeid for nodeid in IDS if sharding.in_shard(nodeid, 0, 2)]
    # hash % 2 == 0 for all of them: plain hashing would leave gw1 idle.
    assert assign(shard0, 2)[1] == []
    spread = assign(shard0, 2, shard_count=2)
    assert all(spread)
    assert sorted(spread[0] + spread[1]) == list(range(len(shard0)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0/1", (0, 1)), ("0/4", (0, 4)), ("3/4", (3, 4)), (" 2 / 10 ", (2, 10))],
)
def test_parse_shard_good(text: str, expected: tuple[int, int]) -> None:
    assert parse_shard(text) == expected


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("4/4", "0 <= I < N"),
        ("5/4", "0 <= I < N"),
        ("0/0", "N >= 1"),
        ("-1/4", "I/N"),
        ("1", "I/N"),
        ("a/b", "I/N"),
        ("1/2/3", "I/N"),
        ("", "I/N"),
        ("1.0/2", "I/N"),
    ],
)
def test_parse_shard_bad(text: str, hint: str) -> None:
    with pytest.raises(pytest.UsageError, match="--llmeval-shard") as excinfo:
        parse_shard(text)
    assert hint in str(excinfo.value)
    assert repr(text) in str(excinfo.value)


# --------------------------------------------------------------------------------------------
# controller and worker helpers


class FakeConfig:
    """Just enough of pytest.Config for the scheduler and the helpers."""

    def __init__(self, numnodes: int = 2, workerinput: dict[str, Any] | None = None, **opts: Any):
        self.options: dict[str, Any] = {"tx": ["popen"] * numnodes, "dist": "load", **opts}
        self.collectreports: list[pytest.CollectReport] = []
        self.hook = SimpleNamespace(pytest_collectreport=self._collectreport)
        if workerinput is not None:
            self.workerinput = workerinput

    def _collectreport(self, *, report: pytest.CollectReport) -> None:
        self.collectreports.append(report)

    def getvalue(self, name: str) -> Any:
        return self.options[name]

    def getoption(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)


@pytest.mark.parametrize(
    ("opts", "expected"),
    [
        ({}, True),
        ({"llmeval_hash_scheduling": None}, True),
        ({"llmeval_hash_scheduling": True}, True),
        ({"llmeval_hash_scheduling": "yes"}, True),
        ({"llmeval_hash_scheduling": False}, False),
        ({"llmeval_hash_scheduling": "no"}, False),
        ({"dist": "no"}, False),
        ({"dist": "each"}, False),
        ({"dist": "loadscope"}, False),
    ],
)
def test_make_scheduler_only_for_dist_load(opts: dict[str, Any], expected: bool) -> None:
    pytest.importorskip("xdist")
    config = FakeConfig(**opts)
    scheduler = sharding.make_scheduler(config, None)
    assert isinstance(scheduler, HashScheduling) is expected
    assert sharding.hash_scheduling_enabled(config) is expected


def test_make_scheduler_enabled_override() -> None:
    pytest.importorskip("xdist")
    config = FakeConfig(llmeval_hash_scheduling="yes")
    assert sharding.make_scheduler(config, None, enabled=False) is None
    assert sharding.make_scheduler(FakeConfig(dist="each"), None, enabled=True) is None


def test_configure_node_marks_workerinput() -> None:
    node = SimpleNamespace(config=FakeConfig(), workerinput={"workerid": "gw0"})
    sharding.configure_node(node)
    assert node.workerinput[sharding.HASH_SCHEDULING_KEY] is True
    off = SimpleNamespace(config=FakeConfig(dist="each"), workerinput={"workerid": "gw0"})
    sharding.configure_node(off)
    assert sharding.HASH_SCHEDULING_KEY not in off.workerinput


def _items(ids: Sequence[str]) -> list[SimpleNamespace]:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in ids]


def test_run_order_on_marked_worker() -> None:
    workerinput: dict[str, Any] = {"workerid": "gw1", "workercount": 3}
    sharding.mark_hash_scheduling(workerinput)
    assert run_order(FakeConfig(3, workerinput), _items(IDS)) == assign(IDS, 3)[1]


def test_run_order_with_shard_option() -> None:
    workerinput = {"workerid": "gw0", "workercount": 2, sharding.HASH_SCHEDULING_KEY: True}
    config = FakeConfig(2, workerinput, llmeval_shard="1/2")
    assert run_order(config, _items(IDS)) == assign(IDS, 2, shard_count=2)[0]
    config = FakeConfig(2, workerinput, llmeval_shard=(1, 2))
    assert run_order(config, _items(IDS)) == assign(IDS, 2, shard_count=2)[0]


@pytest.mark.parametrize(
    "workerinput",
    [
        None,  # controller or no xdist
        {"workerid": "gw0", "workercount": 2},  # controller did not mark it
        {"workerid": "gw2", "workercount": 2, sharding.HASH_SCHEDULING_KEY: True},  # replacement
        {"workerid": "other", "workercount": 2, sharding.HASH_SCHEDULING_KEY: True},
    ],
)
def test_run_order_unknown(workerinput: dict[str, Any] | None) -> None:
    assert run_order(FakeConfig(2, workerinput), _items(IDS)) is None


# --------------------------------------------------------------------------------------------
# the scheduler, with fake nodes


class FakeNode:
    """Duck-typed xdist WorkerController that records what the scheduler sends it."""

    def __init__(self, workerid: str) -> None:
        self.gateway = SimpleNamespace(id=workerid)
        self.calls: list[tuple[str, list[int]]] = []

    def send_runtest_some(self, indices: Sequence[int]) -> None:
        self.calls.append(("send", list(indices)))

    def shutdown(self) -> None:
        self.calls.append(("shutdown", []))

    def __repr__(self) -> str:
        return f"<FakeNode {self.gateway.id}>"


@pytest.fixture
def xdist_installed() -> None:
    pytest.importorskip("xdist")


def _expected_calls(indices: list[int]) -> list[tuple[str, list[int]]]:
    return ([("send", indices)] if indices else []) + [("shutdown", [])]


def _start(
    n: int, ids: Sequence[str] = IDS, order: Sequence[int] | None = None
) -> tuple[HashScheduling, list[FakeNode], FakeConfig]:
    config = FakeConfig(n)
    sched = HashScheduling(config)
    nodes = [FakeNode(f"gw{i}") for i in range(n)]
    for i in order if order is not None else range(n):
        sched.add_node(nodes[i])
    for i in order if order is not None else range(n):
        assert not sched.collection_is_completed
        sched.add_node_collection(nodes[i], ids)
    assert sched.collection_is_completed
    sched.schedule()
    return sched, nodes, config


def _run_all(sched: HashScheduling, node: FakeNode) -> None:
    for index in list(sched.node2pending[node]):
        sched.mark_test_complete(node, index, 0.01)


@pytest.mark.usefixtures("xdist_installed")
def test_schedule_sends_hashed_indices_once_then_shutdown() -> None:
    sched, nodes, _ = _start(3, order=[2, 0, 1])
    buckets = assign(IDS, 3)
    for worker, node in enumerate(nodes):
        assert node.calls == _expected_calls(buckets[worker])
        assert sched.node2pending[node] == buckets[worker]
    assert sched.has_pending
    assert not sched.tests_finished
    assert sched.nodes == [nodes[2], nodes[0], nodes[1]]


@pytest.mark.usefixtures("xdist_installed")
def test_tests_finished_when_each_node_has_at_most_its_last_item() -> None:
    sched, nodes, _ = _start(2)
    for node in nodes:
        pending = sched.node2pending[node]
        for index in pending[:-1]:
            assert not sched.tests_finished
            sched.mark_test_complete(node, index)
    assert sched.tests_finished
    assert sched.has_pending
    for node in nodes:
        _run_all(sched, node)
        assert sched.remove_node(node) is None
    assert not sched.has_pending
    assert sched.tests_finished


@pytest.mark.usefixtures("xdist_installed")
def test_worker_with_nothing_to_run_is_shut_down_at_once() -> None:
    ids = ["evals/qa.jsonl::only-case"]
    sched, nodes, _ = _start(2, ids)
    owner = shard_of("only-case", 2)
    assert nodes[owner].calls == [("send", [0]), ("shutdown", [])]
    assert nodes[1 - owner].calls == [("shutdown", [])]
    assert sched.tests_finished  # one item left on one node: it already has its shutdown


@pytest.mark.usefixtures("xdist_installed")
def test_empty_collection() -> None:
    sched, nodes, _ = _start(2, [])
    assert [node.calls for node in nodes] == [[("shutdown", [])], [("shutdown", [])]]
    assert sched.tests_finished
    assert not sched.has_pending


@pytest.mark.usefixtures("xdist_installed")
def test_collection_mismatch_runs_nothing_and_reports() -> None:
    config = FakeConfig(2)
    logged: list[str] = []
    log = SimpleNamespace(hashsched=lambda *args: logged.append(" ".join(map(str, args))))
    sched = HashScheduling(config, log)
    gw0, gw1 = FakeNode("gw0"), FakeNode("gw1")
    sched.add_node(gw0)
    sched.add_node(gw1)
    sched.add_node_collection(gw0, IDS[:10])
    sched.add_node_collection(gw1, [*IDS[:9], "evals/qa.jsonl::other"])
    sched.schedule()
    assert gw0.calls == [("shutdown", [])] and gw1.calls == [("shutdown", [])]
    assert sched.collection is None
    assert sched.tests_finished and not sched.has_pending
    (report,) = config.collectreports
    assert report.failed and report.nodeid == "gw1"
    assert "Different tests were collected between gw0 and gw1" in str(report.longrepr)
    assert "+evals/qa.jsonl::other" in str(report.longrepr)
    assert any("Different tests were collected" in line for line in logged)


@pytest.mark.usefixtures("xdist_installed")
def test_crash_returns_running_item_and_replacement_gets_the_rest() -> None:
    sched, nodes, _ = _start(2)
    gw0, gw1 = nodes
    pending = list(sched.node2pending[gw1])
    sched.mark_test_complete(gw1, pending[0])
    sched.mark_test_complete(gw1, pending[1])
    crashitem = sched.remove_node(gw1)  # died while running pending[2]
    assert crashitem == IDS[pending[2]]
    assert sched.has_pending
    _run_all(sched, gw0)
    assert not sched.tests_finished  # the rest of gw1's list still has to run

    gw2 = FakeNode("gw2")
    sched.add_node(gw2)
    sched.add_node_collection(gw2, IDS)
    sched.schedule()
    assert gw2.calls == _expected_calls(pending[3:])
    assert gw0.calls == _expected_calls(assign(IDS, 2)[0])  # untouched
    _run_all(sched, gw2)
    assert sched.tests_finished
    assert sched.remove_node(gw2) is None


@pytest.mark.parametrize("judged", [False, True])
def test_a_crash_is_blamed_on_the_agent_running_ahead(
    monkeypatch: pytest.MonkeyPatch, judged: bool
) -> None:
    """The worker's running marks say whose agent ran: that test is blamed; the item pytest
    was on goes to the replacement, unless pytest had judged it already."""
    from pytest_llmeval.plugin import running_marks

    sched, nodes, _ = _start(2)
    gw1 = nodes[1]
    pending = list(sched.node2pending[gw1])
    marks = bytearray(len(IDS))
    marks[pending[0]] = running_marks.JUDGED if judged else running_marks.FINISHED
    marks[pending[2]] = running_marks.STARTED  # ahead of pytest's item
    monkeypatch.setattr(running_marks, "read", lambda config, workerid: bytes(marks))
    assert sched.remove_node(gw1) == IDS[pending[2]]
    gw2 = FakeNode("gw2")
    sched.add_node(gw2)
    sched.add_node_collection(gw2, IDS)
    sched.schedule()
    rest = [i for i in pending if i != pending[2]]
    assert gw2.calls == _expected_calls(rest[1:] if judged else rest)


@pytest.mark.usefixtures("xdist_installed")
def test_crash_item_rescheduled_with_mark_test_pending() -> None:
    sched, nodes, _ = _start(2)
    gw1 = nodes[1]
    pending = list(sched.node2pending[gw1])
    crashitem = sched.remove_node(gw1)
    assert crashitem == IDS[pending[0]]
    assert crashitem is not None
    sched.mark_test_pending(crashitem)
    gw2 = FakeNode("gw2")
    sched.add_node(gw2)
    sched.add_node_collection(gw2, IDS)
    sched.schedule()
    assert gw2.calls == _expected_calls(pending)


@pytest.mark.usefixtures("xdist_installed")
def test_crash_on_last_item() -> None:
    sched, nodes, _ = _start(2)
    gw1 = nodes[1]
    *done, last = sched.node2pending[gw1]
    for index in done:
        sched.mark_test_complete(gw1, index)
    assert sched.remove_node(gw1) == IDS[last]
    _run_all(sched, nodes[0])
    assert not sched.has_pending  # nothing left over for a replacement
    assert sched.tests_finished
    gw2 = FakeNode("gw2")
    sched.add_node(gw2)
    sched.add_node_collection(gw2, IDS)
    sched.schedule()
    assert gw2.calls == [("shutdown", [])]


@pytest.mark.usefixtures("xdist_installed")
def test_replacement_with_other_collection_is_reported_and_shut_down() -> None:
    sched, nodes, config = _start(2)
    sched.remove_node(nodes[1])
    assert not sched.tests_finished
    gw2 = FakeNode("gw2")
    sched.add_node(gw2)
    sched.add_node_collection(gw2, IDS[:-1])
    sched.schedule()
    assert gw2.calls == [("shutdown", [])]
    (report,) = config.collectreports
    assert "will not run" in str(report.longrepr)
    _run_all(sched, nodes[0])
    assert sched.tests_finished  # the session can end; the collection error fails it


@pytest.mark.usefixtures("xdist_installed")
def test_node_dying_before_schedule_is_replaced() -> None:
    config = FakeConfig(2)
    sched = HashScheduling(config)
    gw0, gw1, gw2 = FakeNode("gw0"), FakeNode("gw1"), FakeNode("gw2")
    sched.add_node(gw0)
    sched.add_node(gw1)
    sched.add_node_collection(gw1, IDS)
    assert sched.remove_node(gw1) is None
    sched.add_node_collection(gw0, IDS)
    assert not sched.collection_is_completed
    sched.add_node(gw2)
    sched.add_node_collection(gw2, IDS)
    assert sched.collection_is_completed
    sched.schedule()
    buckets = assign(IDS, 2)
    assert gw0.calls == _expected_calls(buckets[0])
    assert gw2.calls == _expected_calls(buckets[1])  # takes the missing worker's shard


@pytest.mark.usefixtures("xdist_installed")
def test_work_stealing_not_supported() -> None:
    sched, nodes, _ = _start(2)
    with pytest.raises(NotImplementedError):
        sched.remove_pending_tests_from_node(nodes[0], [1])


# --------------------------------------------------------------------------------------------
# real xdist


CONFTEST = """
import json
import os
from pathlib import Path

import pytest

from pytest_llmeval.plugin import scheduling as sharding

OUT = Path({out!r})


def pytest_xdist_make_scheduler(config, log):
    return sharding.HashScheduling(config, log)


def pytest_configure_node(node):
    sharding.mark_hash_scheduling(node.workerinput)


def pytest_collection_finish(session):
    order = sharding.run_order(session.config, session.items)
    if order is not None:
        workerid = session.config.workerinput["workerid"]
        nodeids = [session.items[i].nodeid for i in order]
        (OUT / f"predicted-{{workerid}}.json").write_text(json.dumps(nodeids))


@pytest.fixture(autouse=True)
def record(request):
    workerid = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    with open(OUT / f"ran-{{workerid}}.txt", "a") as f:
        f.write(request.node.nodeid + "\\n")
"""

TESTS = """
import os
from pathlib import Path

import pytest

OUT = Path({out!r})


def test_boom():
    marker = OUT / "crashed-once"
    if {crash} and not marker.exists():
        marker.write_text("x")
        os._exit(1)


@pytest.mark.parametrize("case", [f"case-{{i:02d}}" for i in range(20)])
def test_case(case):
    pass
"""


def _write_project(pytester: pytest.Pytester, out: Path, *, crash: bool = False) -> None:
    pytester.makeconftest(CONFTEST.format(out=str(out)))
    pytester.makepyfile(test_sharded=TESTS.format(out=str(out), crash=crash))


def _ran(out: Path) -> dict[str, list[str]]:
    return {
        path.stem.removeprefix("ran-"): path.read_text().splitlines()
        for path in sorted(out.glob("ran-*.txt"))
    }


def _predicted(out: Path) -> dict[str, list[str]]:
    return {
        path.stem.removeprefix("predicted-"): json.loads(path.read_text())
        for path in sorted(out.glob("predicted-*.json"))
    }


def _collected(pytester: pytest.Pytester) -> list[str]:
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:llmeval")
    assert result.ret == 0, result.outlines + result.errlines
    return [line for line in result.outlines if "::" in line]


def test_xdist_runs_each_test_on_its_hash_worker(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    out = tmp_path / "out"
    out.mkdir()
    _write_project(pytester, out)
    collected = _collected(pytester)
    assert len(collected) == 21

    result = pytester.runpytest("-n", "2", "-p", "no:llmeval", "-v")
    result.assert_outcomes(passed=21)

    ran = _ran(out)
    assert set(ran) <= {"gw0", "gw1"}
    everything = [nodeid for nodeids in ran.values() for nodeid in nodeids]
    assert sorted(everything) == sorted(collected)  # each test ran exactly once
    for workerid, nodeids in ran.items():
        for nodeid in nodeids:
            assert workerid == f"gw{shard_of(case_key(nodeid), 2)}", nodeid
    # Each worker ran exactly what it predicted at collection time, in that order.
    buckets = assign(collected, 2)
    predicted = _predicted(out)
    assert set(predicted) == {"gw0", "gw1"}
    for worker in (0, 1):
        expected = [collected[i] for i in buckets[worker]]
        assert predicted[f"gw{worker}"] == expected
        assert ran.get(f"gw{worker}", []) == expected


def test_xdist_crashed_worker_remainder_runs_on_replacement(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytest.importorskip("xdist")
    out = tmp_path / "out"
    out.mkdir()
    _write_project(pytester, out, crash=True)
    collected = _collected(pytester)
    boom = "test_sharded.py::test_boom"
    worker = shard_of(case_key(boom), 2)
    mine = [collected[i] for i in assign(collected, 2)[worker]]
    position = mine.index(boom)
    assert mine[position + 1 :], "the crash should leave work for the replacement"

    result = pytester.runpytest("-n", "2", "-p", "no:llmeval")
    result.assert_outcomes(passed=20, failed=1)
    result.stdout.fnmatch_lines([f"*worker 'gw{worker}' crashed while running*test_boom*"])

    ran = _ran(out)
    assert ran[f"gw{worker}"] == mine[: position + 1]  # up to and including the crash
    assert ran.get("gw2", []) == mine[position + 1 :]  # the rest, same order, on the new node
    other = [collected[i] for i in assign(collected, 2)[1 - worker]]
    assert ran.get(f"gw{1 - worker}", []) == other
    assert "gw2" not in _predicted(out)  # a replacement cannot predict its list


def test_xdist_crashed_item_rerun_via_handlecrashitem(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytest.importorskip("xdist")
    out = tmp_path / "out"
    out.mkdir()
    _write_project(pytester, out, crash=True)
    with open(pytester.path / "conftest.py", "a") as f:
        f.write(
            "\n\ndef pytest_handlecrashitem(crashitem, report, sched):\n"
            "    sched.mark_test_pending(crashitem)\n"
        )
    collected = _collected(pytester)
    boom = "test_sharded.py::test_boom"
    worker = shard_of(case_key(boom), 2)
    mine = [collected[i] for i in assign(collected, 2)[worker]]
    position = mine.index(boom)

    result = pytester.runpytest("-n", "2", "-p", "no:llmeval")
    result.assert_outcomes(passed=21, failed=1)  # the crash report, then the passing rerun
    assert _ran(out).get("gw2", []) == mine[position:]
