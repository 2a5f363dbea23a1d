"""The cases targets/probe.py runs: every single-op ONNX backend node case at its own opset, and
the same case taken by onnx-lower to the first opset of each other version of its op (where the
op stays one node there), so that a profile knows the op versions real exports use, not only
the one the case was written at (older ones, and newer ones: ReduceMax-20 on the ReduceMax-18
cases, not only on its own empty-set ones); and each case of several inputs with all but the
first as constants (``#constant``: axes, shapes and scales as deployed models hold them). Written once, in the package's
environment, for probes in other environments; each case's form (which inputs are fed, which
constant, the attributes set: ``lowering/probe_case_forms.json``) is written beside them:

    python targets/prepare_cases.py /tmp/probe_cases.pkl
"""

from __future__ import annotations

import json
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe import backend_cases, feed, main_node  # noqa: E402

import lowering  # noqa: E402
from lowering import schemas  # noqa: E402
from lowering.node_forms import CASE_FORMS, NodeForm, node_form  # noqa: E402

OLDEST_OPSET = 7


def with_variants(name: str, opset: int, model: onnx.ModelProto, case) -> list[tuple]:
    """The probed entry of ``model`` (the case's, or the case's taken to ``opset``), and beside
    it, where the case has several inputs, the same with every input but the first an
    initializer holding the first data set's value (``#constant``: axes, shapes, sizes, scales,
    as a deployed model holds them and as some runtimes take them only)."""
    found = [(name, opset, model.SerializeToString(), case.data_sets, case.rtol, case.atol)]
    if len(model.graph.input) < 2 or not case.data_sets:
        return found
    inputs, expected = case.data_sets[0]
    values = [feed(value) for value in inputs]
    if len(values) != len(model.graph.input) or not all(isinstance(v, np.ndarray) for v in values):
        return found
    constant = onnx.ModelProto()
    constant.CopyFrom(model)
    for info, value in zip(model.graph.input[1:], values[1:], strict=True):
        constant.graph.initializer.append(numpy_helper.from_array(value, info.name))
    del constant.graph.input[1:]
    found.append((f"{name}#constant", opset, constant.SerializeToString(), [(values[:1], expected)], case.rtol,
                  case.atol))  # fmt: skip
    return found


def prepared_cases() -> list[tuple]:
    """(name, opset, model bytes, data sets, rtol, atol) per case, its ``#constant`` variant,
    and each taken to every other op version (each variant taken on its own: ReduceMean-18's
    cases reach ReduceMean-13 with constant axes, which it holds as an attribute there, though
    not with fed ones)."""
    found = []
    for case in backend_cases():
        node = main_node(case.model) if "_expanded" not in case.name else None
        opset = schemas.default_opset(case.model.opset_import)
        if node is None or opset is None:
            continue
        variants = with_variants(case.name, opset, case.model, case)
        found += variants
        own_version = schemas.version_in_force(node.op_type, opset)
        for version in schemas.op_versions(node.op_type):
            # (a version first defined before opset 7 is probed at 7 where still in force there)
            at = max(version, OLDEST_OPSET)
            if version == own_version or schemas.version_in_force(node.op_type, at) != version:
                continue
            for name, _, model_bytes, *rest in variants:
                converted = _converted(onnx.load_from_string(model_bytes), at, node.op_type)
                if converted is not None:
                    base, mark, variant = name.partition("#")
                    found.append((f"{base}@{version}{mark}{variant}", at, converted.SerializeToString(), *rest))
    return found


def _converted(model: onnx.ModelProto, opset: int, op_type: str) -> onnx.ModelProto | None:
    """The case taken by onnx-lower to ``opset``, where its op stays one node there."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            converted = lowering.lower(model, target_opset=opset, ops=[], fold="none")
    except Exception:  # (the case cannot be written at that opset: not probed there)
        return None
    moved = main_node(converted)
    return converted if moved is not None and moved.op_type == op_type else None


def case_form(model: onnx.ModelProto, opset: int) -> NodeForm:
    """The form of the case's node: its graph inputs fed, its initializers and Constants
    constant, the shapes and element types of its graph inputs and initializers."""
    initialized = {t.name for t in model.graph.initializer}
    fed = {info.name for info in model.graph.input} - initialized
    constants = initialized | {o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    shapes = {t.name: tuple(t.dims) for t in model.graph.initializer}
    element_types = {t.name: t.data_type for t in model.graph.initializer}
    for info in model.graph.input:
        if info.type.HasField("tensor_type"):
            element_types[info.name] = info.type.tensor_type.elem_type
            if info.type.tensor_type.HasField("shape"):
                dims = info.type.tensor_type.shape.dim
                shapes[info.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)
    return node_form(main_node(model), opset, fed, constants, shapes, element_types)


def write_forms(cases: list[tuple], path: Path) -> None:
    """Each case's form by name (what lowering.node_forms reads; the same for every runtime)."""
    forms = {name: case_form(onnx.load_from_string(data), opset).as_data() for name, opset, data, *_ in cases}
    path.write_text(json.dumps(forms, sort_keys=True, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    cases = prepared_cases()
    Path(sys.argv[1]).write_bytes(pickle.dumps(cases))
    write_forms(cases, CASE_FORMS)
    print(f"wrote {len(cases)} cases to {sys.argv[1]}, their forms to {CASE_FORMS}")
