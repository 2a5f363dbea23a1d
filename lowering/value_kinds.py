"""Kinds of value a node is given, beside its form: a runtime may get one form right on some
values and wrong on others (onnx2torch's GatherElements on an index of -1, TVM's Resize where it
shrinks an axis). Each kind is read from the inputs onnx.defs names:

- :data:`NEGATIVE_INDICES`: an input named ``indices`` holds a value below 0;
- :data:`DOWNSAMPLING`: a Resize's or Upsample's ``scales`` (input or attribute) hold a value
  below 1, or its ``sizes`` a size below the input's along that axis;
- :data:`ONE_KEEPS_A_LENGTH`: an Expand's ``shape`` holds a 1 where the input's length (the
  shapes aligned at their last axes, the shorter led by 1s) is not 1, which broadcasting both
  ways keeps;
- :data:`COPIED_LENGTH`: a Reshape's ``shape`` holds a 0 that copies the input's length there
  (``allowzero`` 0);
- :data:`REDUCED_NOTHING`: a reduction's ``data`` holds no element (the answer is the
  reduction's identity: TVM leaves it unwritten, OpenVINO gives -FLT_MAX for ReduceMax of float);
- :data:`OUT_OF_RANGE_CAST`: a Cast from one integer type to another (not bool) is given a value
  the target type does not hold, which Cast-13 and later wrap modulo 2^n (OpenVINO 2024.6
  saturates instead). Each integer cast case from Cast-13 on that holds such values has an
  in-range twin (:data:`IN_RANGE_TWIN`), which judges a Cast known free of them and no other: a
  Cast whose values are not known stays judged by the wrapping cases.

``targets/prepare_cases.py`` lists the probe cases of each kind from their own values
(:data:`CASE_VALUES`); a profile judges a node whose constants hold a kind by the cases of that
kind, one whose constants hold none by the others (:meth:`RuntimeProfile.verdict`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import onnx

from . import floats, schemas, value_ranges

NEGATIVE_INDICES = "negative indices"
DOWNSAMPLING = "resize scales below 1"
ONE_KEEPS_A_LENGTH = "an Expand shape of 1 where the input's length is not 1"
COPIED_LENGTH = "a Reshape shape of 0 copying a length"
REDUCED_NOTHING = "a reduction of no element"
OUT_OF_RANGE_CAST = "an integer cast out of its target type's range"
KINDS = (NEGATIVE_INDICES, DOWNSAMPLING, ONE_KEEPS_A_LENGTH, COPIED_LENGTH, REDUCED_NOTHING, OUT_OF_RANGE_CAST)
# (the kinds held by an input that sets the op's parameters, schemas.sets_parameters: the geometry
# the node computes, not the data it computes on; a node not known free of one is refused where
# its cases of it are wrong, not kept as partly)
PARAMETER_KINDS = (DOWNSAMPLING, ONE_KEEPS_A_LENGTH, COPIED_LENGTH)
# (a probe case named with this holds only values free of OUT_OF_RANGE_CAST, made to judge nodes
# known free of it and no others: the in-range twin of an integer cast case)
IN_RANGE_TWIN = "#in_range"
CASE_VALUES = Path(__file__).resolve().parent / "probe_case_values.json"

_RESIZING = frozenset({"Resize", "Upsample"})


def kinds_held(
    node: onnx.NodeProto, opset: int, value_of: Callable[[str], np.ndarray | None], shapes: Mapping[str, tuple]
) -> dict[str, bool]:
    """Per kind the node's op can be given, whether its values hold it (``value_of``: a value
    by name, None where not known); a kind whose values are not known is left out. ``shapes``:
    the static shapes known, by value name (a Resize's sizes are compared with its input's)."""
    version = schemas.version_in_force(node.op_type, opset) if node.domain in schemas.DEFAULT_DOMAINS else None
    schema = schemas.schema_in_force(node.op_type, version) if version is not None else None
    if schema is None:
        return {}
    named = {formal.name: name for formal, name in zip(schema.inputs, node.input, strict=False) if name}
    held = {}
    indices = value_of(named["indices"]) if "indices" in named else None
    if indices is not None:
        held[NEGATIVE_INDICES] = bool((np.asarray(indices) < 0).any())
    if node.op_type in _RESIZING:
        shrinks = _shrinks(node, named, value_of, shapes)
        if shrinks is not None:
            held[DOWNSAMPLING] = shrinks
    if node.op_type == "Expand":
        keeps = _one_keeps_a_length(named, value_of, shapes)
        if keeps is not None:
            held[ONE_KEEPS_A_LENGTH] = keeps
    shape = value_of(named["shape"]) if node.op_type == "Reshape" and "shape" in named else None
    if shape is not None:
        allowzero = next((a.i for a in node.attribute if a.name == "allowzero"), 0)
        held[COPIED_LENGTH] = not allowzero and bool((np.asarray(shape) == 0).any())
    dims = shapes.get(named.get("data", "")) if node.op_type.startswith("Reduce") else None
    if dims is not None and (0 in dims or None not in dims):
        held[REDUCED_NOTHING] = 0 in dims
    cast = value_of(named["input"]) if node.op_type == "Cast" and "input" in named else None
    out_of_range = _out_of_range(np.asarray(cast), node) if cast is not None else None
    if out_of_range is not None:
        held[OUT_OF_RANGE_CAST] = out_of_range
    return held


def judges_only_free_of(case: str) -> str:
    """The kind of value a probe case judges only nodes known free of (an in-range twin,
    :data:`IN_RANGE_TWIN`: :data:`OUT_OF_RANGE_CAST`); "" for any other case."""
    return OUT_OF_RANGE_CAST if IN_RANGE_TWIN in case else ""


def _out_of_range(value: np.ndarray, node: onnx.NodeProto) -> bool | None:
    """Whether a Cast from an integer type to another (not bool) is given a value outside the
    target type's range; None for any other Cast."""
    to = next((a.i for a in node.attribute if a.name == "to"), None)
    if value.dtype.kind not in "iu" or to is None or not floats.is_integer(to):
        return None
    return bool(value.size) and not value_ranges.fits((int(value.min()), int(value.max())), to)


def _one_keeps_a_length(named: Mapping[str, str], value_of, shapes) -> bool | None:
    """Whether an Expand's shape s holds a 1 where its input's length is not 1, the two aligned
    at their last axes and the shorter led by 1s (out = s where the input's length is 1, else
    the input's length); None where the shape's values or the input's lengths are not known."""
    shape = value_of(named["shape"]) if "shape" in named else None
    dims = shapes.get(named.get("input", ""))
    if shape is None or dims is None or None in dims:
        return None
    wanted = [int(want) for want in np.asarray(shape).reshape(-1)]
    rank = max(len(wanted), len(dims))
    wanted, lengths = [1] * (rank - len(wanted)) + wanted, [1] * (rank - len(dims)) + list(dims)
    return any(want == 1 and length != 1 for want, length in zip(wanted, lengths, strict=True))


def _shrinks(node: onnx.NodeProto, named: Mapping[str, str], value_of, shapes) -> bool | None:
    """Whether a Resize or Upsample makes some axis smaller: a scale below 1 (its ``scales``
    input, or Upsample-7's attribute), else by its ``sizes`` (over ``axes`` where given) a
    ratio of size to the input's below 1, per axis, or with ``keep_aspect_ratio_policy``
    not_larger the least ratio, not_smaller the largest (the one scale every axis then takes);
    None where neither is known."""
    scales = value_of(named["scales"]) if "scales" in named else None
    if scales is None:
        scales = next((np.asarray(a.floats) for a in node.attribute if a.name == "scales"), None)
    if scales is not None and np.asarray(scales).size:
        return bool((np.asarray(scales, np.float64) < 1).any())
    sizes = value_of(named["sizes"]) if "sizes" in named else None
    dims = shapes.get(named.get("X", ""))
    if sizes is None or dims is None or None in dims:
        return None
    axes = next((list(a.ints) for a in node.attribute if a.name == "axes"), range(len(dims)))
    axes = [axis % len(dims) for axis in axes]
    sizes = np.asarray(sizes).reshape(-1)
    if len(sizes) != len(axes) or any(dims[axis] == 0 for axis in axes):
        return None
    ratios = [int(size) / dims[axis] for size, axis in zip(sizes, axes, strict=True)]
    policy = next((a.s for a in node.attribute if a.name == "keep_aspect_ratio_policy"), b"stretch")
    taken = {b"not_larger": [min(ratios)], b"not_smaller": [max(ratios)]}.get(policy, ratios)
    return any(ratio < 1 for ratio in taken)


@functools.cache
def cases_of_values() -> dict[str, frozenset[str]]:
    """The probe cases of each kind of value (:data:`CASE_VALUES`), by kind; every kind present."""
    written = json.loads(CASE_VALUES.read_text()) if CASE_VALUES.exists() else {}
    return {kind: frozenset(written.get(kind, ())) for kind in KINDS}
