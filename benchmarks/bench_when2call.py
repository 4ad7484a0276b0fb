"""When2Call MCQ log-likelihood: the plugin against lm-evaluation-harness and a naive scorer.

    python benchmarks/bench_when2call.py --lm-eval-python /path/to/lm-eval-venv/bin/python
    python benchmarks/bench_when2call.py --quick        # R=1
    python benchmarks/bench_when2call.py --smoke        # 4 rows, the small model, R=1

On the 300-row When2Call file (``--data``, default the copy the tests use,
``tests/data/when2call/when2call_test_llm_judge.jsonl``) and two tiny random Llamas built
here (no download: the ``small`` one about 47k parameters, the ``large`` one about 3.1M, both
with 4,096 positions and a 500-token byte-level BPE vocabulary), every variant is a
subprocess timed end to end:

* ``ours``: ``pytest`` on a ``suite: when2call`` manifest with ``--llmeval-runner hf``, as a
  user runs it (the context of a question runs once, its four options from the cached state);
* ``naive``: the same four log-likelihoods per question, one (context, option) pair at a time,
  each a full forward pass (the project's ``HFRunner`` whole-sequence path, no pytest);
* ``lm-eval`` (with ``--lm-eval-python``, a Python that has lm-eval 0.4.13 installed; never a
  dependency of this project): the official default task's shape (``doc_to_text`` the prompt,
  the four options as choices, ``target_delimiter: ""``) through ``lm_eval run --model hf
  --batch_size 8 --device cpu``.

Printed per model: best wall of R (alternating order), all walls, ratios against lm-eval and
naive, options scored per second end to end, and the checks: ``acc`` / ``acc_norm`` equal, and
the largest per-option log-likelihood difference (absolute, and relative to the value).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from _harness import Sample, best_of, clean_env, ratio, run

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / "tests" / "data" / "when2call" / "when2call_test_llm_judge.jsonl"
LABELS = ("direct", "tool_call", "request_for_info", "cannot_answer")
MODELS = {
    "small": {"vocab_size": 500, "hidden": 32, "layers": 3, "heads": 4, "max_positions": 4096},
    "large": {
        "vocab_size": 500, "hidden": 256, "intermediate": 704, "layers": 4, "heads": 8,
        "kv_heads": 4, "max_positions": 4096,
    },
}  # fmt: skip
TASK_YAML = """\
task: w2c_bench
dataset_path: json
dataset_kwargs:
  data_files:
    train: {docs}
test_split: train
output_type: multiple_choice
doc_to_text: prompt
doc_to_choice: choices
doc_to_target: target_index
target_delimiter: ""
num_fewshot: 0
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""
NAIVE = """
import asyncio, json, sys
from pytest_llmeval.runners.hf_local import HFRunner, _Group
runner = HFRunner(sys.argv[1], device="cpu")
out = {}
for line in open(sys.argv[2]):
    doc = json.loads(line)
    scores = []
    for option in doc["choices"]:  # one (context, option) pair at a time, a full pass each
        enc = runner._encode_group(_Group(doc["prompt"], (option,)))
        scores.append(runner._score_whole(enc)[0].logprob_sum)
    out[doc["uuid"]] = scores
json.dump(out, open(sys.argv[3], "w"))
"""


def write_docs(rows: list[dict[str, Any]], path: Path) -> None:
    """The lm-eval documents: the default format's prompt and the four options, in order."""
    sys.path.insert(0, str(ROOT))
    from pytest_llmeval.suites.when2call_prompts import build_prompt, tool_call_option

    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            answers = dict(row["answers"])
            call = answers["tool_call"]
            answers["tool_call"] = tool_call_option("default", call, json.loads(call))
            parsed = [json.loads(t) for t in row["tools"]]
            doc = {
                "uuid": row["uuid"],
                "prompt": build_prompt("default", row["question"], row["tools"], parsed),
                "choices": [answers[label] for label in LABELS],
                "target_index": LABELS.index(row["correct_answer"]),
            }
            handle.write(json.dumps(doc) + "\n")


def lm_eval_scores(out: Path) -> dict[str, list[float]]:
    """uuid -> the four log-likelihoods lm-eval logged."""
    (path,) = glob.glob(str(out / "**" / "samples_*.jsonl"), recursive=True)
    scores = {}
    for line in Path(path).read_text().splitlines():
        sample = json.loads(line)
        scores[sample["doc"]["uuid"]] = [float(r[0]) for r in sample["filtered_resps"]]
    return scores


def picks(scores: dict[str, list[float]], docs: dict[str, Any]) -> tuple[float, float]:
    """acc and acc_norm (first index on ties) from per-option log-likelihoods."""
    acc = norm = 0
    for uuid, lls in scores.items():
        doc = docs[uuid]
        lengths = [len(c) for c in doc["choices"]]
        best = max(range(4), key=lambda i: (lls[i], -i))
        best_norm = max(range(4), key=lambda i: (lls[i] / lengths[i], -i))
        acc += best == doc["target_index"]
        norm += best_norm == doc["target_index"]
    return acc / len(scores), norm / len(scores)


def compare(a: dict[str, list[float]], b: dict[str, list[float]]) -> str:
    pairs = [(x, y) for uuid in a for x, y in zip(a[uuid], b[uuid], strict=True)]
    worst = max(abs(x - y) for x, y in pairs)
    relative = max(abs(x - y) / max(abs(x), abs(y), 1e-12) for x, y in pairs)
    return f"max |dLL| {worst:.2e} (relative {relative:.1e})"


def bench_model(name: str, rows: list[dict[str, Any]], tmp: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from pytest_llmeval.testing.tiny import build_tiny_model

    model = build_tiny_model(tmp / f"model-{name}", **MODELS[name])
    work = tmp / f"work-{name}"
    work.mkdir()
    (work / "pytest.ini").write_text("[pytest]\n")
    data = work / "when2call_rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (work / "w2c.llmeval.yaml").write_text(f"suite: when2call\ndata: {data.name}\n")
    docs_path = work / "docs.jsonl"
    write_docs(rows, docs_path)
    docs = {json.loads(x)["uuid"]: json.loads(x) for x in docs_path.read_text().splitlines()}
    env = clean_env(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    counter = iter(range(1000))

    def ours() -> Sample:
        run_dir = work / f"ours-{next(counter)}"
        sample = run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "w2c.llmeval.yaml",
             "--llmeval-runner", "hf", f"--llmeval-model={model}", f"--llmeval-run-dir={run_dir}"],
            work, env, ok_codes=(0, 1),
        )  # fmt: skip
        shutil.rmtree(work / "ours-last", ignore_errors=True)
        run_dir.rename(work / "ours-last")
        return sample

    def naive() -> Sample:
        script = work / "naive.py"
        script.write_text(NAIVE)
        return run([sys.executable, str(script), str(model), str(docs_path),
                    str(work / "naive.json")], work, env)  # fmt: skip

    variants = {"ours": ours, "naive": naive}
    if ARGS.lm_eval_python:
        task_dir = work / "task"
        task_dir.mkdir()
        (task_dir / "w2c_bench.yaml").write_text(TASK_YAML.format(docs=docs_path))
        lm_env = {**env, "HF_DATASETS_CACHE": str(work / "hf-datasets")}

        def lm_eval() -> Sample:
            out = work / "lm-eval-out"
            shutil.rmtree(out, ignore_errors=True)
            return run(
                [ARGS.lm_eval_python, "-m", "lm_eval", "run", "--model", "hf", "--model_args",
                 f"pretrained={model},dtype=float32", "--tasks", "w2c_bench", "--include_path",
                 str(task_dir), "--batch_size", "8", "--device", "cpu", "--log_samples",
                 "--output_path", str(out)],
                work, lm_env,
            )  # fmt: skip

        variants["lm-eval"] = lm_eval
    best = best_of(variants, ARGS.repeats)
    results = [
        json.loads(x) for x in (work / "ours-last" / "results.jsonl").read_text().splitlines()
    ]
    ours_scores = {r["case_id"]: r["details"]["loglik"] for r in results}
    naive_scores = json.loads((work / "naive.json").read_text())
    report = json.loads((work / "ours-last" / "report.json").read_text())["suites"]["when2call"]
    options = 4 * len(rows)
    print(f"\n{name} model ({len(rows)} questions, {options} options), best of {ARGS.repeats}:")
    for key, b in best.items():
        walls = ", ".join(f"{w:.1f}" for w in b.walls)
        print(f"  {key:8} {b.wall_s:7.2f} s  ({options / b.wall_s:6.1f} options/s; all: {walls})")
    print(f"  ours / naive: {ratio(best['ours'].wall_s, best['naive'].wall_s)}")
    print(f"  ours: acc {report['acc']}, acc_norm {report['acc_norm']}")
    print(f"  naive: acc, acc_norm {picks(naive_scores, docs)}; ours vs naive: "
          f"{compare(ours_scores, naive_scores)}")  # fmt: skip
    if "lm-eval" in best:
        lm = lm_eval_scores(work / "lm-eval-out")
        print(f"  ours / lm-eval: {ratio(best['ours'].wall_s, best['lm-eval'].wall_s)}")
        print(f"  lm-eval: acc, acc_norm {picks(lm, docs)}; ours vs lm-eval: "
              f"{compare(ours_scores, lm)}")  # fmt: skip


def main() -> None:
    rows = [json.loads(x) for x in Path(ARGS.data).read_text(encoding="utf-8").splitlines()]
    if ARGS.smoke:
        rows = rows[98:102]  # two cannot_answer, two request_for_info
    with tempfile.TemporaryDirectory() as tmp:
        for name in ARGS.models:
            bench_model(name, rows, Path(tmp))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--lm-eval-python", default=os.environ.get("LM_EVAL_PYTHON"))
    parser.add_argument("--models", default="small,large")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    ARGS = parser.parse_args()
    ARGS.models = ["small"] if ARGS.smoke else ARGS.models.split(",")
    ARGS.repeats = 1 if ARGS.smoke or ARGS.quick else 3
    main()
