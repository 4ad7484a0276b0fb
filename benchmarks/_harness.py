"""What every benchmark here shares: timed subprocesses, best-of-R alternation, case files,
and the project's loopback OpenAI server in a process of its own.

The machines these run on are shared and noisy, so a benchmark never reports an absolute time
alone: it runs its variants one after the other, in alternating order, ``repeats`` times, keeps
each variant's best wall time (and lowest peak RSS), and prints ratios of those.

* :func:`run` starts one command and returns its wall time and peak RSS (``os.wait4`` of that
  very child: the largest resident set of the process or of any descendant it waited for,
  xdist workers included).
* :func:`best_of` alternates the variants and keeps the best of each.
* :func:`openai_server` starts :class:`~pytest_llmeval.testing.openai_server.OpenAIServer` in a
  separate Python process (so its threads never share a GIL with what is measured) and yields
  its ``/v1`` base URL; every chat answer echoes the last user message after ``latency_s``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

PYTHON = sys.executable
MODEL = "test-model"


@dataclass
class Sample:
    """One finished subprocess."""

    wall_s: float
    maxrss_mb: float
    output: str
    cpu_s: float = 0.0
    """User + system CPU time of the child (and of the descendants it waited for)."""


@dataclass
class Best:
    """Every sample of one variant; ``wall_s`` is the best (lowest) of them."""

    walls: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    last_output: str = ""

    @property
    def wall_s(self) -> float:
        return min(self.walls)

    @property
    def maxrss_mb(self) -> float:
        return min(self.rss)

    @property
    def cpu_s(self) -> float:
        """The lowest CPU time (user + system): the load of other processes moves it far less
        than wall time."""
        return min(self.cpus)

    def add(self, sample: Sample) -> None:
        self.walls.append(sample.wall_s)
        self.rss.append(sample.maxrss_mb)
        self.cpus.append(sample.cpu_s)
        self.last_output = sample.output


def run(
    command: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    ok_codes: Sequence[int] = (0,),
) -> Sample:
    """Run ``command``; its wall time and peak RSS. A bad exit code stops the benchmark."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(command), cwd=cwd, env=dict(env) if env else None, stdout=out, stderr=out
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        output = out.read()
    if code not in ok_codes:
        raise SystemExit(f"{' '.join(command)} exited {code} in {cwd}:\n{output[-3000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return Sample(wall, usage.ru_maxrss / 1024.0, output, cpu)  # ru_maxrss is in KiB on Linux


def pytest_command(*args: str) -> list[str]:
    """``python -m pytest -q -p no:cacheprovider ARGS``."""
    return [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def best_of(variants: Mapping[str, Callable[[], Sample]], repeats: int) -> dict[str, Best]:
    """Run every variant ``repeats`` times, alternating (even rounds in order, odd rounds
    reversed, so a slow drift of the machine does not favour one variant)."""
    best = {name: Best() for name in variants}
    names = list(variants)
    for round_ in range(repeats):
        for name in names if round_ % 2 == 0 else reversed(names):
            best[name].add(variants[name]())
    return best


def write_cases(path: Path, n: int) -> None:
    """``n`` golden rows ``{"id", "input", "expected_output"}`` whose echo is the answer."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            text = f"message {i}"
            handle.write(json.dumps({"id": f"c{i:06d}", "input": text, "expected_output": text}))
            handle.write("\n")


def write_files(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (plus an empty ``pytest.ini``)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


PYCACHE = Path(tempfile.gettempdir()) / "llmeval-bench-pycache"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any ``PYTEST_*`` / ``OPENAI_*`` settings, plus ``extra``.

    Bytecode is cached (under :data:`PYCACHE`, not in the source tree) even where
    ``PYTHONDONTWRITEBYTECODE`` is set: otherwise every run would compile the plugin's
    sources again, a fixed cost no installed copy pays.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "OPENAI_"))
        and k not in ("PYTHONBREAKPOINT", "PYTHONDONTWRITEBYTECODE")
    }
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    env.update(extra)
    warm_bytecode(env)
    return env


def warm_bytecode(env: Mapping[str, str]) -> None:
    """Compile the ``pytest_llmeval`` that ``env`` imports into the bytecode cache, once, so
    no measured run pays for compiling it."""
    subprocess.run(
        [PYTHON, "-c", "import compileall, os, pytest_llmeval as p; "
         "compileall.compile_dir(os.path.dirname(p.__file__), quiet=1)"],
        env=dict(env), check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip


CHECKOUT = Path(__file__).resolve().parents[1]
"""The checkout these benchmarks belong to (the ``llmeval`` variants import its package)."""


def plugin_module(source: Path) -> str:
    """The module that is the plugin in the copy of the package under ``source``: the
    ``pytest_llmeval/plugin/`` package's hook module, or an older copy's ``plugin.py``."""
    package = source / "pytest_llmeval"
    if (package / "plugin" / "hooks.py").is_file():
        return "pytest_llmeval.plugin.hooks"
    if (package / "plugin.py").is_file():
        return "pytest_llmeval.plugin"
    raise SystemExit(f"{source}: no pytest-llmeval plugin module there")


def plugin_env(env: Mapping[str, str], source: Path) -> dict[str, str]:
    """``env`` importing ``pytest_llmeval`` from ``source`` and loading that copy's own plugin
    module by name (``-p no:llmeval -p MODULE`` in ``PYTEST_ADDOPTS``, which xdist workers
    inherit): the installed entry point names this checkout's module, which another copy may
    not have."""
    flags = f"-p no:llmeval -p {plugin_module(source)}"
    env = {**env, "PYTHONPATH": str(source.resolve()), "PYTEST_ADDOPTS": flags}
    warm_bytecode(env)
    return env


def checkout_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for the ``llmeval`` variants: this checkout's package and plugin module."""
    return plugin_env(env, CHECKOUT)


def baseline_env(env: Mapping[str, str], source: Path) -> dict[str, str]:
    """``env`` importing ``pytest_llmeval`` from ``source`` (a folder holding another copy of
    the package, e.g. ``git worktree add /tmp/base HEAD``) instead of this checkout: the
    ``--baseline`` variants measure a change side by side with what it replaces."""
    return plugin_env(env, source)


SERVER = """
import sys, time
from pytest_llmeval.testing.openai_server import OpenAIServer, echo_chat

latency = float(sys.argv[1])

def brain(body):
    if latency:
        time.sleep(latency)  # in the request's own connection thread
    return echo_chat(body)

server = OpenAIServer(chat=brain, models=None)
server.start()
print(server.base_url, flush=True)
sys.stdin.read()  # until the benchmark closes our stdin
server.stop()
"""


@contextmanager
def server_process(script: str, arg: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """A loopback server: ``script`` run with ``arg`` in its own process, which prints its
    base URL and serves until its stdin is closed; yields the URL."""
    proc = subprocess.Popen(
        [PYTHON, "-c", script, arg],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        url = proc.stdout.readline().strip()
        if not url.startswith("http"):
            raise SystemExit("the loopback OpenAI server did not start")
        yield url
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def openai_server(latency_s: float) -> Iterator[str]:
    """An :class:`OpenAIServer` with ``latency_s`` per chat answer, in its own process."""
    with server_process(SERVER, repr(latency_s)) as url:
        yield url


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def verdict(value: float, target: float) -> str:
    """``met`` when ``value <= target``."""
    return "met" if value <= target else "MISSED"


def timing_header(reference: str) -> list[str]:
    """The columns of :func:`timing_cells`, each ratio against ``reference``."""
    per = f"/ {reference}"
    return ["best wall", per, "best CPU", per, "peak RSS", per, "all walls"]


def timing_cells(best: Best, reference: Best) -> list[str]:
    """A variant's best wall and CPU time and peak memory, each with its ratio to
    ``reference``'s, then every wall time it took."""
    return [
        f"{best.wall_s:.2f}s",
        ratio(best.wall_s, reference.wall_s),
        f"{best.cpu_s:.2f}s",
        ratio(best.cpu_s, reference.cpu_s),
        f"{best.maxrss_mb:.0f} MB",
        ratio(best.maxrss_mb, reference.maxrss_mb),
        " ".join(f"{w:.2f}" for w in best.walls),
    ]


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A Markdown table, ready to paste into RESULTS.md."""
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
