"""Every registered version adapter, for every op type it serves and its direction, fires on
real cases and is bit-exact there (one consistency test over the registry, as torch._decomp
has one over its decompositions).

The cases are the ONNX backend node test models holding the op, each run on its own inputs
and on edge values (NaN of both signs and several payloads, ±inf, ±0, subnormals, the largest
finite values) of the same shapes and float types. A case is first taken to the source opset
(the op inside the adapter's range, on the step's side the direction leaves), then across the
step by ``lowering.lower_model``; the result must pass the full checker, the report must name
the adapter, and onnxruntime must give the same bits for both models (onnx.reference stands in
where onnxruntime has no kernel for the source model).
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnxruntime.capi.onnxruntime_pybind11_state import Fail as OnnxruntimeFail
from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OnnxruntimeNotImplemented
from onnxruntime.capi.onnxruntime_pybind11_state import RuntimeException as OnnxruntimeRuntimeException
from support import (
    make_model,  # noqa: E402
)
from version_cases import feeds_of, node_cases

import lowering
from lowering import floats, schemas
from lowering.conversion import adapters
from lowering.errors import NotLowered
from lowering.samples import edge_values
from lowering.verification.runtime import OnnxruntimeRunner, ReferenceRunner, run_onnxruntime, run_reference

REFUSALS = (
    "cannot go to opset",
    "no agreed meaning",
    "onnx's version converter cannot take",
    "the lowest opset that can hold it",
    "by its function body only",  # ReduceLogSum-28 and ReduceLogSumExp-28 where their bodies fail too
    "cannot be expressed at opset",  # the full check of the result: a type the older op lacks (bool ReduceMax)
    "does not exist at opset",  # an op newer than the target, with no function body
)
ADAPTED = re.compile(r"^(?P<op>\w+)-(?P<source>\d+)→(?P<target>\d+) via (?P<label>.+)$")


@functools.cache
def onnxruntime_opset() -> int:
    """The newest default-domain opset onnxruntime loads a model of."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    for opset in range(schemas.newest_opset(), 1, -1):
        model = make_model([helper.make_node("Identity", ["x"], ["y"])], [x], [x], opset=opset)
        model.graph.output[0].name = "y"
        try:
            run_onnxruntime(model, {"x": np.zeros(1, np.float32)})
        except Exception:
            continue
        return opset
    raise AssertionError("onnxruntime loads no opset")


# Op versions onnxruntime loads models of but has no kernel for (its registry lists
# QuantizeLinear/DequantizeLinear as (25, newest), yet refuses their version-28 nodes): cases
# are not taken to opsets where these are in force.
NO_ONNXRUNTIME_KERNEL = frozenset({("QuantizeLinear", 28), ("DequantizeLinear", 28)})


def opsets_with(op_type: str, low: int, high: int) -> list[int]:
    """The opsets (1 to the newest onnxruntime loads) at which ``op_type``'s version in force
    lies in ``[low, high]`` and onnxruntime has a kernel for it."""
    return [
        opset
        for opset in range(1, onnxruntime_opset() + 1)
        if (version := schemas.version_in_force(op_type, opset)) is not None
        and low <= version <= high
        and (op_type, version) not in NO_ONNXRUNTIME_KERNEL
    ]


def opset_pairs(found: adapters.RegisteredAdapter, op_type: str) -> list[tuple[int, int]]:
    """(source opset, target opset) pairs that cross the adapter's step in its direction: the
    newest opset on one side to the newest and the oldest (from 7, where most of today's ops
    begin) on the other."""
    low, high = found.versions
    before = opsets_with(op_type, low, found.version - 1)
    after = opsets_with(op_type, found.version, high)
    source_side, target_side = (after, before) if found.direction == "down" else (before, after)
    source = source_side[-1]
    targets = {target_side[-1], next((o for o in target_side if o >= 7), target_side[-1])}
    if found.direction == "up":  # both ends of the source side, to the newest target
        return sorted({(s, target_side[-1]) for s in {source, next((o for o in source_side if o >= 7), source)}})
    return sorted((source, target) for target in targets)


def holds(model: onnx.ModelProto, op_type: str) -> bool:
    return any(n.op_type == op_type and schemas.canonical_domain(n.domain) == "" for n in model.graph.node)


def opset_of(model: onnx.ModelProto) -> int:
    return next(e.version for e in model.opset_import if schemas.canonical_domain(e.domain) == "")


# -- inputs ------------------------------------------------------------------------------------------


@functools.cache
def edge_pool(element_type: int) -> np.ndarray:
    """Edge values of a float type, the special ones first: for 8/16-bit types (whose
    lowering.samples edge values are every bit pattern) the NaNs of both signs, ±inf, ±0, the
    extreme subnormals and the largest finite values are picked out, then ordinary numbers."""
    values = edge_values(element_type)
    if values.dtype.itemsize > 2:
        return values
    wide = values.astype(np.float64)
    finite = np.isfinite(wide)
    magnitude = np.abs(np.where(finite, wide, 0.0))
    subnormal = finite & (wide != 0) & (magnitude < float(ml_dtypes.finfo(values.dtype).smallest_normal))
    picks: list[int] = []
    for negative in (False, True):
        side = np.signbit(values) == negative
        for mask in (np.isnan(wide), np.isinf(wide), wide == 0):
            picks += list(np.flatnonzero(side & mask)[[0, -1]]) if (side & mask).any() else []
        sub = np.flatnonzero(side & subnormal)
        picks += [sub[np.argmin(magnitude[sub])], sub[np.argmax(magnitude[sub])]] if sub.size else []
        fin = np.flatnonzero(side & finite)
        picks.append(fin[np.argmax(magnitude[fin])])
    ordinary = np.flatnonzero(finite & (magnitude >= 0.25) & (magnitude <= 8))
    rng = np.random.default_rng(0)
    picks += list(rng.choice(ordinary, size=min(24, ordinary.size), replace=False))
    return values[list(dict.fromkeys(picks))]


def edge_feeds(model: onnx.ModelProto, feeds: dict) -> dict:
    """The case's feeds with every float tensor replaced by edge values of its shape and type."""
    result = {}
    for info in model.graph.input:
        value = feeds.get(info.name)
        element_type = info.type.tensor_type.elem_type if info.type.HasField("tensor_type") else 0
        if isinstance(value, np.ndarray) and value.size and floats.is_float(element_type):
            pool = edge_pool(element_type)
            result[info.name] = np.resize(pool, value.shape).astype(pool.dtype)
        else:
            result[info.name] = value
    return result


# -- running and comparing ---------------------------------------------------------------------------


def run(model: onnx.ModelProto, feeds: dict, *, oracle: bool = False) -> list:
    if oracle:
        return run_reference(model, feeds)
    return run_onnxruntime(model, feeds)


def feeds_key(feeds: dict) -> tuple | None:
    """The feeds as a key (their names, types, shapes and bytes), or None where one is not a tensor."""
    if not all(isinstance(value, np.ndarray) for value in feeds.values()):
        return None
    return tuple((name, value.dtype.str, value.shape, value.tobytes()) for name, value in sorted(feeds.items()))


_REFERENCE_OUTPUTS: dict[tuple, list] = {}


def reference_outputs_of_each(model: onnx.ModelProto, feeds: list[dict]) -> list[list]:
    """``run_reference(model, fed)`` for each of ``feeds``, through one evaluator, each computed
    once in the session. onnx.reference computes a model from its graph by the op classes it
    picks for the opsets imported: a model that is the same graph as one run before, run by the
    same classes (op classes of onnx.reference's own, with no subgraph and no local function,
    which take nothing else from the opsets), on the same feeds, is the same computation, and
    its outputs are those computed then. The pools' 3-D backend cases take seconds each in
    onnx.reference, and a pool taken to 11, 13 or 17 is the same AveragePool_11 graph."""
    runner = ReferenceRunner(model)
    nodes = runner.evaluator.rt_nodes_
    same_computation = not model.functions and all(
        type(node).__module__.startswith("onnx.reference.ops.op_")
        and not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in proto.attribute)
        for node, proto in zip(nodes, model.graph.node, strict=True)
    )
    computation = (model.graph.SerializeToString(), tuple(type(node) for node in nodes)) if same_computation else None
    outputs = []
    for fed in feeds:
        fed_key = feeds_key(fed)
        if computation is None or fed_key is None:
            outputs.append(runner(fed))
            continue
        key = (computation, fed_key)
        if key not in _REFERENCE_OUTPUTS:
            _REFERENCE_OUTPUTS[key] = runner(fed)
        outputs.append(_REFERENCE_OUTPUTS[key])
    return outputs


class Runs:
    """What the cases of one test share across their opset pairs, each computed once: a model
    taken to an opset (a case goes to the same source opset for every target it goes down to),
    and a model's outputs on a feed (the source model's, compared with each target's; each model
    in onnxruntime is run through one session, not one a feed). A session is closed before
    onnx.reference or a lowering runs: an open session's idle threads spin, taking a core."""

    def __init__(self) -> None:
        self.lowered: dict[tuple, onnx.ModelProto | lowering.LoweringError] = {}
        self.outputs: dict[tuple, list] = {}
        self.sessions: dict[bytes, OnnxruntimeRunner] = {}

    def lower(self, model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
        """``lowering.lower(model, target_opset=opset, ops=[])``, or its LoweringError raised."""
        key = (model.SerializeToString(), opset)
        if key not in self.lowered:
            self.close()
            try:
                self.lowered[key] = lowering.lower(model, target_opset=opset, ops=[])
            except lowering.LoweringError as error:
                self.lowered[key] = error
        if isinstance(self.lowered[key], lowering.LoweringError):
            raise self.lowered[key]
        return self.lowered[key]

    def run(self, model: onnx.ModelProto, feeds: dict, *, oracle: bool = False) -> list:
        """:func:`run`'s outputs (its failure raised, not kept)."""
        serialized = model.SerializeToString()
        fed = feeds_key(feeds)
        key = (oracle, serialized, fed) if fed is not None else None
        if key is not None and key in self.outputs:
            return self.outputs[key]
        if oracle:
            self.close()
            (outputs,) = reference_outputs_of_each(model, [feeds])
        else:
            if serialized not in self.sessions:
                self.sessions[serialized] = OnnxruntimeRunner(model)
            outputs = self.sessions[serialized](feeds)
        if key is not None:
            self.outputs[key] = outputs
        return outputs

    def close(self) -> None:
        self.sessions.clear()


def bits(array) -> np.ndarray:
    array = np.asarray(array)
    return array.view(f"u{array.dtype.itemsize}") if array.dtype.kind in "fc" or array.dtype.itemsize <= 2 else array


def assert_same_bits(got: list, want: list, where: str) -> None:
    assert len(got) == len(want), where
    for index, (a, b) in enumerate(zip(got, want, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (
            f"{where}: output {index} is {a.dtype}{a.shape}, not {b.dtype}{b.shape}"
        )
        differ = np.flatnonzero(bits(a).reshape(-1) != bits(b).reshape(-1))
        assert differ.size == 0, (
            f"{where}: output {index} differs at {differ.size} of {a.size} places, first {differ[:5]}: "
            f"{a.reshape(-1)[differ[:3]]} vs {b.reshape(-1)[differ[:3]]}"
        )


# Ops whose onnx.reference implementation, the stand-in where onnxruntime has no kernel, does not
# say what the spec says at some version: there the two models are not compared.
ORACLE_GAPS = {
    # RoiAlign-22 has no onnxruntime kernel; onnx.reference runs RoiAlign-10 with version 16's default
    # half_pixel, not the output_half_pixel it means (tests/rules/versions/test_adapters_training.py compares 16 → 10
    # in onnxruntime instead)
    "RoiAlign": "onnx.reference runs RoiAlign-10 as half_pixel, and onnxruntime lacks RoiAlign-22",
    # OneHot-28 with bfloat16 values and a float depth has no onnxruntime kernel; onnx.reference
    # computes hot * (on - off) + off, which loses NaN payloads and -0 (tests/rules/versions/test_adapters_type_moves.py
    # compares it with the spec's formula instead)
    "OneHot": "onnx.reference computes OneHot by arithmetic, and onnxruntime lacks this OneHot-28",
}


# Op versions whose onnxruntime kernel rounds otherwise than the newer version's kernel (measured,
# onnxruntime 1.32): the same meaning, other bits. A case taken to one is compared in onnx.reference,
# which runs both versions by one formula.
KERNEL_GAPS = {
    ("AveragePool", 11): "onnxruntime's AveragePool-11 kernel sums in another order (ulps apart, inf where "
    "version 19's kernel stays finite) and flushes subnormal means to zero",
    ("LpPool", 11): "onnxruntime's LpPool-11 kernel gives NaNs of another sign or payload than LpPool-18's",
    # the kernels of the versions before 11, as the version-11 adapter takes them (measured alike)
    ("AveragePool", 7): "onnxruntime's AveragePool-7 kernel sums as its AveragePool-11 kernel does",
    ("AveragePool", 10): "onnxruntime's AveragePool-10 kernel sums as its AveragePool-11 kernel does",
    ("LpPool", 2): "onnxruntime's LpPool-2 kernel gives NaNs as its LpPool-11 kernel does",
}


# A pool with dilations taken where none can be stated (AveragePool below 19, LpPool below 18)
# becomes Pad, Gather and a pool without dilations, auto_pad or ceil_mode, which mean the same at
# the source opset. Its target's kernel differs from the source's (KERNEL_GAPS), and onnx.reference
# cannot stand in: it drops NaN inputs under count_include_pad=0 and places ceil_mode windows of
# dilated kernels otherwise than onnxruntime and the spec. So the result is run at the source opset,
# where onnxruntime's kernel is the original's own, and compared bit for bit there.
DILATED_POOLS = ("AveragePool", "LpPool")


def dilated_pool(model: onnx.ModelProto, op_type: str) -> bool:
    return op_type in DILATED_POOLS and any(
        attribute.name == "dilations" and any(d != 1 for d in attribute.ints)
        for node in model.graph.node
        if node.op_type == op_type
        for attribute in node.attribute
    )


def at_opset(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """``model`` with its default-domain opset import set to ``opset``, nothing else changed."""
    moved_model = onnx.ModelProto()
    moved_model.CopyFrom(model)
    for entry in moved_model.opset_import:
        if schemas.canonical_domain(entry.domain) == "":
            entry.version = opset
    return moved_model


# -- one adapter on one case -------------------------------------------------------------------------


@dataclass
class Coverage:
    exact: list[str] = field(default_factory=list)  # "case source→target" where it fired, bit-exact
    not_fired: list[str] = field(default_factory=list)  # left to the converter (returned None) or refused


def fired(report, op_type: str, found: adapters.RegisteredAdapter) -> bool:
    for key, count in report.adapted.items():
        match = ADAPTED.match(key)
        if match and count and match["op"] == op_type and match["label"] == found.label:
            going_down = int(match["target"]) < int(match["source"])
            if going_down == (found.direction == "down"):
                return True
    return False


def exercise(found, op_type, name, model, data_sets, source, target, coverage: Coverage, runs: Runs) -> None:
    """Take ``model`` to ``source``, then across the step to ``target``; compare bit for bit."""
    try:
        _exercise(found, op_type, name, model, data_sets, source, target, coverage, runs)
    finally:
        runs.close()


def _exercise(found, op_type, name, model, data_sets, source, target, coverage: Coverage, runs: Runs) -> None:
    where = f"{found.name} on {op_type}: {name} {source}→{target}"
    run = runs.run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            at_source = model
            for opset in (max(source, target), source):  # the range's newest opset first: adapters reach it
                if opset_of(at_source) > opset or (opset == source and opset_of(at_source) != source):
                    at_source = runs.lower(at_source, opset)
        except lowering.LoweringError as error:
            coverage.not_fired.append(f"{where}: not taken to the source opset: {error}")
            return
        try:
            runs.close()
            result = lowering.lower_model(at_source, target_opset=target, ops=[])
        except lowering.LoweringError as error:
            # only a refusal is allowed here: the adapter's (naming the node and the opset it cannot
            # go to) or onnx's converter's where the adapter left the node to it
            assert any(why in str(error) for why in REFUSALS), f"{where}: {error}"
            coverage.not_fired.append(f"{where}: {error}")
            return
    if not fired(result.report, op_type, found):
        coverage.not_fired.append(f"{where}: {dict(result.report.adapted)}")
        return
    onnx.checker.check_model(result.model, full_check=True)
    in_reference = any(
        (op_type, schemas.version_in_force(op_type, opset)) in KERNEL_GAPS for opset in (opset_of(at_source), target)
    )
    compared = result.model
    if in_reference and dilated_pool(at_source, op_type):
        compared, in_reference = at_opset(result.model, opset_of(at_source)), False
        for feeds in data_sets:  # the result runs at its own opset too, to outputs of the same shapes
            shapes = [np.shape(value) for value in run(result.model, feeds)]
            assert shapes == [np.shape(value) for value in run(at_source, feeds)], where
    for index, feeds in enumerate(data_sets):
        if in_reference:  # compared in onnx.reference: onnxruntime must still give outputs of the same shapes
            try:
                shapes = [np.shape(value) for value in run(at_source, feeds)]
            except (OnnxruntimeNotImplemented, OnnxruntimeFail, OnnxruntimeRuntimeException):
                shapes = None
            if shapes is not None:
                assert [np.shape(value) for value in run(result.model, feeds)] == shapes, where
        for kind, fed in (("own inputs", feeds), ("edge values", edge_feeds(at_source, feeds))):
            try:
                want = run(at_source, fed, oracle=in_reference)
            except (OnnxruntimeNotImplemented, OnnxruntimeFail, OnnxruntimeRuntimeException):
                # no kernel for the source (PRelu-6), or a form it refuses (a GRU with layout=1,
                # ReduceMax-20 over an empty set of bool, which the spec defines as false)
                want = None
            try:
                got = None if want is None else run(compared, fed, oracle=in_reference)
            except OnnxruntimeNotImplemented:
                got = None  # no kernel for what the adapter made
            if (want is None or got is None) and op_type in ORACLE_GAPS:
                coverage.not_fired.append(f"{where}: {ORACLE_GAPS[op_type]}")
                return
            if want is None or got is None:
                # onnx.reference runs both, so they are compared by one implementation
                want, got = run(at_source, fed, oracle=True), run(result.model, fed, oracle=True)
            assert_same_bits(got, want, f"{where}, data set {index}, {kind}")
    coverage.exact.append(f"{name} {source}→{target}")


# -- cases no backend model reaches, built here ---------------------------------------------------


def explicit_cases(op_type: str) -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Cases built here for adapters the backend corpus does not reach (or reaches too little)."""
    return {
        "PRelu": prelu_cases,
        "Pad": lambda: pad_cases() + wrap_pad_cases() + pad_2_cases(),
        "Constant": constant_cases,
        "Resize": lambda: resize_cases() + resize_10_cases(),
        "Upsample": upsample_cases,
        "GridSample": grid_sample_cases,
        "QuantizeLinear": lambda: quantize_cases("QuantizeLinear"),
        "DequantizeLinear": lambda: quantize_cases("DequantizeLinear"),
        "ArgMax": lambda: arg_cases("ArgMax"),
        "ArgMin": lambda: arg_cases("ArgMin"),
        "GatherND": gather_nd_cases,
        "BitShift": bit_shift_cases,
        "Cast": integer_cast_cases,
        "DFT": dft_cases,
        "Split": split_cases,
        "Squeeze": lambda: run_time_axes_cases("Squeeze"),
        "Unsqueeze": lambda: run_time_axes_cases("Unsqueeze"),
        "Where": where_cases,
        "OneHot": one_hot_cases,
        "Loop": loop_cases,
        "Conv": conv_cases,
        "Dropout": dropout_cases,
        "Reshape": lambda: stated_default_cases("Reshape", "allowzero", 0),
        "Shape": lambda: stated_default_cases("Shape", "start", 0),
    }.get(op_type, list)()


def stated_default_cases(op_type: str, name: str, value: int) -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """The op's backend cases with attribute ``name`` stated as its default ``value`` where the
    node leaves it out: a node stating it is one a known change may affect, so it reaches the
    adapter (which leaves a node without it as it is)."""
    cases = []
    for case_name, model, data_sets in backend_cases(op_type):
        stated = onnx.ModelProto()
        stated.CopyFrom(model)
        nodes = [node for node in stated.graph.node if node.op_type == op_type]
        if all(any(attribute.name == name for attribute in node.attribute) for node in nodes):
            continue
        for node in nodes:
            if not any(attribute.name == name for attribute in node.attribute):
                node.attribute.append(helper.make_attribute(name, value))
        cases.append((f"{case_name}_{name}_stated", stated, data_sets))
    return cases


def dropout_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Dropout-10 in inference without its mask (the backend's Dropouts are at 12 and later, and
    go below 12 as Identity), of each float type, with and without a ratio. Built at opset 10."""
    rng = np.random.default_rng(12)
    cases = []
    for element_type, ratio in ((TensorProto.FLOAT, None), (TensorProto.FLOAT16, 0.3), (TensorProto.DOUBLE, 0.9)):
        attributes = {} if ratio is None else {"ratio": ratio}
        model = make_model(
            [helper.make_node("Dropout", ["x"], ["y"], name="dropout", **attributes)],
            [helper.make_tensor_value_info("x", element_type, (2, 3))],
            [helper.make_tensor_value_info("y", element_type, (2, 3))],
            opset=10,
        )
        values = rng.standard_normal((2, 3)).astype(helper.tensor_dtype_to_np_dtype(element_type))
        name = f"explicit_dropout_{helper.tensor_dtype_to_string(element_type)}_{ratio}"
        cases.append((name, model, [{"x": values}]))
    return cases


def conv_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Conv under auto_pad with every stride 1 (SAME_UPPER and SAME_LOWER, even kernels among
    them; onnxruntime takes no dilations beside SAME), and VALID with strides 2: the backend's
    auto_pad Convs stride by 2 under SAME, which the versions before 11 do not state. Built at
    opset 10."""
    rng = np.random.default_rng(11)
    cases = []
    for auto_pad, kernel, strides, dilations in (("SAME_UPPER", [2, 3], [1, 1], [1, 1]),
                                                 ("SAME_LOWER", [2, 2], [1, 1], [1, 1]),
                                                 ("VALID", [3, 2], [2, 2], [1, 1])):  # fmt: skip
        weights = onnx.numpy_helper.from_array(rng.standard_normal((3, 2, *kernel)).astype(np.float32), "w")
        model = make_model(
            [
                helper.make_node(
                    "Conv",
                    ["x", "w"],
                    ["y"],
                    name="conv",
                    auto_pad=auto_pad,
                    kernel_shape=kernel,
                    strides=strides,
                    dilations=dilations,
                )
            ],  # fmt: skip
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 5, 6))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ("n", "c", "h", "w"))],
            opset=10,
            initializer=[weights],
        )
        feeds = {"x": rng.standard_normal((1, 2, 5, 6)).astype(np.float32)}
        cases.append((f"explicit_conv_{auto_pad.lower()}_{'x'.join(map(str, kernel))}", model, [feeds]))
    return cases


def loop_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Loop-16 carrying no values (which Loop-1 cannot say), its scan output a Mul of the outer x
    by the iteration number: a trip count with no condition, and one with a condition (fed true)."""
    rng = np.random.default_rng(11)
    cases = []
    for name, inputs in (("trips", ["m", ""]), ("trips_and_condition", ["m", "c"])):
        body = helper.make_graph(
            [
                helper.make_node("Cast", ["i"], ["i_float"], name="cast", to=TensorProto.FLOAT),
                helper.make_node("Mul", ["x", "i_float"], ["scaled"], name="mul"),
                helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"),
            ],
            "body",
            [
                helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
            ],
            [
                helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                helper.make_tensor_value_info("scaled", TensorProto.FLOAT, [3]),
            ],
        )
        model = make_model(
            [
                helper.make_node("Loop", inputs, ["y"], name="loop", body=body),
            ],
            [
                helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                helper.make_tensor_value_info("m", TensorProto.INT64, []),
                helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            ],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
            opset=16,
        )
        feeds = {"x": rng.standard_normal(3).astype(np.float32), "m": np.array(3, np.int64), "c": np.array(True)}
        cases.append((f"explicit_loop_{name}", model, [feeds]))
    return cases


def where_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Where-16 on bfloat16: the backend's Where cases are of types Where-9 takes, its bfloat16
    ones sit in function bodies (Attention, Elu). Built at opset 16: broadcast three ways, a
    condition of one value, an empty condition."""
    rng = np.random.default_rng(16)
    cases = []
    for c_shape, a_shape, b_shape in (((2, 1, 3), (4, 1), (1,)), ((1,), (3, 2), (3, 2)), ((0, 3), (1, 3), (3,))):
        rank = max(map(len, (c_shape, a_shape, b_shape)))
        model = make_model(
            [helper.make_node("Where", ["c", "a", "b"], ["y"], name="where")],
            [
                helper.make_tensor_value_info("c", TensorProto.BOOL, c_shape),
                helper.make_tensor_value_info("a", TensorProto.BFLOAT16, a_shape),
                helper.make_tensor_value_info("b", TensorProto.BFLOAT16, b_shape),
            ],
            [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [f"y{k}" for k in range(rank)])],
            opset=16,
        )
        feeds = {
            "c": np.asarray(rng.random(c_shape) < 0.5),
            "a": rng.standard_normal(a_shape).astype(ml_dtypes.bfloat16),
            "b": rng.standard_normal(b_shape).astype(ml_dtypes.bfloat16),
        }
        name = f"explicit_where_bfloat16_{'x'.join(map(str, c_shape))}_{'x'.join(map(str, a_shape))}"
        cases.append((name, model, [feeds]))
    return cases


def one_hot_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """OneHot-28 with bfloat16 values and an int64 depth, whose onnxruntime kernel is the oracle
    (the backend's bfloat16 case has a float depth: ORACLE_GAPS). Built at opset 28."""
    model = make_model(
        [helper.make_node("OneHot", ["i", "d", "v"], ["y"], name="one_hot", axis=0)],
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, (2, 3)),
            helper.make_tensor_value_info("v", TensorProto.BFLOAT16, (2,)),
        ],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, (4, 2, 3))],
        opset=28,
        initializer=[onnx.numpy_helper.from_array(np.array(4, np.int64), "d")],
    )
    feeds = {"i": np.array([[0, 3, -1], [-4, 7, 2]], np.int64), "v": np.array([-2.5, 0.75], ml_dtypes.bfloat16)}
    return [("explicit_one_hot_bfloat16_int64_depth", model, [feeds])]


def split_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Split-18 with num_outputs along a dimension not known statically (a symbol), which goes
    below 13 as Slices bounded at run time: float, float16 and int64, axes counted from either
    end, sizes that n divides and that leave a smaller or empty last part; and a dimension of 5
    cut into 4 (an error in onnxruntime, compared in onnx.reference). Built at opset 18."""
    rng = np.random.default_rng(18)
    variants = [
        ((7, 3), ["n", 3], TensorProto.FLOAT, 0, 3),
        ((2, 6, 2), [2, "n", 2], TensorProto.FLOAT16, -2, 4),
        ((3, 8), [3, "n"], TensorProto.INT64, -1, 4),
        ((5, 2), [5, 2], TensorProto.FLOAT, 0, 4),
    ]
    cases = []
    for shape, declared, element_type, axis, count in variants:
        outputs = [f"y{k}" for k in range(count)]
        dims = [f"d{k}" for k in range(len(shape))]
        model = make_model(
            [helper.make_node("Split", ["x"], outputs, name="split", axis=axis, num_outputs=count)],
            [helper.make_tensor_value_info("x", element_type, declared)],
            [helper.make_tensor_value_info(name, element_type, dims) for name in outputs],
            opset=18,
        )
        values = (rng.standard_normal(shape) * 8).astype(helper.tensor_dtype_to_np_dtype(element_type))
        name = f"explicit_split_{'x'.join(map(str, declared))}_{schemas.type_name(element_type)}_axis{axis}_{count}"
        cases.append((name, model, [{"x": values}]))
    return cases


def run_time_axes_cases(op_type: str) -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Squeeze-13 and Unsqueeze-13 with their axes a graph input (the backend cases' axes are
    frozen into constants here), built at opset 13, each on two data sets: one with a 0-sized
    dimension, and axes from either end."""
    rng = np.random.default_rng(13)
    if op_type == "Squeeze":
        data_sets = [((1, 3, 1, 2), [0]), ((1, 0, 1, 2), [-2])]
    else:
        data_sets = [((3, 4), [0, 3]), ((3, 0), [-1, 1])]
    count = len(data_sets[0][1])
    rank = 4 - count if op_type == "Squeeze" else 2 + count
    model = make_model(
        [helper.make_node(op_type, ["x", "axes"], ["y"], name=op_type.lower())],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [f"d{k}" for k in range(len(data_sets[0][0]))]),
            helper.make_tensor_value_info("axes", TensorProto.INT64, [count]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [f"e{k}" for k in range(rank)])],
        opset=13,
    )
    feeds = [
        {"x": rng.standard_normal(shape).astype(np.float32), "axes": np.array(axes, np.int64)}
        for shape, axes in data_sets
    ]
    return [(f"explicit_{op_type.lower()}_run_time_axes", model, feeds)]


def dft_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """DFT-20 with its axis a constant (the backend cases feed it as an input) or absent, built
    at opset 20: real and complex signals, forward, inverse and one-sided, axes counted from
    either end, float, double, float16 and bfloat16."""
    rng = np.random.default_rng(20)
    variants = [
        ((2, 6, 1), TensorProto.FLOAT, 1, {}),
        ((2, 6, 1), TensorProto.FLOAT, -2, {"onesided": 1}),
        ((2, 3, 4, 2), TensorProto.FLOAT, None, {"inverse": 1}),
        ((2, 3, 4, 2), TensorProto.DOUBLE, 1, {}),
        ((3, 5, 2), TensorProto.FLOAT, -2, {"inverse": 1}),
        ((2, 4, 2), TensorProto.FLOAT16, 1, {}),
        ((2, 4, 2), TensorProto.BFLOAT16, -2, {"inverse": 1}),
    ]
    cases = []
    for shape, element_type, axis, attributes in variants:
        inputs, initializers = ["x", ""], []
        if axis is not None:
            inputs.append("axis")
            initializers.append(onnx.numpy_helper.from_array(np.array(axis, np.int64), "axis"))
        model = make_model(
            [helper.make_node("DFT", inputs, ["y"], name="dft", **attributes)],
            [helper.make_tensor_value_info("x", element_type, shape)],
            [helper.make_tensor_value_info("y", element_type, [f"d{k}" for k in range(len(shape) - 1)] + [2])],
            opset=20,
            initializer=initializers,
        )
        values = rng.standard_normal(shape).astype(helper.tensor_dtype_to_np_dtype(element_type))
        name = f"explicit_dft_{'x'.join(map(str, shape))}_{schemas.type_name(element_type)}_axis{axis}_{attributes}"
        cases.append((name, model, [{"x": values}]))
    return cases


def bit_shift_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """BitShift-28 with its shift amounts an initializer, every amount in [0, bits): the backend
    cases feed them as inputs. Built at opset 28 for a signed and an unsigned type each way
    (int64 left only: its right shift is refused), on each type's extremes and random values."""
    rng = np.random.default_rng(28)
    cases = []
    for element_type in (TensorProto.INT8, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT16):
        dtype = helper.tensor_dtype_to_np_dtype(element_type)
        info = np.iinfo(dtype)
        bits = info.bits
        values = np.concatenate(
            [np.array([info.min, info.max, 0, 1], dtype), rng.integers(info.min, info.max, 4, dtype)]
        )
        x = np.tile(values, bits)
        amounts = np.repeat(np.arange(bits), values.size).astype(dtype)
        for direction in ("LEFT", "RIGHT"):
            if direction == "RIGHT" and element_type == TensorProto.INT64:
                continue
            model = make_model(
                [helper.make_node("BitShift", ["x", "y"], ["z"], name="shift", direction=direction)],
                [helper.make_tensor_value_info("x", element_type, [x.size])],
                [helper.make_tensor_value_info("z", element_type, [x.size])],
                opset=28,
                initializer=[onnx.numpy_helper.from_array(amounts, "y")],
            )
            name = f"explicit_bit_shift_{direction.lower()}_{schemas.type_name(element_type)}"
            cases.append((name, model, [{"x": x}]))
    return cases


def integer_cast_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Cast-13 from each integer type to each other one (the backend's Casts are of floats,
    strings and bools), fed the source type's extremes, the target's and their neighbours, 0, ±1
    and random values: from 13 a value out of the target's range wraps, below it is undefined."""
    rng = np.random.default_rng(13)
    integers = [t for t in (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16,
                            TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64)]  # fmt: skip
    cases = []
    for source, to in ((s, t) for s in integers for t in integers if s != t):
        held, target = np.iinfo(helper.tensor_dtype_to_np_dtype(source)), np.iinfo(helper.tensor_dtype_to_np_dtype(to))
        edges = {held.min, held.max, target.min, target.max, target.min - 1, target.max + 1, 0, 1, -1}
        edges = sorted(int(v) for v in edges if held.min <= v <= held.max)
        dtype = helper.tensor_dtype_to_np_dtype(source)
        x = np.concatenate([np.array(edges, dtype=object).astype(dtype), rng.integers(held.min, held.max, 16, dtype)])
        model = make_model(
            [helper.make_node("Cast", ["x"], ["y"], name="cast", to=to)],
            [helper.make_tensor_value_info("x", source, [x.size])],
            [helper.make_tensor_value_info("y", to, [x.size])],
            opset=13,
        )
        cases.append((f"explicit_cast_{schemas.type_name(source)}_{schemas.type_name(to)}", model, [{"x": x}]))
    return cases


def arg_cases(op_type: str) -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """ArgMax/ArgMin-13 with select_last_index on what the backend cases (float32, rank 2-3) do
    not hold: float16, double and int32 data full of ties, a negative axis with keepdims=0, a 1-D
    input (a scalar result), and select_last_index=0 set. Built at opset 13; float inputs also
    get the edge values (NaN first along the axis among them)."""
    rng = np.random.default_rng(12)
    variants = [
        ((3, 4), TensorProto.FLOAT16, {"axis": 0, "keepdims": 0, "select_last_index": 1}),
        ((2, 3, 4), TensorProto.DOUBLE, {"axis": -2, "keepdims": 0, "select_last_index": 1}),
        ((2, 5), TensorProto.INT32, {"axis": -1, "keepdims": 1, "select_last_index": 1}),
        ((6,), TensorProto.FLOAT, {"axis": 0, "keepdims": 0, "select_last_index": 1}),
        ((3, 4), TensorProto.FLOAT, {"axis": 1, "keepdims": 1, "select_last_index": 0}),
    ]
    cases = []
    for shape, element_type, attributes in variants:
        model = make_model(
            [helper.make_node(op_type, ["x"], ["y"], name="arg", **attributes)],
            [helper.make_tensor_value_info("x", element_type, shape)],
            [helper.make_tensor_value_info("y", TensorProto.INT64, arg_shape(shape, attributes))],
            opset=13,
        )
        values = rng.integers(-2, 3, size=shape).astype(helper.tensor_dtype_to_np_dtype(element_type))
        name = f"explicit_{op_type.lower()}_{'x'.join(map(str, shape))}_{schemas.type_name(element_type)}_{attributes}"
        cases.append((name, model, [{"x": values}]))
    return cases


def arg_shape(shape: tuple[int, ...], attributes: dict) -> list[int]:
    axis = attributes["axis"] % len(shape)
    return [1 if k == axis else d for k, d in enumerate(shape) if k != axis or attributes["keepdims"]]


def gather_nd_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """GatherND-13 with batch_dims: the backend corpus has one case (int32, batch_dims=1). Built
    here at opset 13: float and float16 data, batch_dims 1 and 2, index tuples of length 1 and 2
    with negative indices, and batch_dims=0 set."""
    variants = [
        ((2, 3, 4), TensorProto.FLOAT, [[[1], [-1]], [[0], [2]]], 1),
        ((2, 3, 4), TensorProto.FLOAT, [[[1, -1]], [[-2, 0]]], 1),
        ((2, 3, 4), TensorProto.FLOAT16, [[[3], [0], [-4]], [[1], [1], [2]]], 2),
        ((3, 2), TensorProto.FLOAT, [[0, 1], [-1, 0]], 0),
    ]
    cases = []
    rng = np.random.default_rng(13)
    for shape, element_type, indices, batch_dims in variants:
        indices = np.array(indices, np.int64)
        model = make_model(
            [helper.make_node("GatherND", ["data", "indices"], ["y"], name="gather_nd", batch_dims=batch_dims)],
            [
                helper.make_tensor_value_info("data", element_type, shape),
                helper.make_tensor_value_info("indices", TensorProto.INT64, indices.shape),
            ],
            [
                helper.make_tensor_value_info(
                    "y", element_type, [*indices.shape[:-1], *shape[batch_dims + indices.shape[-1] :]]
                )
            ],
            opset=13,
        )
        data = rng.standard_normal(shape).astype(helper.tensor_dtype_to_np_dtype(element_type))
        name = f"explicit_gather_nd_{schemas.type_name(element_type)}_indices_{'x'.join(map(str, indices.shape))}"
        cases.append((f"{name}_batch_dims_{batch_dims}", model, [{"data": data, "indices": indices}]))
    return cases


def resize_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Resize-19 with what the backend corpus does not set: axes covering every axis (negative,
    in order), and the
    attribute sets PyTorch's exporters write for F.interpolate (nearest asymmetric floor and
    bilinear half_pixel, every attribute spelled out, scales [1, 1, 2, 2]). Built at opset 19."""
    rng = np.random.default_rng(19)
    exporter = {"antialias": 0, "exclude_outside": 0, "extrapolation_value": 0.0, "cubic_coeff_a": -0.75}
    exporter |= {"keep_aspect_ratio_policy": "stretch", "nearest_mode": "floor"}
    variants = [
        ("axes_all_negative", {"mode": "linear", "axes": [-4, -3, -2, -1]}, [1.0, 1.0, 0.6, 1.7]),
        ("pytorch_nearest", {**exporter, "mode": "nearest", "coordinate_transformation_mode": "asymmetric"}, None),
        ("pytorch_bilinear", {**exporter, "mode": "linear", "coordinate_transformation_mode": "half_pixel"}, None),
    ]
    cases = []
    for name, attributes, scales in variants:
        model = make_model(
            [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", **attributes)],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 3, 4))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ("n", "c", "h", "w"))],
            opset=19,
        )
        values = np.array(scales or [1.0, 1.0, 2.0, 2.0], np.float32)
        model.graph.initializer.append(onnx.numpy_helper.from_array(values, "scales"))
        cases.append((f"explicit_resize_{name}", model, [{"x": rng.standard_normal((1, 2, 3, 4)).astype(np.float32)}]))
    return cases


def resize_10_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Resize-10 (x / scale, the pixel below upsampling and above downsampling): the backend
    corpus has Resize at 19 only. Built at opset 10: nearest up (uneven scales), nearest down,
    linear up and down."""
    rng = np.random.default_rng(10)
    cases = []
    for mode, scales in (("nearest", [1, 1, 2.5, 1.7]), ("nearest", [1, 1, 0.6, 0.5]), ("linear", [1, 1, 2, 1.3]),
                         ("linear", [1, 1, 0.7, 0.5])):  # fmt: skip
        model = make_model(
            [helper.make_node("Resize", ["x", "scales"], ["y"], name="resize", mode=mode)],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 3, 4))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ("n", "c", "h", "w"))],
            opset=10,
            initializer=[onnx.numpy_helper.from_array(np.array(scales, np.float32), "scales")],
        )
        name = f"explicit_resize_10_{mode}_{'_'.join(map(str, scales))}"
        cases.append((name, model, [{"x": rng.standard_normal((1, 2, 3, 4)).astype(np.float32)}]))
    return cases


def upsample_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Upsample beyond the backend's one case (nearest, scales [1, 1, 2, 3]): Upsample-9 nearest
    with uneven scales and linear, Upsample-7 with its scales attribute. Built at opsets 9 and 7."""
    rng = np.random.default_rng(9)
    cases = []
    for opset, mode, scales in ((9, "nearest", [1, 1, 2.5, 1.7]), (9, "linear", [1, 1, 2, 1.3]),
                                (7, "nearest", [1, 1, 1.5, 3]), (7, "linear", [1, 1, 2.5, 2])):  # fmt: skip
        inputs, initializer, attributes = ["x"], [], {}
        if opset == 9:
            inputs.append("scales")
            initializer.append(onnx.numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        else:
            attributes["scales"] = [float(v) for v in scales]
        model = make_model(
            [helper.make_node("Upsample", inputs, ["y"], name="upsample", mode=mode, **attributes)],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 3, 4))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ("n", "c", "h", "w"))],
            opset=opset,
            initializer=initializer,
        )
        name = f"explicit_upsample_{opset}_{mode}_{'_'.join(map(str, scales))}"
        cases.append((name, model, [{"x": rng.standard_normal((1, 2, 3, 4)).astype(np.float32)}]))
    return cases


def grid_sample_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """GridSample on float16 (the backend's cases are float32), each mode with border and
    reflection padding and align_corners both ways, grids reaching past the edges. Built at 22."""
    rng = np.random.default_rng(16)
    cases = []
    for mode, padding, corners in (("linear", "border", 0), ("nearest", "reflection", 1), ("cubic", "zeros", 1)):
        attributes = {"mode": mode, "padding_mode": padding, "align_corners": corners}
        model = make_model(
            [helper.make_node("GridSample", ["x", "grid"], ["y"], name="sample", **attributes)],
            [
                helper.make_tensor_value_info("x", TensorProto.FLOAT16, (1, 2, 4, 5)),
                helper.make_tensor_value_info("grid", TensorProto.FLOAT16, (1, 3, 6, 2)),
            ],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT16, (1, 2, 3, 6))],
            opset=22,
        )
        feeds = {
            "x": rng.standard_normal((1, 2, 4, 5)).astype(np.float16),
            "grid": rng.uniform(-1.3, 1.3, (1, 3, 6, 2)).astype(np.float16),
        }
        cases.append((f"explicit_grid_sample_{mode}_{padding}_{corners}_float16", model, [feeds]))
    return cases


def quantize_cases(op_type: str) -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """QuantizeLinear and DequantizeLinear with the attributes of versions 19 to 25 set to what
    version 13 does (the backend's cases leave them out): saturate=1, block_size=0, precision
    and output_dtype the scale's type, and QuantizeLinear's output_dtype int8 without a zero
    point; per-tensor and per-axis. Built at opset 25."""
    rng = np.random.default_rng(21)
    float32, int8, uint8 = TensorProto.FLOAT, TensorProto.INT8, TensorProto.UINT8
    variants = [
        ("QuantizeLinear", {"saturate": 1, "block_size": 0, "precision": float32}, (), uint8, True),
        ("QuantizeLinear", {"output_dtype": int8}, (), int8, False),
        ("QuantizeLinear", {"output_dtype": int8, "axis": 1}, (4,), int8, False),
        ("DequantizeLinear", {"output_dtype": float32, "block_size": 0}, (), uint8, True),
        ("DequantizeLinear", {"block_size": 0, "axis": 1}, (4,), int8, True),
    ]
    cases = []
    for node_op, attributes, scale_shape, quantized, zero_point in variants:
        if node_op != op_type:
            continue
        scale = rng.uniform(0.05, 0.5, scale_shape).astype(np.float32)
        initializer = [onnx.numpy_helper.from_array(scale, "scale")]
        inputs = ["x", "scale"]
        if zero_point:
            dtype = helper.tensor_dtype_to_np_dtype(quantized)
            initializer.append(onnx.numpy_helper.from_array(rng.integers(-5, 5, scale_shape).astype(dtype), "zero"))
            inputs.append("zero")
        quantize = op_type == "QuantizeLinear"
        x_type, y_type = (float32, quantized) if quantize else (quantized, float32)
        model = make_model(
            [helper.make_node(op_type, inputs, ["y"], name="quantize", **attributes)],
            [helper.make_tensor_value_info("x", x_type, (2, 4, 3))],
            [helper.make_tensor_value_info("y", y_type, (2, 4, 3))],
            opset=25,
            initializer=initializer,
        )
        if quantize:
            x = (rng.standard_normal((2, 4, 3)) * 20).astype(np.float32)
        else:
            x = rng.integers(0, 100, (2, 4, 3)).astype(helper.tensor_dtype_to_np_dtype(quantized))
        name = f"explicit_{op_type}_{'_'.join(f'{k}_{v}' for k, v in attributes.items())}_scale{list(scale_shape)}"
        cases.append((name, model, [{"x": x}]))
    return cases


def constant_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Constant with value_float(s) and value_int(s) (from 12): the backend's Constant cases set
    ``value`` only, so none reaches the adapter. Built here at opset 18: each attribute's
    constant added to (or, for ints, compared with) an input, so the output depends on it; the
    floats include -0.0, the largest float32 and a subnormal."""
    rng = np.random.default_rng(13)
    cases = []
    float_values = {"value_float": -0.0, "value_floats": [3.4028234663852886e38, 1.4e-45, -2.5]}
    for attribute, value in float_values.items():
        shape = [3] if isinstance(value, list) else [3]
        model = make_model(
            [
                helper.make_node("Constant", [], ["c"], name="constant", **{attribute: value}),
                helper.make_node("Add", ["x", "c"], ["y"], name="add"),
            ],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
            opset=18,
        )
        cases.append((f"explicit_constant_{attribute}", model, [{"x": rng.standard_normal(shape).astype(np.float32)}]))
    for attribute, value in {"value_int": 2, "value_ints": [1, -3, 7]}.items():
        model = make_model(
            [
                helper.make_node("Constant", [], ["c"], name="constant", **{attribute: value}),
                helper.make_node("Greater", ["x", "c"], ["y"], name="greater"),
            ],
            [helper.make_tensor_value_info("x", TensorProto.INT64, [3])],
            [helper.make_tensor_value_info("y", TensorProto.BOOL, [3])],
            opset=18,
        )
        cases.append((f"explicit_constant_{attribute}", model, [{"x": np.array([1, 2, 8], np.int64)}]))
    return cases


def pad_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Pad going below 11: every backend Pad case feeds its constant value as a graph input (a
    float, so it is not frozen into a constant) or pads integers, which Pad-2 lacks, so none
    reaches the adapter. Built here at opset 18: float and float16 data, a constant value of
    1.5, -0.0 or none, the modes constant, reflect and edge, pads over every axis and over
    chosen (negative) axes, and negative pads (cropping)."""
    rng = np.random.default_rng(11)
    cases = []
    variants = [
        ("constant", [0, 1, 2, 1, 0, 3], None, 1.5, TensorProto.FLOAT),
        ("constant", [1, 0, 0, 2], [0, -1], -0.0, TensorProto.FLOAT),
        ("constant", [0, 2, 1, 0, 1, 0], None, None, TensorProto.FLOAT16),
        ("constant", [1, -1, 0, 0, 1, -2], None, 2.0, TensorProto.FLOAT16),
        ("reflect", [0, 1, 2, 0, 2, 1], None, None, TensorProto.FLOAT),
        ("edge", [1, 2], [-2], None, TensorProto.FLOAT),
    ]
    for mode, pads, axes, value, element_type in variants:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(element_type)
        initializers = [onnx.numpy_helper.from_array(np.array(pads, np.int64), "pads")]
        inputs = ["x", "pads", "value" if value is not None else ""]
        if value is not None:
            initializers.append(onnx.numpy_helper.from_array(np.array(value, dtype), "value"))
        if axes is not None:
            initializers.append(onnx.numpy_helper.from_array(np.array(axes, np.int64), "axes"))
            inputs.append("axes")
        while inputs[-1] == "":
            inputs.pop()
        model = make_model(
            [helper.make_node("Pad", inputs, ["y"], name="pad", mode=mode)],
            [helper.make_tensor_value_info("x", element_type, (3, 4, 5))],
            [helper.make_tensor_value_info("y", element_type, ("a", "b", "c"))],
            opset=18,
        )
        model.graph.initializer.extend(initializers)
        name = f"explicit_pad_{mode}_{'_'.join(map(str, pads))}_axes_{axes}_value_{value}_{dtype.name}"
        cases.append((name, model, [{"x": (rng.standard_normal((3, 4, 5)) * 4).astype(dtype)}]))
    return cases


def pad_2_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Pad-2 going to 11 and up (no backend case is of opset 10 or below): float, double and
    float16 data, a value of 1.5, -0.0, 0.1 (float16 rounds it) or none, the modes constant,
    reflect and edge, negative pads. Built at opset 10."""
    rng = np.random.default_rng(2)
    variants = [
        ("constant", [0, 1, 2, 1, 0, 3], 1.5, TensorProto.FLOAT),
        ("constant", [1, 0, 0, 2, 0, -1], -0.0, TensorProto.DOUBLE),
        ("constant", [0, 2, 1, 0, 1, 0], 0.1, TensorProto.FLOAT16),
        ("constant", [1, -1, 0, 0, 1, -2], None, TensorProto.FLOAT),
        ("reflect", [0, 1, 2, 0, 2, 1], None, TensorProto.FLOAT),
        ("edge", [1, 2, 0, 0, 0, 3], 2.0, TensorProto.DOUBLE),
    ]
    cases = []
    for mode, pads, value, element_type in variants:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(element_type)
        attributes = {"mode": mode, "pads": pads} | ({"value": value} if value is not None else {})
        model = make_model(
            [helper.make_node("Pad", ["x"], ["y"], name="pad", **attributes)],
            [helper.make_tensor_value_info("x", element_type, (3, 4, 5))],
            [helper.make_tensor_value_info("y", element_type, ("a", "b", "c"))],
            opset=10,
        )
        name = f"explicit_pad_2_{mode}_{'_'.join(map(str, pads))}_value_{value}_{dtype.name}"
        cases.append((name, model, [{"x": (rng.standard_normal((3, 4, 5)) * 4).astype(dtype)}]))
    return cases


def wrap_pad_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """Pad-19 mode wrap beyond the backend's one case (float, pads within the dimensions): pads
    larger than a dimension, negative ones cropping (one meeting a positive pad on the same
    axis), chosen axes, double and int32 data, a dimension known only at run time. Built at 19.
    (float16 is left to tests/rules/versions/test_adapters_split_pad_dilations.py: onnxruntime runs Pad-19 on
    float16 in float32, which rewrites NaN payloads that the Gathers keep.)"""
    rng = np.random.default_rng(19)
    variants = [
        ([3, 4, 5], [0, 5, 7, 0, 9, 3], None, TensorProto.FLOAT),
        ([3, 4, 5], [-1, 2, 0, 2, -2, 4], None, TensorProto.DOUBLE),
        ([3, 4, 5], [3, -2], [-1], TensorProto.INT32),
        (["n", 4, 5], [0, 1, 2, 0, 1, 2], None, TensorProto.FLOAT),
    ]
    cases = []
    for declared, pads, axes, element_type in variants:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(element_type)
        initializers = [onnx.numpy_helper.from_array(np.array(pads, np.int64), "pads")]
        inputs = ["x", "pads"]
        if axes is not None:
            initializers.append(onnx.numpy_helper.from_array(np.array(axes, np.int64), "axes"))
            inputs += ["", "axes"]
        model = make_model(
            [helper.make_node("Pad", inputs, ["y"], name="pad", mode="wrap")],
            [helper.make_tensor_value_info("x", element_type, declared)],
            [helper.make_tensor_value_info("y", element_type, ("a", "b", "c"))],
            opset=19,
            initializer=initializers,
        )
        x = (rng.standard_normal((3, 4, 5)) * 4).astype(dtype)
        name = f"explicit_pad_wrap_{'x'.join(map(str, declared))}_{'_'.join(map(str, pads))}_axes_{axes}_{dtype.name}"
        cases.append((name, model, [{"x": x}]))
    return cases


def prelu_cases() -> list[tuple[str, onnx.ModelProto, list[dict]]]:
    """PRelu across version 7: the backend corpus has PRelu only with slopes that broadcast from
    the last axis (``[W]`` on ``[N, C, W]``) or have X's full shape, which versions 1 and 6 cannot
    say, so no backend case reaches either PRelu adapter. Built here at opset 16: X of rank 2, 3
    and 4 with a slope of C values lined up with axis 1, and a slope of one value."""
    rng = np.random.default_rng(7)
    cases = []
    for shape, slope_shape in (((2, 3), (3,)), ((2, 3, 4), (3, 1)), ((2, 3, 4, 5), (3, 1, 1)), ((2, 3, 4), (1,))):
        model = make_model(
            [helper.make_node("PRelu", ["x", "slope"], ["y"], name="prelu")],
            [
                helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
                helper.make_tensor_value_info("slope", TensorProto.FLOAT, slope_shape),
            ],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
            opset=16,
        )
        feeds = {
            "x": rng.standard_normal(shape).astype(np.float32),
            "slope": rng.standard_normal(slope_shape).astype(np.float32),
        }
        name = f"explicit_prelu_{'x'.join(map(str, shape))}_slope_{'x'.join(map(str, slope_shape))}"
        cases.append((name, model, [feeds]))
    return cases


# Inputs that are parameters, not data: Resize's roi and scales, Upsample's scales, Dropout's ratio
# and training_mode, RoiAlign's rois. Edge values there (NaN scales, a NaN ratio) make the original
# fail in onnxruntime too, and a training_mode fed at run time cannot be told, so they are frozen
# like integer inputs.
PARAMETER_INPUTS = {"Resize": (1, 2), "Upsample": (1,), "Dropout": (1, 2), "RoiAlign": (1,)}


def with_integer_inputs_constant(model: onnx.ModelProto, feeds: dict) -> tuple[onnx.ModelProto, dict]:
    """The case with its integer inputs (Reduce axes, a Reshape shape, Split sizes) and the
    PARAMETER_INPUTS made initializers holding the case's values: an adapter moving them into
    attributes needs them constant, and a model exported for a fixed shape has them so."""
    frozen = onnx.ModelProto()
    frozen.CopyFrom(model)
    parameters = {
        node.input[index]
        for node in frozen.graph.node
        for index in PARAMETER_INPUTS.get(node.op_type, ())
        if index < len(node.input) and node.input[index]
    }
    kept = []
    for info in frozen.graph.input:
        value = feeds.get(info.name)
        if isinstance(value, np.ndarray) and (value.dtype.kind in "iu" or info.name in parameters):
            frozen.graph.initializer.append(onnx.numpy_helper.from_array(value, info.name))
        else:
            kept.append(info)
    del frozen.graph.input[:]
    frozen.graph.input.extend(kept)
    return frozen, {info.name: feeds[info.name] for info in kept if info.name in feeds}


@functools.cache
def backend_cases(op_type: str) -> tuple:
    """The backend node cases holding ``op_type`` (their function-body expansions, ``_expanded``,
    left out: they hold the op only as part of another op's body), first data set each."""
    found = []
    for case in node_cases():
        if not case.data_sets or "_expanded" in case.name or not holds(case.model, op_type):
            continue
        model, feeds = with_integer_inputs_constant(case.model, feeds_of(case.model, case.data_sets[0][0]))
        found.append((case.name, model, [feeds]))
    return tuple(found)


SERVED = [
    pytest.param(found, op_type, id=f"{found.name}-{op_type}-{found.direction}")
    for found in adapters.all_adapters()
    for op_type in found.op_types
]


@pytest.mark.slow
@pytest.mark.parametrize(("found", "op_type"), SERVED)
def test_adapter_is_bit_exact_on_every_case_that_reaches_it(found, op_type):
    coverage, runs = Coverage(), Runs()
    for name, model, data_sets in [*backend_cases(op_type), *explicit_cases(op_type)]:
        for source, target in opset_pairs(found, op_type):
            exercise(found, op_type, name, model, data_sets, source, target, coverage, runs)
    COVERAGE[(found.name, op_type, found.direction)] = coverage
    minimum = found.minimum_cases(op_type)  # stated where it is registered (cases=)
    assert len(coverage.exact) >= minimum, (
        f"{found.name} fired on {len(coverage.exact)} cases for {op_type} going {found.direction}; "
        "not reached: " + "; ".join(coverage.not_fired[:5])
    )


COVERAGE: dict[tuple[str, str, str], Coverage] = {}


def test_every_adapter_states_its_formula():
    """(Its minimum of cases is refused at registration where missing: the test below.)"""
    for found in adapters.all_adapters():
        assert found.formula and "=" in found.formula, found.name


def test_registration_refuses_a_missing_or_negative_count_or_an_op_not_served():
    """``cases=`` is required at registration: a count of 0 or more for every op type served, by
    one int or a mapping (``OTHER_OPS`` for the rest) that names only op types served. Refused
    before anything is registered; the registry is restored whatever happens."""
    adapters.all_adapters()  # the rules loaded, so the registry below is the whole one
    registered, changes = dict(adapters.ADAPTERS), dict(adapters.KNOWN_CHANGES)

    def throwaway(node, context):
        """Throwaway-2(x) = Throwaway-1(x)."""

    refused = [
        (None, "needs cases="),
        (-1, "a count of 0 or more"),
        (1.5, "a count of 0 or more"),
        (True, "a count of 0 or more"),
        ({"Throwaway": 1, "Other": 2, "Softmax": 1}, "names Softmax, which"),
        ({"Throwaway": 1}, "no count for Other"),
        ({"Throwaway": 1, adapters.OTHER_OPS: -2}, "a count of 0 or more"),
    ]
    try:
        for cases, message in refused:
            with pytest.raises(ValueError, match=message):
                adapters.adapter(
                    ("Throwaway", "Other"), 2, "down", "throwaway", versions=(1, 2), reason="test", cases=cases
                )(throwaway)
            with pytest.raises(ValueError, match=message):
                adapters.case_minimums(("Throwaway", "Other"), cases)
        assert adapters.ADAPTERS == registered and adapters.KNOWN_CHANGES == changes
        assert adapters.case_minimums(("Throwaway", "Other"), 3) == (("Throwaway", 3), ("Other", 3))
        assert adapters.case_minimums(("Throwaway", "Other"), {"Other": 0, adapters.OTHER_OPS: 2}) == (
            ("Throwaway", 2),
            ("Other", 0),
        )
    finally:
        adapters.ADAPTERS.clear()
        adapters.ADAPTERS.update(registered)
        adapters.KNOWN_CHANGES.clear()
        adapters.KNOWN_CHANGES.update(changes)


def _sample_attribute(name: str, attribute_type: int):
    """An attribute ``name`` of ``attribute_type`` holding a small sample value."""
    kind = onnx.AttributeProto
    samples = {
        kind.FLOAT: 1.5, kind.FLOATS: [1.5, -2.0], kind.INT: 3, kind.INTS: [3, -4], kind.STRING: b"a",
        kind.STRINGS: [b"a", b"b"], kind.TENSOR: onnx.numpy_helper.from_array(np.float32([1.5, -2.0])),
        kind.SPARSE_TENSOR: helper.make_sparse_tensor(
            onnx.numpy_helper.from_array(np.float32([1.5])), onnx.numpy_helper.from_array(np.int64([0])), [2]
        ),
    }  # fmt: skip
    return helper.make_attribute(name, samples[attribute_type]) if attribute_type in samples else None


CHANGED_ONLY = [param for param in SERVED if param.values[0].changed_only]


@pytest.mark.parametrize(("found", "op_type"), CHANGED_ONLY)
def test_a_changed_only_adapter_moves_a_default_stated_attribute_away(found, op_type):
    """A node stating, at its default, an attribute the target's version lacks (every
    TorchScript Reshape-14 states allowzero=0) means what it means without it: the adapter
    gives that node without the attribute, byte for byte, as the conversion's op lane writes
    such nodes without asking it (lowering/fast/unchanged_ops.py), at each opset pair it serves."""
    from lowering.naming import NameAllocator

    newest = schemas.schema_in_force(op_type, schemas.newest_opset())
    stated_defaults = 0
    for source, target in opset_pairs(found, op_type):
        before, after = (schemas.schema_in_force(op_type, opset) for opset in (source, target))
        for name, attribute in before.attributes.items():
            if name in after.attributes or attribute.default_value.name != name:
                continue
            node = helper.make_node(op_type, [f"x{k}" for k in range(newest.min_input)], ["y"], name="stated")
            node.attribute.append(attribute.default_value)
            context = adapters.AdapterContext(source, target, NameAllocator(), lambda _: None)
            without = onnx.NodeProto()
            without.CopyFrom(node)
            del without.attribute[:]
            assert [n.SerializeToString() for n in found.function(node, context)] == [without.SerializeToString()]
            stated_defaults += 1
    if op_type in ("Reshape", "Shape"):  # (allowzero; start)
        assert stated_defaults


@pytest.mark.parametrize(("found", "op_type"), CHANGED_ONLY)
def test_a_changed_only_adapter_leaves_every_node_no_known_change_affects(found, op_type):
    """An adapter registered changed_only leaves (None) every node no known change across its
    steps affects, as the conversion's op lane takes it to (lowering/fast/unchanged_ops.py keeps such
    nodes without asking it), and acts on, or refuses, every node one affects: on the op's
    backend cases and on a node for each attribute of its newest schema alone, at each opset
    pair it serves."""
    from lowering.naming import NameAllocator

    newest = schemas.schema_in_force(op_type, schemas.newest_opset())
    nodes = [node for _, model, _ in backend_cases(op_type) for node in model.graph.node if node.op_type == op_type]
    for name, attribute in newest.attributes.items():
        sample = _sample_attribute(name, int(attribute.type.value))
        if sample is not None:
            inputs = [f"x{k}" for k in range(newest.min_input)]
            nodes.append(helper.make_node(op_type, inputs, ["y"], name=f"only_{name}"))
            nodes[-1].attribute.append(sample)
    affected = left = 0
    for node in nodes:
        for source, target in opset_pairs(found, op_type):
            versions = schemas.version_in_force(op_type, source), schemas.version_in_force(op_type, target)
            context = adapters.AdapterContext(source, target, NameAllocator(), lambda _: None)
            if adapters.change_for(node, *versions) is None:
                assert found.function(node, context) is None, (node.name, source, target)
                left += 1
            else:
                try:
                    assert found.function(node, context) is not None, (node.name, source, target)
                except NotLowered:
                    pass
                affected += 1
    assert left and affected
