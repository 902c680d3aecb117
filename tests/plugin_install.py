"""Install an example plugin (a folder with pyproject.toml) into a fresh target folder, offline.

pip installs it when it can (no network, no dependencies, no build isolation); where pip cannot
build offline (no setuptools in the venv), the same layout is written by hand: the package plus a
``*.dist-info`` whose ``entry_points.txt`` comes from the pyproject. Either way ``entry_points()``
finds the plugin once the target folder is on ``sys.path``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path


def install_example(example: Path, package: str, work: Path) -> Path:
    """Copy ``example`` under ``work``, install it into ``work/site`` and return that folder."""
    source, target = work / "src", work / "site"
    shutil.copytree(example, source)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                           "--no-build-isolation", "--target", str(target), str(source)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        install_by_hand(source, target, package)
    return target


def install_by_hand(source: Path, target: Path, package: str) -> None:
    """Write what pip would: the package and a dist-info whose entry_points.txt comes from the pyproject."""
    project = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    shutil.copytree(source / package, target / package)
    info = target / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n", encoding="utf-8")
    lines = [f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in table.items())
             for group, table in project["entry-points"].items()]
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
