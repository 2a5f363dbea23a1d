"""The package's dependencies pinned at their declared floors ("onnx>=1.18" -> "onnx==1.18"),
one per line, read from pyproject.toml: what CI's job on the oldest dependencies installs."""

import re
from pathlib import Path

import tomllib

project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
for requirement in project["dependencies"]:
    name, floor = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9.]*)", requirement).groups()
    print(f"{name}=={floor}")
