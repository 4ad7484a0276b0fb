"""``python -m pytest_llmeval init [DIR] [--suite NAME ...]``: start an eval folder in a project.

For each suite asked for it writes a minimal, working eval folder from the templates shipped
in ``commands/templates/`` (package data): a data file with a few real-looking cases, a
``*.llmeval.yaml`` manifest with one gate, the recorded answers (cassettes) of the tiny example
model, and, shared by every suite, a ``conftest.py`` that defines and registers that model
(where a user's runner or agent plugs in), a ``tools.json`` tool registry, tool fixtures, and
a ``pytest.ini`` that makes the folder its own pytest root, so that ``pytest DIR`` from the
project's root replays the cassettes offline and exits 0 before anything is connected.

It never writes over a file: one that exists is left as it is and listed as skipped. It never
writes through a symbolic link to a folder inside DIR (``DIR/cassettes -> /elsewhere``): what
would land there is listed as not written, with the link named, and ``init`` exits 1, as it
does when a file cannot be written (a dangling link where a folder goes); it goes on with the
other files and lists what it wrote. The
templates' cassettes are recorded from the template model through the real record path by
``tests/commands/test_init.py``, which also checks that they are what the model answers, so the
two cannot drift.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterator, Sequence
from importlib.resources import files
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = [
    "DEFAULT_DIR",
    "SUITES",
    "InitError",
    "InitResult",
    "add_parser",
    "init",
    "parse_suites",
    "report_lines",
    "run",
    "template_files",
]

SUITES = ("golden", "toolforge", "integration", "when2call", "gaia", "bfcl")
"""The suites ``init`` has a starter for, in the order it lists them."""
DEFAULT_DIR = Path("evals")
"""Where ``init`` writes when no folder is named."""
COMMON = "common"
"""The templates every suite needs: the model's conftest, the pytest.ini, tools, fixtures."""
TEMPLATE_SUFFIX = ".tmpl"
"""Stripped from a template's name when written: keeps Python templates out of the package's
own modules (and its linters' and type checker's view)."""
_PROG = "pytest_llmeval init"
INI = PurePosixPath("pytest.ini")
INI_KEYS = (
    "llmeval_cassettes = cassettes",
    "llmeval_fixtures = fixtures",
    "llmeval_tool_registry = tools.json",
)
"""What the eval folder's ``pytest.ini`` sets: where its cassettes, fixtures and tools are."""
TEMPLATE_RUNNER = "tiny-model"
"""The runner the template ``conftest.py`` registers: the example model, which records new cases."""


class InitError(Exception):
    """What stops ``init`` before it writes anything: one line for the user."""


class InitResult(BaseModel):
    """What one ``init`` did."""

    model_config = ConfigDict(frozen=True)

    directory: Path
    """The eval folder, as the user named it."""
    suites: tuple[str, ...]
    """The suites written, in :data:`SUITES` order."""
    written: tuple[PurePosixPath, ...]
    """The files written, relative to :attr:`directory`."""
    skipped: tuple[PurePosixPath, ...]
    """The files that existed and were left as they are, relative to :attr:`directory`."""
    refused: tuple[tuple[PurePosixPath, str], ...] = ()
    """The files not written and why (a symbolic link on the way, a folder that cannot be
    made), relative to :attr:`directory`; any makes ``init`` exit 1."""


def parse_suites(values: Sequence[str]) -> tuple[str, ...]:
    """The suites of repeated or comma-separated ``--suite`` values, in :data:`SUITES` order;
    none given means golden. An unknown name raises :class:`InitError`."""
    names = {name.strip() for value in values for name in value.split(",")} - {""}
    unknown = sorted(names - set(SUITES))
    if unknown:
        raise InitError(
            f"unknown suite {', '.join(map(repr, unknown))}; choose from {', '.join(SUITES)}"
        )
    return tuple(s for s in SUITES if s in names) or ("golden",)


def _templates() -> Traversable:
    return files("pytest_llmeval.commands").joinpath("templates")


def _walk(folder: Traversable, prefix: PurePosixPath) -> Iterator[tuple[PurePosixPath, bytes]]:
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            yield from _walk(entry, prefix / entry.name)
        elif entry.is_file():
            yield prefix / entry.name.removesuffix(TEMPLATE_SUFFIX), entry.read_bytes()


def template_files(suites: Sequence[str]) -> dict[PurePosixPath, bytes]:
    """Every file ``init`` writes for ``suites``: its path in the eval folder → its bytes.
    A file two suites share (a cassette both record) is the same in both."""
    out: dict[PurePosixPath, bytes] = {}
    for part in (COMMON, *suites):
        out.update(_walk(_templates().joinpath(part), PurePosixPath()))
    return dict(sorted(out.items()))


def init(directory: Path, suites: Sequence[str]) -> InitResult:
    """Write the eval folder for ``suites`` into ``directory``, never over an existing file.
    A ``directory`` (or a folder on the way to one of its files) that is not a folder raises
    :class:`InitError` before anything is written."""
    planned = template_files(suites)
    for path in [directory, *(directory / rel.parent for rel in planned)]:
        for place in (path, *path.parents):
            if place.exists() and not place.is_dir():
                raise InitError(f"{place} is a file, not a folder: name another DIR")
    written: list[PurePosixPath] = []
    skipped: list[PurePosixPath] = []
    refused: list[tuple[PurePosixPath, str]] = []
    for rel, content in planned.items():
        target = directory / rel
        link = _linked_folder(directory, rel)
        if link is not None:
            refused.append((rel, f"{directory / link} is a symbolic link: not written through"))
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            refused.append((rel, f"cannot make {target.parent}: {exc.strerror or exc}"))
            continue
        try:
            with target.open("xb") as out:  # exclusive: an existing file is never replaced
                out.write(content)
        except FileExistsError:
            skipped.append(rel)
        except OSError as exc:
            refused.append((rel, f"cannot write {target}: {exc.strerror or exc}"))
        else:
            written.append(rel)
    return InitResult(
        directory=directory,
        suites=tuple(suites),
        written=tuple(written),
        skipped=tuple(skipped),
        refused=tuple(refused),
    )


def _linked_folder(directory: Path, rel: PurePosixPath) -> PurePosixPath | None:
    """The first folder on ``rel``'s way inside ``directory`` that is a symbolic link (a
    dangling one included), else ``None``: ``init`` writes inside DIR only."""
    for depth in range(1, len(rel.parts)):
        part = PurePosixPath(*rel.parts[:depth])
        if (directory / part).is_symlink():
            return part
    return None


def report_lines(result: InitResult) -> list[str]:
    """What ``init`` prints: the files written and skipped, then the two commands to run."""
    where = shlex.quote(str(result.directory))
    lines = [f"{_PROG}: {', '.join(result.suites)} in {result.directory}/"]
    lines += [f"  wrote {result.directory / rel}" for rel in result.written]
    if result.skipped:
        lines.append(f"skipped {len(result.skipped)} existing file(s), left as they are:")
        lines += [f"  {result.directory / rel}" for rel in result.skipped]
    if result.refused:
        lines.append(f"not written {len(result.refused)} file(s):")
        lines += [f"  {result.directory / rel}: {why}" for rel, why in result.refused]
    if INI in result.skipped:
        lines.append(f"  ({result.directory / INI} was yours: it needs {', '.join(INI_KEYS)})")
    lines += [
        "",
        "Run it offline (replays the recorded answers of the example model in conftest.py):",
        f"  pytest {where}",
        "(a bare `pytest` from the project's root runs your own tests, not this folder's).",
        "Add a case to a data file, then record the example model's answer to it (a case with",
        "no recorded answer is an error that names this command):",
        f"  pytest {where} --llmeval-runner {TEMPLATE_RUNNER} --llmeval-record new",
        "Run it against an OpenAI-compatible endpoint, recording its answers for offline replay",
        "(the key, if any, is read from OPENAI_API_KEY):",
        f"  pytest {where} --llmeval-runner openai --llmeval-model MODEL"
        " --llmeval-base-url URL --llmeval-record new",
        "and replay that recording offline (the example model's stays beside it):",
        f"  pytest {where} --llmeval-replay-from openai",
    ]
    return lines


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``init`` on the ``python -m pytest_llmeval`` command line."""
    cmd = commands.add_parser("init", help="start an eval folder: data, manifest, model, tools")
    cmd.add_argument(
        "directory",
        nargs="?",
        type=Path,
        default=DEFAULT_DIR,
        help=f"the eval folder to write (default: {DEFAULT_DIR})",
    )
    cmd.add_argument(
        "--suite",
        action="append",
        default=[],
        metavar="NAME",
        help=f"a suite to start, repeatable or comma-separated: {', '.join(SUITES)} "
        "(default: golden)",
    )


def run(options: argparse.Namespace) -> int:
    """Run ``init`` for parsed ``options``: 0 when done (files skipped included), 1 when some
    file was not written (listed, with one line on stderr), 2 with one line on stderr when it
    could not start."""
    try:
        result = init(options.directory, parse_suites(options.suite))
    except InitError as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{_PROG}: cannot write {options.directory}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for line in report_lines(result):
        print(line)
    if result.refused:
        print(
            f"{_PROG}: {len(result.refused)} file(s) not written (listed above): "
            f"{result.refused[0][1]}",
            file=sys.stderr,
        )
        return 1
    return 0
