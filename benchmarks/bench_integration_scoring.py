"""What scoring a tool-integration item costs, next to the rest of a run.

    python benchmarks/bench_integration_scoring.py            # the 66-item example, R=20
    python benchmarks/bench_integration_scoring.py --quick    # R=3
    python benchmarks/bench_integration_scoring.py --smoke    # R=1, only checks it runs

It runs ``evals/tool_integration.integration.jsonl`` once through ``pytest`` on its cassettes
(``replay``: no model, so the session time is all harness) and once with ``--collect-only``,
then scores every recorded transcript again in this process, in both modes, R times (best
round kept). Printed: microseconds per item for each mode, and those as a share of the
session's per-item time and of a 200 ms model call. The re-scored details must equal the
recorded ones (the check prints ``identical``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _harness import best_of, clean_env, pytest_command, run

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "evals" / "tool_integration.integration.jsonl"
sys.path.insert(0, str(ROOT))


def _rescore(run_dir: Path, mode: str) -> tuple[float, int, bool]:
    """Best seconds per round to score every recorded item; item count; details identical."""
    from pytest_llmeval.config.settings import Settings
    from pytest_llmeval.core.models import CaseResult, Transcript
    from pytest_llmeval.suites.base import CaseSource, PendingCase, SuiteContext
    from pytest_llmeval.suites.integration import IntegrationSuite
    from pytest_llmeval.tools.registry import ToolRegistry

    settings = Settings.model_construct(
        rootdir=ROOT,
        fail_on_fingerprint_mismatch=False,
        integration_mode=mode,
        max_turns=5,
    )
    ctx = SuiteContext(settings=settings, registry=ToolRegistry.load(ROOT / "evals" / "tools.json"))
    suite = IntegrationSuite()
    source = CaseSource(path=DATASET, display=DATASET.relative_to(ROOT).as_posix())
    cases = {
        item.case_id: item.build()
        for item in suite.load(source, ctx)
        if isinstance(item, PendingCase)
    }
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    jobs = []
    for row in rows:
        result = CaseResult.model_validate(row)
        transcript = Transcript(response=result.response, tool_calls=result.tool_calls)
        jobs.append((cases[result.case_id], transcript, result.details))
    return _time(suite, ctx, jobs, mode)


def _time(suite: Any, ctx: Any, jobs: list[Any], mode: str) -> tuple[float, int, bool]:
    best = float("inf")
    same = True
    for _ in range(ARGS.repeats):
        start = time.perf_counter()
        scored = [suite.score(case, transcript, ctx) for case, transcript, _ in jobs]
        best = min(best, time.perf_counter() - start)
    if mode == "precise":
        same = all(s.details == recorded for s, (_, _, recorded) in zip(scored, jobs, strict=True))
    return best, len(jobs), same


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        env = clean_env()
        variants = {
            "collect": lambda: run(pytest_command(str(DATASET), "--collect-only"), ROOT, env),
            "run": lambda: run(
                pytest_command(str(DATASET), f"--llmeval-run-dir={run_dir}"), ROOT, env
            ),
        }
        best = best_of(variants, 1 if ARGS.smoke else 3)
        items = sum(1 for _ in (run_dir / "results.jsonl").open())
        per_item_s = best["run"].wall_s / items
        print(
            f"session: {best['run'].wall_s:.2f} s for {items} items "
            f"({per_item_s * 1e3:.2f} ms per item); collect-only {best['collect'].wall_s:.2f} s"
        )
        for mode in ("precise", "compat"):
            seconds, n, same = _rescore(run_dir, mode)
            each = seconds / n
            check = "identical" if same else "DIFFERENT from the recorded details"
            print(
                f"{mode}: {each * 1e6:.0f} us per item (best of {ARGS.repeats}); "
                f"{each / per_item_s:.2%} of the session's per-item time, "
                f"{each / 0.2:.3%} of a 200 ms model call; re-scored details {check}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    ARGS = parser.parse_args()
    ARGS.repeats = 1 if ARGS.smoke else 3 if ARGS.quick else 20
    main()
