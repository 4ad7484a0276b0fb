"""Late ends: what happens after the run dir was written never leaves a greener record.

pytest can end a process after this plugin's hooks wrote the run dir: a conftest's
``pytest_terminal_summary`` or ``pytest_unconfigure`` that raises (the process exits 1), a
synchronous agent still blocked in its thread when the session ends, a SIGHUP from a closing
terminal, and the offline commands meet run dirs that cannot be read. Each entry drives the
real thing through a pytest subprocess (or the command) and checks the exit status and every
reader of the record.
"""

from __future__ import annotations

import pytest

from tests.fail_closed.test_interrupt import IDS
from tests.fail_closed.test_recorded import _command, _golden, _manifest_verdict, _page_verdict

LATE_ERRORS = {
    "terminal_summary": (
        "def pytest_terminal_summary(config):\n    raise RuntimeError('a late summary')\n",
        "RuntimeError('a late summary')",
    ),
    "unconfigure": (
        "def pytest_unconfigure(config):\n    raise RuntimeError('a late unconfigure')\n",
        "RuntimeError('a late unconfigure')",
    ),
    "an outer unconfigure wrapper": (
        "@pytest.hookimpl(wrapper=True, tryfirst=True)\n"
        "def pytest_unconfigure(config):\n"
        "    yield\n"
        "    raise RuntimeError('after every unconfigure')\n",
        "RuntimeError('after every unconfigure')",
    ),
    "sys.exit() in unconfigure": (
        "def pytest_unconfigure(config):\n    raise SystemExit(3)\n",
        "SystemExit(3)",
    ),
}


@pytest.mark.parametrize("workers", ["0", "2"])
@pytest.mark.parametrize("late", LATE_ERRORS, ids=list(LATE_ERRORS))
def test_a_hook_that_raises_after_the_run_dir_leaves_it_red(
    pytester: pytest.Pytester, late: str, workers: str
) -> None:
    """Every case passed and the gate held, then a conftest's terminal summary or
    unconfigure raised and the process exits non-zero: the manifest, the page, ``runs`` and
    ``summarize`` say failed, with the error, and the status the process exited with."""
    if workers != "0":
        pytest.importorskip("xdist")
    hook, error = LATE_ERRORS[late]
    pytester.makeconftest("import pytest\n\n" + hook)
    _golden(pytester, IDS[:4])
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-n", workers, "--llmeval-runner", "echo",
        "--llmeval-run-dir=out/late", "--llmeval-gate", "golden.pass_rate>=0.5",
    )  # fmt: skip
    status = 3 if "SystemExit" in error else 1
    assert result.ret == status, result.stdout.str() + result.stderr.str()
    run = pytester.path / "out/late"
    message = f"the session ended on an error after the run dir was written: {error}"
    recorded = _manifest_verdict(run)
    assert recorded["status"] == "failed" and recorded["exit_status"] == status, recorded
    assert {"kind": "exit", "message": message} in recorded["faults"]
    assert _page_verdict(run) == "failed"
    listed = _command(pytester.path, "runs", "out")
    assert f"  failed  ({message}" in listed.stdout, listed.stdout + listed.stderr
    # summarize cannot see why the process ended so: it keeps it
    assert _command(pytester.path, "summarize", "out/late").returncode == 1
    assert _manifest_verdict(run)["status"] == "failed"
