"""Reading a GAIA split: manifest options, rows from JSONL or Parquet, columns, attachments.

Everything here is offline: a ``scheme://`` location (``hf://datasets/...``) is an error
straight away, never a download. Parquet needs ``pyarrow`` (the ``gaia`` extra).

Rules the GAIA card leaves open, as this module decides them:

* **Rows.** A JSONL file is read with :func:`~pytest_llmeval.inputs.loading.iter_jsonl` (a broken
  line is one error, the others load), a ``.json`` file must be a bare array, and a
  ``.parquet`` file is read batch by batch. A Parquet row's "line" is its 1-based row number.
* **Selection**: ``levels`` filter, then ``shuffle`` (``random.Random(seed)``, seed 0 by
  default; ``seed`` alone changes nothing), then ``limit``. A broken line and a row whose
  ``Level`` cannot be read are errors whatever the options (their level is unknown).
* **Columns**, first match wins: question ``question``/``Question``; truth
  ``final_answer``/``Final answer``/``answer``; id ``task_id``/``id``, else ``row<N>`` with N
  the 0-based row index. A Parquet file without a question or truth column is one file
  error listing its columns; a JSONL row without one is that row's error, listing the row's
  keys.
* **Attachments.** Candidates, in order: ``<dataset_root>/<file_path>`` (``file_path`` as is
  when absolute), then ``<split_dir>/<file_name>``. The first existing file wins; when a row
  names an attachment and none exists, the row is an error naming the file. ``split_dir``
  defaults to the data file's folder and ``dataset_root`` to ``split_dir``'s grandparent (the
  hub layout ``<root>/2023/<split>/``). Relative ``split_dir`` / ``dataset_root`` options are
  taken from the **data file's folder**: the suite is handed the data file, not the manifest.
"""

from __future__ import annotations

import importlib
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, cast

from pytest_llmeval.core.bounds import MAX_TURNS
from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.inputs.loading import a_json_type, iter_jsonl, read_json_document
from pytest_llmeval.inputs.manifest import COMMON_OPTIONS
from pytest_llmeval.suites.base import CaseSource
from pytest_llmeval.suites.fields import shown_count

QUESTION_COLUMNS = ("question", "Question")
TRUTH_COLUMNS = ("final_answer", "Final answer", "answer")
ID_COLUMNS = ("task_id", "id")
LEVEL_COLUMN = "Level"
INSTALL_HINT = "pip install 'pytest-llmeval-harness[gaia]'"

OPTIONS = (
    "limit",
    "shuffle",
    "seed",
    "levels",
    "split_dir",
    "dataset_root",
    "system_prompt",
    "tools",
    "max_turns",
    "attachment_paths",
)
"""GAIA's own manifest options, besides the keys every suite takes
(:data:`pytest_llmeval.inputs.manifest.COMMON_OPTIONS`)."""


@dataclass(frozen=True)
class GaiaOptions:
    """The manifest options of a GAIA file, checked."""

    limit: int | None = None
    shuffle: bool = False
    seed: int = 0
    levels: tuple[int, ...] | None = None
    split_dir: Path = Path()
    dataset_root: Path = Path()
    system_prompt: str | None = None
    tools: tuple[str, ...] = ()
    max_turns: int | None = None
    attachment_paths: str = "relative"


@dataclass
class GaiaRow:
    """One usable row of the split, before it becomes a case."""

    index: int
    """0-based position among the file's records."""
    line: int
    """The JSONL line, or the 1-based Parquet row number."""
    row: dict[str, Any]
    """The row, JSON-safe."""
    level: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def read_options(source: CaseSource) -> GaiaOptions:
    """Check the manifest options; any problem is one file-level error."""
    opts = source.options
    for key in opts:
        if key not in COMMON_OPTIONS and key not in OPTIONS:
            known = ", ".join(OPTIONS)
            _option_error(source, key, f"unknown option; GAIA options are {known}")
    split_dir = _local_dir(source, "split_dir", source.path.parent)
    return GaiaOptions(
        limit=_whole(source, "limit"),
        shuffle=_flag(source, "shuffle"),
        seed=_whole(source, "seed", minimum=None) or 0,
        levels=_levels(source),
        split_dir=split_dir,
        dataset_root=_local_dir(source, "dataset_root", split_dir.parent.parent),
        system_prompt=_text(source, "system_prompt"),
        tools=tuple(_names(source, "tools")),
        max_turns=_turns(source),
        attachment_paths=_choice(source, "attachment_paths", ("relative", "absolute")),
    )


def _option_error(source: CaseSource, key: str, message: str) -> NoReturn:
    raise CaseFileError(source.display, None, message, field=f"manifest option {key}")


def _whole(source: CaseSource, key: str, minimum: int | None = 1) -> int | None:
    value = source.options.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        _option_error(source, key, f"expected a whole number, got {a_json_type(value)}")
    if minimum is not None and value < minimum:
        _option_error(source, key, f"expected a whole number >= {minimum}, got {value}")
    return int(value)


def _turns(source: CaseSource) -> int | None:
    value = source.options.get("max_turns")
    if value is not None and not MAX_TURNS.holds(value):
        _option_error(source, "max_turns", f"expected {MAX_TURNS.text}, got {shown_count(value)}")
    return cast("int | None", value)


def _flag(source: CaseSource, key: str) -> bool:
    value = source.options.get(key, False)
    if not isinstance(value, bool):
        _option_error(source, key, f"expected true or false, got {a_json_type(value)}")
    return bool(value)


def _text(source: CaseSource, key: str) -> str | None:
    value = source.options.get(key)
    if value is not None and not isinstance(value, str):
        _option_error(source, key, f"expected a string, got {a_json_type(value)}")
    return value


def _choice(source: CaseSource, key: str, choices: tuple[str, ...]) -> str:
    value = source.options.get(key, choices[0])
    if value not in choices:
        _option_error(source, key, f"expected one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _names(source: CaseSource, key: str) -> list[str]:
    value = source.options.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        _option_error(source, key, "expected a list of tool names")
    return list(value)


def _levels(source: CaseSource) -> tuple[int, ...] | None:
    value = source.options.get("levels")
    if value is None:
        return None
    ok = isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    )
    if not ok or not value:
        _option_error(source, "levels", "expected a non-empty list of whole numbers, e.g. [1, 2]")
    return tuple(value)


def _local_dir(source: CaseSource, key: str, default: Path) -> Path:
    value = _text(source, key)
    if value is None:
        return default
    if "://" in value:
        _option_error(source, key, remote_message(value))
    return (source.path.parent / value).resolve()


def remote_message(location: str) -> str:
    """Why a remote location is refused."""
    return (
        f"{location!r} is a remote location; the GAIA suite reads local files only (runs are "
        "offline). Download the split (e.g. `huggingface-cli download gaia-benchmark/GAIA "
        "--repo-type dataset`) and point the manifest at the local metadata.jsonl or "
        "metadata.parquet"
    )


# ------------------------------------------------------------------------------ rows


def read_rows(source: CaseSource) -> Iterator[GaiaRow | CaseFileError]:
    """The split's rows in file order; a broken record (or file) yields its error."""
    data = source.options.get("data")
    if isinstance(data, str) and "://" in data:
        yield CaseFileError(source.display, None, remote_message(data), field="data")
        return
    suffix = source.path.suffix.lower()
    if suffix == ".parquet":
        yield from _parquet_rows(source)
        return
    if suffix == ".jsonl":
        records = iter_jsonl(source.path, source.display)
    elif suffix == ".json":
        records = read_json_document(source.path, source.display, array_key=None).records()
    else:
        yield CaseFileError(
            source.display, None, f"expected a .jsonl, .json or .parquet file, got {suffix!r}"
        )
        return
    for record in records:
        if record.error is not None:
            yield record.error
        else:
            yield GaiaRow(record.index, record.line or 1, _json_safe(record.value))


def _parquet_rows(source: CaseSource) -> Iterator[GaiaRow | CaseFileError]:
    try:
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError:
        message = f"reading Parquet needs pyarrow: {INSTALL_HINT}"
        yield CaseFileError(source.display, None, message)
        return
    try:
        parquet = pq.ParquetFile(source.path)
        columns = [str(name) for name in parquet.schema_arrow.names]
    except Exception as exc:  # pyarrow's own error types; any of them means unreadable
        yield CaseFileError(source.display, None, f"cannot read the Parquet file: {exc}")
        return
    missing = missing_columns(columns)
    if missing:
        yield CaseFileError(source.display, None, missing)
        return
    index = 0
    try:
        for batch in parquet.iter_batches(batch_size=256):
            for value in batch.to_pylist():
                yield GaiaRow(index, index + 1, _json_safe(value))
                index += 1
    except Exception as exc:  # a corrupt page: the rows before it still run
        yield CaseFileError(source.display, index + 1, f"cannot read the Parquet file: {exc}")


def missing_columns(columns: list[str]) -> str | None:
    """Why these columns cannot make GAIA cases, or ``None`` when they can."""
    for wanted, what in ((QUESTION_COLUMNS, "question"), (TRUTH_COLUMNS, "truth")):
        if not any(name in columns for name in wanted):
            found = ", ".join(repr(c) for c in columns) or "none"
            return (
                f"no {what} column (one of {', '.join(repr(w) for w in wanted)}); "
                f"columns found: {found}"
            )
    return None


def first_column(row: dict[str, Any], candidates: tuple[str, ...]) -> str | None:
    """The first candidate column the row has."""
    return next((name for name in candidates if name in row), None)


def select(rows: list[GaiaRow], options: GaiaOptions) -> list[GaiaRow]:
    """Level filter, then shuffle with ``random.Random(seed)``, then limit: deterministic."""
    chosen = [r for r in rows if options.levels is None or r.level in options.levels]
    if options.shuffle:
        random.Random(options.seed).shuffle(chosen)
    return chosen[: options.limit] if options.limit is not None else chosen


def parse_level(value: Any) -> int | None:
    """``Level`` as an int (JSONL ints, the old loader's strings); ``None`` when absent.

    Raises ``ValueError`` for anything else.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise ValueError(value)


# ------------------------------------------------------------------------- attachments


def attachment_candidates(row: dict[str, Any], options: GaiaOptions) -> list[Path]:
    """Where the row's attachment may be, in order (empty when it names none)."""
    out: list[Path] = []
    file_path = row.get("file_path")
    if isinstance(file_path, str) and file_path.strip():
        out.append(options.dataset_root / file_path)  # an absolute file_path wins the join
    file_name = row.get("file_name")
    if isinstance(file_name, str) and file_name.strip():
        out.append(options.split_dir / file_name)
    return out


def _json_safe(value: Any) -> Any:
    """A JSON value for anything a Parquet reader returns (bytes, dates, NaN, numpy...)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)
