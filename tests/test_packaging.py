"""A wheel built from the repository holds lowering and lowering.rules and works anywhere."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # (builds a wheel and installs it: seconds)
def test_wheel_holds_rules_and_works_outside_the_source_tree(tmp_path):
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("onnx_lower-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "lowering/__init__.py",
        "lowering/rules/__init__.py",
        "lowering/rules/isnan.py",
        "lowering/rules/versions/softmax.py",
    } <= names
    assert not any(name.startswith("rules/") for name in names), "no top-level 'rules' package"
    assert any(name.endswith("entry_points.txt") for name in names)

    target = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = (
        "import lowering, lowering.rules, onnx.parser;"
        'm = onnx.parser.parse_model(\'<ir_version: 8, opset_import: ["" : 13]> g (float[N] x) => (bool[N] y) '
        "{ y = IsNaN (x) }');"
        "print(lowering.__file__);"
        "print(sorted(n.op_type for n in lowering.lower(m).graph.node))"
    )
    ran = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); {script}"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    module_path, op_types = ran.stdout.strip().splitlines()
    assert module_path.startswith(str(target))
    assert op_types == "['Constant', 'Equal', 'Equal']"
