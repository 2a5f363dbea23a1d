"""Declaring a model's inputs static (``--input-shape``): each given input's dimensions, or every
dimension of a given name, set to numbers; a shape the model contradicts is refused, naming it."""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping, Sequence

import onnx

from .errors import LoweringError

InputShapes = Mapping[str, "Sequence[int] | int"]


def parse_input_shape(text: str) -> tuple[str, list[int] | int]:
    """``NAME:D1,D2,...`` (an input's dimensions) or ``DIM=N`` (every dimension named DIM)."""
    if "=" in text and ":" not in text:
        name, _, value = text.partition("=")
        return name.strip(), _size(value, text)
    name, colon, dims = text.rpartition(":")
    if not colon or not name:
        raise LoweringError(f"--input-shape {text}: give NAME:D1,D2,... or DIM=N (e.g. x:1,3,224,224 or batch=1)")
    return name, [_size(d, text) for d in dims.split(",")] if dims.strip() else []


def _size(text: str, given: str) -> int:
    try:
        size = int(text)
    except ValueError:
        size = -1
    if size < 0:
        raise LoweringError(f"--input-shape {given}: '{text}' is not a size (a whole number, 0 or more)")
    return size


def with_input_shapes(model: onnx.ModelProto, shapes: InputShapes) -> onnx.ModelProto:
    """A copy of ``model`` whose inputs have the shapes given: a name given dimensions is a graph
    input (its rank and every fixed size must agree), a name given one size is a dimension name
    (every input dimension of that name takes it). Shape inference then runs strictly over the
    model; where it finds the shapes impossible (a Reshape they contradict), LoweringError."""
    result = onnx.ModelProto()
    result.CopyFrom(model)
    inputs = {info.name: info for info in result.graph.input}
    bound: dict[str, int] = {}  # each dimension name an input's dimension had, and its size now
    for name, given in shapes.items():
        if isinstance(given, int):
            dims = [d for info in result.graph.input for d in _dims_of(info) if d.dim_param == name]
            if not dims:
                raise LoweringError(f"--input-shape {name}={given}: no input dimension is named '{name}'")
            for dim in dims:
                dim.Clear()
                dim.dim_value = given
            bound[name] = given
            continue
        if name not in inputs:
            raise LoweringError(f"--input-shape {name}: the model has no input '{name}' (inputs: {', '.join(inputs)})")
        dims = _dims_of(inputs[name])
        if len(dims) != len(given):
            raise LoweringError(
                f"--input-shape {name}: input '{name}' has rank {len(dims)}, and {len(given)} sizes were given"
            )
        for axis, (dim, size) in enumerate(zip(dims, given, strict=True)):
            if dim.HasField("dim_value") and dim.dim_value != size:
                raise LoweringError(
                    f"--input-shape {name}: dimension {axis} of input '{name}' is {dim.dim_value}, not {size}"
                )
            if dim.dim_param:
                if bound.get(dim.dim_param, size) != size:
                    raise LoweringError(
                        f"--input-shape {name}: dimension {axis} of input '{name}' is named '{dim.dim_param}', which "
                        f"another input's dimension shares, given {bound[dim.dim_param]} there and {size} here"
                    )
                bound[dim.dim_param] = size
            dim.Clear()
            dim.dim_value = size
    _check_consistent(result)
    _state_bound_names(result, bound)
    _state_proved_sizes(result)
    return result


def _state_bound_names(model: onnx.ModelProto, bound: dict[str, int]) -> None:
    """Every dimension of the main graph's inputs, value_info and outputs named by a name an
    input's dimension had (one name is one size over a graph) set to that input's size now; one
    named by the exporter's arithmetic on such names ("Min(64, s0)", "((s87*s89)//s95)", a torch
    dynamo export's) set to its value at those sizes, or left unnamed where it cannot be read."""
    for info in [*model.graph.input, *model.graph.value_info, *model.graph.output]:
        if info.type.WhichOneof("value") != "tensor_type" or not info.type.tensor_type.HasField("shape"):
            continue
        for dim in info.type.tensor_type.shape.dim:
            if dim.dim_param in bound:
                size = bound[dim.dim_param]
            elif dim.dim_param and dimension_names(dim.dim_param) & bound.keys():
                size = dimension_value(dim.dim_param, bound)
            else:
                continue
            dim.Clear()
            if size is not None:
                dim.dim_value = size


_OPERATIONS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}  # fmt: skip
_FUNCTIONS = {"Min": min, "Max": max}
INT64_MAX = 2**63 - 1  # (a dimension's value is an int64)


def dimension_value(expression: str, sizes: Mapping[str, int]) -> int | None:
    """The value of a dimension named by whole-number arithmetic (+, -, *, //, %, Min, Max) on
    names of known size, or None where it names anything else or is not a size (below 0, or
    past int64)."""
    try:
        tree = ast.parse(expression.strip(), mode="eval").body
        value = _evaluated(tree, sizes)
    except (SyntaxError, ValueError, KeyError, ZeroDivisionError, RecursionError):
        return None
    return value if 0 <= value <= INT64_MAX else None


def _evaluated(tree: ast.expr, sizes: Mapping[str, int]) -> int:
    if isinstance(tree, ast.Constant) and type(tree.value) is int:
        return tree.value
    if isinstance(tree, ast.Name):
        return sizes[tree.id]
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.USub):
        return -_evaluated(tree.operand, sizes)
    if isinstance(tree, ast.BinOp) and type(tree.op) in _OPERATIONS:
        return _OPERATIONS[type(tree.op)](_evaluated(tree.left, sizes), _evaluated(tree.right, sizes))
    if (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id in _FUNCTIONS
            and tree.args and not tree.keywords):  # fmt: skip
        return _FUNCTIONS[tree.func.id](_evaluated(argument, sizes) for argument in tree.args)
    raise ValueError(f"not whole-number arithmetic: {ast.dump(tree)}")


def dimension_names(expression: str) -> set[str]:
    """The names an expression reads ({"s0"} in "Min(64, s0)"); {the text} where it does not parse."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return {expression}
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} - _FUNCTIONS.keys()


def _state_proved_sizes(model: onnx.ModelProto) -> None:
    """Each dimension of the main graph's value_info and outputs stated by a name (a symbol of the
    exporter's, "s26") or not at all, set to the number shape inference now proves from the static
    inputs (run without the old value_info, whose symbols would stand in its way); a runtime that
    unifies declared shapes (tract) would otherwise find a stale symbol beside a number."""
    from .shape_folding import light_copy

    probe = light_copy(model)
    del probe.graph.value_info[:]
    try:
        inferred = onnx.shape_inference.infer_shapes(probe, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):
        return
    proved = {info.name: info for info in [*inferred.graph.value_info, *inferred.graph.output]}
    for info in [*model.graph.value_info, *model.graph.output]:
        found = proved.get(info.name)
        if found is None or info.type.WhichOneof("value") != "tensor_type":
            continue
        if not info.type.tensor_type.HasField("shape") or not found.type.tensor_type.HasField("shape"):
            continue
        dims, proved_dims = info.type.tensor_type.shape.dim, found.type.tensor_type.shape.dim
        if len(dims) != len(proved_dims):
            continue
        for dim, proved_dim in zip(dims, proved_dims, strict=True):
            if not dim.HasField("dim_value") and proved_dim.HasField("dim_value"):
                dim.Clear()
                dim.dim_value = proved_dim.dim_value


def _dims_of(info: onnx.ValueInfoProto):
    """The dimensions of a tensor input (an input of unknown rank takes none)."""
    if info.type.WhichOneof("value") != "tensor_type":
        raise LoweringError(f"--input-shape {info.name}: input '{info.name}' is not a tensor")
    tensor_type = info.type.tensor_type
    if not tensor_type.HasField("shape"):
        raise LoweringError(f"--input-shape {info.name}: the model does not state the rank of input '{info.name}'")
    return tensor_type.shape.dim


def _check_consistent(model: onnx.ModelProto) -> None:
    from .shape_folding import light_copy

    try:
        onnx.shape_inference.infer_shapes(light_copy(model), strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise LoweringError(f"--input-shape: the model cannot take these shapes: {first}") from None
