"""The wheel's metadata, as setuptools writes it from ``pyproject.toml``: a home page and
project URLs, an author, classifiers, and the one product name; no registry host and no
machine path in it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from email import message_from_string
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BUILD = """
import sys
from setuptools.build_meta import prepare_metadata_for_build_wheel
print(prepare_metadata_for_build_wheel(sys.argv[1]))
"""


def test_the_wheel_names_its_home_author_and_classifiers(tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "pytest_llmeval").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    (source / "pytest_llmeval" / "__init__.py").write_text("")
    (tmp_path / "out").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(tmp_path / "out")],
        cwd=source, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "VALIDATE_PYPROJECT_NO_NETWORK": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    dist_info = tmp_path / "out" / done.stdout.strip().splitlines()[-1]
    text = (dist_info / "METADATA").read_text(encoding="utf-8")
    meta = message_from_string(text)
    assert meta["Name"] == "pytest-llmeval-harness"
    assert meta["Author"] == "The pytest-llmeval-harness maintainers"
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL") or [])
    assert set(urls) >= {"Homepage", "Documentation", "Changelog", "Issues"}, urls
    assert all(url.startswith("https://") for url in urls.values())
    classifiers = meta.get_all("Classifier") or []
    for wanted in ("Framework :: Pytest", "Development Status :: 3 - Alpha",
                   "Programming Language :: Python :: 3.10", "Typing :: Typed",
                   "Topic :: Software Development :: Testing"):  # fmt: skip
        assert wanted in classifiers
    assert meta["License-Expression"] == "MIT"
    header = text.split("\n\n", 1)[0]  # the fields, not the README that follows
    for unwanted in ("pypi.org", "files.pythonhosted", "/work/", "/home/", "/tmp/", "/root/"):
        assert unwanted not in header, unwanted
