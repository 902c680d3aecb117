"""Packaging glue pyproject.toml cannot express: ``kernels/`` installs as ``uxlocal_kernels``.

``[tool.setuptools.packages.find]`` discovers packages by folder name only; the kernels folder
keeps its fixed name in the repository and gets a non-generic import name here.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["uxlocal*"]), "uxlocal_kernels"],
    package_dir={"uxlocal_kernels": "kernels"},
)
