"""Reading a BFCL data folder in the official layout into typed items, row by row.

The layout is the one ``bfcl-eval==2026.3.23`` ships in ``bfcl_eval/data/``:

* ``BFCL_v4_<category>.json``: JSON Lines despite the suffix, one item per line;
* ``possible_answer/BFCL_v4_<category>.json``: ``{id, ground_truth}`` rows, matched by id
  (the relevance and irrelevance categories have none);
* ``multi_turn_func_doc/<file>.json``: the function docs of each multi-turn backend class
  (JSON Lines too), named by :data:`~pytest_llmeval.suites.bfcl_rows.FUNC_DOC_FILES`.

Each row becomes a :class:`~pytest_llmeval.suites.bfcl_rows.BfclItem` as the official loader
makes it (:mod:`~pytest_llmeval.suites.bfcl_rows`). The row key ``excluded_function`` is not
read (the official code never reads it).

A broken row (a line that is not JSON, a missing or mistyped field, no ground truth, an id
that does not belong to its file's category) is that row's :class:`CaseFileError` with
``path:line`` and the field; the other rows still load. Nothing is dropped silently.

Where the data comes from: the manifest key ``data:``, or by default the ``data`` folder of an
installed ``bfcl-eval`` package, found with :func:`importlib.util.find_spec` on the top-level
package (which locates it without running it: the package must never be imported, its
``__init__`` chain pulls in every model SDK).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_llmeval.core.errors import CaseFileError, ConfigError
from pytest_llmeval.inputs.loading import iter_jsonl
from pytest_llmeval.suites.bfcl_rows import (
    BfclItem,
    DocCache,
    RowError,
    Truths,
    has_truth,
    item_from_row,
    shown_path,
)

__all__ = [
    "AGENTIC",
    "CATEGORIES",
    "INSTALL_LINE",
    "PACKAGE_PIN",
    "BfclData",
    "BfclItem",
    "data_file",
    "default_data_dir",
    "package_dir",
    "read_data",
    "select_categories",
]

PACKAGE_PIN = "bfcl-eval==2026.3.23"
"""The official package the suite reproduces (data, backends and rules)."""

INSTALL_LINE = f"pip install --no-deps {PACKAGE_PIN}"
"""How a user gets the data and backends without the package's heavy dependency tree."""

FILE_PREFIX = "BFCL_v4_"

NON_LIVE = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
)
LIVE = (
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
MULTI_TURN = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
CATEGORIES = NON_LIVE + LIVE + MULTI_TURN
"""Every category the suite runs (the non-agentic ones), in the official order."""

AGENTIC = (
    "web_search_base",
    "web_search_no_snippet",
    "memory_kv",
    "memory_vector",
    "memory_rec_sum",
)
"""The agentic categories: they need the network, and the suite leaves them out."""


@dataclass
class BfclData:
    """What a read produced: the items, and one error per row that could not be read."""

    items: list[BfclItem] = field(default_factory=list)
    errors: list[CaseFileError] = field(default_factory=list)


# ------------------------------------------------------------------------ where, which


def package_dir() -> Path | None:
    """The folder of the installed ``bfcl_eval`` package, or ``None``; never imports it.

    :func:`importlib.util.find_spec` on a top-level name finds the package without running its
    ``__init__``."""
    spec = importlib.util.find_spec("bfcl_eval")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def default_data_dir() -> Path:
    """The ``data`` folder of the installed ``bfcl-eval``, found without importing it.

    Raises :class:`ConfigError` naming the install line and the manifest key when the package
    is not installed."""
    package = package_dir()
    if package is not None and (package / "data").is_dir():
        return package / "data"
    raise ConfigError(
        f"the bfcl suite needs the BFCL data: run `{INSTALL_LINE}` (data and backends, without "
        "its dependencies), or set the manifest key `data:` to a BFCL data folder"
    )


def data_file(data_dir: Path, category: str) -> Path:
    return data_dir / f"{FILE_PREFIX}{category}.json"


def select_categories(data_dir: Path, categories: str | Sequence[str] | None) -> list[str]:
    """The categories to run, in the official order.

    ``None`` (the default): every category of :data:`CATEGORIES` whose file is in the folder;
    ``"all"``: all of them, each file required; a list: those, each file required. A name
    that is not a category, an agentic one, or a missing file is a :class:`ConfigError`."""
    if categories is None:
        present = [c for c in CATEGORIES if data_file(data_dir, c).is_file()]
        if not present:
            raise ConfigError(
                f"manifest key `data:`: {data_dir} holds no BFCL_v4_<category>.json file of "
                f"the categories {', '.join(CATEGORIES)}"
            )
        return present
    if categories == "all":
        wanted: list[str] = list(CATEGORIES)
    elif isinstance(categories, str) or not all(isinstance(c, str) for c in categories):
        raise ConfigError("manifest key `categories:` must be `all` or a list of category names")
    else:
        wanted = list(dict.fromkeys(categories))
    if not wanted:
        raise ConfigError(
            "manifest key `categories:` is an empty list, so nothing would run; name "
            "categories, write `all`, or remove the key to run every category present"
        )
    for name in wanted:
        if name in AGENTIC or name.startswith(("web_search", "memory")):
            raise ConfigError(
                f"manifest key `categories:`: {name!r} is agentic (it needs the network) and "
                "is not part of the bfcl suite; remove it"
            )
        if name not in CATEGORIES:
            raise ConfigError(
                f"manifest key `categories:`: unknown category {name!r}; expected `all` or "
                f"names from {', '.join(CATEGORIES)}"
            )
    missing = [str(data_file(data_dir, c)) for c in wanted if not data_file(data_dir, c).is_file()]
    if missing:
        raise ConfigError(
            f"manifest key `categories:` names categories without a data file: "
            f"{', '.join(missing)}; fix `data:` or the list"
        )
    return [c for c in CATEGORIES if c in wanted]


# ------------------------------------------------------------------------------ reading


def read_data(
    data_dir: Path,
    categories: Iterable[str],
    ids: Sequence[str] | None = None,
    display_root: Path | None = None,
) -> BfclData:
    """Read the chosen categories' items (only ``ids`` when given).

    An id in ``ids`` that no chosen category holds is a :class:`ConfigError` (a typo would
    otherwise run nothing and pass). ``display_root``: paths in messages are shown relative to
    it when they are under it."""
    wanted = set(ids) if ids is not None else None
    out = BfclData()
    docs = DocCache(data_dir, display_root)
    seen: dict[str, str] = {}
    for category in categories:
        _read_category(data_dir, category, wanted, docs, display_root, out, seen)
    if wanted is not None:
        unknown = sorted(wanted - set(seen))
        if unknown:
            unread = [e for e in out.errors if e.case_id is None]
            more = (
                f"; {len(unread)} row(s) could not be read (first: {unread[0]}): fix them, or"
                if unread
                else ";"
            )
            raise ConfigError(
                f"manifest key `ids:`: no item of the chosen categories has the id "
                f"{', '.join(map(repr, unknown))}{more} check `ids:` and `categories:`"
            )
    return out


def _read_category(
    data_dir: Path,
    category: str,
    wanted: set[str] | None,
    docs: DocCache,
    root: Path | None,
    out: BfclData,
    seen: dict[str, str],
) -> None:
    """Every row of ``category`` (of ``wanted`` only, when given) into ``out``: an item, or
    an error with the row's ``path:line`` and its category (so it counts there as wrong).

    ``seen``: id -> ``path:line`` of every row read so far, over all the categories: a
    second row with an id is that row's error, naming the first (the rows of every category
    are one manifest's cases, named by their ids)."""
    path = data_file(data_dir, category)
    shown = shown_path(path, root)
    truth_file = data_dir / "possible_answer" / path.name
    truths = Truths(truth_file, root) if has_truth(category) else None
    for record in iter_jsonl(path, shown):
        if record.error is not None:
            error = record.error
            out.errors.append(CaseFileError(error.path, error.line, error.message, error.field,
                                            category=category))  # fmt: skip
            continue
        row_id = record.value.get("id")
        if wanted is not None and row_id not in wanted:
            continue
        line = record.line or 0
        if isinstance(row_id, str) and row_id in seen:
            why = f"duplicate id {row_id!r} (first at {seen[row_id]}); BFCL ids are unique"
            out.errors.append(CaseFileError(shown, line, why, "id", row_id, category))
            continue
        named = isinstance(row_id, str)
        try:
            out.items.append(item_from_row(record.value, category, shown, line, truths, docs))
        except RowError as exc:  # a bad id names no case: the row is named by its line
            named = named and exc.field != "id"
            case_id = row_id if named else None
            out.errors.append(CaseFileError(shown, line, exc.message, exc.field, case_id, category))
        if named:
            seen[str(row_id)] = f"{shown}:{line}"
