"""CumProd and Einsum, ops without a function body, lowered by their own rules (rules/cumprod.py,
rules/einsum.py): every ONNX backend case of the ops, edge values per type against onnxruntime's
kernels and the rules' numpy references, the conversion paths to older opsets, and what is
refused and why."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import (
    assert_same_bits,
    assert_same_values,
    make_model,
    op_type_set,
    runs_in_onnxruntime,
    slow_but_a_sample,  # noqa: E402
)
from version_cases import fed_data_sets, node_cases, sweep_case

import lowering
from lowering import schemas
from lowering.function_bodies import Tolerance
from lowering.registry import rule_for
from lowering.samples import sample_values
from lowering.verification.runtime import run_onnxruntime, run_reference

OPS = ("CumProd", "Einsum")
BACKEND_CASES = {case.name: case for case in node_cases() if any(node.op_type in OPS for node in case.model.graph.node)}
# Backend cases the rules leave, and the reason the report gives.
REFUSED: dict[str, str] = {}


def assert_within(op_type: str, got: np.ndarray, want: np.ndarray, where: str = "") -> None:
    """Bit for bit, or within the tolerance the rule states for the type."""
    assert got.dtype == want.dtype and got.shape == want.shape, where
    tolerance = (rule_for("", op_type).tolerance or {}).get(helper.np_dtype_to_tensor_dtype(want.dtype))
    if tolerance is None:
        assert_same_bits(got, want, where)
    else:
        assert not tolerance.mismatches(got, want).any(), (
            f"{where}: beyond rtol {tolerance.rtol}, atol {tolerance.atol}"
        )


# -- every backend case, lowered on request ------------------------------------------------------


def test_backend_cases_are_found():
    assert sum(name.startswith("test_cumprod") for name in BACKEND_CASES) >= 9
    assert sum(name.startswith("test_einsum") for name in BACKEND_CASES) >= 9
    assert set(REFUSED) <= set(BACKEND_CASES)


@slow_but_a_sample()
@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_lowered_on_request(name):
    case = BACKEND_CASES[name]
    (op_type,) = {node.op_type for node in case.model.graph.node} & set(OPS)
    result = lowering.lower_model(case.model, ops=[op_type])
    if name in REFUSED:
        assert [r.reason for r in result.report.remaining if REFUSED[name] in r.reason], result.report.lines()
        assert result.model.SerializeToString() == case.model.SerializeToString()
        return
    assert result.report.complete, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    assert op_type not in op_type_set(result.model)
    for feeds, expected in fed_data_sets(case):
        (got,) = run_onnxruntime(result.model, feeds)
        assert_within(op_type, got, expected[0], name)
        native = runs_in_onnxruntime(case.model, feeds)
        if native is not None:  # onnxruntime's own kernel: the same bits
            assert_same_bits(got, native[0], f"{name} against onnxruntime's {op_type}")


# -- the corpus pairs that convert (tests/version_cases.py, as the version sweep runs them) --------

CUMPROD_CASES = sorted(name for name in BACKEND_CASES if name.startswith("test_cumprod"))
EINSUM_CASES = sorted(name for name in BACKEND_CASES if name.startswith("test_einsum") and name not in REFUSED)
CORPUS_PAIRS = (
    [(target, name) for name in CUMPROD_CASES for target in (11, 13, 17, 21)]
    + [(11, name) for name in EINSUM_CASES if not name.endswith("bfloat16")]  # no bfloat16 at 11
    + [(target, name) for name in EINSUM_CASES if name.endswith("bfloat16") for target in (13, 17, 21)]
)


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name"), CORPUS_PAIRS, ids=[f"{n}-to{t}" for t, n in CORPUS_PAIRS])
def test_corpus_pair_converts(target, name):
    outcome = sweep_case(BACKEND_CASES[name], target)
    assert outcome.ours == "converts", outcome.detail
    assert not outcome.ours_wrong


DIAGONALS = [
    ("...ii->...i", [(3, 5, 5)]), ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ij,jj->i", [(3, 4), (4, 4)]),
    ("iji->j", [(3, 2, 3)]), ("iii->i", [(3, 3, 3)]), ("bii,bjj->bij", [(2, 3, 3), (2, 4, 4)]),
    ("iijj->ij", [(2, 2, 3, 3)]), ("ii->i", [(0, 0)]), ("jii,ij->j", [(2, 3, 3), (3, 2)]),
]  # fmt: skip


@slow_but_a_sample()
@pytest.mark.parametrize(
    "element_type",
    [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT64],
    ids=["float", "double", "float16", "bfloat16", "int64"],
)
def test_einsum_diagonal_is_gathered_bit_for_bit(element_type):
    """An index repeated within a term (a diagonal) is gathered to one axis first: moved, not
    computed, so a diagonal alone is the original's bit for bit on every value (NaN payloads
    of both signs, infinities, -0, subnormals); followed by sums and MatMul, onnxruntime's
    kernel (which takes the diagonal first too) bit for bit on these forms."""
    rng = np.random.default_rng(7)
    opset = 28 if element_type == TensorProto.BFLOAT16 else 12
    for equation, shapes in DIAGONALS:
        original = einsum_model(equation, shapes, element_type, opset)
        result = lowering.lower_model(original, ops=["Einsum"])
        assert result.report.complete and "Einsum" not in op_type_set(result.model), equation
        assert "Gather" in op_type_set(result.model)
        onnx.checker.check_model(result.model, full_check=True)
        for edge in (False, True):
            same_bits_as_native(result.model, original, shapes, element_type, rng, edge, equation)
    # a diagonal alone, on every edge value at once
    x = sample_values(element_type, random_count=0) if element_type != TensorProto.INT64 else None
    if x is not None:
        n = int(np.ceil(np.sqrt(x.size)))
        square = np.resize(x, n * n).reshape(n, n)
        original = einsum_model("ii->i", [(n, n)], element_type, opset)
        (got,) = run_onnxruntime(lowering.lower(original, ops=["Einsum"]), {"x0": square})
        assert_same_bits(got, np.ascontiguousarray(np.diagonal(square)), "ii->i on every edge value")


@pytest.mark.parametrize(("equation", "shape"), [("bii->bi", (4, 3, 3)), ("ibi->bi", (3, 4, 3)), ("ibi->b", (3, 4, 3))])
def test_einsum_diagonal_beside_an_axis_of_unknown_length(equation, shape):
    """The axis b of unknown length: the repeated axes are read as one by a Reshape copying the
    others (0) and gathered there, then put back in the term's order; the diagonal alone bit for
    bit (values moved), a sum after it within the stated tolerance (onnxruntime's optimizer may
    move the Transpose past the ReduceSum, which then adds in another order)."""
    original = einsum_model(equation, [shape], TensorProto.DOUBLE)
    original.graph.input[0].type.tensor_type.shape.dim[equation.index("b")].dim_param = "B"
    original.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "B"
    result = lowering.lower_model(original, target_opset=11, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    feeds = einsum_feeds([shape], TensorProto.DOUBLE, np.random.default_rng(9), edge=True)
    (got,) = run_onnxruntime(result.model, feeds)
    (native,) = run_onnxruntime(original, feeds)
    if "->b" in equation and "i" not in equation.partition("->")[2]:
        assert_within("Einsum", got, native, equation)
    else:
        assert_same_bits(got, native, equation)


def test_einsum_diagonal_of_an_unknown_length_is_refused_in_our_words():
    original = einsum_model("ii->i", [(4, 4)], TensorProto.FLOAT)
    original.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    original.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "N"
    with pytest.raises(lowering.LoweringError, match="Einsum-12 cannot be expressed at opset 11") as raised:
        lowering.lower(original, target_opset=11, ops=[])
    assert "the lengths of the axes of the repeated index i (a diagonal) are not known statically" in str(raised.value)


# -- CumProd: edge values, every type the op takes ----------------------------------------------

INTEGER_EDGES = {
    np.int32: [-(2**31), 2**31 - 1, 0, 1, -1, 2, -2, 65536, 3],
    np.int64: [-(2**63), 2**63 - 1, 0, 1, -1, 2, -2, 2**32, 3],
    np.uint32: [0, 1, 2, 3, 2**31, 2**32 - 1, 65536],
    np.uint64: [0, 1, 2, 3, 2**63, 2**64 - 1, 2**32],
}
KERNEL_TYPES = [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64,
                TensorProto.UINT32, TensorProto.UINT64]  # fmt: skip
ATTRIBUTES = [{}, {"exclusive": 1}, {"reverse": 1}, {"exclusive": 1, "reverse": 1}]


def cumprod_samples(element_type: int, rows: int, length: int) -> np.ndarray:
    """[rows, length] of the type's samples: every bit pattern of 16-bit floats (rows grown to
    hold them), NaN payloads, ±inf, ±0, subnormals and extremes for wider floats, wraparound
    values for integers, mixed with random values so that products overflow and underflow."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    rng = np.random.default_rng(element_type)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        edges = np.array(INTEGER_EDGES[dtype.type], dtype=object).astype(dtype)
        values = np.concatenate([edges, rng.integers(max(info.min, -1000), 1000, 2000).astype(dtype)])
    else:
        values = sample_values(element_type, random_count=2000)
        normal = rng.standard_normal(values.size).astype(np.float32) * 4
        values = np.stack([values, normal.astype(dtype)], 1).reshape(-1)  # edge values among ordinary ones
    rows = max(rows, -(-values.size // length))
    return np.resize(values, (rows, length))


def cumprod_model(element_type: int, shape, axis: int | None, opset: int = 26, **attributes) -> onnx.ModelProto:
    """``y = CumProd(x, axis)``: the axis a constant (an initializer), or a graph input where None."""
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], name="cumprod_node", **attributes)
    inputs = [helper.make_tensor_value_info("x", element_type, shape)]
    initializers = []
    if axis is None:
        inputs.append(helper.make_tensor_value_info("axis", TensorProto.INT64, []))
    else:
        initializers.append(helper.make_tensor("axis", TensorProto.INT32, [], [axis]))
    outputs = [helper.make_tensor_value_info("y", element_type, shape)]
    return make_model([node], inputs, outputs, opset=opset, initializer=initializers)


def cumprod_oracle(x: np.ndarray, axis: int, **attributes) -> np.ndarray:
    return rule_for("", "CumProd").reference(x, np.array(axis), **attributes)


@pytest.mark.slow
@pytest.mark.parametrize("element_type", KERNEL_TYPES, ids=[schemas.type_name(t) for t in KERNEL_TYPES])
def test_cumprod_matches_onnxruntimes_kernel_bit_for_bit(element_type):
    """Against onnxruntime's CumProd and numpy's cumprod: constant and graph-input axes, both
    directions, inclusive and exclusive, lengths 1 to 64, converted to 17 and lowered at 26."""
    for length, axis in [(1, 1), (7, 1), (64, -1), (5, 0)]:
        x = cumprod_samples(element_type, 4, length) if axis != 0 else cumprod_samples(element_type, 4, 64).T[:5]
        x = np.ascontiguousarray(x)
        for attributes in ATTRIBUTES:
            for given_axis in (axis, None):
                if given_axis is None:  # every axis is then unrolled: at most 64 long
                    x = x[:64]
                original = cumprod_model(element_type, list(x.shape), given_axis, **attributes)
                feeds = {"x": x} if given_axis is not None else {"x": x, "axis": np.array(axis, np.int64)}
                (native,) = run_onnxruntime(original, feeds)
                assert_same_values(native, cumprod_oracle(x, axis, **attributes), "numpy's against onnxruntime's")
                for options in ({"ops": ["CumProd"]}, {"target_opset": 17, "ops": []}):
                    result = lowering.lower_model(original, **options)
                    assert result.report.complete and "CumProd" not in op_type_set(result.model)
                    (got,) = run_onnxruntime(result.model, feeds)
                    assert_same_values(got, native, f"length {length} axis {given_axis} {attributes} {options}")


@pytest.mark.slow
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16], ids=["float16", "bfloat16"])
def test_cumprod_on_16_bit_floats_matches_the_runtime_on_every_bit_pattern(element_type):
    """float16: as onnxruntime runs it (its float32 kernel between Casts: one rounding at the
    end); bfloat16, which onnxruntime cannot run: as onnx.reference and numpy (each product
    rounded). Every bit pattern of the type along the axis."""
    x = cumprod_samples(element_type, 1, 8)
    for attributes in ATTRIBUTES:
        original = cumprod_model(element_type, list(x.shape), 1, **attributes)
        expected = cumprod_oracle(x, 1, **attributes)
        if element_type == TensorProto.FLOAT16:
            (native,) = run_onnxruntime(original, {"x": x})
            assert_same_values(native, expected, "numpy in float32 against onnxruntime")
        else:
            assert runs_in_onnxruntime(original, {"x": x}) is None, "onnxruntime runs bfloat16 CumProd now"
            # onnx.reference copies x_0 where exclusive takes 1 * x_0 (a signalling NaN then stays one)
            assert_same_values(run_reference(original, {"x": x})[0], expected, "onnx.reference against numpy")
        for options in ({"ops": ["CumProd"]}, {"target_opset": 13, "ops": []}):
            result = lowering.lower_model(original, **options)
            assert result.report.complete and "CumProd" not in op_type_set(result.model)
            onnx.checker.check_model(result.model, full_check=True)
            (got,) = run_onnxruntime(result.model, {"x": x})
            if element_type == TensorProto.FLOAT16:  # float32 Muls, which choose among NaN payloads
                assert_same_values(got, native, f"{attributes} {options}")
            else:
                assert_same_bits(got, expected, f"{attributes} {options}")


def test_onnxruntime_runs_float16_cumprod_and_einsum_by_their_float32_kernels():
    """What the rules follow for float16 (Target.runs_widened), from onnxruntime's kernel table."""
    from lowering.targets import ONNXRUNTIME_CPU

    assert ONNXRUNTIME_CPU.runs_widened("CumProd", 26, TensorProto.FLOAT16)
    assert ONNXRUNTIME_CPU.runs_widened("Einsum", 28, TensorProto.FLOAT16)
    assert not ONNXRUNTIME_CPU.runs_widened("Einsum", 28, TensorProto.BFLOAT16), "its own bfloat16 kernel"
    assert not ONNXRUNTIME_CPU.runs_widened("CumProd", 26, TensorProto.BFLOAT16), "not run at all"
    assert not ONNXRUNTIME_CPU.runs_widened("CumProd", 26, TensorProto.FLOAT)


def test_cumprod_on_an_empty_axis_and_a_3d_input():
    for shape, axis in [([3, 0], 1), ([0, 4], 1), ([2, 5, 3], 1), ([2, 5, 3], -3)]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        for attributes in ATTRIBUTES:
            original = cumprod_model(TensorProto.FLOAT, shape, axis, **attributes)
            result = lowering.lower_model(original, target_opset=11, ops=[])
            (got,) = run_onnxruntime(result.model, {"x": x})
            assert_same_values(got, run_onnxruntime(original, {"x": x})[0], f"{shape} {axis} {attributes}")


def test_cumprod_axis_out_of_range_fails_at_run_time_as_the_op_does():
    original = cumprod_model(TensorProto.FLOAT, [2, 3], None)
    lowered = lowering.lower(original, ops=["CumProd"])
    x = np.ones((2, 3), np.float32)
    for axis in (-2, -1, 0, 1):
        (got,) = run_onnxruntime(lowered, {"x": x, "axis": np.array(axis, np.int64)})
        assert_same_bits(got, cumprod_oracle(x, axis))
    for axis in (2, -3):
        with pytest.raises(Exception, match="out of"):
            run_onnxruntime(lowered, {"x": x, "axis": np.array(axis, np.int64)})


# -- CumProd: refusals --------------------------------------------------------------------------


@slow_but_a_sample()
@pytest.mark.parametrize(
    ("shape", "axis", "reason"),
    [
        ([2, 65], 1, "the axis has 65 elements, more than the 64 this rule unrolls into products"),
        (["N", 4], 0, "the length of the axis of x is unknown"),
        (["N", 4], None, "the length of axis 0 (the axis is no constant) of x is unknown"),
        ([2, 3], 2, "axis 2 is out of range for x of rank 2"),
        (None, 0, "the rank of x is unknown"),
    ],
)
def test_cumprod_refusals(shape, axis, reason):
    original = cumprod_model(TensorProto.FLOAT, shape or ["A", "B"], axis)
    if shape is None:  # x made by a Reshape to a shape of unknown length: its rank is unknown
        graph = original.graph
        graph.input[0].name = "data"
        graph.input.append(helper.make_tensor_value_info("target", TensorProto.INT64, ["K"]))
        graph.node.insert(0, helper.make_node("Reshape", ["data", "target"], ["x"]))
    result = lowering.lower_model(original, ops=["CumProd"])
    assert [r.reason for r in result.report.remaining] == [reason]
    assert "CumProd" in op_type_set(result.model)
    with pytest.raises(lowering.LoweringError, match="CumProd-26 cannot be expressed at opset 21") as raised:
        lowering.lower(original, target_opset=21, ops=[])
    assert reason in str(raised.value)


def test_cumprod_below_opset_9_is_refused():
    with pytest.raises(lowering.LoweringError, match="the rule writes ops as they are from opset 9, not 8"):
        lowering.lower(cumprod_model(TensorProto.FLOAT, [2, 3], 1), target_opset=8, ops=[])


# -- Einsum: random and edge values against onnxruntime's kernel ---------------------------------

EQUATIONS = [
    ("ij->ji", [(3, 4)]), ("ij->i", [(3, 4)]), ("ij->", [(5, 7)]), ("ijk->kij", [(2, 3, 4)]), ("ijk->ik", [(2, 3, 4)]),
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk->ik", [(30, 300), (300, 20)]), ("ij,jk->ki", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]), ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),
    ("...ij,...jk->...ik", [(2, 1, 4, 5), (1, 3, 5, 6)]), ("bhqd,bhkd->bhqk", [(2, 4, 7, 16), (2, 4, 9, 16)]),
    ("bhqk,bhkd->bhqd", [(2, 4, 7, 9), (2, 4, 9, 16)]), ("i,j->ij", [(5,), (6,)]), ("i,i->", [(50,), (50,)]),
    ("i,i", [(7,), (7,)]), ("ij,ij->ij", [(3, 4), (3, 4)]), ("ijk,jkl->il", [(3, 4, 5), (4, 5, 6)]),
    ("abc,dc->abd", [(2, 3, 4), (5, 4)]), ("bnd,bmd->bnm", [(3, 17, 64), (3, 19, 64)]), ("ba,ca", [(3, 4), (5, 4)]),
    ("aB,Bc", [(3, 4), (4, 5)]), ("ijk,k->ij", [(3, 4, 5), (5,)]), ("ij,jk->", [(3, 4), (4, 5)]),
    ("i,jk->ijk", [(3,), (4, 5)]), ("bij,jk->bik", [(4, 3, 5), (5, 6)]), ("i,ij->j", [(300,), (300, 7)]),
    ("ij,kl->", [(2, 3), (4, 5)]), ("ij,klm->il", [(3, 4), (4, 5, 6)]), ("ijk,lkm->jl", [(3, 4, 5), (6, 5, 7)]),
]  # fmt: skip


def einsum_model(equation: str, shapes, element_type: int, opset: int = 12) -> onnx.ModelProto:
    names = [f"x{k}" for k in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], name="einsum_node", equation=equation)
    output_shape = np.einsum(equation, *[np.zeros(shape, np.float32) for shape in shapes]).shape
    return make_model(
        [node],
        [helper.make_tensor_value_info(name, element_type, shape) for name, shape in zip(names, shapes, strict=True)],
        [helper.make_tensor_value_info("y", element_type, list(output_shape))],
        opset=opset,
    )


def same_bits_as_native(lowered, original, shapes, element_type: int, rng, edge: bool, equation: str):
    """Run both models on one draw of :func:`einsum_feeds`, assert the lowered gives the native
    op's bits (any NaN for a NaN: where NaNs meet in the sums, which payload survives is the
    kernel's choice, and onnxruntime's Einsum and MatMul choose apart on this AVX-512 machine),
    and return the feeds and the lowered output."""
    feeds = einsum_feeds(shapes, element_type, rng, edge)
    (got,) = run_onnxruntime(lowered, feeds)
    (native,) = run_onnxruntime(original, feeds)
    assert_same_values(got, native, f"{equation} edge={edge}")
    return feeds, got


def einsum_feeds(shapes, element_type: int, rng, edge: bool) -> dict[str, np.ndarray]:
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    feeds = {}
    for k, shape in enumerate(shapes):
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            value = rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape).astype(dtype)
            if edge:  # sums that overflow (onnxruntime's integer ReduceSum does not wrap around)
                value = rng.integers(max(info.min, -(2**31)), min(info.max, 2**31), size=shape).astype(dtype)
                value.reshape(-1)[::3] = info.max
        else:
            value = rng.standard_normal(shape).astype(dtype)
            if edge:
                edges = sample_values(element_type, random_count=0)
                mask = rng.random(shape) < 0.1
                value[mask] = rng.choice(edges, size=int(mask.sum()))
        feeds[f"x{k}"] = value
    return feeds


@pytest.mark.slow
@pytest.mark.parametrize(
    "element_type", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64],
    ids=["float", "double", "int32", "int64"],
)  # fmt: skip
def test_einsum_matches_onnxruntimes_kernel(element_type):
    """Bit for bit on these forms and inputs (measured: the same MatMul on the same layout), and
    within the stated tolerance of numpy's einsum in float64."""
    rng = np.random.default_rng(element_type)
    for equation, shapes in EQUATIONS:
        original = einsum_model(equation, shapes, element_type)
        result = lowering.lower_model(original, target_opset=11, ops=[])
        assert result.report.complete and "Einsum" not in op_type_set(result.model), equation
        onnx.checker.check_model(result.model, full_check=True)
        for edge in (False, True):
            feeds, got = same_bits_as_native(result.model, original, shapes, element_type, rng, edge, equation)
            if not edge:
                assert_within("Einsum", got, rule_for("", "Einsum").reference(*feeds.values(), equation=equation))


@pytest.mark.slow
@pytest.mark.parametrize(("element_type", "opset"), [(TensorProto.FLOAT16, 12), (TensorProto.BFLOAT16, 28)])
def test_einsum_on_16_bit_floats_is_computed_in_float32(element_type, opset):
    """Bit for bit against onnxruntime: its bfloat16 kernel (which rounds each partial sum to
    bfloat16, so strays up to 2^-5 from numpy's einsum in float64 on these forms), and its float16
    Einsum (run in float32 between Casts); float16 also within the stated tolerance of numpy's
    einsum in float64 and within 2^-7 of onnx.reference, which adds in float16."""
    rng = np.random.default_rng(0)
    for equation, shapes in EQUATIONS:
        original = einsum_model(equation, shapes, element_type, opset)
        result = lowering.lower_model(original, ops=["Einsum"])
        assert result.report.complete and "Einsum" not in op_type_set(result.model), equation
        feeds = einsum_feeds(shapes, element_type, rng, edge=False)
        (got,) = run_onnxruntime(result.model, feeds)
        (native,) = run_onnxruntime(original, feeds)
        assert_same_bits(got, native, equation)
        if element_type == TensorProto.FLOAT16:
            assert_within("Einsum", got, rule_for("", "Einsum").reference(*feeds.values(), equation=equation))
            (reference,) = run_reference(original, feeds)
            assert not Tolerance(rtol=2**-7, atol=2**-7).mismatches(got, reference).any(), equation


def test_einsum_merging_one_axis_of_unknown_length_per_reshape():
    """Reshape takes one -1: a merged group with one unknown length per operand is served."""
    original = einsum_model("ijk,jkl->il", [(3, 4, 5), (4, 5, 6)], TensorProto.FLOAT)
    for info in [original.graph.input[0], original.graph.input[1]]:
        info.type.tensor_type.shape.dim[0 if info.name == "x1" else 1].dim_param = "J"
    result = lowering.lower_model(original, target_opset=11, ops=[])
    assert result.report.complete and "Reshape" in op_type_set(result.model)
    feeds = einsum_feeds([(3, 4, 5), (4, 5, 6)], TensorProto.FLOAT, np.random.default_rng(4), edge=False)
    assert_same_bits(run_onnxruntime(result.model, feeds)[0], run_onnxruntime(original, feeds)[0])


def test_einsum_without_merged_axes_needs_no_static_lengths():
    """Attention scores with every dimension symbolic: one axis per group, no Reshape."""
    original = einsum_model("bhqd,bhkd->bhqk", [(2, 4, 7, 16), (2, 4, 9, 16)], TensorProto.FLOAT)
    for info in [*original.graph.input, *original.graph.output]:
        for k, dim in enumerate(info.type.tensor_type.shape.dim):
            dim.dim_param = f"d{k}_{info.name}"
    result = lowering.lower_model(original, target_opset=11, ops=[])
    assert op_type_set(result.model) == {"MatMul", "Transpose"}
    feeds = einsum_feeds([(2, 4, 7, 16), (2, 4, 9, 16)], TensorProto.FLOAT, np.random.default_rng(1), edge=False)
    assert_same_bits(run_onnxruntime(result.model, feeds)[0], run_onnxruntime(original, feeds)[0])


def test_einsum_at_opset_12_converted_to_11():
    original = einsum_model("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)], TensorProto.FLOAT, opset=12)
    result = lowering.lower_model(original, target_opset=11, ops=[])
    assert [entry.version for entry in result.model.opset_import if entry.domain == ""] == [11]
    assert dict(result.report.rewritten) == {"Einsum-12": 1}
    assert op_type_set(result.model) == {"MatMul"}
    feeds = einsum_feeds([(5, 2, 3), (5, 3, 4)], TensorProto.FLOAT, np.random.default_rng(2), edge=True)
    assert_same_bits(run_onnxruntime(result.model, feeds)[0], run_onnxruntime(original, feeds)[0])
    kept = lowering.lower_model(original, target_opset=13, ops=[])
    assert op_type_set(kept.model) == {"Einsum"}, "Einsum-12 exists at 13: kept"


def test_cumprod_converted_to_21_and_17():
    x = cumprod_samples(TensorProto.FLOAT, 3, 6)
    for target in (21, 17):
        original = cumprod_model(TensorProto.FLOAT, list(x.shape), 1, exclusive=1, reverse=1)
        result = lowering.lower_model(original, target_opset=target, ops=[])
        assert [entry.version for entry in result.model.opset_import if entry.domain == ""] == [target]
        assert dict(result.report.rewritten) == {"CumProd-26": 1}
        onnx.checker.check_model(result.model, full_check=True)
        assert_same_bits(run_onnxruntime(result.model, {"x": x})[0], run_onnxruntime(original, {"x": x})[0])


def test_plain_and_fast_paths_give_the_same_bytes_and_each_node_its_own_shapes():
    """Two nodes of one kind (same equation, type, attributes) whose shapes differ: the rules read
    shapes and constants, so each node gets its own expansion on the fast path too."""
    nodes = [
        helper.make_node("Einsum", ["a", "b"], ["ab"], equation="ijk,jkl->il"),
        helper.make_node("Einsum", ["c", "d"], ["cd"], equation="ijk,jkl->il"),
        helper.make_node("CumProd", ["a", "axis"], ["pa"]),
        helper.make_node("CumProd", ["c", "axis"], ["pc"]),
    ]
    shapes = {"a": [2, 3, 4], "b": [3, 4, 5], "c": [3, 2, 2], "d": [2, 2, 6]}
    float_type = TensorProto.FLOAT
    original = make_model(
        nodes,
        [helper.make_tensor_value_info(name, float_type, shape) for name, shape in shapes.items()],
        [
            helper.make_tensor_value_info("ab", float_type, [2, 5]),
            helper.make_tensor_value_info("cd", float_type, [3, 6]),
            helper.make_tensor_value_info("pa", float_type, [2, 3, 4]),
            helper.make_tensor_value_info("pc", float_type, [3, 2, 2]),
        ],
        opset=26,
        initializer=[helper.make_tensor("axis", TensorProto.INT64, [], [1])],
    )
    fast = lowering.lower(original, ops=["Einsum", "CumProd"], fast=True)
    plain = lowering.lower(original, ops=["Einsum", "CumProd"], fast=False)
    assert fast.SerializeToString() == plain.SerializeToString()
    assert not op_type_set(fast) & set(OPS)
    rng = np.random.default_rng(3)
    feeds = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    for got, want in zip(run_onnxruntime(fast, feeds), run_onnxruntime(original, feeds), strict=True):
        assert_same_bits(got, want)


# -- Einsum: refusals ---------------------------------------------------------------------------


@slow_but_a_sample()
@pytest.mark.parametrize(
    ("equation", "shapes", "element_type", "reason", "output_shape"),
    [
        ("i,i,i->", [(3,), (3,), (3,)], TensorProto.FLOAT, "Einsum of 3 operands: this rule takes one or two", []),
        ("...ij->ij", [(2, 3, 4)], TensorProto.FLOAT, "drops the axes of the ellipsis, which the rule does not sum",
         [3, 4]),
        ("abj,jc->abc", [("A", "B", "J"), ("J", 5)], TensorProto.FLOAT,
         "Einsum would merge axes of unknown or zero length into one, which needs them known", ["A", "B", 5]),
        ("ij,jk->ik", [(3, 4), (4, 5)], TensorProto.INT8, "MatMul does not run on int8 at opset 12", [3, 5]),
        ("ij->i", [(3, 4)], TensorProto.UINT32, "ReduceSum does not run on uint32 at opset 12", [3]),
    ],
)  # fmt: skip
def test_einsum_refusals(equation, shapes, element_type, reason, output_shape):
    names = [f"x{k}" for k in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    original = make_model(
        [node],
        [helper.make_tensor_value_info(n, element_type, list(s)) for n, s in zip(names, shapes, strict=True)],
        [helper.make_tensor_value_info("y", element_type, output_shape)],
        opset=12,
    )
    result = lowering.lower_model(original, ops=["Einsum"])
    (remaining,) = result.report.remaining
    assert reason in remaining.reason
    assert "Einsum" in op_type_set(result.model)
    with pytest.raises(lowering.LoweringError, match="Einsum-12 cannot be expressed at opset 11") as raised:
        lowering.lower(original, target_opset=11, ops=[])
    assert reason.replace("opset 12", "opset 11") in str(raised.value)


def test_einsum_below_opset_9_is_refused():
    original = einsum_model("ij,jk->ik", [(3, 4), (4, 5)], TensorProto.FLOAT)
    with pytest.raises(lowering.LoweringError, match="the rule writes ops as they are from opset 9, not 8"):
        lowering.lower(original, target_opset=8, ops=[])
