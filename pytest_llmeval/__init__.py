"""pytest-llmeval: evaluate LLMs and agents on tool use, one eval case per pytest test."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
