"""python -m pytest_llmeval compare: runs side by side in compare.md and compare.html, on real
run dirs (an echo run, a run of another runner where cases flip, a run of another dataset, an
interrupted run) and on broken and foreign ones."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest

from tests.commands.history import ROOT, command, echo_run, no_traceback, session
from tests.conftest import answering_runner

HOSTILE = "x<img src=x onerror=alert(1)>|y"

ROWS = [
    {"id": "a", "input": "say a", "expected_output": "say a"},  # passes in both
    {"id": "b", "input": "say b", "expected_output": "say b"},  # echo passes, other fails
    {"id": "c", "input": "say c", "expected_output": "fixed-c"},  # echo fails, other passes
    {"id": "d", "input": "say d", "expected_output": "never"},  # fails in both
    {"id": HOSTILE, "input": "hi", "expected_output": "hi"},
]

OTHER = answering_runner(
    "other", "text in ('say b', 'say c')", "{'say b': 'wrong', 'say c': 'fixed-c'}[text]"
)


def two_runs(pytester: pytest.Pytester) -> tuple[Path, Path]:
    pytester.makeconftest(OTHER)
    first = session(pytester, ROWS, "--llmeval-runner", "echo")
    second = session(pytester, ROWS, "--llmeval-runner", "other")
    return first, second


def tables(markdown: str) -> dict[str, list[list[str]]]:
    """Each ``## heading``'s table (the first under ``#``), as rows of cells (no header)."""
    out: dict[str, list[list[str]]] = {}
    heading = "runs"
    for line in markdown.splitlines():
        if line.startswith("## "):
            heading = line[3:]
        elif line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            out.setdefault(heading, []).append(cells)
    return {name: rows[1:] for name, rows in out.items()}  # without the header row


def test_compare_two_runs_where_cases_flip(pytester: pytest.Pytester) -> None:
    first, second = two_runs(pytester)
    done = command(pytester.path, "compare", str(first), str(second), "--out", "out")
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    md = (pytester.path / "out" / "compare.md").read_text()
    assert md.startswith("<!-- written by python -m pytest_llmeval compare;")
    assert done.stdout == md.split("\n", 1)[1] + "wrote out/compare.md and out/compare.html\n"
    found = tables(md)
    assert [row[:2] for row in found["runs"]] == [["A", f"`{first.name}`"],
                                                  ["B", f"`{second.name}`"]]  # fmt: skip
    assert found["runs"][0][3:] == ["echo", "5", "failed"]
    assert found["runs"][1][3:] == ["other", "5", "failed"]
    assert found["Suites"] == [["golden", "pass rate", "60.0% [23.1-88.2]", "60.0% [23.1-88.2]"]]
    # b passed in A and fails in B, c the other way: one flip each way, McNemar p = 1
    assert found["Against A"] == [["B (other runner)", "5", "1", "1", "1", "0", "0", "0"]]
    cases = found["Cases"]
    assert [row[0] for row in cases[:2]] == ["**≠** `qa.golden.json::b`",
                                             "**≠** `qa.golden.json::c`"]  # fmt: skip
    # each side's reason for its outcome, where the outcomes differ
    assert cases[0][1:] == [
        "passed 1.00",
        'failed 0.00: `exact_match: 0.00 < 1.00 (expected "say b", got "wrong")`',
    ]
    assert cases[1][1:] == [
        'failed 0.00: `exact_match: 0.00 < 1.00 (expected "fixed-c", got "say c")`',
        "passed 1.00",
    ]
    hostile = f"`qa.golden.json::{HOSTILE}`".replace("|", "\\|")  # a code span: inert
    assert sorted(row[0] for row in cases[2:]) == [
        "`qa.golden.json::a`", "`qa.golden.json::d`", hostile
    ]  # fmt: skip
    assert "5 cases in every run, 2 of them with differing outcomes" in md
    assert "<img" not in md.replace(hostile, "")


def test_compare_runs_of_another_dataset_and_an_interrupted_run(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(OTHER)
    four = ROWS[:4]
    first = session(pytester, four, "--llmeval-runner", "echo")
    changed = {"id": "b", "input": "say b", "expected_output": "not b"}
    e = {"id": "e", "input": "say e", "expected_output": "say e"}
    shared = session(pytester, [ROWS[0], changed, e], "--llmeval-runner", "echo")
    cut = session(pytester, four, "--llmeval-runner", "other", "-x")  # stops after b fails
    done = command(pytester.path, "compare", str(first), str(shared), str(cut),
                   "--out", "out", "--max-rows", "3")  # fmt: skip
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    md = (pytester.path / "out" / "compare.md").read_text()
    found = tables(md)
    assert found["runs"][2][3:] == ["other", "2", "failed (interrupted: maxfail: 2 of 4 ran)"]
    assert found["Suites"] == [["golden", "pass rate", "50.0% [15.0-85.0]",
                                "66.7% [20.8-93.9]", "50.0% [9.5-90.5]"]]  # fmt: skip
    stats = {row[0]: row[1:] for row in found["Against A"]}
    # B: a compared; b's data changed (not compared); c, d only in A; e only in B
    assert stats["B"] == ["1", "0", "0", "1", "2", "1", "1"]
    # C: a and b ran before -x stopped it; b flipped to fail
    assert stats["C (other runner)"] == ["2", "1", "0", "1", "2", "0", "0"]
    assert "2 cases in every run, 1 of them with differing outcomes" in md
    assert "1 cases whose data changed between the runs (marked Δ" in md
    assert "3 cases in only some runs" in md
    cases = found["Cases"]
    b_in_b = 'failed 0.00: `exact_match: 0.00 < 1.00 (expected "not b", got "say b")`'
    b_in_c = 'failed 0.00: `exact_match: 0.00 < 1.00 (expected "say b", got "wrong")`'
    assert cases == [  # b's data changed in B: marked, with each side's reason
        ["**≠** **Δ data changed** `qa.golden.json::b`", "passed 1.00", b_in_b, b_in_c],
        ["`qa.golden.json::c`", "failed 0.00", "—", "—"],  # then the rows not in every run
        ["`qa.golden.json::d`", "failed 0.00", "—", "—"],
    ]
    assert md.rstrip().endswith("2 more case rows are in compare.html.")
    page = (pytester.path / "out" / "compare.html").read_text()
    assert page.count('<tr class="case-row') == 5  # the HTML keeps every row
    (row_b,) = [r for r in page.split("<tr ")[1:] if "qa.golden.json::b<" in r]
    assert "changed" in row_b.split(">")[0] and "Δ data changed" in row_b
    assert row_b.count('<div class="reason">') == 2  # B's and C's reasons; A passed
    assert '(expected "not b", got "say b")' in html.unescape(row_b)


def test_compare_names_runs_under_the_default_root(pytester: pytest.Pytester) -> None:
    first = echo_run(pytester, {"a": True, "b": True})
    second = echo_run(pytester, {"a": True, "b": False})
    done = command(pytester.path, "compare", first.name, "latest")
    assert done.returncode == 0, done.stderr
    assert (pytester.path / "compare.md").is_file() and (pytester.path / "compare.html").is_file()
    found = tables((pytester.path / "compare.md").read_text())
    assert [row[1] for row in found["runs"]] == [f"`{first.name}`", f"`{second.name}`"]
    again = command(pytester.path, "compare", first.name, "latest")  # its own files: replaced
    assert again.returncode == 0, again.stderr


def test_compare_refuses_what_it_cannot_read_or_may_not_write(pytester: pytest.Pytester) -> None:
    first = echo_run(pytester, {"a": True})
    second = echo_run(pytester, {"a": False})
    root = pytester.path / ROOT
    broken = root / "broken"
    shutil.copytree(first, broken)
    (broken / "report.json").write_text("{", encoding="utf-8")
    (pytester.path / "foreign").mkdir()
    (pytester.path / "mine").mkdir()
    (pytester.path / "mine" / "compare.md").write_text("my notes\n")
    cases = {
        "a broken run": ([str(first), str(broken)], "report.json:1: not JSON"),
        "a foreign folder": ([str(first), "foreign"],
                             "foreign: is a folder, not a run dir (no manifest.json"),
        "a missing run": ([str(first), "nowhere"], "nowhere: no such run dir"),
        "one run": ([str(first)], "give two runs or more"),
        "a file of the user's": ([str(first), str(second), "--out", "mine"],
                                 "mine/compare.md: exists and was not written by compare"),
        "a run dir as --out": ([str(first), str(second), "--out", str(second)],
                               "is a run dir (it holds only what its session wrote)"),
        "a folder of a run dir as --out": (
            [str(first), str(second), "--out", str(second / "journal")],
            f"is inside the run dir {second.resolve()} (it holds only what its session wrote)"),
        "a new folder under a run dir as --out": (
            [str(first), str(second), "--out", str(second / "new" / "sub")],
            "is inside the run dir"),
    }  # fmt: skip
    for what, (args, message) in cases.items():
        done = command(pytester.path, "compare", *args)
        no_traceback(done)
        assert done.returncode == 2, what
        assert done.stdout == "", what
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("pytest_llmeval compare: "), what
        assert message in lines[0], (what, lines[0])
    assert not (pytester.path / "compare.md").exists()  # nothing was written
    assert (pytester.path / "mine" / "compare.md").read_text() == "my notes\n"
    assert not (pytester.path / "mine" / "compare.html").exists()
    assert sorted(p.name for p in second.iterdir()) == sorted(p.name for p in first.iterdir())
    assert sorted(p.name for p in (second / "journal").rglob("*")) == sorted(
        p.name for p in (first / "journal").rglob("*")
    )


def test_case_ids_with_backticks_stay_code_and_long_ones_are_clipped(
    pytester: pytest.Pytester,
) -> None:
    """A backtick cannot close a case id's code span early, and a very long id is clipped in
    compare.md (whole in compare.html)."""
    long_id = "L" * 20_000
    rows = [
        {"id": "a`b``c", "input": "x", "expected_output": "x"},
        {"id": "`edge`", "input": "y", "expected_output": "y"},
        {"id": long_id, "input": "z", "expected_output": "z"},
    ]
    first = session(pytester, rows, "--llmeval-runner", "echo")
    second = session(pytester, rows, "--llmeval-runner", "echo")
    done = command(pytester.path, "compare", str(first), str(second), "--out", "out")
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    md = (pytester.path / "out" / "compare.md").read_text()
    ids = sorted(row[0] for row in tables(md)["Cases"])
    assert "```qa.golden.json::a`b``c```" in ids
    assert "`` qa.golden.json::`edge` ``" in ids
    assert len(md) < 5_000 and "characters in all]" in md
    assert long_id in (pytester.path / "out" / "compare.html").read_text()


# -- browser -----------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_compare_html_in_the_browser(pytester: pytest.Pytester, tmp_path: Path) -> None:
    from tests.report.test_html import chromium

    first, second = two_runs(pytester)
    more = [*ROWS, {"id": "z", "input": "say z", "expected_output": "say z"}]
    third = session(pytester, more, "--llmeval-runner", "echo")
    done = command(pytester.path, "compare", str(first), str(second), str(third), "--out", "out")
    assert done.returncode == 0, done.stderr
    page = pytester.path / "out" / "compare.html"
    assert page.read_text().count("<script") == 0  # static: the CSP allows no script
    dom = chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert "<img" not in dom and "onerror=" not in html.unescape(dom).replace(HOSTILE, "")
    rows = re.findall(r'<tr class="(case-row[^"]*)"><td class="case-id"><code>(.*?)</code>', dom)
    ids = [html.unescape(nodeid) for _, nodeid in rows]
    assert ids[:2] == ["qa.golden.json::b", "qa.golden.json::c"]  # differing first
    assert [cls for cls, _ in rows[:2]] == ["case-row differs", "case-row differs"]
    assert f"qa.golden.json::{HOSTILE}" in ids  # shown as text
    assert len(ids) == 6  # a b c d, the hostile one, and z (only in C) after b and c
    assert ids[2] == "qa.golden.json::z" and rows[2][0] == "case-row partial"
    assert re.search(r'<tr data-run="B"><td><strong>B</strong> <span class="muted">\(other '
                     r'runner\)</span></td><td class="n">5</td><td class="n">1</td>'
                     r'<td class="n">1</td><td class="n">1</td>', dom)  # fmt: skip
    suites = re.search(r"<td>golden</td><td>pass rate</td>(.*?)</tr>", dom)
    assert suites is not None
    assert suites.group(1).count("60.0%") == 2 and "66.7%" in suites.group(1)
