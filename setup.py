"""The one build step pyproject.toml cannot say: ship spec/ inside the package.

spec/ (the TLA+ modules, their .cfg files, the TLC figures and the Z3 encodings) stays the source
of truth at the top of the repository; when a wheel is built, it is copied into the package as
``logwright/_spec`` so that an installed ``logwright verify`` finds it
(``logwright.verify.formal.spec_dir``). Nothing is checked in twice. An editable install reads
spec/ in place and gets no copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SPEC = Path(__file__).resolve().parent / "spec"
SHIPPED = ("logwright", "_spec")
"""Where the copy goes inside the built package (``logwright.verify.formal.SHIPPED_SPEC``)."""


class BuildPyWithSpec(build_py):
    """``build_py`` that also copies spec/ into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not (SPEC / "tlc_figures.json").is_file():
            raise FileNotFoundError(f"{SPEC} is missing: build the wheel from a checkout")
        target = Path(self.build_lib).joinpath(*SHIPPED)
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(SPEC, target, ignore=shutil.ignore_patterns(
            "__pycache__", "*.pyc", "states", "*_TTrace_*"))


setup(cmdclass={"build_py": BuildPyWithSpec})
