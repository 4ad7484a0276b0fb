"""Reading ``*.llmeval.yaml`` manifests: safe YAML, checked keys, a line for every key.

A manifest names a suite and a data file (relative to the manifest) and carries options::

    suite: golden
    data: data/arithmetic.json
    repeats: 3
    thresholds: {arithmetic: {regex: 1.0}}

:func:`read_manifest` reads one within the limits of :mod:`pytest_llmeval.inputs.safe_yaml` (size,
aliases, expanded values) and checks the keys every suite takes against the shipped
``schemas/manifest.schema.json`` (:data:`COMMON_OPTIONS`). Once the collector knows the suite,
:meth:`Manifest.check_options` checks the rest against that suite's ``manifest_options``: a key
that neither knows is an error naming its line and the nearest valid key, so a typo
(``treshold:``) is never silently ignored. Every problem is a :class:`CaseFileError` naming
``path:line`` and the field.

A session reads each manifest once, through its :class:`ManifestIndex`: collection asks it
which data files manifests name (:meth:`ManifestIndex.is_target`: those are collected through
their manifest only) and for the manifest it collects; the verdict asks it for the gates of
the manifests whose cases were collected. The index belongs to the session, so a second
in-process run reads edited manifests afresh.

Base layer: this module imports nothing of the plugin above errors, loading and schemas.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.inputs import safe_yaml, schemas

SUFFIX = ".llmeval.yaml"
"""The file name ending of a manifest."""

MAX_BYTES = safe_yaml.MAX_BYTES
"""The largest manifest read (1 MiB)."""

COMMON_OPTIONS: frozenset[str] = frozenset(schemas.schema("manifest")["properties"])
"""The keys any suite's manifest may hold: ``suite``, ``data``, ``description``, ``gates``,
``misses``, ``repeats``."""

MISSES = ("fail", "xfail")
"""What a manifest's ``misses`` may say."""

MAX_SHOWN_PATH = 200
"""The longest ``data`` value an error message quotes."""


@dataclass(frozen=True, eq=False)
class Manifest:
    """A manifest whose common keys are valid: typed properties for them, every key as
    written in :attr:`options`."""

    path: Path
    """The manifest file."""
    display: str
    """The manifest relative to the rootdir, for messages."""
    options: dict[str, Any]
    """Every key as written, ``suite`` and ``data`` included."""
    lines: dict[str, int] = field(default_factory=dict)
    """The 1-based line of each top-level key."""
    document: safe_yaml.YamlDocument | None = field(default=None, repr=False)
    """The parsed document, for the line of a nested value."""

    @property
    def suite(self) -> str:
        """The suite's name."""
        return str(self.options["suite"])

    @property
    def data(self) -> str:
        """The data file as written (relative to the manifest's folder)."""
        return str(self.options["data"])

    @property
    def gates(self) -> Any:
        """The ``gates`` spec as written (parsed by ``report.gates.parse_gate_spec``)."""
        return self.options.get("gates")

    @property
    def repeats(self) -> int | None:
        """Runs per case, when the manifest sets them."""
        value = self.options.get("repeats")
        return int(value) if value is not None else None

    @property
    def misses(self) -> str:
        """``fail`` (a missed case fails) or ``xfail`` (it is an expected failure)."""
        return str(self.options.get("misses", "fail"))

    def line(self, key: str) -> int | None:
        """The line of a top-level key, or ``None`` when the manifest lacks it."""
        return self.lines.get(key)

    def line_of(self, path: schemas.DocPath) -> int | None:
        """The line of the value at ``path``, or ``None`` when its top-level key is absent."""
        if not path or str(path[0]) not in self.lines:
            return None
        if self.document is None:
            return self.lines[str(path[0])]
        return self.document.line_of(path)

    def check_options(self, suite: str, declared: Mapping[str, Mapping[str, Any]] | None) -> None:
        """Check the keys beyond the common ones against the suite's ``manifest_options``
        (option name -> JSON Schema of its value; ``{}`` where the suite checks the value
        itself). ``None``, a suite that declares nothing, checks nothing more."""
        if declared is None:
            return
        known = COMMON_OPTIONS | set(declared)
        for key in sorted(self.options, key=lambda k: self.line(str(k)) or 0):
            name = str(key)
            if name not in known:
                raise CaseFileError(
                    self.display, self.line(name), _unknown(name, suite, known), field=name or "''"
                )
        self._validate(schemas.validator_for({"type": "object", "properties": dict(declared)}))

    def data_path(self, folder: bool = False) -> Path:
        """The data file, resolved; an error naming ``data`` when it cannot be used.

        ``folder``: the suite reads a data *folder* (BFCL) and ``data`` may be left out, which
        gives the manifest itself (the suite then uses its default data)."""
        if "data" not in self.options:
            if folder:
                return self.path.resolve()
            raise CaseFileError(
                self.display, None, "missing required field (a string)", field="data"
            )
        try:
            target = (self.path.parent / self.data).resolve()
            found = target.is_dir() if folder else target.is_file()
        except (OSError, ValueError, RuntimeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise CaseFileError(
                self.display,
                self.line("data"),
                f"{clip(self.data, MAX_SHOWN_PATH)!r} cannot be used as a path: "
                f"{clip(reason, MAX_SHOWN_PATH)}",
                field="data",
            ) from None
        if not found:
            what = (
                "is not a folder"
                if folder and target.exists()
                else "is a folder, not a file"
                if target.is_dir()
                else "is not a regular file"
                if target.exists()  # a FIFO or a device: opening it could wait for ever
                else "does not exist"
            )
            raise CaseFileError(
                self.display,
                None,
                f"data file {clip(self.data, MAX_SHOWN_PATH)!r} {what}",
                field="data",
            )
        return target

    def target(self) -> Path | None:
        """The data file's resolved path, or ``None`` when ``data`` is no usable path (a NUL
        byte, a symlink loop, or no ``data`` at all)."""
        if "data" not in self.options:
            return None
        try:
            return (self.path.parent / self.data).resolve()
        except (OSError, ValueError, RuntimeError):
            return None

    def _check_finite(self) -> None:
        """YAML's ``.nan`` and ``.inf`` are errors wherever they are: a NaN threshold would let
        every case pass, and no option means an infinite number."""
        path = _non_finite(self.options, ())
        if path is not None:
            value: Any = self.options
            for step in path:
                value = value[step]
            raise CaseFileError(
                self.display,
                self.line_of(path),
                f"expected a finite number, got {value}",
                field=schemas.field_name(path),
            )

    def _validate(self, validator: Any) -> None:
        error = schemas.first_error(validator, self.options, self.line_of)
        if error is None:
            return
        path, message = schemas.explain(error)
        raise CaseFileError(
            self.display, self.line_of(path), message, field=schemas.field_name(path)
        )


def read_manifest(path: Path, display: str) -> Manifest:
    """Read a manifest and check its common keys (``suite`` and ``data`` are required)."""
    try:
        text = safe_yaml.read_limited(path, MAX_BYTES)
    except safe_yaml.YamlLimitError as exc:
        raise CaseFileError(display, None, exc.message) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFileError(display, None, f"cannot read the manifest: {exc}") from None
    try:
        document = safe_yaml.load(text)
    except safe_yaml.YamlLimitError as exc:
        raise CaseFileError(display, exc.line, exc.message) from None
    if not isinstance(document.value, dict):
        raise CaseFileError(display, 1, "expected a mapping with 'suite' and 'data'")
    manifest = Manifest(
        path=path,
        display=display,
        options=dict(document.value),
        lines=_key_lines(document),
        document=document,
    )
    manifest._validate(schemas.shipped("manifest"))
    manifest._check_finite()
    return manifest


def _non_finite(value: Any, path: schemas.DocPath) -> schemas.DocPath | None:
    """The path of the first NaN or infinite number in ``value``, or ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        found = _non_finite(item, (*path, key))
        if found is not None:
            return found
    return None


def _key_lines(document: safe_yaml.YamlDocument) -> dict[str, int]:
    """The line of each top-level key, by the key as Python reads it (``true:`` is ``True``)."""
    root = document.root
    lines: dict[str, int] = {}
    if root is None or not isinstance(root.value, list):
        return lines
    constructor = yaml.SafeLoader("")
    for pair in root.value:
        if isinstance(pair, tuple) and isinstance(pair[0], yaml.ScalarNode):
            key = constructor.construct_object(pair[0])
            lines[str(key)] = pair[0].start_mark.line + 1  # no duplicates: safe_yaml refuses them
    return lines


def _unknown(key: str, suite: str, known: frozenset[str] | set[str]) -> str:
    options = ", ".join(sorted(set(known) - {"suite", "data"}))
    near = difflib.get_close_matches(key, sorted(known), n=1)
    hint = f"did you mean {near[0]!r}? " if near else ""
    return f"unknown option; {hint}{suite} options are {options}"


# -- the session's manifests ----------------------------------------------------------------


class ManifestIndex:
    """Every manifest a session (or a command) looks at, each read once.

    Collection reads a manifest twice over: to know which data files manifests name (those are
    collected through their manifest only) and to collect the manifest itself; the verdict
    reads the gates of the manifests whose cases were collected. All of them ask the index,
    which reads each file on first use and then hands out the same :class:`Manifest`, or raises
    the same :class:`CaseFileError`, so a broken manifest is one error with one text.
    """

    def __init__(self, rootdir: Path) -> None:
        self.rootdir = rootdir
        """The folder manifests are named relative to (in messages and in gates)."""
        self._read: dict[Path, Manifest | CaseFileError] = {}
        self._targets: dict[Path, frozenset[Path]] = {}
        self._by_data: dict[str, Manifest] = {}

    def collected(self, manifest: Manifest, data: str) -> None:
        """Note that ``manifest``'s cases were collected from the data file ``data`` (its
        display path, as cases name their file): :meth:`for_data` answers for them."""
        self._by_data[data] = manifest

    def for_data(self, data: str) -> Manifest | None:
        """The manifest the cases of the data file ``data`` were collected through (the last
        one, should two name the same file); ``None`` for a file collected on its own."""
        return self._by_data.get(data)

    def read(self, path: Path) -> Manifest:
        """The manifest at ``path`` (its common keys checked); the :class:`CaseFileError` that
        says why it cannot be used, the same one every time."""
        found = self.entry(path)
        if isinstance(found, CaseFileError):
            raise found
        return found

    def entry(self, path: Path) -> Manifest | CaseFileError:
        """:meth:`read`'s answer as a value: the manifest, or why it cannot be used."""
        found = self._read.get(path)
        if found is None:
            try:
                found = read_manifest(path, self.display(path))
            except CaseFileError as exc:
                found = exc
            self._read[path] = found
        return found

    def named(self, display: str) -> Manifest | CaseFileError | None:
        """The manifest at ``display`` (relative to the rootdir, as :meth:`display` gives it);
        ``None`` when no such file is there (a run made elsewhere)."""
        path = self.rootdir / display
        if path not in self._read and not path.is_file():
            return None
        return self.entry(path)

    def present(self, names: Iterable[str]) -> list[Manifest | CaseFileError]:
        """The manifests ``names`` (relative to the rootdir) that are there, in name order:
        each read, or why it cannot be (a run made elsewhere names manifests not here)."""
        found = (self.named(name) for name in sorted(set(names)))
        return [manifest for manifest in found if manifest is not None]

    def display(self, path: Path) -> str:
        """``path`` relative to the rootdir, for messages (absolute when outside it)."""
        try:
            return path.relative_to(self.rootdir).as_posix()
        except ValueError:
            return path.as_posix()

    def is_target(self, path: Path) -> bool:
        """Whether a manifest in ``path``'s folder, or in a folder above it up to the rootdir,
        names ``path`` as its data file (``evals/x.llmeval.yaml`` naming
        ``data: data/rows.jsonl``)."""
        resolved = path.resolve()
        folder = path.parent
        rootdir = self.rootdir
        while True:
            if resolved in self.targets(folder):
                return True
            if folder == rootdir or folder.parent == folder or not folder.is_relative_to(rootdir):
                return False
            folder = folder.parent

    def targets(self, directory: Path) -> frozenset[Path]:
        """Data files named by the manifests in ``directory`` (resolved).

        Such a data file is collected through its manifest only, never on its own as well. A
        manifest that cannot be read names nothing: it reports its own problem when it is
        collected.
        """
        known = self._targets.get(directory)
        if known is not None:
            return known
        targets = set()
        for path in sorted(directory.glob(f"*{SUFFIX}")):
            found = self.entry(path)
            target = found.target() if isinstance(found, Manifest) else None
            if target is not None:
                targets.add(target)
        self._targets[directory] = found_targets = frozenset(targets)
        return found_targets
