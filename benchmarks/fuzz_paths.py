"""A randomized differential fuzz of the two paths: ``lowering.lower(..., fast=True)`` against
``fast=False`` (the plain path, the specification), converting small valid models to opsets 11,
12, 13, 16 and 17, and lowering the ops they hold (all, or a subset) at their own opset. Each
model repeats kinds of node (the kind memo replays from the second) and varies what a recording
must not carry over: names (absent, empty, duplicated, like one of the node's values, not
UTF-8), doc_strings and metadata (non-ASCII, the memo's marker texts), attribute order and
explicit defaults, "__" attributes holding another attribute's field bytes,
device_configurations and unknown fields, If branches and local functions. Both paths must give
the same bytes or the same refusal; where both convert, onnxruntime runs the original and the
result on random inputs (a second check: onnxruntime's own kernels may depart from the spec).

    python benchmarks/fuzz_paths.py FIRST_SEED SECONDS [OUT_FOLDER]

prints each mismatch (its model saved in OUT_FOLDER) and the counts. ``NO_RAW=1`` leaves out
strings that are not UTF-8; ``NO_INALIAS=1`` / ``NO_OUTALIAS=1`` node names like their inputs /
outputs. ``tests/test_fuzz_paths.py`` runs a fixed set of seeds.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper

import lowering
from lowering.api import lowerable_ops
from lowering.errors import LoweringError
from lowering.fast import protowire

F32, F16, BF16, F64 = T.FLOAT, T.FLOAT16, T.BFLOAT16, T.DOUBLE
I32, I64, U8, BOOL = T.INT32, T.INT64, T.UINT8, T.BOOL
TARGETS = [11, 12, 13, 16, 17]
FN_DOMAIN = "local.fn"
NO_RAW = bool(os.environ.get("NO_RAW"))


def attr_field(a: onnx.AttributeProto) -> bytes:
    """The attribute as a NodeProto's ``attribute`` field (number 5), wire bytes."""
    return protowire.field(b"\x2a", a.SerializeToString())


def str_field(tag: int, data: bytes) -> bytes:
    """One length-delimited field of tag byte ``tag`` holding ``data``."""
    return protowire.field(bytes([tag]), data)


TEXTS = ["", "doc", "ünïcödé ☃", "日本語のテキスト", "x" * 40, "a\nb\tc", "\x00carried doc_string\x00", "y_0", "n"]


class Namespace:
    """A graph (main, branch) or a function body being built."""

    def __init__(self, kind: str):
        self.kind = kind  # "main", "branch", "function"
        self.nodes: list[onnx.NodeProto] = []
        self.outputs: list[tuple[str, int, int]] = []  # (name, elem, rank)
        self.used_inputs: list[str] = []  # main-graph inputs read (functions take these as inputs)


class Builder:
    def __init__(self, rng: random.Random, S: int):
        self.rng = rng
        self.S = S
        self.counter = 0
        self.inputs: dict[str, tuple[int, list]] = {}  # name -> (elem, declared shape)
        self.feeds: dict[str, object] = {}  # name -> fixed value (else random)
        self.initializers: dict[str, onnx.TensorProto] = {}
        self.functions: list[onnx.FunctionProto] = []
        self.uses_device = False
        self.raw_bytes = False

    def fresh(self, base="v"):
        self.counter += 1
        return f"{base}{self.counter}"

    # -- values -----------------------------------------------------------------------------------
    def tensor(self, ns: Namespace, elem: int, shape: list) -> str:
        name = "in_" + onnx.helper.tensor_dtype_to_string(elem).split(".")[-1].lower() + "_" + "_".join(map(str, shape))
        name = name.replace("-", "m")
        if not shape:
            name += "scalar"
        self.inputs.setdefault(name, (elem, list(shape)))
        ns.used_inputs.append(name)
        return name

    def unknown_rank(self, ns: Namespace, elem: int, shape: list) -> str:
        """x reshaped by a run-time shape of unknown length: rank unknown to inference."""
        x = self.tensor(ns, elem, shape)
        sname = "dyn_shape_" + "_".join(map(str, shape))
        concrete = [2 if isinstance(d, str) else d for d in shape]
        self.inputs.setdefault(sname, (I64, ["K" + str(len(shape))]))
        self.feeds[sname] = np.array(concrete, np.int64)
        ns.used_inputs.append(sname)
        out = self.fresh("ur")
        ns.nodes.append(helper.make_node("Reshape", [x, sname], [out]))
        return out

    def int64_const(self, ns: Namespace, values: list[int], how: str | None = None) -> str:
        how = how or self.rng.choice(["init", "const", "const"])
        if ns.kind == "function" and how == "init":
            how = "const"
        arr = np.array(values, np.int64)
        if how == "init":
            name = "c_" + "_".join(str(v).replace("-", "m") for v in values) + f"_{len(values)}"
            if name not in self.initializers:
                self.initializers[name] = onnx.numpy_helper.from_array(arr, name)
            return name
        if how == "dyn":
            name = "d_" + "_".join(str(v).replace("-", "m") for v in values) + f"_{len(values)}"
            self.inputs.setdefault(name, (I64, [len(values)]))
            self.feeds[name] = arr
            ns.used_inputs.append(name)
            return name
        out = self.fresh("k")
        ns.nodes.append(helper.make_node("Constant", [], [out], value=onnx.numpy_helper.from_array(arr, "t")))
        return out

    def const_tensor(self, ns: Namespace, arr: np.ndarray) -> str:
        if ns.kind != "function" and self.rng.random() < 0.5:
            name = self.fresh("w")
            self.initializers[name] = onnx.numpy_helper.from_array(arr, name)
            return name
        out = self.fresh("k")
        ns.nodes.append(helper.make_node("Constant", [], [out], value=onnx.numpy_helper.from_array(arr, "t")))
        return out


# -- op templates -------------------------------------------------------------------------------------


def given_attributes(**values) -> list[onnx.AttributeProto]:
    """An attribute for each of ``values`` that is not None (absent, the op's default), in order."""
    return [helper.make_attribute(name, value) for name, value in values.items() if value is not None]


def shape_variant(rng, rank, allow_unknown=True, allow_zero=False):
    base = [2, 3, 4, 5][:rank]
    style = rng.choice(["static", "static", "symbolic"] + (["unknown"] if allow_unknown else []))
    shape = list(base)
    if style == "symbolic" and rank:
        shape[0] = "N"
    return style, shape


def value_for(b: Builder, ns: Namespace, elem, style, shape):
    if style == "unknown":
        return b.unknown_rank(ns, elem, shape)
    return b.tensor(ns, elem, shape)


class Template:
    """One kind of node: op, attributes (ordered), input spec; ``emit`` makes an instance."""

    def __init__(self, op, attrs, make_inputs, out_ranks, extra_outputs=0):
        self.op = op
        self.attrs = attrs  # list of AttributeProto in order
        self.make_inputs = make_inputs  # (b, ns) -> list of input names
        self.out_ranks = out_ranks  # list of (elem, rank)


def with_extras(rng, attrs: list[onnx.AttributeProto]) -> list[onnx.AttributeProto]:
    """Shuffle, and add "__" attributes holding another attribute's field bytes."""
    attrs = list(attrs)
    if rng.random() < 0.3:
        rng.shuffle(attrs)
    n_extra = rng.choice([0, 0, 0, 1, 1, 2])
    for k in range(n_extra):
        pick = rng.random()
        if attrs and pick < 0.7:
            a = rng.choice([x for x in attrs if not x.name.startswith("__")] or attrs)
            f = attr_field(a)
            form = rng.choice(["exact", "twice", "wrapped", "bare"])
            s = {"exact": f, "twice": f + f, "wrapped": b"pre" + f + b"post", "bare": a.SerializeToString()}[form]
            extra = helper.make_attribute(f"__x{k}", s)
        elif pick < 0.85:
            extra = helper.make_attribute(f"__i{k}", rng.randint(-3, 3))
        else:
            extra = helper.make_attribute(f"__s{k}", rng.choice(["ünï", "", "axis", "allowzero"]).encode())
        attrs.insert(rng.randint(0, len(attrs)), extra)
    if attrs and rng.random() < 0.06:  # an unknown field inside one attribute
        k = rng.randrange(len(attrs))
        a = onnx.AttributeProto()
        a.ParseFromString(attrs[k].SerializeToString() + b"\xf8\x06\x05")
        attrs[k] = a
    if rng.random() < 0.05:  # a held graph under a "__" attribute
        inner = helper.make_node(rng.choice(["Softmax", "Relu"]), ["hg_in"], ["hg_out"])
        if rng.random() < 0.5:
            inner.doc_string = rng.choice(["inner", "ïnner"])
        sub = helper.make_graph(
            [inner],
            "held",
            [helper.make_tensor_value_info("hg_in", F32, [2])],
            [helper.make_tensor_value_info("hg_out", F32, [2])],
        )
        attrs.insert(rng.randint(0, len(attrs)), helper.make_attribute("__g", sub))
    return attrs


def t_reshape(rng, b: Builder):
    elem = rng.choice([F32, F16, BF16, I32, I64, F64, BOOL, U8])
    az = rng.choice([None, 0, 1, 1])
    xshape = rng.choice([[2, 3, 4], ["N", 3, 4], [0, 3, 4], [2, 3, 4]])
    if xshape[0] == 0:
        cands = {None: [[0, 12], [0, 3, 4]], 0: [[0, 12], [0, 3, 4]], 1: [[0, 12], [3, 0], [0, 4, 3], [12, 0]]}[az]
    else:
        cands = {
            None: [[6, 4], [0, -1], [-1], [0, 3, 4], [2, -1]],
            0: [[6, 4], [0, -1], [-1], [0, 3, 4], [2, -1]],
            1: [[6, 4], [-1], [2, 12], [4, 3, 2]],
        }[az]
    target = rng.choice(cands)
    how = rng.choice(["init", "const", "dyn"])
    attrs = given_attributes(allowzero=az)

    def inputs(b, ns):
        return [b.tensor(ns, elem, xshape), b.int64_const(ns, target, how)]

    return Template("Reshape", with_extras(rng, attrs), inputs, [(elem, len(target))])


def t_softmax(rng, b: Builder):
    op = rng.choice(["Softmax", "LogSoftmax", "Hardmax"])
    elem = rng.choice([F32, F32, F16, F64, BF16])
    rank = rng.choice([1, 2, 3, 4])
    style, shape = shape_variant(rng, rank)
    axis = rng.choice([None, -1, rank - 1, 0, -rank] + ([1, -2] if rank > 1 else []))
    attrs = given_attributes(axis=axis)

    def inputs(b, ns):
        return [value_for(b, ns, elem, style, shape)]

    return Template(op, with_extras(rng, attrs), inputs, [(elem, rank)])


def t_argmax(rng, b: Builder):
    op = rng.choice(["ArgMax", "ArgMin"])
    elem = rng.choice([F32, F16, F64, I32, I64, U8])
    rank = rng.choice([1, 2, 3])
    style, shape = shape_variant(rng, rank)
    axis = rng.choice([None, 0, -1, rank - 1] + ([1, -2] if rank > 1 else []))
    keep = rng.choice([None, 0, 1])
    sli = rng.choice([None, 0, 0, 1])
    attrs = given_attributes(axis=axis, keepdims=keep, select_last_index=sli)
    out_rank = rank if keep in (None, 1) else rank - 1

    def inputs(b, ns):
        return [value_for(b, ns, elem, style, shape)]

    return Template(op, with_extras(rng, attrs), inputs, [(I64, out_rank)])


def t_gridsample(rng, b: Builder):
    v20 = b.S >= 20
    modes = ["linear", "nearest", "cubic"] if v20 else ["bilinear", "nearest", "bicubic"]
    mode = rng.choice([None] + modes + ([modes[0]] * 2))
    pad = rng.choice([None, "zeros", "border", "reflection"])
    ac = rng.choice([None, 0, 1])
    five = v20 and rng.random() < 0.15
    elem = rng.choice([F32, F32, F64])
    attrs = given_attributes(mode=mode, padding_mode=pad, align_corners=ac)
    sym = rng.random() < 0.3
    xs = [1, 2, 2, 3, 4] if five else [1, 2, 4, 5]
    gs = [1, 2, 2, 2, 3] if five else [1, 3, 3, 2]
    if sym:
        xs = ["N"] + xs[1:]
        gs = ["N"] + gs[1:]
    unknown = rng.random() < 0.1

    def inputs(b, ns):
        x = b.unknown_rank(ns, elem, xs) if unknown else b.tensor(ns, elem, xs)
        g = "grid_" + "_".join(map(str, gs)) + ("_f64" if elem == F64 else "")
        b.inputs.setdefault(g, (elem, gs))
        ns.used_inputs.append(g)
        return [x, g]

    return Template("GridSample", with_extras(rng, attrs), inputs, [(elem, len(xs))])


def t_cast(rng, b: Builder):
    src = rng.choice([F32, F16, I32, F64, I64])
    to = rng.choice([F32, F16, I32, F64, I64, BOOL])
    attrs = [helper.make_attribute("to", to)]
    if b.S >= 19 and rng.random() < 0.7:
        attrs.append(helper.make_attribute("saturate", rng.choice([0, 1])))
    rank = rng.choice([1, 2, 3])
    style, shape = shape_variant(rng, rank)

    def inputs(b, ns):
        return [value_for(b, ns, src, style, shape)]

    return Template("Cast", with_extras(rng, attrs), inputs, [(to, rank)])


def t_shape(rng, b: Builder):
    rank = rng.choice([1, 2, 3])
    style, shape = shape_variant(rng, rank)
    start = rng.choice([None, 0, 1, -1])
    end = rng.choice([None, None, 2, -1, 5])
    attrs = given_attributes(start=start, end=end)
    elem = rng.choice([F32, I64])

    def inputs(b, ns):
        return [value_for(b, ns, elem, style, shape)]

    return Template("Shape", with_extras(rng, attrs), inputs, [(I64, 1)])


def t_split(rng, b: Builder):
    rank = rng.choice([1, 2, 3])
    style, shape = shape_variant(rng, rank, allow_unknown=False)
    axis = rng.choice(range(-rank, rank))
    dim = shape[axis]
    size = 2 if isinstance(dim, str) else dim
    n = rng.choice([1, 2, 3])
    use_split = rng.random() < 0.4 and not isinstance(dim, str)
    attrs = []
    if rng.random() < 0.8 or axis != 0:
        attrs.append(helper.make_attribute("axis", axis))
    if not use_split:
        n = min(n, size) if size else 1
        attrs.append(helper.make_attribute("num_outputs", n))
    else:
        n = max(1, min(n, size))
    split_sizes = None
    if use_split:
        split_sizes = [size // n] * n
        split_sizes[-1] += size - sum(split_sizes)
    elem = rng.choice([F32, I64, F16])

    def inputs(b, ns):
        x = b.tensor(ns, elem, shape)
        return [x] + ([b.int64_const(ns, split_sizes)] if split_sizes else [])

    return Template("Split", with_extras(rng, attrs), inputs, [(elem, rank)] * n)


def t_reduce(rng, b: Builder):
    op = rng.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceLogSumExp"])
    rank = rng.choice([1, 2, 3])
    style, shape = shape_variant(rng, rank)
    axes = rng.choice([None, [0], [-1], list(range(rank)), []])
    if axes and max(axes) >= rank:
        axes = [0]
    keep = rng.choice([None, 0, 1])
    noop = rng.choice([None, 0, 1])
    how = rng.choice(["init", "const", "dyn"])
    attrs = given_attributes(keepdims=keep, noop_with_empty_axes=noop)
    elem = rng.choice([F32, F32, F64, F16, I32])
    if op in ("ReduceL2", "ReduceLogSumExp", "ReduceMean") and elem == I32:
        elem = F32
    if keep == 0:
        if axes is None or axes == []:
            out_rank = rank if (axes == [] and noop == 1) else 0
        else:
            out_rank = rank - len(set(a % rank for a in axes))
    else:
        out_rank = rank

    def inputs(b, ns):
        x = value_for(b, ns, elem, style, shape)
        if axes is None:
            return [x]
        return [x, b.int64_const(ns, axes, how)]

    return Template(op, with_extras(rng, attrs), inputs, [(elem, out_rank)])


def t_squeeze(rng, b: Builder):
    op = rng.choice(["Squeeze", "Unsqueeze"])
    elem = rng.choice([F32, I64, F16])
    if op == "Squeeze":
        shape = rng.choice([[1, 3, 1], [2, 1], ["N", 1, 4]])
        ones = [i for i, d in enumerate(shape) if d == 1]
        axes = rng.choice([None, ones[:1], [ones[0] - len(shape)]])
        out_rank = len(shape) - (len(ones) if axes is None else 1)
    else:
        shape = rng.choice([[3], [2, 3], ["N", 3]])
        axes = rng.choice([[0], [-1], [0, len(shape) + 1]])
        out_rank = len(shape) + len(axes)
    how = rng.choice(["init", "const", "dyn"])

    def inputs(b, ns):
        x = b.tensor(ns, elem, shape)
        return [x] + ([b.int64_const(ns, axes, how)] if axes is not None else [])

    return Template(op, with_extras(rng, []), inputs, [(elem, out_rank)])


def t_scatter(rng, b: Builder):
    red = rng.choice([None, "none", "add", "mul", "max", "min"])
    attrs = [helper.make_attribute("axis", rng.choice([0, 1, -1]))]
    if red is not None:
        attrs.append(helper.make_attribute("reduction", red))
    elem = rng.choice([F32, F64, I32])

    def inputs(b, ns):
        data = b.tensor(ns, elem, [3, 3])
        idx = b.const_tensor(ns, np.array([[1, 0, 2], [0, 2, 1]], np.int64))
        upd = b.tensor(ns, elem, [2, 3])
        return [data, idx, upd]

    return Template("ScatterElements", with_extras(rng, attrs), inputs, [(elem, 2)])


def t_gathernd(rng, b: Builder):
    bd = rng.choice([None, 0, 1])
    attrs = given_attributes(batch_dims=bd)
    elem = rng.choice([F32, I64])
    if bd == 1:
        idx = np.array([[1], [0]], np.int64)  # data [2,3,4], indices [2,1] -> [2,4]
        out_rank = 2
    else:
        idx = np.array([[1, 2], [0, 1]], np.int64)  # -> [2,4]
        out_rank = 2

    def inputs(b, ns):
        return [b.tensor(ns, elem, [2, 3, 4]), b.const_tensor(ns, idx)]

    return Template("GatherND", with_extras(rng, attrs), inputs, [(elem, out_rank)])


def t_layernorm(rng, b: Builder):
    rank = rng.choice([2, 3])
    style, shape = shape_variant(rng, rank, allow_unknown=False)
    axis = rng.choice([None, -1, rank - 1, 1])
    attrs = given_attributes(axis=axis)
    if rng.random() < 0.4:
        attrs.append(helper.make_attribute("epsilon", rng.choice([1e-5, 1e-3])))
    a = axis if axis is not None else -1
    a = a % rank
    norm_shape = [4, 5][: rank - a] if rank == 2 else [3, 4][a - 1 :] if a >= 1 else [3, 4]
    norm_shape = [d for d in (shape[a:])]
    elem = rng.choice([F32, F16])
    # Scale and B: graph inputs, held (an initializer or a Constant), or held behind an Identity
    # (TorchScript reads shared weights so); B given or not: the body's unflattened form reads
    # their held shapes (rules/function_bodies.py, last_axis_unflattened).
    forms = [rng.choice(["input", "held", "identity"]), rng.choice([None, "input", "held", "identity"])]

    def parameter(b, ns, form):
        if form == "input" or any(isinstance(d, str) for d in norm_shape):
            return b.tensor(ns, elem, norm_shape)
        size = int(np.prod(norm_shape))
        dtype = np.float16 if elem == F16 else np.float32
        held = b.const_tensor(ns, np.linspace(0.5, 1.5, size).reshape(norm_shape).astype(dtype))
        if form == "held":
            return held
        read = b.fresh("read")
        ns.nodes.append(helper.make_node("Identity", [held], [read]))
        return read

    def inputs(b, ns):
        x = b.tensor(ns, elem, shape)
        return [x] + [parameter(b, ns, form) for form in forms if form is not None]

    if any(isinstance(d, str) for d in norm_shape):
        return t_softmax(rng, b)
    return Template("LayerNormalization", with_extras(rng, attrs), inputs, [(elem, rank)])


def t_relu(rng, b: Builder):
    elem = rng.choice([F32, F16])
    op = rng.choice(["Relu", "Neg", "Abs"])

    def inputs(b, ns):
        return [b.tensor(ns, elem, [2, 3])]

    return Template(op, with_extras(rng, []), inputs, [(elem, 2)])


WEIGHTED = [
    (t_reshape, 5),
    (t_softmax, 5),
    (t_argmax, 4),
    (t_gridsample, 3),
    (t_cast, 2),
    (t_shape, 2),
    (t_split, 2),
    (t_reduce, 2),
    (t_squeeze, 1),
    (t_scatter, 1),
    (t_gathernd, 1),
    (t_layernorm, 1),
    (t_relu, 1),
]


# -- instance decoration ------------------------------------------------------------------------------


def emit(b: Builder, ns: Namespace, tpl: Template):
    rng = b.rng
    ins = tpl.make_inputs(b, ns)
    outs = [b.fresh("y") for _ in tpl.out_ranks]
    node = helper.make_node(tpl.op, ins, outs)
    node.attribute.extend(tpl.attrs)
    # name
    r = rng.random()
    raw_tail = b""
    if r < 0.25:
        pass
    elif r < 0.35:
        node.name = ""
    elif r < 0.45:
        node.name = outs[0] if not os.environ.get("NO_OUTALIAS") else "alias_" + outs[0]
    elif r < 0.55:
        node.name = ins[0] if not os.environ.get("NO_INALIAS") else "alias_" + ins[0]
    elif r < 0.65:
        node.name = "dup"
    elif r < 0.7 and tpl.attrs and ns.kind != "function" and not NO_RAW:
        raw_tail += str_field(0x1A, attr_field(rng.choice(tpl.attrs)))
        b.raw_bytes = True
    else:
        node.name = rng.choice(["ñode", "n", "節点", "a b"]) + f"_{b.counter}"
    # doc_string
    r = rng.random()
    if r < 0.4:
        pass
    elif r < 0.55:
        node.doc_string = ""
    elif r < 0.62 and tpl.attrs and not NO_RAW:
        raw_tail += str_field(0x32, attr_field(rng.choice(tpl.attrs)))
        b.raw_bytes = True
    else:
        node.doc_string = rng.choice(TEXTS)
    # metadata
    for k in range(rng.choice([0, 0, 0, 1, 2, 3])):
        if tpl.attrs and rng.random() < 0.15 and not NO_RAW:
            f = attr_field(rng.choice(tpl.attrs))
            entry = str_field(0x0A, rng.choice(["k", "ü"]).encode()) + str_field(0x12, f)
            raw_tail += str_field(0x4A, entry)
            b.raw_bytes = True
        else:
            node.metadata_props.add(
                key=rng.choice(["k", "kéy", "☃", "", "onnx_lower"]) + str(k), value=rng.choice(TEXTS)
            )
    # device configurations
    if rng.random() < 0.12:
        dc = node.device_configurations.add()
        dc.configuration_id = rng.choice(["cfg", "cfg2"])
        dc.pipeline_stage = rng.randint(0, 3)
        b.uses_device = True
    if rng.random() < 0.08:
        raw_tail += b"\xf8\x06" + bytes([rng.randint(0, 100)])  # unknown field 111 (varint)
    if raw_tail:
        data = node.SerializeToString() + raw_tail
        node = onnx.NodeProto()
        node.ParseFromString(data)
    ns.nodes.append(node)
    for name, (elem, rank) in zip(outs, tpl.out_ranks, strict=True):
        ns.outputs.append((name, elem, rank))


def out_info(name, elem, rank, prefix):
    return helper.make_tensor_value_info(name, elem, [f"{prefix}{i}" for i in range(rank)])


def gen_model(seed: int):
    rng = random.Random(seed)
    S = rng.choice([18, 19, 20, 21])
    b = Builder(rng, S)
    kinds = [
        rng.choices([t for t, _ in WEIGHTED], [w for _, w in WEIGHTED])[0](rng, b) for _ in range(rng.randint(1, 4))
    ]
    main = Namespace("main")
    branch_pairs = []
    functions = []
    for tpl in kinds:
        for _ in range(rng.randint(2, 4)):
            place = rng.random()
            if place < 0.6:
                emit(b, main, tpl)
            elif place < 0.8:
                branch_pairs.append(tpl)
            else:
                functions.append(tpl)
    graph_outputs = list(main.outputs)
    # If nodes: each holds instances of the templates in both branches
    if branch_pairs:
        groups = [branch_pairs[i : i + 2] for i in range(0, len(branch_pairs), 2)]
        for group in groups:
            then_ns, else_ns = Namespace("branch"), Namespace("branch")
            for tpl in group:
                emit(b, then_ns, tpl)
                emit(b, else_ns, tpl)
                if rng.random() < 0.3:
                    emit(b, then_ns, tpl)
                    emit(b, else_ns, tpl)
            then_g = helper.make_graph(
                then_ns.nodes, b.fresh("then"), [], [out_info(n, e, r, n + "_d") for n, e, r in then_ns.outputs]
            )
            else_g = helper.make_graph(
                else_ns.nodes, b.fresh("else"), [], [out_info(n, e, r, n + "_d") for n, e, r in else_ns.outputs]
            )
            outs = [b.fresh("if") for _ in then_ns.outputs]
            b.inputs.setdefault("cond", (BOOL, []))
            if_node = helper.make_node("If", ["cond"], outs, then_branch=then_g, else_branch=else_g)
            if rng.random() < 0.3:
                if_node.name = "if_" + str(b.counter)
            main.nodes.append(if_node)
            graph_outputs += [(o, e, r) for o, (_, e, r) in zip(outs, then_ns.outputs, strict=True)]
    # local functions
    fprotos = []
    if functions:
        per = [functions[i : i + 3] for i in range(0, len(functions), 3)]
        for fi, group in enumerate(per):
            fns = Namespace("function")
            for tpl in group:
                emit(b, fns, tpl)
            f_inputs = list(dict.fromkeys(fns.used_inputs))
            f_outputs = [n for n, _, _ in fns.outputs]
            fname = f"F{fi}"
            fp = helper.make_function(FN_DOMAIN, fname, f_inputs, f_outputs, fns.nodes, [helper.make_opsetid("", S)])
            fprotos.append(fp)
            for _ in range(rng.choice([1, 1, 2])):
                outs = [b.fresh("f") for _ in f_outputs]
                main.nodes.append(helper.make_node(fname, f_inputs, outs, domain=FN_DOMAIN))
                graph_outputs += [(o, e, r) for o, (_, e, r) in zip(outs, fns.outputs, strict=True)]
    inputs = [helper.make_tensor_value_info(n, e, s) for n, (e, s) in b.inputs.items()]
    g = helper.make_graph(
        main.nodes,
        "g",
        inputs,
        [out_info(n, e, r, n + "_d") for n, e, r in graph_outputs],
        list(b.initializers.values()),
    )
    imports = [helper.make_opsetid("", S)] + ([helper.make_opsetid(FN_DOMAIN, 1)] if fprotos else [])
    m = helper.make_model(g, opset_imports=imports, ir_version=10, functions=fprotos)
    if b.uses_device and rng.random() < 0.7:
        cfg = m.configuration.add()
        cfg.name = "cfg"
        cfg.num_devices = 2
        cfg.device.extend(["cpu0", "cpu1"])
    if rng.random() < 0.3:
        m.doc_string = rng.choice(TEXTS)
    return m, b


def ops_to_lower(model: onnx.ModelProto, seed: int) -> list[str]:
    """Default-domain op types the model holds (in branches and functions too) that a rule or a
    function body lowers, all of them or a subset picked by ``seed``: what a lowering run of
    the fuzz asks for. (A node a pattern does not serve where it stands is left, and reported,
    alike on both paths.)"""
    lowerable = lowerable_ops()
    found: set[str] = set()

    def visit(nodes) -> None:
        for node in nodes:
            if node.domain in ("", "ai.onnx") and node.op_type in lowerable:
                found.add(node.op_type)
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    visit(attribute.g.node)

    visit(model.graph.node)
    for function in model.functions:
        visit(function.node)
    ops = sorted(found)
    rng = random.Random(seed)
    subset = [op for op in ops if rng.random() < 0.5]
    return ops if rng.random() < 0.5 or not subset else subset


# -- running --------------------------------------------------------------------------------------------


def outcome(model, target, fast, ops=None):
    """Converted to ``target`` (ops=[]), or, where ``target`` is None, ``ops`` lowered at the
    model's own opset: ("ok", the bytes), or the refusal's class and words."""
    try:
        if target is None:
            out = lowering.lower(model, ops=ops, fast=fast)
        else:
            out = lowering.lower(model, target_opset=target, ops=[], fast=fast)
        return ("ok", out.SerializeToString())
    except LoweringError as e:
        return ("LoweringError:" + type(e).__name__, str(e))
    except Exception as e:  # noqa
        return ("OTHER:" + type(e).__name__, str(e) + "\n" + traceback.format_exc()[-1500:])


NP = {F32: np.float32, F16: np.float16, F64: np.float64, I32: np.int32, I64: np.int64, U8: np.uint8, BOOL: np.bool_}


def feeds_for(model, b: Builder, rng: np.random.Generator):
    feeds = {}
    for vi in model.graph.input:
        name = vi.name
        if name in b.feeds:
            feeds[name] = b.feeds[name]
            continue
        elem = vi.type.tensor_type.elem_type
        if elem not in NP:
            return None
        shape = [d.dim_value if d.HasField("dim_value") else 2 for d in vi.type.tensor_type.shape.dim]
        if name.startswith("grid_"):
            arr = rng.uniform(-1.2, 1.2, shape)
        elif elem in (I32, I64, U8):
            arr = rng.integers(0, 4, shape)
        elif elem == BOOL:
            arr = rng.integers(0, 2, shape)
        else:
            arr = rng.standard_normal(shape)
        feeds[name] = np.asarray(arr).astype(NP[elem])
    return feeds


def departs_from_the_spec(model: onnx.ModelProto) -> bool:
    """Whether the model holds a GridSample onnxruntime's kernel computes otherwise than the spec
    (rules/gridsample.py, onnxruntime_follows_the_spec): the lowering follows the spec, so
    onnxruntime is no oracle for it. (A 5-D cubic one has no kernel: the original does not run,
    and is skipped there.)"""
    from lowering.rules.gridsample import onnxruntime_follows_the_spec

    from lowering.graphs import nested_graphs

    for graph in [model.graph, *nested_graphs(model.graph.node)]:
        for node in graph.node:
            if node.op_type != "GridSample":
                continue
            values = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            mode, padding_mode = values.get("mode", b"bilinear"), values.get("padding_mode", b"zeros")
            if not onnxruntime_follows_the_spec(4, mode, padding_mode):
                return True
    return False


def ort_check(orig: onnx.ModelProto, conv_bytes: bytes, b: Builder, seed: int):
    import onnxruntime as ort

    if departs_from_the_spec(orig):
        return "skip"

    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    try:
        s1 = ort.InferenceSession(orig.SerializeToString(), so, providers=["CPUExecutionProvider"])
        feeds = feeds_for(orig, b, np.random.default_rng(seed))
        if feeds is None:
            return "skip"
        r1 = s1.run(None, feeds)
    except Exception:
        return "skip"
    try:
        s2 = ort.InferenceSession(conv_bytes, so, providers=["CPUExecutionProvider"])
        r2 = s2.run(None, feeds)
    except Exception as e:  # noqa
        if "NOT_IMPLEMENTED" in str(e):
            return "skip"
        return f"converted fails in ort: {str(e)[:300]}"
    names = [o.name for o in orig.graph.output]
    for n, a, c in zip(names, r1, r2, strict=True):
        a, c = np.asarray(a), np.asarray(c)
        if a.shape != c.shape:
            return f"output {n}: shape {a.shape} vs {c.shape}"
        if a.dtype.kind in "fc":
            tol = 1e-2 if a.dtype == np.float16 else 1e-4
            if not np.allclose(a.astype(np.float64), c.astype(np.float64), rtol=tol, atol=tol, equal_nan=True):
                return f"output {n}: values differ"
        elif not np.array_equal(a, c):
            return f"output {n}: values differ"
    return "same"


def main():
    seed0 = int(sys.argv[1])
    seconds = float(sys.argv[2])
    outdir = sys.argv[3] if len(sys.argv) > 3 else "/tmp/fuzz25/out"
    os.makedirs(outdir, exist_ok=True)
    stats = {
        "models": 0,
        "rejected": 0,
        "pairs": 0,
        "ok": 0,
        "errors": 0,
        "mismatch": 0,
        "ort_same": 0,
        "ort_skip": 0,
        "ort_diff": 0,
        "other_exc": 0,
        "gen_fail": 0,
    }
    ops_seen: dict[str, int] = {}
    errs_seen: dict[str, int] = {}
    end = time.time() + seconds
    seed = seed0
    while time.time() < end:
        seed += 1
        try:
            m, b = gen_model(seed)
        except Exception:
            stats["gen_fail"] += 1
            if stats["gen_fail"] < 5:
                traceback.print_exc()
            continue
        try:
            onnx.checker.check_model(m, full_check=True)
        except Exception as e:
            stats["rejected"] += 1
            key = str(e).splitlines()[0][:80]
            errs_seen["REJ " + key] = errs_seen.get("REJ " + key, 0) + 1
            continue
        stats["models"] += 1
        for n in m.graph.node:
            ops_seen[n.op_type] = ops_seen.get(n.op_type, 0) + 1
        checked_ort = 0
        ops = ops_to_lower(m, seed)
        for target in [*TARGETS, None]:  # (None: the ops it holds lowered at its own opset)
            fa = outcome(m, target, True, ops)
            pl = outcome(m, target, False, ops)
            stats["pairs"] += 1
            if fa[0].startswith("OTHER") or pl[0].startswith("OTHER"):
                stats["other_exc"] += 1
            if fa != pl:
                stats["mismatch"] += 1
                path = os.path.join(outdir, f"mismatch_{seed}_{target}.onnx")
                with open(path, "wb") as f:
                    f.write(m.SerializeToString())
                with open(path + ".txt", "w") as f:
                    f.write(f"fast: {fa[0]} {fa[1] if isinstance(fa[1], str) else len(fa[1])}\n")
                    f.write(f"plain: {pl[0]} {pl[1] if isinstance(pl[1], str) else len(pl[1])}\n")
                print("MISMATCH", seed, target, fa[0], pl[0], flush=True)
                continue
            if fa[0] == "ok":
                stats["ok"] += 1
                if checked_ort < 2 and not b.raw_bytes:
                    checked_ort += 1
                    r = ort_check(m, fa[1], b, seed)
                    if r == "same":
                        stats["ort_same"] += 1
                    elif r == "skip":
                        stats["ort_skip"] += 1
                    else:
                        stats["ort_diff"] += 1
                        path = os.path.join(outdir, f"ort_{seed}_{target}.onnx")
                        with open(path, "wb") as f:
                            f.write(m.SerializeToString())
                        print("ORT", seed, target, r, flush=True)
            else:
                stats["errors"] += 1
                key = fa[0] + " " + fa[1].split(":", 1)[-1][:70]
                errs_seen[key] = errs_seen.get(key, 0) + 1
    print(json.dumps(stats))
    print(json.dumps(ops_seen))
    for k, v in sorted(errs_seen.items(), key=lambda kv: -kv[1])[:40]:
        print(v, k)


if __name__ == "__main__":
    main()
