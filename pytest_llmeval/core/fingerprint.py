"""Fingerprints: sha256 over a canonical JSON form of whatever decides results."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# what json.dumps builds on every call when given options; encode() keeps no state


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, no insignificant whitespace, and non-ASCII kept as is."""
    return _CANONICAL.encode(value)


def sha256_hex(data: str | bytes) -> str:
    """sha256 hex of ``data`` (text as UTF-8; a lone surrogate hashes as its own bytes, so text
    that is not valid Unicode still has a fingerprint and never stops a run)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def fingerprint(value: Any) -> str:
    """sha256 hex of ``value``'s canonical JSON."""
    return sha256_hex(canonical_json(value))


def file_sha256(path: Path, chunk_size: int = 1 << 20) -> str:
    """sha256 hex of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()
