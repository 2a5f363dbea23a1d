"""Helpers the tests share: small models built in code, oracles, and running both models."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import lowering
from lowering import floats, schemas
from lowering.runtime_profiles import profile_from_data
from lowering.verification.runtime import bits_per_element, run_onnxruntime

# The repository's root, wherever under tests/ the test that asks lies (tests/cli/, tests/rules/versions/, ...).
REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "golden"


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    *,
    opset: int,
    functions: list[onnx.FunctionProto] = (),
    extra_opsets: dict[str, int] | None = None,
    **graph_fields,
) -> onnx.ModelProto:
    """A model at default-domain ``opset`` with the lowest IR version that allows it."""
    imports = [helper.make_opsetid("", opset)]
    imports += [helper.make_opsetid(domain, version) for domain, version in (extra_opsets or {}).items()]
    graph = helper.make_graph(nodes, "main", inputs, outputs, **graph_fields)
    ir_version = max(helper.find_min_ir_version_for(imports[:1]), 7 if not functions else 8)
    return helper.make_model(graph, opset_imports=imports, functions=list(functions), ir_version=ir_version)


def checked_conversion(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    """``model`` taken to opset ``target`` (``ops=[]``: nothing lowered that the target has),
    passed through onnx's full checker."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(result, full_check=True)
    return result


def op_type_set(model: onnx.ModelProto) -> set[str]:
    """The op types of the model's main graph."""
    return {node.op_type for node in model.graph.node}


def unread_nodes(nodes, given_out) -> list[onnx.NodeProto]:
    """The ``nodes`` (of a graph or a function) none of whose values is among ``given_out`` or
    read, by the nodes or the graphs they hold."""
    from lowering.graphs import nested_graphs

    read = set(given_out) | {name for node in nodes for name in node.input}
    read.update(name for inner in nested_graphs(nodes) for node in inner.node for name in node.input)
    return [node for node in nodes if not read.intersection(node.output)]


def parse(text: str) -> onnx.ModelProto:
    """A model from ONNX text (indented freely), checked in full."""
    import textwrap

    import onnx.parser

    model = onnx.parser.parse_model(textwrap.dedent(text))
    onnx.checker.check_model(model, full_check=True)
    return model


def unary_model(op_type: str, opset: int, element_type: int, **attributes) -> onnx.ModelProto:
    """``y = op_type(x)`` on a 1-D float input of any length, with a bool output."""
    node = helper.make_node(op_type, ["x"], ["y"], name=f"{op_type.lower()}_node", **attributes)
    return make_model(
        [node],
        [helper.make_tensor_value_info("x", element_type, ["N"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, ["N"])],
        opset=opset,
    )


def oracle(op_type: str, values: np.ndarray, **attributes) -> np.ndarray:
    """What ``op_type`` must return on ``values``: the reference its rule declares."""
    from lowering.registry import rule_for

    return rule_for("", op_type).reference(values, **attributes)


def every_op_case(op_type: str) -> list[tuple[int, int]]:
    """(opset, element type) for every opset from the op's first to the newest, every type."""
    first = schemas.op_versions(op_type)[0]
    return [
        (opset, element_type)
        for opset in range(first, schemas.newest_opset() + 1)
        for element_type in sorted(schemas.input_element_types(op_type, opset))
    ]


def runs_in_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """The model's outputs in onnxruntime, or None when onnxruntime has no kernel for it, or
    its own type inference refuses a type onnx allows (If-28 yielding optional(float16))."""
    return _unless_no_kernel(lambda: run_onnxruntime(model, feeds))


def output_or_error(model: onnx.ModelProto, feeds: dict[str, np.ndarray]):
    """The model's first output in onnxruntime, or the name of the error it fails with (where a
    lowered model must fail as the original fails)."""
    try:
        return runs_in_onnxruntime(model, feeds)[0]
    except Exception as error:
        return type(error).__name__


def onnxruntime_runner(model: onnx.ModelProto):
    """:func:`runs_in_onnxruntime` for ``model`` on any number of feeds, through one session
    (made once, not once a feed): each call gives the outputs, or None where
    runs_in_onnxruntime gives None."""
    from lowering.verification.runtime import OnnxruntimeRunner

    runner = _unless_no_kernel(lambda: OnnxruntimeRunner(model))
    if runner is None:
        return lambda feeds: None
    return lambda feeds: _unless_no_kernel(lambda: runner(feeds))


def _unless_no_kernel(work):
    """``work()``, or None where onnxruntime has no kernel for the model or its type inference
    refuses a type onnx allows."""
    from onnxruntime.capi.onnxruntime_pybind11_state import Fail as OrtFail

    from lowering.verification.compare import onnxruntime_lacks_support

    try:
        return work()
    except Exception as error:
        if onnxruntime_lacks_support(error):
            return None
        if isinstance(error, OrtFail) and "Type Error: Type (" in str(error):  # its type inference, tag or not
            return None
        raise


def original_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list:
    """The original model's outputs, computed as ``onnx-lower verify`` computes them."""
    from lowering.verification.compare import run_original

    return run_original(model, feeds)[0]


@functools.cache
def newest_opset_onnxruntime_loads() -> int:
    """The newest default-domain opset whose models the installed onnxruntime loads (an
    Identity at each opset this onnx knows): older releases refuse newer opsets outright."""
    newest = 0
    for opset in range(7, onnx.defs.onnx_opset_version() + 1):
        imports = [helper.make_opsetid("", opset)]
        graph = helper.make_graph(
            [helper.make_node("Identity", ["x"], ["y"])],
            "probe",
            [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
        )
        ir_version = min(helper.find_min_ir_version_for(imports), 8)
        try:
            run_onnxruntime(
                helper.make_model(graph, opset_imports=imports, ir_version=ir_version), {"x": np.ones(1, np.float32)}
            )
        except Exception:  # refused at load
            break
        newest = opset
    return newest


def type_name(element_type: int) -> str:
    return schemas.type_name(element_type)


def fast_add_on():
    """The speed add-on, :mod:`lowering.fast`; where it is deleted (the product is then the plain
    path alone) the test asking for it is skipped, as tests/fast/ is not collected."""
    return pytest.importorskip("lowering.fast", reason="lowering/fast is deleted: the plain path serves alone")


def run_cli(*args, cwd: Path | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """``onnx-lower ARGS`` (as ``python -m lowering``) in a subprocess, its output as text."""
    command = [sys.executable, "-m", "lowering", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False)


def run_cli_in_process(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``onnx-lower ARGS`` run here, by :func:`lowering.cli.main`, without the cost of a new
    interpreter: the same shape as :func:`run_cli` (its exit status, and its stdout and stderr as
    text). What the process would show is kept: Python warnings are shown on its stderr under
    Python's default filters (not pytest's), and what onnxruntime or another library writes to
    file descriptors 1 and 2 itself follows what Python printed there. Not for what needs a
    process of its own: the console script's own exit, signals, ``-j`` workers, closed streams."""
    from lowering.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        native_out = stack.enter_context(_native_output(1))
        native_err = stack.enter_context(_native_output(2))
        stack.enter_context(_working_directory(cwd))
        stack.enter_context(warnings.catch_warnings())
        warnings.resetwarnings()  # Python's own defaults, as a fresh `python -m lowering` has them
        for action, category in _PYTHON_DEFAULT_FILTERS:
            warnings.simplefilter(action, category)
        warnings.showwarning = _show_warning_on_stderr
        stack.enter_context(contextlib.redirect_stdout(stdout))
        stack.enter_context(contextlib.redirect_stderr(stderr))
        try:
            code = main([str(arg) for arg in args])
        except SystemExit as exit_:  # argparse's --help and --version
            code = _exit_status(exit_.code, stderr)
    argv = [sys.executable, "-m", "lowering", *map(str, args)]
    return subprocess.CompletedProcess(
        argv, code, stdout.getvalue() + native_out.text, stderr.getvalue() + native_err.text
    )


_PYTHON_DEFAULT_FILTERS = (
    ("ignore", DeprecationWarning),
    ("ignore", PendingDeprecationWarning),
    ("ignore", ImportWarning),
    ("ignore", ResourceWarning),
)


def _show_warning_on_stderr(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _exit_status(code, stderr: io.StringIO) -> int:
    """The exit status ``sys.exit(code)`` gives a process (a message printed, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)
    return 1


@contextlib.contextmanager
def _working_directory(cwd: Path | None):
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


class _Captured:
    text = ""


@contextlib.contextmanager
def _native_output(fd: int):
    """What is written on file descriptor ``fd`` itself (by native code) meanwhile, as text."""
    captured = _Captured()
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is not None:
            stream.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as file:
        os.dup2(file.fileno(), fd)
        try:
            yield captured
        finally:
            for stream in (sys.__stdout__, sys.__stderr__):
                if stream is not None:
                    with contextlib.suppress(OSError, ValueError):
                        stream.flush()
            os.dup2(saved, fd)
            os.close(saved)
            file.seek(0)
            captured.text = file.read().decode(errors="replace")


def one_error_line(completed: subprocess.CompletedProcess) -> str:
    """The one line a failed run writes on stderr (and no traceback)."""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in completed.stderr, completed.stderr
    return lines[0]


def bits(array: np.ndarray) -> np.ndarray:
    """An array's bit patterns (bool as it is), for comparing floats bit for bit."""
    array = np.asarray(array)
    return array if array.dtype == np.bool_ else array.view(f"u{array.itemsize}")


def assert_same_bits(got: np.ndarray, want: np.ndarray, where: str = "") -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (
        f"{where}: {got.dtype}{got.shape} {want.dtype}{want.shape}"
    )
    mismatches = np.flatnonzero(bits(got).reshape(-1) != bits(want).reshape(-1))
    assert mismatches.size == 0, f"{where}: {mismatches.size} of {got.size} differ, first at {mismatches[:5]}"


def assert_within_stated(tolerances, got: np.ndarray, want: np.ndarray, where: str = "") -> None:
    """Within the tolerance a rule states for ``want``'s type (``tolerances``: per element type, as
    a rule's ``tolerance``): NaN meets NaN and an infinity the same one; dtypes and shapes alike."""
    assert got.dtype == want.dtype and got.shape == want.shape, f"{where}: {got.dtype}{got.shape} {want.shape}"
    tolerance = tolerances[helper.np_dtype_to_tensor_dtype(want.dtype)]
    wrong = tolerance.mismatches(got, want)
    assert not wrong.any(), (
        f"{where}: {wrong.sum()} of {got.size} beyond rtol {tolerance.rtol}, atol {tolerance.atol}; "
        f"first at {np.argwhere(wrong)[:3].tolist()}, e.g. {got[wrong][:3]} for {want[wrong][:3]}"
    )


def assert_same_values(got: np.ndarray, want: np.ndarray, where: str = "") -> None:
    """Bit for bit, but any NaN for a NaN: where two NaNs meet in a sum or a product, which
    payload survives is the arithmetic's choice, and onnxruntime's own kernels choose by vector
    length (its Mul on two NaN vectors keeps the second's payload at length 1, the first's at 2
    and 3; its Add and Col2Im kernel, and numpy, choose apart likewise)."""
    if np.issubdtype(want.dtype, np.integer):
        return assert_same_bits(got, want, where)
    with np.errstate(invalid="ignore"):
        nan, got_nan = np.isnan(want.astype(np.float64)), np.isnan(got.astype(np.float64))
    assert np.array_equal(nan, got_nan), f"{where}: NaN in other places"
    assert_same_bits(np.where(nan, 0, got).astype(got.dtype), np.where(nan, 0, want).astype(want.dtype), where)


def refusal(model: onnx.ModelProto, target: int) -> str:
    """The LoweringError converting ``model`` to ``target`` raises, which is ours (no assertion
    of onnx's converter)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(lowering.LoweringError) as refused:
            lowering.lower(model, target_opset=target, ops=[])
    message = str(refused.value)
    assert "Assertion" not in message, message
    return message


# -- the fast tier (`pytest -m "not slow"`) -----------------------------------------------------


def slow_but_a_sample(keep: int = 1):
    """Put above a parametrized test: its cases (every parametrization together) marked slow but
    for ``keep`` of them spread evenly over them, the first among them (tests/conftest.py marks
    them as they are collected). The full suite runs every case as before; the fast tier runs
    the sample."""

    def decorate(function):
        function.fast_sample = keep
        return function

    return decorate


def nested_forms(model: onnx.ModelProto) -> dict[str, onnx.ModelProto]:
    """The model's nodes in both branches of an If on a new bool input ``branch`` (the then
    branch the nodes as they are, the else branch a copy), and called through a local function
    (domain ``local``): where a rule must lower them too. Each takes the model's inputs and one
    more (``branch``, the If's) and gives its outputs."""
    inputs, outputs = list(model.graph.input), list(model.graph.output)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))

    def branch(label: str) -> onnx.GraphProto:
        renamed = {info.name: f"{label}_{info.name}" for info in outputs}
        nodes = []
        for node in model.graph.node:
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            copy.output[:] = [renamed.get(name, name) for name in node.output]
            nodes.append(copy)
        results = [helper.make_value_info(renamed[info.name], info.type) for info in outputs]
        return helper.make_graph(nodes, label, [], results, list(model.graph.initializer))

    choose = helper.make_node("If", ["branch"], [info.name for info in outputs], name="choose",
                              then_branch=branch("then"), else_branch=branch("else"))  # fmt: skip
    flag = helper.make_tensor_value_info("branch", onnx.TensorProto.BOOL, [])
    in_if = make_model([choose], [*inputs, flag], outputs, opset=opset)
    names = [info.name for info in inputs]
    constants = [helper.make_node("Constant", [], [t.name], value=t) for t in model.graph.initializer]
    function = helper.make_function("local", "Body", names, [info.name for info in outputs],
                                    [*constants, *model.graph.node], [helper.make_opsetid("", opset)])  # fmt: skip
    call = helper.make_node("Body", names, [info.name for info in outputs], domain="local", name="call")
    in_function = make_model([call], [*inputs, flag], outputs, opset=opset, functions=[function],
                             extra_opsets={"local": 1})  # fmt: skip
    return {"if": in_if, "function": in_function}


def random_elements(element_type: int, shape, rng: np.random.Generator) -> np.ndarray:
    """Random elements of ``element_type``: floats of any bits (NaNs with payloads, infinities,
    -0, subnormals), integers over their whole range, bools, strings of digits."""
    from lowering import floats

    if element_type == onnx.TensorProto.STRING:
        return rng.integers(0, 1000, shape).astype(str).astype(object)
    if element_type == onnx.TensorProto.BOOL:
        return rng.integers(0, 2, shape).astype(bool)
    dtype = np.dtype(floats.numpy_dtype(element_type))
    if dtype.kind in "fV":  # (ml_dtypes' bfloat16 and float8 are kind V)
        return (
            rng.integers(0, 2 ** (8 * dtype.itemsize), shape, dtype=np.uint64).astype(f"u{dtype.itemsize}").view(dtype)
        )
    return rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, shape, dtype=dtype, endpoint=True)


def assert_same_elements(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, strings by value."""
    if want.dtype == object:
        assert got.shape == want.shape and got.tolist() == want.tolist()
    else:
        assert_same_bits(got, want)


def lowered_wholly(model: onnx.ModelProto, op_type: str) -> onnx.ModelProto:
    """``model`` with every ``op_type`` node lowered (strict), in every graph and function, the
    result passing the full checker."""
    from lowering.opcount import count_ops

    result = lowering.lower(model, ops=[op_type], strict=True)
    assert op_type not in count_ops(result)
    onnx.checker.check_model(result, full_check=True)
    return result


@functools.cache
def sub_byte_types() -> tuple[int, ...]:
    """The element types of under 8 bits this onnx knows (int4, uint4, int2, uint2, float4e2m1,
    ...): their numpy dtypes' widths (ml_dtypes'), none typed here."""
    found = []
    for element_type in onnx.TensorProto.DataType.values():
        try:
            dtype = floats.numpy_dtype(element_type)
        except (KeyError, TypeError, ValueError):
            continue  # (UNDEFINED)
        if dtype.kind != "O" and bits_per_element(dtype) < 8:
            found.append(element_type)
    return tuple(found)


def sub_byte_integer_types() -> tuple[int, ...]:
    """The integer ones of :func:`sub_byte_types` (int4, uint4, int2, uint2)."""
    return tuple(t for t in sub_byte_types() if floats.numpy_dtype(t).type.__name__.startswith(("int", "uint")))


def rotary_tables_model(element_type: int = TensorProto.FLOAT, opset: int = 17) -> onnx.ModelProto:
    """y = x · cos(p ⊗ f) + x · sin(p ⊗ f): x [2, 8, 4] fed, the positions p = Range(0, 8) and
    the frequencies f constants (an initializer, a Constant node), the tables Cos and Sin of their
    outer product (as a TorchScript export of LLaMA computes them), and an unread Constant."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    frequencies = numpy_helper.from_array((1.0 / 10000.0 ** (np.arange(4) / 4)).astype(dtype), "f")
    nodes = [
        helper.make_node("Constant", [], ["start"], value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Constant", [], ["limit"], value=numpy_helper.from_array(np.array(8, np.int64))),
        helper.make_node("Constant", [], ["step"], value=numpy_helper.from_array(np.array(1, np.int64))),
        helper.make_node("Constant", [], ["unread"], value=numpy_helper.from_array(np.array(5, np.int64))),
        helper.make_node("Range", ["start", "limit", "step"], ["p"], name="positions"),
        helper.make_node("Cast", ["p"], ["p_float"], to=element_type),
        helper.make_node("Constant", [], ["column"], value=numpy_helper.from_array(np.array([1], np.int64))),
        helper.make_node("Unsqueeze", ["p_float", "column"], ["p_column"]),
        helper.make_node("Mul", ["p_column", "f"], ["angles"], name="outer"),
        helper.make_node("Cos", ["angles"], ["cos"], name="cos"),
        helper.make_node("Sin", ["angles"], ["sin"], name="sin"),
        helper.make_node("Mul", ["x", "cos"], ["x_cos"], name="x_cos"),
        helper.make_node("Mul", ["x", "sin"], ["x_sin"], name="x_sin"),
        helper.make_node("Add", ["x_cos", "x_sin"], ["y"], name="rotated"),
    ]
    graph = helper.make_graph(
        nodes,
        "rotary",
        [helper.make_tensor_value_info("x", element_type, [2, 8, 4])],
        [helper.make_tensor_value_info("y", element_type, [2, 8, 4])],
        [frequencies],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def rotary_runtime(*forms: str):
    """A probed runtime running every op of :func:`rotary_tables_model` right, whose trials found whole
    models right with each of ``forms`` and not without."""
    ops = ["Mul", "Add", "Cos", "Sin", "Range", "Cast", "Unsqueeze", "Constant"]
    return profile_from_data({
        "name": "tables-trialled", "runtime": "made-up", "runtime_version": "0",
        "source": {"kind": "probed", "how": "a test"}, "opsets": [17],
        "cases": {f"test_{op.lower()}": {"op": op, "version": version, "type": "FLOAT", "verdict": "right"}
                  for op in ops for version in (1, 6, 7, 9, 11, 12, 13, 14, 17) if version <= 17},
        "model_forms": {form: {"better": ["llama"], "worse": [], "tried": ["llama"]} for form in forms},
    })  # fmt: skip


def special_normal(shape, rng: np.random.Generator, dtype) -> np.ndarray:
    """Standard normal values with a few infinities and NaN among them."""
    x = rng.standard_normal(shape)
    draw = rng.random(shape)
    x[draw < 0.01] = np.inf
    x[(draw >= 0.01) & (draw < 0.02)] = -np.inf
    x[(draw >= 0.02) & (draw < 0.025)] = np.nan
    return x.astype(dtype)
