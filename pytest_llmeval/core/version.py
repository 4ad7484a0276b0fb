"""The plugin's version, as run dirs, reports and the HTTP runners' User-Agent record it.

It lives in the base layer so that no internal module imports the package's public face (its
``__init__``, which re-exports the whole API) just to read the version: that import would point
back up through every layer.
"""

from __future__ import annotations

__version__ = "0.1.0"
