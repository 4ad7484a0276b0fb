"""BFCL single-turn items replayed from cassettes against the golden suite on as many cases.

    python benchmarks/bench_bfcl.py              # N=2,000, best of 3
    python benchmarks/bench_bfcl.py --quick      # N=500, best of 2
    python benchmarks/bench_bfcl.py --smoke      # N=40, once (a test's check)
    python benchmarks/bench_bfcl.py --n 5000 --repeats 5
    python benchmarks/bench_bfcl.py --baseline /tmp/base   # + another copy, side by side

Two projects are built in a temporary folder, each with N cases:

* ``bfcl``: a BFCL data folder in the official layout (``BFCL_v4_<category>.json`` and
  ``possible_answer/``) of N single-turn items: the vendored rows of ``tests/data/bfcl`` (every
  single-turn category: simple in three languages, multiple, parallel, parallel_multiple,
  irrelevance and the six live ones, but the unpassable ones) copied round-robin under fresh ids
  (``<category>_<k>``), each question tagged ``[#k]`` so that every item makes its own request;
  and a ``suite: bfcl`` manifest with ``data:`` and ``mode: fc``;
* ``golden``: N golden rows (``cases.eval.jsonl``), the model's echo being the answer;
* ``golden-matched``: the same rows, except that the k of every BFCL item that failed when
  recorded expect another answer: the same cases fail in both (a failure costs pytest its
  report and its summary section), so the comparison is like for like.

Both are recorded once through the real record path (``--llmeval-runner openai
--llmeval-record new``) against the project's loopback ``OpenAIServer`` in a process of its
own, which answers a golden row with its echo and a BFCL item with a passing choice of its
ground truth where the row can be passed (:func:`_reply`: the first accepted value of each
required argument, optional ones left out, Java and JavaScript values written as source text
of their declared type; a call for relevance items, text for irrelevance ones). The rows no
reply can pass (a required argument without an accepted value, a ground truth that names an
undocumented argument: 6 of the 84 vendored rows, :data:`UNPASSABLE`) are left out, so every
item passes, as every golden row does; should one fail, ``golden-matched`` fails the same
cases. Then
both are replayed from their cassettes (``--llmeval-runner replay``), each a fresh
``python -m pytest`` subprocess, alternating, best of R; the replays are what is compared.
Target (issue 31): the BFCL replay takes at most 1.3x the golden one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _harness import (
    Sample,
    baseline_env,
    best_of,
    checkout_env,
    clean_env,
    print_table,
    pytest_command,
    ratio,
    run,
    server_process,
    timing_cells,
    timing_header,
    verdict,
    write_cases,
    write_files,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "bfcl"
CATEGORIES = (
    "simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
    "parallel_multiple", "irrelevance", "live_simple", "live_multiple", "live_parallel",
    "live_parallel_multiple", "live_irrelevance", "live_relevance",
)  # fmt: skip
TARGET = 1.3
MANIFEST = "suite: bfcl\ndata: bfcl_data\nmode: fc\n"

SERVER = """
import json, re, sys
from pytest_llmeval.testing.openai_server import ChatAnswer, OpenAIServer, echo_chat

answers = json.load(open(sys.argv[1], encoding="utf-8"))
tag = re.compile(r"\\[#(\\d+)\\]")

def brain(body):
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            found = tag.search(str(message.get("content") or ""))
            if found is None:
                break
            calls = answers[found.group(1)]
            if calls is None:
                return ChatAnswer(content="I cannot help with that using these functions.")
            return ChatAnswer(tool_calls=[
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(arguments)}}
                for i, (name, arguments) in enumerate(calls)
            ])
    return echo_chat(body)

server = OpenAIServer(chat=brain, models=None)
server.start()
print(server.base_url, flush=True)
sys.stdin.read()
server.stop()
"""


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _reply(
    truth: list[dict[str, Any]] | None, functions: list[dict[str, Any]], category: str
) -> Any:
    """What the loopback model answers: a passing choice of the ground truth, in fc names.

    Each ground-truth call, by its documented name with ``.`` -> ``_``; an argument whose
    accepted values include ``""`` (optional) is left out, every other one takes its first
    accepted value (nested dicts and lists of them likewise); in the Java and JavaScript
    categories the value is written as source text of its declared type, as the official
    checker converts it back (:mod:`pytest_llmeval.scoring.bfcl.convert`)."""
    if truth is None:
        return None
    docs = {doc["name"]: doc["parameters"].get("properties", {}) for doc in functions}
    language = "javascript" if "javascript" in category else "java" if "java" in category else ""
    calls = []
    for call in truth:
        ((name, arguments),) = call.items()
        chosen = _first_choices(arguments)
        if language:
            properties = docs.get(name, {})
            chosen = {
                key: _source(value, properties.get(key, {}), language)
                for key, value in chosen.items()
            }
        calls.append((name.replace(".", "_"), chosen))
    return calls


def _first_choices(arguments: dict[str, Any]) -> dict[str, Any]:
    """Each required argument's first accepted value; optional ones (``""`` accepted) and
    ones that accept nothing are left out."""
    return {k: _chosen(v[0]) for k, v in arguments.items() if v and "" not in v}


def _chosen(value: Any) -> Any:
    """A ground-truth value with its nested accepted-value dicts resolved to first choices."""
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        return _first_choices(value)
    if isinstance(value, list):
        return [_chosen(v) for v in value]
    return value


def _source(value: Any, doc: dict[str, Any], language: str) -> str:
    """``value`` as Java or JavaScript source text of the documented type."""
    kind = doc.get("type", "String")
    nested = (doc.get("items") or {}).get("type")
    if language == "java":
        return _java(value, kind, nested)
    return _javascript(value, kind, nested)


def _java(value: Any, kind: str, nested: str | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "long":
        return f"{value}L"
    if kind == "float":
        return f"{value}f"
    if kind == "ArrayList" and isinstance(value, list):
        quote = nested in ("String", "char")
        parts = ", ".join(f'"{v}"' if quote else _java(v, nested or "any", None) for v in value)
        return f"new ArrayList<>(Arrays.asList({parts}))"
    if kind == "Array" and isinstance(value, list):
        parts = ", ".join(_java(v, nested or "any", None) for v in value)
        return f"new {nested or 'Object'}[]{{{parts}}}"
    if kind == "HashMap" and isinstance(value, dict):
        puts = " ".join(f'put("{k}", {_java_literal(v)});' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return str(value)


def _java_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else str(value)


def _javascript(value: Any, kind: str, nested: str | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "Bigint":
        return f"{value}n"
    if kind == "array" and isinstance(value, list):
        return "[" + ", ".join(_js_literal(v) for v in value) + "]"
    if kind == "dict" and isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_literal(v)}" for k, v in value.items()) + "}"
    return str(value)


def _js_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_js_literal(v) for v in value) + "]"
    if isinstance(value, str):
        return f"'{value}'" if '"' in value else f'"{value}"'
    return str(value)


def vendored_pool() -> list[tuple[str, dict[str, Any], list[dict[str, Any]] | None]]:
    """``(category, row, ground truth)`` of every vendored single-turn row, in order (a
    ``live_relevance`` row's: a call of its first function, as any call passes)."""
    pool: list[tuple[str, dict[str, Any], list[dict[str, Any]] | None]] = []
    for category in CATEGORIES:
        answers = DATA / "possible_answer" / f"BFCL_v4_{category}.json"
        truths = {r["id"]: r["ground_truth"] for r in _rows(answers)} if answers.is_file() else {}
        for row in _rows(DATA / f"BFCL_v4_{category}.json"):
            truth = truths.get(row["id"])
            if category == "live_relevance":
                truth = [{row["function"][0]["name"]: {}}]
            pool.append((category, row, truth))
    return pool


UNPASSABLE = {
    "simple_java_36": "an ArrayList<any> converts to strings, the ground truth holds 42 and True",
    "live_simple_106-63-0": "required arguments whose accepted values are []",
    "live_simple_112-68-0": "required arguments whose accepted values are []",
    "live_multiple_507-149-4": "the required origin_airport accepts only the omitted marker",
    "live_multiple_862-181-3": "the ground truth names an argument the doc does not have",
    "live_multiple_964-207-0": "the ground truth names an argument the doc does not have",
}
"""The vendored single-turn rows no reply can pass (the official checker fails them all):
left out of the benchmark's items, so both sides pass every case and the comparison is of
the suite's cost, not of pytest's failure reports (``tests/test_benchmarks.py`` checks that
every other row gets a passing reply)."""


def write_bfcl(folder: Path, n: int) -> dict[str, Any]:
    """N single-turn items under ``folder/bfcl_data`` and the manifest; k -> the reply."""
    pool = [entry for entry in vendored_pool() if entry[1]["id"] not in UNPASSABLE]
    data = folder / "bfcl_data"
    (data / "possible_answer").mkdir(parents=True)
    shutil.copy(DATA / "NOTICE", data / "NOTICE")
    items: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    truths_out: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    replies: dict[str, Any] = {}
    for k in range(n):
        category, row, truth = pool[k % len(pool)]
        new_id = f"{category}_{k}"
        question = json.loads(json.dumps(row["question"]))
        turn = question[0]
        last = max(i for i, m in enumerate(turn) if m["role"] == "user")
        turn[last]["content"] = f"{turn[last]['content']} [#{k}]"
        items[category].append(json.dumps({**row, "id": new_id, "question": question}))
        if truth is not None and category != "live_relevance":
            truths_out[category].append(json.dumps({"id": new_id, "ground_truth": truth}))
        replies[str(k)] = _reply(truth, row["function"], category)
    for category in CATEGORIES:
        if items[category]:
            name = f"BFCL_v4_{category}.json"
            (data / name).write_text("\n".join(items[category]) + "\n", "utf-8")
            if truths_out[category]:
                text = "\n".join(truths_out[category]) + "\n"
                (data / "possible_answer" / name).write_text(text, "utf-8")
    write_files(folder, {"bfcl.llmeval.yaml": MANIFEST})
    return replies


@contextmanager
def answering_server(answers: Path, env: dict[str, str]) -> Iterator[str]:
    """The loopback ``OpenAIServer`` (own process) answering from ``answers``."""
    with server_process(SERVER, str(answers), env) as url:
        yield url


def _outcomes(output: str) -> str:
    lines = [line for line in output.splitlines() if " in " in line and "===" not in line]
    return lines[-1].strip() if lines else output[-300:]


def failed_ks(run_dir: Path) -> set[int]:
    """The k of every BFCL item that did not pass in the recorded run."""
    rows = _rows(run_dir / "results.jsonl")
    return {int(r["case_id"].rsplit("_", 1)[1]) for r in rows if r["outcome"] != "passed"}


def write_golden(folder: Path, n: int, failing: set[int]) -> None:
    """``write_cases``' N rows, where the k in ``failing`` expect another answer."""
    rows = []
    for k in range(n):
        text = f"message {k}"
        expected = f"not {text}" if k in failing else text
        rows.append(json.dumps({"id": f"c{k:06d}", "input": text, "expected_output": expected}))
    write_files(folder, {"cases.eval.jsonl": "\n".join(rows) + "\n"})


def measure(root: Path, n: int, repeats: int, baseline: Path | None) -> None:
    bfcl = root / "bfcl"
    golden = root / "golden"
    matched = root / "golden-matched"
    replies = write_bfcl(bfcl, n)
    write_cases(golden / "cases.eval.jsonl", n)
    write_files(golden, {})
    answers = root / "answers.json"
    answers.write_text(json.dumps(replies), "utf-8")
    env = clean_env()
    mine = checkout_env(env)
    runs = root / "runs"
    out = f"--llmeval-output-root={runs}"
    with answering_server(answers, mine) as url:
        record = pytest_command(
            "--llmeval-runner", "openai", f"--llmeval-base-url={url}",
            "--llmeval-model=test-model", "--llmeval-deterministic=yes",
            "--llmeval-record=new",
        )  # fmt: skip
        for folder in (bfcl, golden, matched):
            if folder is matched:
                write_golden(matched, n, failed_ks(root / "recorded-bfcl"))
            done = root / f"recorded-{folder.name}"
            sample = run([*record, f"--llmeval-run-dir={done}"], folder, mine, ok_codes=(0, 1))
            print(f"recorded {folder.name}: {_outcomes(sample.output)} ({sample.wall_s:.1f}s)")
    replay = pytest_command("--llmeval-runner", "replay", out)

    def replayed(folder: Path, env: dict[str, str]) -> Callable[[], Sample]:
        def go() -> Sample:
            try:
                return run(replay, folder, env, ok_codes=(0, 1))
            finally:
                shutil.rmtree(runs, ignore_errors=True)

        return go

    variants = {
        "golden": replayed(golden, mine),
        "golden-matched": replayed(matched, mine),
        "bfcl": replayed(bfcl, mine),
    }
    if baseline is not None:
        base_env = baseline_env(env, baseline)
        variants["bfcl@baseline"] = replayed(bfcl, base_env)
    best = best_of(variants, repeats)
    for name, b in best.items():
        done = _outcomes(b.last_output)
        if str(n) not in done.replace(",", "") and "passed" not in done:
            raise SystemExit(f"{name}: not {n} cases run:\n{b.last_output[-800:]}")
    print(f"\n## BFCL single-turn replay against golden: N={n} (best of {repeats})")
    print_table(
        ["variant", *timing_header("golden"), "outcome"],
        [
            [name, *timing_cells(b, best["golden"]), _outcomes(b.last_output)]
            for name, b in best.items()
        ],
    )
    value = best["bfcl"].wall_s / best["golden"].wall_s
    print(f"\n- bfcl / golden: {value:.2f}x (target <= {TARGET:.2f}x: {verdict(value, TARGET)})")
    per = (best["bfcl"].wall_s - best["golden"].wall_s) / n * 1e6
    print(f"- bfcl above golden per case: {per:.0f} us")
    cpu = best["bfcl"].cpu_s / best["golden"].cpu_s
    print(
        f"- bfcl / golden, CPU time: {cpu:.2f}x (target <= {TARGET:.2f}x: {verdict(cpu, TARGET)})"
    )
    matched = best["golden-matched"]
    print(
        f"- bfcl / golden-matched (the same cases fail in both): wall "
        f"{ratio(best['bfcl'].wall_s, matched.wall_s)}, "
        f"CPU {ratio(best['bfcl'].cpu_s, matched.cpu_s)}"
    )
    if baseline is not None:
        mine_s, base_s = best["bfcl"].wall_s, best["bfcl@baseline"].wall_s
        print(f"- this checkout / --baseline: {ratio(mine_s, base_s)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, help="number of cases (default 2000)")
    parser.add_argument("--repeats", type=int, help="best of R (default 3)")
    parser.add_argument("--quick", action="store_true", help="N=500, best of 2")
    parser.add_argument("--smoke", action="store_true", help="N=40, once (a test's check)")
    parser.add_argument("--baseline", type=Path, help="another copy of the package, side by side")
    options = parser.parse_args()
    n, repeats = (40, 1) if options.smoke else (500, 2) if options.quick else (2000, 3)
    n = options.n or n
    repeats = options.repeats or repeats
    with tempfile.TemporaryDirectory(prefix="llmeval-bench-bfcl-") as tmp:
        measure(Path(tmp), n, repeats, options.baseline)


if __name__ == "__main__":
    main()
