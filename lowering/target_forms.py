"""Forms a target chooses: a node rewritten into another form of the same op (or into other
ops) that means the same on every input, where the runtime's probed verdict on the node's form
is worse than on the other form (:mod:`lowering.node_forms`). Each choice here is exact by the op's definition:

- ``Reshape`` (14+) with ``allowzero=1`` whose shape is a constant holding no 0: ``allowzero``
  only says what a 0 in the shape means (a zero dimension, not a copied one), so without it
  (``allowzero=0``, the default) the node means the same (OpenVINO 2024.6 gets the
  ``allowzero=1`` case wrong; PyTorch's dynamo exporter writes ``allowzero=1`` on every view).
- Int and string attributes a node leaves out, stated at their schema's defaults, or those it
  states at their defaults left out, where the runtime judges the node better so (onnx2torch
  reads a CumSum's ``reverse`` left out as 1 and sums backwards, and stated 0 right; OpenVINO
  2024.6 fails a GridSample stating ``mode='linear'`` and takes it left out): a default is what
  the op takes where the attribute is left out. Stating them is judged by the probed cases
  nearest the node's form against their ``#stated`` twins, of the same values.
- A constant a node of the main graph reads from a node, read from an initializer instead,
  where the runtime judges the node better so: a ``Constant`` node's value made an initializer of
  the same name and tensor, an ``Identity`` of an initializer bypassed (onnx2torch reads a Conv's
  bias from initializers only; a TorchScript export gives shared ones through an Identity).
- ``Equal`` (7+) of two bool tensors written ``Xor(a, Not(b))``, where the runtime runs Xor and
  Not better (tract and TVM fail Equal on bool: "Bool is not a number"; TensorRT's table lists
  Equal on no bool): a = b is a ⊕ ¬b for every pair of bools, broadcast alike. Not ``Not(Xor(a,
  b))``: the patterns' NaN masks feed a Where, and onnxruntime fuses a Not before a Where into
  it by swapping its branches, where its Where loses a -0 (docs/rules.md).
- ``And`` and ``Or`` (7+) of two bool tensors written ``Cast(Mul(Cast(a, int32), Cast(b,
  int32)), bool)`` (``Add`` for Or), where the runtime runs those better (webgpu's table lists
  neither; onnxruntime has no bool Where, so not ``Where(a, b, a)``): true and false are 1 and 0,
  the product (sum) is nonzero exactly where both (either) are true.
- ``Max`` and ``Min`` (8+) of two int64 tensors written ``Where(Less(a, b), b, a)`` (``Less(b,
  a)`` for Min), where the runtime runs those better (webgpu lists neither): integers have no NaN
  and no signed zero, so the larger (smaller) of each pair is the one Less picks. Only int64, the
  type the probed Where cases select (a Where is judged by its bool condition's type).
- ``ConstantOfShape`` (9+) written ``Expand`` of its value as a scalar (a Constant), where the
  runtime runs those better (webgpu lists no ConstantOfShape): a scalar broadcasts to every
  shape, the empty one and those holding a 0 too, and Expand copies its bits.
- An ``Identity`` the runtime refuses (webgpu's table lists none) whose output no graph gives
  out, left out: its readers, at any depth, read its input (where its output and its input are
  each defined once in the model's graphs: :func:`elidable_identities`).
- ``Pad`` (18+) given its axes, its pads and axes constants and the data's rank known, written
  with pads for every axis (those given for the axes named, 0 for the others) and no axes, as
  Pad's definition pads them (tract 0.21 and OpenVINO 2024.6 fail Pad given its axes, which
  ONNX's Attention body writes for its mask).
- ``BitShift``-28 written as its version adapter down to 11 writes it, at the node's opset: x and
  y read as unsigned numbers (a signed x's bits through int64 and uint64, every Cast in
  range), shifted by amounts in range, 0 (or the sign's fill) out of range
  (``rules/versions/bitshift.py``), which versions 11 and 28 define alike; where the runtime
  runs each of those nodes better (tract and TVM shift by negative amounts and amounts of the
  bit width or more otherwise than version 28 says). Each new node is judged in its own form,
  its values typed as onnx's inference gives them (:meth:`FormJudge.with_nodes`).
- ``Mod``-28 with ``fmod=0`` on floats written as its version adapter down to 27 writes it, at
  the node's opset: the truncated remainder r = Mod(a, b, fmod=1) (exact; a itself where
  |a| < |b|, as for a finite a by an infinite b, which OpenVINO's fmod gets as NaN), moved by b
  where it is nonzero and of the other sign than b, given b's sign, a NaN r passed on
  (``rules/versions/type_lists.py``): A - floor(A / B) * B as version 28 defines it, bit for
  bit with onnxruntime's kernel; NaN found by ``Equal(Equal(r, r), false)``, or by ``IsNaN``
  where the runtime runs that better (TVM fails an Equal of bools); where the runtime runs each
  of those nodes better (TVM gets the floored remainder of infinities and zeros wrong, and the
  truncated one right).
- ``MatMul`` (9+) of two float16 tensors written in float32 (``Cast`` in, ``MatMul``, ``Cast``
  back), where the runtime runs each of those nodes supported (TVM gets a float16 MatMul one
  float16 step off, its sums kept in float16): every float16 is a float32 exactly, and the
  result is rounded to float16 once, as onnxruntime's CPU kernel computes it (bit for bit).
- ``MatMul`` of a vector a by a tensor b of known rank, written as the MatMul of a made a row
  (``Unsqueeze`` at 0; a vector b made a column, at 1) and the added axes squeezed from the
  product, where the runtime runs those better (tract multiplies no two vectors: "a_rank > 1 ||
  b_rank > 1"): numpy's matmul, which MatMul is, promotes a vector so and drops the axis, and
  onnxruntime gives the same sums bit for bit (not where only b is a vector: it sums a matrix
  times a column otherwise than times a vector, so that form is left to the runtime).
- ``Less``, ``Greater``, ``Equal``, ``LessOrEqual`` and ``GreaterOrEqual`` of two unsigned
  8-, 16- or 32-bit integer tensors written as the same op of both cast to int32 (int64 for
  uint32), where the runtime runs the Casts and the op on that type better (PyTorch, so
  onnx2torch, compares no uint16, uint32 or uint64): the wider signed type holds every value of
  both exactly, so the order and equality of each pair, and the bool answers, are the same.
- ``CumSum`` (11+) of a fed axis, its input's rank r known (at most
  :data:`MOST_AXES_SELECTED`), written as the CumSum along each constant axis k, stacked, and
  the one along ``Mod(axis, r)`` gathered, where the runtime runs those better (tract and TVM
  take a constant axis only): the sums along an axis do not depend on how the axis was given,
  and Gather moves their bits as they are.
- ``CumSum`` (11+) of an int32 tensor written as the CumSum of it cast to int64 (``exclusive``
  and ``reverse`` stated), cast back, where the runtime runs those better (onnx2torch sums int32
  into int64 and reads ``reverse`` left out as 1): sums agree modulo 2^32 whatever their width,
  and the Cast back keeps the low 32 bits, the int32 sum as it wraps.
- ``ScatterElements`` (11+) with no reduction, its data's rank known, written as ``ScatterND`` of
  each element's coordinates (its own position in the indices, its index along the axis, wrapped
  where negative), where the runtime runs those better (onnx2torch converts no ScatterElements,
  and ScatterND): both write each update at the same place, the same bits, on every input ONNX
  defines (both require indices that repeat no position; with repeats onnxruntime's two kernels
  keep different updates, its ScatterND by thread).
- ``EyeLike`` (9+) whose ``dtype`` is not its input's type written as the EyeLike of the input's
  type, cast to ``dtype``, where the runtime runs those better (TVM fails the ``dtype``): it
  holds only 0 and 1, which every type holds exactly.
- ``MaxPool``-22 with ``ceil_mode=1`` (explicit pads, no dilation, its input's pooled sizes
  known) written with ``ceil_mode=0`` and the end pads under which the floor makes the same
  windows (:func:`_floor_mode_ends`); a max never takes a padded element (OpenVINO makes the
  ceil_mode window that version 22 drops where it would start in the right padding).
- ``AveragePool`` and ``MaxPool`` with ``auto_pad`` SAME_UPPER, SAME_LOWER or VALID (no
  dilation, ``ceil_mode=0``, its input's pooled sizes known) written with the explicit pads that
  make the same windows (:func:`_explicit_pads`), where the runtime runs that form better
  (onnx2torch converts no auto_pad pooling; pads one end more than the other are judged as a
  form of their own).
- ``AveragePool`` (19+) and ``LpPool`` (18+) with dilations (its input's pooled sizes known)
  written as the pool's version adapter to the opset before dilations writes it, at the node's
  opset: each window's elements gathered side by side in order (``Pad``, ``Gather``), pooled
  undilated with kernel and strides K (``rules/versions/pool.py``): the same elements, the
  same averages bit for bit, where the runtime runs those better (OpenVINO 2024.6 and tract
  0.21 get dilated averages wrong, rknn fails them; AveragePool's own rule, a dilated Conv, is
  a tolerance rule, wrong on rknn in 3-D).
- ``GlobalMaxPool`` (its input's spatial sizes known) written as the ``MaxPool`` whose one
  window is the whole of each channel, where the runtime runs that better (onnx2torch converts
  no GlobalMaxPool): the same maximum, bit for bit with onnxruntime, which pools both in one
  kernel (NaN, inf and ±0 alike; not ``ReduceMax``, which takes a NaN otherwise).
- ``ConvTranspose`` (11+) with ``output_shape``, or ``auto_pad`` SAME_UPPER, SAME_LOWER or VALID
  (its input's spatial sizes and its kernel known), written with the ``pads`` and
  ``output_padding`` that give the same output (:func:`_transpose_pads`), where the runtime runs
  that form better (TVM gets the backend's ``output_shape`` case wrong, OpenVINO 2024.6 its
  SAME_UPPER one): the same full output cut the same way, bit for bit with onnxruntime.
- ``Gather``, ``GatherElements`` and ``ScatterElements`` of int32 or int64 indices that may be
  negative (fed, computed, or constant holding one; the axis known from the first), their
  indices written ``Where(i < 0, i + s, i)``, s the data's size along the axis (a constant where
  the shape says it, else ``Gather(Shape(data), axis)``; constant indices written so as a
  Constant), where the runtime is wrong only on cases whose indices hold a negative value
  (:data:`lowering.value_kinds.NEGATIVE_INDICES`, a kind of value its cases hold, not a
  form) and runs the nodes written better (onnx2torch fails GatherElements of -1, torch.gather
  taking none; OpenVINO 2024.6 reads past the data there, but computes int64 Less, Add and Where
  wrong past 2^24, so there fed indices are written so only where s is static and at most 2^23,
  every index of [-s, s - 1] and i + s then within 2^24, and constant ones as a Constant): each
  index of [-s, s - 1] names the same element, bit for bit with onnxruntime.
- ``Expand`` of a shape s not constant (x's rank and s's length known), written
  ``Expand(x, Where(s = 1, d, s))``, s and x's lengths d aligned at their last axes (the shorter
  led by 1s; d a constant where x's shape is static, else ``Shape(x)``), where the runtime is
  wrong only on cases whose shape holds a 1 where x's length is not 1
  (:data:`lowering.value_kinds.ONE_KEEPS_A_LENGTH`; TVM takes a fed shape as the output's):
  broadcasting both ways gives s where x's length is 1 and x's length where s is 1, so the
  same output, bit for bit.
- ``Reshape`` (5+) of a constant shape whose 0s copy x's lengths (``allowzero`` 0), x's shape
  static, written with the output's shape as a Constant, where the runtime is wrong only on
  cases whose shape copies a length so (:data:`lowering.value_kinds.COPIED_LENGTH`; tract 0.21
  copies them wrong, or aborts, behind a leading 1, as the Attention body's ``[0, 0, -1]`` of a
  batch of one): the same shape, so the same output, bit for bit.
- ``AveragePool`` (``count_include_pad=1``), ``MaxPool`` (on int8 and uint8) and ``LpPool``
  (p >= 1) padded by more than half their window (:data:`lowering.node_forms.WIDE`; each pad
  less than the kernel, no dilation, ``ceil_mode=0``) written as the pool of x padded by a ``Pad`` of a value that
  leaves each window's value as it is (:data:`_PADDING_VALUES`), where the runtime runs those
  better (onnx2torch pools no such pads: "pad should be at most half of effective kernel size").
  Bit for bit with onnxruntime's kernels but for the sign of an average of zeros, which its
  AveragePool-11 kernel on two spatial axes gives by its code path (-0.0 on some windows of
  -0.0 alone where the pool is padded, +0.0 where it is not), so no padding value reproduces it.
- ``If`` of the main graph whose branches compute without failing whichever is taken (only ops
  that read no index, divisor or shape from a value, every value they read and write of a known
  shape, no graph held) and give outputs of one shape, written as both branches' nodes and
  ``Where(cond, then, else)`` per output (:mod:`lowering.branches_selected`), where the runtime
  runs those better (onnx2torch converts no If): the taken branch's values, bit for bit (a float
  output selected from a constant free of -0 in one branch: onnxruntime's Where gives +0 for a
  -0 from its second input).
- An input of a graph a node holds that states no type, given the element type and rank onnx's
  inference gives it from what the node feeds it (tract refuses an untyped Scan body input,
  which ONNX's own LinearAttention body writes): on every target.
- A value a Scan's body reads from outside, passed in (:mod:`lowering.scan_captures`): on every
  target (OpenVINO's frontend counts such a value as a body input and refuses the Scan).

Some failures show only in a whole model, never in one node alone (rknn's compiler fails to
build a MatMul + Add(bias, ...) whose result a Reshape, Transpose and Split take to a scaled
MatMul, and builds it with the bias second). A :class:`ModelFormChoice` is made of every node it
applies to, on a runtime whose profile records whole models (the corpus's, run by the sweep's
trials: ``targets/run_sweep.py --record-forms``) that ran right with it and not without, and
none the other way:

- ``Add`` (numpy broadcasting: 7+) of a constant and a computed value, the constant second: x + c = c + x bit for bit
  where c holds no NaN (IEEE 754 addition commutes; the only NaN then is x's, or the one
  inf + -inf makes, which is the machine's default NaN in either order).
- ``Mul`` (numpy broadcasting: 7+) of a computed value and a constant, the constant first: x · c
  = c · x bit for bit where c holds no NaN (IEEE 754 multiplication commutes; the only NaN then
  is x's, or the one 0 · inf makes, the default NaN in either order; integers wrap alike). rknn's
  compiler never ends building a rotary embedding, q from a weight MatMul, Reshape and
  Transpose, times constant cos and sin tables, into a MatMul (LLaMA's and Qwen2's attention),
  and builds it with the tables first.
"""

from __future__ import annotations

import dataclasses
from collections import ChainMap, Counter
from collections.abc import Callable, Container, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from . import floats, schemas, value_ranges
from .branches_selected import both_branches_selected
from .builder import Builder, Value
from .cleanup import drop_left_unread
from .computed_ahead import computed_ahead
from .conversion.adapters import AdapterContext, adapter_for, attribute_of
from .errors import LoweringError, NotLowered
from .graphs import constant_tensor, held_graphs, nested_graphs, without_unread
from .integer_casts import WRAPPING_CAST_OPSET, may_wrap, wrapped_cast
from .ir_versions import unlisted_initializers_ir
from .modelio import checkable
from .naming import NameAllocator
from .node_forms import (
    WIDE,
    NodeForm,
    class_of_attribute,
    node_form,
    pads_over_half_the_window,
    source_of_outputs,
    valued_defaults,
)
from .nodecheck import checker_message
from .runtime_profiles import (
    DOUBTFUL,
    PARTLY,
    PAST_EDGES,
    REFUSED,
    SUPPORTED,
    UNVERIFIED,
    RuntimeProfile,
    TableProfile,
    load_profile,
)
from .scan_captures import scan_captures_passed_in
from .shape_folding import inferred_types, types_written
from .targets import DEFAULT_TARGET
from .value_kinds import (
    COPIED_LENGTH,
    NEGATIVE_INDICES,
    ONE_KEEPS_A_LENGTH,
    OUT_OF_RANGE_CAST,
    kinds_held,
)

Types = Mapping[str, onnx.TypeProto]  # the values' types, by name

# how good a verdict is for a node to keep: a form is chosen only where its verdict is better
_RANK = {REFUSED: 0, DOUBTFUL: 1, UNVERIFIED: 1, PARTLY: 2, SUPPORTED: 3}


@dataclass(frozen=True)
class FormChoice:
    """One choice: the op it applies to, whether it applies to a node (given the constants in
    scope by name), the node's form after it, the rewrite, and what the report says of it."""

    op_type: str
    applies: Callable[[onnx.NodeProto, dict[str, onnx.TensorProto], int], bool]
    form_after: Callable[[NodeForm], NodeForm]
    rewrite: Callable[[onnx.NodeProto], None]
    said: str


def _allowzero_changes_nothing(node: onnx.NodeProto, constants: dict[str, onnx.TensorProto], version: int) -> bool:
    """allowzero=1 on a Reshape whose shape is a constant holding no 0."""
    allowzero = next((a.i for a in node.attribute if a.name == "allowzero"), 0)
    if version < 14 or allowzero != 1 or len(node.input) < 2 or node.input[1] not in constants:
        return False
    shape = constants[node.input[1]]
    if shape.data_location == onnx.TensorProto.EXTERNAL:
        return False  # (not read here)
    return not (numpy_helper.to_array(shape) == 0).any()


def _without_allowzero(form: NodeForm) -> NodeForm:
    return dataclasses.replace(form, attributes=tuple((name, value) for name, value in form.attributes
                                                      if name != "allowzero"))  # fmt: skip


def _drop_allowzero(node: onnx.NodeProto) -> None:
    kept = [a for a in node.attribute if a.name != "allowzero"]
    del node.attribute[:]
    node.attribute.extend(kept)


def defaults_left_out(node: onnx.NodeProto, version: int) -> list[onnx.AttributeProto]:
    """The int and string attributes the schema of ``node``'s op at ``version`` gives a default
    and the node leaves out, each at that default (by name)."""
    own = {attribute.name for attribute in node.attribute}
    defaults = valued_defaults(schemas.schema_in_force(node.op_type, version))
    return [default for name, default in defaults.items() if name not in own]


def _at_default(schema: onnx.defs.OpSchema, attribute: onnx.AttributeProto) -> bool:
    """Whether ``attribute`` is an int or string one stated at the value ``schema`` defaults it to
    (not one a local function's node takes from its caller: it holds no value of its own)."""
    default = valued_defaults(schema).get(attribute.name)
    if attribute.ref_attr_name or default is None or default.type != attribute.type:
        return False
    return class_of_attribute(schema, attribute) == class_of_attribute(schema, default)


DEFAULTS_STATED_SAID = "int and string attributes left out stated at their defaults (the runtime reads them so)"
DEFAULTS_LEFT_OUT_SAID = "int and string attributes stated at their defaults left out (the runtime reads them so)"


def restated_defaults(node: onnx.NodeProto, opset: int, check_form) -> tuple[list[onnx.AttributeProto], str] | None:
    """The attributes the runtime judges ``node`` better with (``check_form``: the profile's
    verdict on the node in a form), and what the report says of them: its int and string
    attributes left out stated at their schema's defaults (onnx2torch reads a CumSum's
    ``reverse`` left out as 1, summing backwards, and stated 0 right), else those it states at
    their defaults left out (OpenVINO 2024.6 fails a GridSample stating ``mode='linear'``, and
    takes it left out); None where neither is better. Either way the node means the same: a
    default is what the op takes where the attribute is left out. Asked only of the op versions
    the profile reads otherwise stated or left out (``reads_stated_defaults_otherwise``); the
    stated form is better where the ``#stated`` twins of the cases nearest the node's form ran
    better than those cases (:meth:`RuntimeProfile.kinds_with_defaults_stated`), never judged
    by cases of other values."""
    version = schemas.version_in_force(node.op_type, opset) if node.domain in ("", "ai.onnx") else None
    if version is None or not check_form.profile.reads_stated_defaults_otherwise(node.op_type, version):
        return None
    schema = schemas.schema_in_force(node.op_type, version)
    stated = [*node.attribute, *defaults_left_out(node, version)]
    left_out = [attribute for attribute in node.attribute if not _at_default(schema, attribute)]
    before, form = check_form(node, None)
    for attributes, said in ((stated, DEFAULTS_STATED_SAID), (left_out, DEFAULTS_LEFT_OUT_SAID)):
        if len(attributes) == len(node.attribute):
            continue
        if said == DEFAULTS_STATED_SAID:  # (the nearest cases against their own twins, of the same values)
            type_name = element_type_name(node, check_form.types)
            kinds = check_form.profile.kinds_with_defaults_stated(node.op_type, version, type_name, form)
            better = kinds is not None and _RANK[kinds[1]] > _RANK[kinds[0]]
        else:
            classes = tuple(sorted((attribute.name, class_of_attribute(schema, attribute)) for attribute in attributes))
            after, _ = check_form(node, dataclasses.replace(form, attributes=classes))
            better = _RANK[after] > _RANK[before]
        if better:
            return [_copied(attribute) for attribute in attributes], said
    return None


def _copied(attribute: onnx.AttributeProto) -> onnx.AttributeProto:
    copy = onnx.AttributeProto()
    copy.CopyFrom(attribute)
    return copy


FORM_CHOICES = (
    FormChoice(
        "Reshape",
        _allowzero_changes_nothing,
        _without_allowzero,
        _drop_allowzero,
        "Reshape allowzero=1 -> 0 (its constant shape holds no 0)",
    ),
)


@dataclass(frozen=True)
class FormJudge:
    """``judge(node, form)``: the profile's verdict kind (for choosing forms) on a node at ``opset`` in ``form``
    (None: its own form, from the values' ``types``, which are ``fed``, ``constant`` and given
    by nodes), and that form."""

    profile: RuntimeProfile | TableProfile
    opset: int
    types: Mapping[str, onnx.TypeProto]
    fed: Container[str]
    constant: Container[str]
    node_constants: Container[str]

    def __call__(
        self, node: onnx.NodeProto, form: NodeForm | None, free_of: str = "", holding: str = ""
    ) -> tuple[str, NodeForm]:
        """(``free_of``, ``holding``: kinds of value the node is known never to be given, and to
        be given, as :meth:`RuntimeProfile.verdict` takes them: :func:`known_kinds`.)"""
        if form is None:
            shapes, element_types = shapes_and_types(node, self.types)
            form = node_form(node, self.opset, self.fed, self.constant, shapes, element_types, self.node_constants)
        version = schemas.version_in_force(node.op_type, self.opset)
        verdict = self.profile.verdict(
            node.op_type, version, element_type_name(node, self.types), form, free_of, holding
        )
        return verdict.kind_for_forms, form

    def for_function(self, function: onnx.FunctionProto) -> FormJudge:
        """The judge of a local function's nodes: its values' types are each call's, so none is
        known here; its inputs neither fed nor constant; its Constants' values constant, given
        by nodes (the main graph's facts, by name, are not its own)."""
        given = frozenset(name for node in function.node if constant_tensor(node) is not None for name in node.output)
        return FormJudge(self.profile, self.opset, {}, frozenset(), given, given)

    def with_nodes(self, nodes: list[onnx.NodeProto]) -> FormJudge:
        """This judge knowing the values ``nodes`` write too (nodes that would join the model):
        their types as onnx's inference gives them from the types known here, fed or constant
        as :func:`lowering.node_forms.value_sources` has them (a Constant's given by a node).
        The model's own facts are read through, not copied."""
        fed, constant, node_constants = set(), set(), set()
        for node in nodes:
            source = source_of_outputs(node, _Either(self.fed, fed), _Either(self.constant, constant))
            written = [name for name in node.output if name]
            if source == "fed":
                fed.update(written)
            elif source == "constant":
                constant.update(written)
                if node.op_type == "Constant":
                    node_constants.update(written)
        types = ChainMap(types_written(nodes, self.types, self.opset), self.types)
        return FormJudge(self.profile, self.opset, types, _Either(self.fed, fed), _Either(self.constant, constant),
                         _Either(self.node_constants, node_constants))  # fmt: skip


@dataclass(frozen=True)
class _Either:
    """The names in either of two collections."""

    first: Container[str]
    second: Container[str]

    def __contains__(self, name: object) -> bool:
        return name in self.first or name in self.second


def shapes_and_types(node: onnx.NodeProto, types: dict[str, onnx.TypeProto]) -> tuple[dict, dict]:
    """The shape (None: a dimension not a number) of each of the node's inputs, and of the
    outputs of the graphs it holds (an If's branches'), whose rank is known, and the element type
    of each input whose type is known."""
    shapes, element_types = {}, {}
    held = [info.name for a in node.attribute if a.type == onnx.AttributeProto.GRAPH for info in a.g.output]
    for name in [*node.input, *held]:
        type_proto = types.get(name) if name else None
        if type_proto is not None and type_proto.WhichOneof("value") == "tensor_type":
            if name in node.input:
                element_types[name] = type_proto.tensor_type.elem_type
            if type_proto.tensor_type.HasField("shape"):
                dims = type_proto.tensor_type.shape.dim
                shapes[name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)
    return shapes, element_types


def element_type_name(node: onnx.NodeProto, types: dict[str, onnx.TypeProto]) -> str:
    """The element type of the node's first typed input (its first output where none), as
    onnx spells it ("FLOAT"); "" where unknown."""
    for name in [*node.input, *node.output]:
        type_proto = types.get(name) if name else None
        if type_proto is not None and type_proto.WhichOneof("value") == "tensor_type":
            element_type = type_proto.tensor_type.elem_type
            if element_type:
                return onnx.helper.tensor_dtype_to_string(element_type).removeprefix("TensorProto.")
    return ""


@dataclass(frozen=True)
class OpChoice:
    """A node rewritten into nodes (of other ops, or the same op with other inputs) that mean
    the same on every input, where the runtime judges each of them better than the node: the
    op it applies to, whether it applies to a node (given its form, op version, the constants
    in scope and the values' types by name), the nodes that replace it (the last one gives its
    outputs; given fresh names and the opset; None where it cannot be replaced after all), the form of
    that last node where it is of the same op (None: each node judged by its own form), what
    the report says of it, and whether each node must be judged supported (not only better:
    unverified, on a type the probe never saw, is better than refused, and proves nothing), and
    not refused by onnxruntime's CPU provider either, which every lowered model must run in;
    ``writes``: per node, the ops of the nodes that would replace it whose versions decide
    whether the runtime runs them, where one opset may run them and another not (a pool's Pad:
    onnx2torch runs Pad-13, not Pad-18), so that the opsets a target may take are told apart by
    them too; none for a node whose attributes the choice cannot apply to; ``free_of``: a kind of
    value the last node is never given (its indices made non-negative), judged so."""

    op_type: str
    applies: Callable[[onnx.NodeProto, NodeForm, int, Mapping[str, onnx.TensorProto], Types], bool]
    replacement: Callable[
        [onnx.NodeProto, NodeForm, Mapping[str, onnx.TensorProto], NameAllocator, int, Types],
        list[onnx.NodeProto] | None,
    ]
    form_after: Callable[[NodeForm], NodeForm] | None
    said: str
    supported_only: bool = False
    writes: Callable[[onnx.NodeProto], frozenset[str]] = lambda node: frozenset()
    free_of: str = ""  # a kind of value the last node is never given (RuntimeProfile.verdict's free_of)
    # only for nodes of the main graph (the types of a nested graph's values are merged by name
    # across sibling graphs, which may reuse one: a choice that relies on their shapes cannot there)
    main_graph_only: bool = False
    # whether every integer the nodes before the last are given lies within ±2^24 (judged free of PAST_EDGES)
    within_edges: Callable[[onnx.NodeProto, Types], bool] = lambda node, types: False


def _two_inputs_of(node: onnx.NodeProto, form: NodeForm, element_type: int) -> bool:
    """Whether the node takes two inputs, both typed ``element_type``."""
    return len(node.input) == 2 and len(form.types) == 2 and all(each == element_type for _, each in form.types)


def _inputs_cast(node: onnx.NodeProto, names: NameAllocator, to: int, hint: str) -> tuple[list, list[str]]:
    """Cast(x, to) of each input x of the node: the Casts, and the names of what they give
    (x's name and ``hint``, fresh)."""
    casts, cast_names = [], []
    for name in node.input:
        cast = names.fresh(f"{name}_{hint}")
        label = names.fresh(f"{node.name or node.op_type}_Cast")
        casts.append(onnx.helper.make_node("Cast", [name], [cast], name=label, to=to))
        cast_names.append(cast)
    return casts, cast_names


def _of_two_bools(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """Equal, And or Or broadcasting by numpy's rule (7+) of two bool tensors."""
    return (
        version >= 7
        and len(node.input) == 2
        and bool(form.types)
        and all(element_type == onnx.TensorProto.BOOL for _, element_type in form.types)
    )


def _xor_not(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types) -> list:
    """Equal(a, b) = Xor(a, Not(b)) on bools, broadcast alike."""
    a, b = node.input
    negated = names.fresh(f"{b}_negated")
    return [
        onnx.helper.make_node("Not", [b], [negated], name=names.fresh(f"{node.name or 'Equal'}_Not")),
        onnx.helper.make_node("Xor", [a, negated], list(node.output), name=node.name),
    ]


def _counted_bools(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types):
    """And(a, b) = Cast(Mul(Cast(a, int32), Cast(b, int32)), bool) and Or(a, b) = Cast(Add(...),
    bool) on bools: true and false are 1 and 0, their product (sum) 1 (nonzero) exactly where
    both are (either is) true, and a nonzero int32 casts to true; Mul and Add broadcast as And
    and Or do."""
    counted = []
    made = []
    for operand in node.input:
        count = names.fresh(f"{operand}_as_int32")
        cast_name = names.fresh(f"{node.name or node.op_type}_Cast")
        made.append(onnx.helper.make_node("Cast", [operand], [count], name=cast_name, to=onnx.TensorProto.INT32))
        counted.append(count)
    combined = names.fresh(f"{node.output[0]}_counted")
    arithmetic = "Mul" if node.op_type == "And" else "Add"
    made.append(
        onnx.helper.make_node(
            arithmetic, counted, [combined], name=names.fresh(f"{node.name or node.op_type}_{arithmetic}")
        )
    )
    made.append(onnx.helper.make_node("Cast", [combined], list(node.output), name=node.name, to=onnx.TensorProto.BOOL))
    return made


def _filled_shape(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """ConstantOfShape (9+) of one input."""
    return version >= 9 and len(node.input) == 1 and bool(node.input[0])


def _expanded_scalar(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types):
    """ConstantOfShape(shape) with ``value`` v (a one-element tensor; 0.0 as float where none) =
    Expand(s, shape), s the scalar of v's element: a scalar broadcasts to every shape, the empty
    one too, and Expand copies its bits. None below opset 8 (no Expand)."""
    if schemas.version_in_force("Expand", opset) is None:
        return None
    given = next((a.t for a in node.attribute if a.name == "value"), None)
    value = numpy_helper.to_array(given) if given is not None else np.zeros(1, np.float32)
    if value.size != 1:
        return None
    scalar = names.fresh(f"{node.output[0]}_fill")
    tensor = numpy_helper.from_array(value.reshape(()), scalar)
    if given is not None and given.data_type != tensor.data_type:  # (a type numpy holds otherwise)
        return None
    if tensor.data_type not in schemas.input_element_types("Expand", opset):  # (float8, int4: no Expand)
        return None
    return [
        onnx.helper.make_node("Constant", [], [scalar], name=names.fresh(f"{node.name or 'ConstantOfShape'}_fill"),
                              value=tensor),
        onnx.helper.make_node("Expand", [scalar, node.input[0]], list(node.output), name=node.name),
    ]  # fmt: skip


def _extreme_of_two_integers(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """Max or Min broadcasting by numpy's rule (8+) of two int64 tensors. Only int64: a Where is
    judged by its condition's type (its first input's, bool), so the probe says nothing of the
    type it selects, and int64 is the one its cases select (test_where_long_example);
    onnxruntime's Where takes no int16, for one."""
    return version >= 8 and _two_inputs_of(node, form, onnx.TensorProto.INT64)


def _where_less(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types):
    """Max(a, b) = Where(Less(a, b), b, a) and Min(a, b) = Where(Less(b, a), b, a) on integers,
    which are totally ordered (no NaN, no signed zero): the larger (smaller) of each pair, a
    where they are equal; Where broadcasts as Max and Min do. None below opset 9 (no Where)."""
    if schemas.version_in_force("Where", opset) is None:
        return None
    a, b = node.input
    first_less = names.fresh(f"{node.output[0]}_less")
    ordered = [a, b] if node.op_type == "Max" else [b, a]
    return [
        onnx.helper.make_node("Less", ordered, [first_less], name=names.fresh(f"{node.name or node.op_type}_Less")),
        onnx.helper.make_node("Where", [first_less, b, a], list(node.output), name=node.name),
    ]


def _of_two_uint64s(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """Less or Greater broadcasting by numpy's rule of two uint64 tensors, at a version in force
    where Cast wraps (13 on: :data:`lowering.integer_casts.WRAPPING_CAST_OPSET`)."""
    return version >= WRAPPING_CAST_OPSET and _two_inputs_of(node, form, onnx.TensorProto.UINT64)


def _signed_comparison(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types):
    """Less(a, b) on uint64 = Xor(Less(a', b'), Xor(Less(a', 0), Less(b', 0))), a' and b' =
    Cast(·, int64): the same bits, signed (Cast-13 on wraps modulo 2^64). Where the top bits
    agree the signed order is the unsigned one; where they differ (a' and b' of other signs, so
    unequal) it is the reverse. Greater(a, b) = Less(b, a). No Where: onnxruntime selects no
    bool. None below opset 13 (Cast-13 on keeps the low 64 bits, the only ones there are)."""
    if opset < WRAPPING_CAST_OPSET:
        return None
    prefix = node.name or node.op_type
    made, signed = _inputs_cast(node, names, onnx.TensorProto.INT64, "int64")
    zero = names.fresh(f"{node.output[0]}_zero")
    made.append(onnx.helper.make_node("Constant", [], [zero], name=names.fresh(f"{prefix}_zero"),
                                      value=numpy_helper.from_array(np.array(0, np.int64), zero)))  # fmt: skip
    low, high = signed if node.op_type == "Less" else signed[::-1]  # (Greater(a, b) = Less(b, a))
    low_top, high_top, differ, ordered = (names.fresh(f"{node.output[0]}_{hint}") for hint in
                                          ("low_top", "high_top", "tops_differ", "signed_less"))  # fmt: skip
    return [
        *made,
        onnx.helper.make_node("Less", [low, zero], [low_top], name=names.fresh(f"{prefix}_Less")),
        onnx.helper.make_node("Less", [high, zero], [high_top], name=names.fresh(f"{prefix}_Less")),
        onnx.helper.make_node("Xor", [low_top, high_top], [differ], name=names.fresh(f"{prefix}_Xor")),
        onnx.helper.make_node("Less", [low, high], [ordered], name=names.fresh(f"{prefix}_Less")),
        onnx.helper.make_node("Xor", [ordered, differ], list(node.output), name=node.name),
    ]


# Expand (8) and the int64 Constant of its shape (Constant-9 holds int64) exist from this opset
ROW_FIRST_OPSET = schemas.first_opset_writing(("Constant", "Expand"), int64_constants=True)


def _bias_of_one_row_at_most(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """Gemm (7+) given a bias C of rank 0 or 1, B's shape known (so the output's columns N): C
    broadcast unidirectionally to the output's [M, N]."""
    if len(node.input) < 3 or not node.input[2] or version < 7:
        return False
    return dict(form.ranks).get(2) in (0, 1) and _gemm_columns(node, constants, types) is not None


def _gemm_columns(node: onnx.NodeProto, constants, types) -> int | None:
    """N, the columns of Gemm's output: B's second dimension (its first where transB), where known."""
    b = constants.get(node.input[1])
    dims = tuple(b.dims) if b is not None else shapes_and_types(node, types)[0].get(node.input[1])
    if dims is None or len(dims) != 2:
        return None
    columns = dims[0] if attribute_of(node, "transB") else dims[1]
    return columns if isinstance(columns, int) and columns > 0 else None


def _bias_as_a_row(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types):
    """Gemm(A, B, C) of C of rank 0 or 1 = Gemm(A, B, Expand(C, [1, N])): C reaches the output's
    [M, N] by broadcasting either way, so the row holds C's values where the broadcast reads them
    (no arithmetic moves). None below opset 9 (Expand, and a Constant of int64)."""
    if opset < ROW_FIRST_OPSET:
        return None
    columns = _gemm_columns(node, constants, types)
    prefix = node.name or node.op_type
    shape, row = names.fresh(f"{node.input[2]}_row_shape"), names.fresh(f"{node.input[2]}_row")
    tensor = numpy_helper.from_array(np.array([1, columns], np.int64), shape)
    gemm = onnx.NodeProto()
    gemm.CopyFrom(node)
    gemm.input[2] = row
    return [
        onnx.helper.make_node("Constant", [], [shape], name=names.fresh(f"{prefix}_Constant"), value=tensor),
        onnx.helper.make_node("Expand", [node.input[2], shape], [row], name=names.fresh(f"{prefix}_Expand")),
        gemm,
    ]


def _pads_of_named_axes(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """Pad (18+) given its axes, its pads and axes constants (none of them external), the
    data's rank known, the axes in range and each named once."""
    if version < 18 or len(node.input) < 4 or not node.input[3]:
        return False
    rank = dict(form.ranks).get(0)
    pads, axes = constants.get(node.input[1]), constants.get(node.input[3])
    if rank is None or pads is None or axes is None:
        return False
    if onnx.TensorProto.EXTERNAL in (pads.data_location, axes.data_location):
        return False
    named = numpy_helper.to_array(axes).reshape(-1).astype(np.int64)
    if ((named < -rank) | (named >= rank)).any():
        return False
    named = named % rank if rank else named
    return len(set(named.tolist())) == named.size and numpy_helper.to_array(pads).size == 2 * named.size


def _pads_over_every_axis(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list:
    """Pad(x, pads, value, axes) = Pad(x, pads', value): pads' gives every axis of x its begin and
    end (those of pads for the axes named, 0 for the others), as Pad's definition pads them."""
    rank = dict(form.ranks)[0]
    named = numpy_helper.to_array(constants[node.input[3]]).reshape(-1).astype(np.int64) % rank
    pads = numpy_helper.to_array(constants[node.input[1]]).reshape(-1).astype(np.int64)
    every = np.zeros(2 * rank, np.int64)
    every[named], every[rank + named] = pads[: named.size], pads[named.size :]
    name = names.fresh(f"{node.input[1]}_every_axis")
    constant = onnx.helper.make_node(
        "Constant", [], [name], name=names.fresh(f"{name}_Constant"), value=numpy_helper.from_array(every, name)
    )
    padded = onnx.NodeProto()
    padded.CopyFrom(node)
    padded.input[1] = name
    del padded.input[3:]
    while padded.input and not padded.input[-1]:  # (a value left out at the end is no input)
        del padded.input[-1]
    return [constant, padded]


def _without_axes(form: NodeForm) -> NodeForm:
    """A Pad's form without its axes input (position 3), its pads given by a node."""

    def kept(positions):
        return frozenset(p for p in positions if p != 3)

    def kept_pairs(pairs):
        return tuple(pair for pair in pairs if pair[0] != 3)

    return dataclasses.replace(
        form, inputs=kept(form.inputs), fed=kept(form.fed), constant=kept(form.constant), ranks=kept_pairs(form.ranks),
        empty=kept(form.empty), types=kept_pairs(form.types), from_nodes=kept(form.from_nodes) | {1},
    )  # fmt: skip


def _shift_of_version_28(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """BitShift-28 of a known element type."""
    return version >= 28 and 0 in dict(form.types)


def _shift_in_unsigned_carrier(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list | None:
    """BitShift-28 by the nodes its version adapter down to 11 writes, at the node's own opset:
    a shift of an unsigned carrier by amounts in range (rules/versions/bitshift.py), which
    versions 11 and 28 define alike; None where the adapter declines."""
    return _as_its_adapter_writes(node, form, constants, names, opset, adapter_for("BitShift", 28, 11))


def _floored_remainder_on_floats(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """Mod-28 with ``fmod=0`` (the floored remainder, which version 28 defines on floats) of a
    float type."""
    element_type = dict(form.types).get(0)
    return (
        version >= 28 and not attribute_of(node, "fmod") and element_type is not None and floats.is_float(element_type)
    )


def _floored_from_truncated(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list | None:
    """Mod-28(a, b, fmod=0) on floats by the nodes its version adapter down to 27 writes, at the
    node's own opset: the truncated remainder Mod(a, b, fmod=1), moved by b where it is nonzero
    and of the other sign, given b's sign, a NaN found by Equal(Equal(r, r), false) passed on
    (rules/versions/type_lists.py); None where the adapter declines."""
    return _as_its_adapter_writes(node, form, constants, names, opset, adapter_for("Mod", 28, 27))


def _floored_from_truncated_by_isnan(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list | None:
    """The same, a NaN found by IsNaN(r): the nodes the adapter writes asked as if for the newest
    opset whose Equal takes no values of the node's type (10 for float16, float and double), where
    it finds NaN so (TVM fails an Equal of bools); None where the adapter declines there (Mod-10
    takes no bfloat16)."""
    element_type = dict(form.types).get(0)
    if element_type is None:
        return None
    before_equal = next((o for o in range(opset, 0, -1) if not schemas.accepts("Equal", o, element_type)), None)
    if before_equal is None:
        return None
    registered = adapter_for("Mod", 28, before_equal)
    return _as_its_adapter_writes(node, form, constants, names, opset, registered, as_if_for=before_equal)


def _as_its_adapter_writes(
    node: onnx.NodeProto,
    form: NodeForm,
    constants,
    names: NameAllocator,
    opset: int,
    registered,
    as_if_for: int | None = None,
    types: Types | None = None,
) -> list | None:
    """The nodes the version adapter ``registered`` writes for ``node``, asked to go from the
    node's own opset to that very opset (or to ``as_if_for``; each input typed by the node's
    form, or as ``types`` gives it, shapes and all); None where there is no such adapter or it
    declines."""
    if registered is None:
        return None
    element_types, ranks = dict(form.types), dict(form.ranks)

    def type_of(name: str) -> onnx.TypeProto | None:
        positions = [k for k, given in enumerate(node.input) if given == name and k in element_types]
        if not positions:
            return None
        rank = ranks.get(positions[0])
        return onnx.helper.make_tensor_type_proto(element_types[positions[0]], None if rank is None else [None] * rank)

    typed = type_of if types is None else types.get
    context = AdapterContext(opset, opset if as_if_for is None else as_if_for, names, typed, constants.get)
    try:
        return registered.function(node, context)
    except (LoweringError, NotLowered):
        return None


def _spatial_sizes(node: onnx.NodeProto, types: Types) -> list[int] | None:
    """The sizes of the pooled axes of the node's input (all but the first two), where all known
    and none 0."""
    shape = shapes_and_types(node, types)[0].get(node.input[0]) if node.input else None
    if not shape or len(shape) < 3 or any(size is None or size < 1 for size in shape[2:]):
        return None  # (an empty axis: no window to state)
    return list(shape[2:])


def _floor_mode_ends(node: onnx.NodeProto, types: Types) -> list[int] | None:
    """The end pads under which MaxPool-22 with ``ceil_mode=0`` makes the windows the node makes
    with ``ceil_mode=1`` (explicit pads, no dilation): along an axis of size n, kernel k, stride
    s, pads b and e, the node makes c = ⌈(n + b + e - k) / s⌉ + 1 windows, less the last where it
    would start in the right padding ((c - 1)·s ≥ n + b); ⌊(n + b + e' - k) / s⌋ + 1 = c for
    e' = max(0, (c - 1)·s + k - n - b), the windows starting where they did. A max never takes
    a padded element, and every window starts inside x or its left padding (b < k), so each
    holds the same elements. None where an e' would reach a whole kernel (e' < k, as
    onnxruntime asks) or the floor does not count c."""
    sizes, kernel = _spatial_sizes(node, types), attribute_of(node, "kernel_shape")
    if sizes is None or kernel is None or len(kernel) != len(sizes):
        return None
    axes = len(sizes)
    strides = attribute_of(node, "strides") or [1] * axes
    pads = attribute_of(node, "pads") or [0] * (2 * axes)
    if len(strides) != axes or len(pads) != 2 * axes:
        return None
    ends = []
    for n, k, s, b, e in zip(sizes, kernel, strides, pads[:axes], pads[axes:], strict=True):
        if b >= k or e >= k or s < 1:
            return None
        count = -(-(n + b + e - k) // s) + 1
        if (count - 1) * s >= n + b:
            count -= 1
        end = max(0, (count - 1) * s + k - n - b)
        if end >= k or (n + b + end - k) // s + 1 != count:
            return None
        ends.append(end)
    return ends


def _ceil_windows_of_version_22(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """MaxPool-22 with ``ceil_mode=1``, explicit pads (auto_pad NOTSET), no dilation, and the
    sizes of its input's pooled axes known."""
    dilations = attribute_of(node, "dilations")
    return (
        version >= 22
        and attribute_of(node, "ceil_mode") == 1
        and attribute_of(node, "auto_pad") in (None, b"NOTSET")
        and (dilations is None or set(dilations) <= {1})
        and _floor_mode_ends(node, types) is not None
    )


def _pool_in_floor_mode(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list[onnx.NodeProto]:
    """MaxPool(x, ceil_mode=1, pads b, e) = MaxPool(x, ceil_mode=0, pads b, e'), e' of
    :func:`_floor_mode_ends`: the same windows, so the same maxima and indices."""
    ends = _floor_mode_ends(node, types)
    begins = (attribute_of(node, "pads") or [0] * (2 * len(ends)))[: len(ends)]
    pooled = onnx.NodeProto()
    pooled.CopyFrom(node)
    kept = [a for a in pooled.attribute if a.name not in ("ceil_mode", "pads")]
    del pooled.attribute[:]
    pooled.attribute.extend(kept)
    if any(begins) or any(ends):
        pooled.attribute.append(onnx.helper.make_attribute("pads", [*begins, *ends]))
    return [pooled]


def _explicit_pads(node: onnx.NodeProto, types: Types) -> list[int] | None:
    """The pads under which a pooling with ``auto_pad`` SAME_UPPER, SAME_LOWER or VALID (no
    dilation, ``ceil_mode=0``) makes the same windows with ``auto_pad`` NOTSET: along an axis of
    size n, kernel k and stride s, SAME makes c = ⌈n / s⌉ windows, padded by t = (c - 1)·s + k - n
    in all, ⌊t / 2⌋ at the begin for SAME_UPPER (the odd one at the end) and ⌈t / 2⌉ for
    SAME_LOWER; explicit pads b, e make ⌊(n + t - k) / s⌋ + 1 = c windows starting at -b, the same
    ones. VALID pads nothing. None where a size is unknown or a t is negative (the last window
    would end before x does: onnxruntime then pads by a negative amount, which explicit pads
    cannot state). An odd t pads one end more: such pads are a form of their own
    (:data:`lowering.node_forms.UNEVEN`), which the probes' ``uneven_*`` cases judge (onnx2torch
    pools no AveragePool-7 to -11 so)."""
    mode = attribute_of(node, "auto_pad")
    sizes, kernel = _spatial_sizes(node, types), attribute_of(node, "kernel_shape")
    if sizes is None or kernel is None or len(kernel) != len(sizes):
        return None
    strides = attribute_of(node, "strides") or [1] * len(sizes)
    if len(strides) != len(sizes) or min(strides) < 1:
        return None
    if mode == b"VALID":
        return [0] * (2 * len(sizes))
    totals = [(-(-n // s) - 1) * s + k - n for n, k, s in zip(sizes, kernel, strides, strict=True)]
    if min(totals) < 0:
        return None
    begins = [t // 2 if mode == b"SAME_UPPER" else t - t // 2 for t in totals]
    return [*begins, *(t - b for t, b in zip(totals, begins, strict=True))]


def _auto_padded_pool(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """An AveragePool or MaxPool with ``auto_pad`` SAME_UPPER, SAME_LOWER or VALID, no ``pads``
    beside it, no dilation, ``ceil_mode=0``, and pads :func:`_explicit_pads` can state."""
    dilations = attribute_of(node, "dilations")
    return (
        attribute_of(node, "auto_pad") in (b"SAME_UPPER", b"SAME_LOWER", b"VALID")
        and attribute_of(node, "pads") is None
        and not attribute_of(node, "ceil_mode")
        and (dilations is None or set(dilations) <= {1})
        and _explicit_pads(node, types) is not None
    )


def _pool_with_explicit_pads(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list[onnx.NodeProto]:
    """Pool(x, auto_pad) = Pool(x, pads) of :func:`_explicit_pads`: the same windows, so the same
    maxima (and indices, which count in x unpadded) or averages (over the same elements, padding
    counted as ``count_include_pad`` says in either form)."""
    pads = _explicit_pads(node, types)
    pooled = onnx.NodeProto()
    pooled.CopyFrom(node)
    kept = [a for a in pooled.attribute if a.name != "auto_pad"]
    del pooled.attribute[:]
    pooled.attribute.extend(kept)
    if any(pads):
        pooled.attribute.append(onnx.helper.make_attribute("pads", pads))
    return [pooled]


def _dilated_pool(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """An AveragePool (19+) or LpPool (18+) with a dilation other than 1, its input's pooled
    sizes known."""
    dilations = attribute_of(node, "dilations")
    return dilations is not None and set(dilations) != {1} and _spatial_sizes(node, types) is not None


def _dilated_windows_gathered(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list[onnx.NodeProto] | None:
    """Pool(x, dilations=d) = Pool(Gather(Pad(x, 0), i), kernel=K, strides=K), i = o·s + k·d - b
    per axis: the nodes the pool's version adapter writes going to the opset before the version
    that added dilations (``rules/versions/pool.py``, ``dilated_windows_gathered``), at the
    node's own opset: each window's elements gathered side by side, in order, pooled as they
    were (Pad and Gather only move values); None where the adapter declines (a window it cannot
    count so, auto_pad SAME)."""
    before = schemas.first_opset_with_attribute(node.op_type, "dilations") - 1  # (AveragePool: 18; LpPool: 17)
    version, undilated = schemas.version_in_force(node.op_type, opset), schemas.version_in_force(node.op_type, before)
    registered = adapter_for(node.op_type, version, undilated) if undilated is not None else None
    return _as_its_adapter_writes(node, form, constants, names, opset, registered, as_if_for=before, types=types)


def _globally_pooled(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """A GlobalMaxPool whose input's spatial sizes are known."""
    return _spatial_sizes(node, types) is not None


def _pooled_over_everything(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list[onnx.NodeProto]:
    """GlobalMaxPool(x) = MaxPool(x, kernel_shape = x's spatial sizes): one window, the whole of
    each channel, so the same maximum (onnxruntime pools both in one kernel: NaN, inf and ±0
    alike, bit for bit)."""
    sizes = _spatial_sizes(node, types)
    return [onnx.helper.make_node("MaxPool", list(node.input), list(node.output), name=node.name, kernel_shape=sizes)]


def _transpose_pads(node: onnx.NodeProto, types: Types) -> tuple[list[int], list[int]] | None:
    """(pads, output_padding) under which a ConvTranspose (11+) with ``output_shape``, or with
    ``auto_pad`` SAME_UPPER, SAME_LOWER or VALID, gives the same output with both stated: along an
    axis of size n, kernel k, stride s, dilation d and output_padding a, the full length is
    L = s·(n - 1) + a + (k - 1)·d + 1; an output length o (``output_shape``'s; SAME's n·s) pads it
    by t = L - o in all, ⌊t / 2⌋ at the begin for SAME_UPPER and ⌈t / 2⌉ otherwise (ONNX's
    formula); an o past L (a negative t, given by ``output_shape``) is -t more output_padding,
    where a - t stays below s; VALID pads nothing. None where a size is unknown, where SAME's t is
    negative (onnxruntime then gives L, not n·s as ONNX says), where ``output_shape`` names other
    than the spatial axes, or where the node states ``pads`` too."""
    mode = attribute_of(node, "auto_pad") or b"NOTSET"
    output_shape = attribute_of(node, "output_shape")
    if attribute_of(node, "pads") is not None or (output_shape is None and mode == b"NOTSET"):
        return None
    sizes = _spatial_sizes(node, types)
    weights = shapes_and_types(node, types)[0].get(node.input[1]) if len(node.input) > 1 else None
    kernel = attribute_of(node, "kernel_shape") or (list(weights[2:]) if weights else None)
    if sizes is None or kernel is None or len(kernel) != len(sizes) or None in kernel:
        return None
    rank = len(sizes)
    strides = attribute_of(node, "strides") or [1] * rank
    dilations = attribute_of(node, "dilations") or [1] * rank
    added = attribute_of(node, "output_padding") or [0] * rank
    if len(strides) != rank or len(dilations) != rank or len(added) != rank or min(strides) < 1:
        return None
    axes = zip(sizes, kernel, strides, dilations, added, strict=True)
    full = [s * (n - 1) + a + (k - 1) * d + 1 for n, k, s, d, a in axes]
    if output_shape is not None:
        if len(output_shape) != rank:
            return None
        wanted = list(output_shape)
    elif mode == b"VALID":
        wanted = full
    else:
        wanted = [n * s for n, s in zip(sizes, strides, strict=True)]
    totals = [length - o for length, o in zip(full, wanted, strict=True)]
    if output_shape is None and min(totals) < 0:
        return None
    paddings = [a - min(t, 0) for a, t in zip(added, totals, strict=True)]
    if any(a >= s for a, s in zip(paddings, strides, strict=True) if a != 0):
        return None
    totals = [max(t, 0) for t in totals]
    begins = [t // 2 if mode == b"SAME_UPPER" else t - t // 2 for t in totals]
    return [*begins, *(t - b for t, b in zip(totals, begins, strict=True))], paddings


def _implicitly_padded_transpose(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """A ConvTranspose (11+) with ``output_shape`` or ``auto_pad`` SAME or VALID whose pads
    :func:`_transpose_pads` can state."""
    return version >= 11 and _transpose_pads(node, types) is not None


def _transpose_with_explicit_pads(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list[onnx.NodeProto]:
    """ConvTranspose(x, W, output_shape | auto_pad) = ConvTranspose(x, W, pads, output_padding) of
    :func:`_transpose_pads`: the same full output, cut the same way, so the same sums."""
    pads, paddings = _transpose_pads(node, types)
    transposed = onnx.NodeProto()
    transposed.CopyFrom(node)
    kept = [a for a in transposed.attribute if a.name not in ("auto_pad", "output_shape", "output_padding")]
    del transposed.attribute[:]
    transposed.attribute.extend(kept)
    if any(pads):
        transposed.attribute.append(onnx.helper.make_attribute("pads", pads))
    if any(paddings):
        transposed.attribute.append(onnx.helper.make_attribute("output_padding", paddings))
    return [transposed]


# The value a Pad fills a pooling's padding with, by op and element type, where that leaves every
# window's value as the padded pooling gives it: a max never takes the type's least value (a
# window also holds an element of x, and max(S ∪ {min}) = max(S) on integers); count_include_pad=1
# counts the padding as zeros, +0.0 (onnxruntime's padded kernel gives +0.0 for a window of -0.0
# and padding: a -0.0 would keep the sum's sign); |0|^p adds nothing to a p-norm of p >= 1. Not
# MaxPool on floats: onnxruntime's padded kernel and its unpadded one take NaNs otherwise (of
# [NaN, 2] padded by 3 before, kernel 5, the padded kernel gives 2 and the unpadded one NaN),
# which no Pad reproduces; not the types onnxruntime pools none of (bfloat16, double), whose bits
# nothing here can check.
_PADDING_VALUES = {
    "MaxPool": {onnx.TensorProto.INT8: -128, onnx.TensorProto.UINT8: 0},
    "AveragePool": {onnx.TensorProto.FLOAT: 0.0, onnx.TensorProto.FLOAT16: 0.0},
    "LpPool": {onnx.TensorProto.FLOAT: 0.0, onnx.TensorProto.FLOAT16: 0.0},
}


def _padding_value(op_type: str, element_type: int | None) -> onnx.TensorProto | None:
    """The scalar a Pad fills a pooling's padding with (:data:`_PADDING_VALUES`); None for a
    type of none."""
    value = _PADDING_VALUES[op_type].get(element_type)
    return None if value is None else onnx.helper.make_tensor("value", element_type, [], [value])


def _padded_wide_as_a_pad_can_stand_for(node: onnx.NodeProto) -> bool:
    """Whether a pooling's attributes let a Pad stand for its padding: pads over half the window
    (:func:`lowering.node_forms.pads_over_half_the_window`), each of them at least 0 and less
    than the kernel, explicit (auto_pad NOTSET), no dilation, ``ceil_mode=0``; AveragePool
    counting the padding (``count_include_pad=1``), MaxPool's Indices not asked for, LpPool's
    p at least 1 (0^p is 1 for p = 0, inf below)."""
    if node.op_type not in _PADDING_VALUES or not pads_over_half_the_window(node):
        return False
    kernel, pads = attribute_of(node, "kernel_shape"), attribute_of(node, "pads")
    dilations = attribute_of(node, "dilations")
    p = attribute_of(node, "p")
    return (
        attribute_of(node, "auto_pad") in (None, b"NOTSET")
        and not attribute_of(node, "ceil_mode")
        and (dilations is None or set(dilations) <= {1})
        and (node.op_type != "AveragePool" or attribute_of(node, "count_include_pad") == 1)
        and not (node.op_type == "MaxPool" and len(node.output) > 1 and node.output[1])
        and (node.op_type != "LpPool" or p is None or p >= 1)
        and all(0 <= pad < k for pad, k in zip(pads, [*kernel, *kernel], strict=True))
    )


def _pool_padded_wide(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """An AveragePool, MaxPool or LpPool padded by more than half its window (its form's pads
    :data:`lowering.node_forms.WIDE`) whose padding a Pad can stand for
    (:func:`_padded_wide_as_a_pad_can_stand_for`), its input's element type known and one a Pad
    can fill (:func:`_padding_value`)."""
    element_type = shapes_and_types(node, types)[1].get(node.input[0]) if node.input else None
    return (
        dict(form.attributes).get("pads") == WIDE
        and _padded_wide_as_a_pad_can_stand_for(node)
        and _padding_value(node.op_type, element_type) is not None
    )


def _pad_where_padded_wide(node: onnx.NodeProto) -> frozenset[str]:
    """The Pad a pooling would be written with where its attributes let one stand for its
    padding (its element type aside)."""
    return frozenset({"Pad"}) if _padded_wide_as_a_pad_can_stand_for(node) else frozenset()


def _pool_of_padded(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list[onnx.NodeProto] | None:
    """Pool(x, pads b, e) = Pool(Pad(x, [0, 0, b, 0, 0, e], v)), v of :func:`_padding_value`:
    with no dilation and each pad less than the kernel, every window of the floor mode holds an
    element of x and starts where it did, and v leaves its max, sum or p-norm as it was; the
    divisor of count_include_pad=1 is the kernel's size either way (``count_include_pad`` is
    left out: nothing is padded). None below opset 11 (Pad takes its pads as an attribute)."""
    if schemas.version_in_force("Pad", opset) < 11:
        return None
    pads = attribute_of(node, "pads")
    axes = len(pads) // 2
    element_type = shapes_and_types(node, types)[1][node.input[0]]
    begins, ends = [0, 0, *pads[:axes]], [0, 0, *pads[axes:]]
    stem = node.output[0]
    pads_name, value_name, padded = (names.fresh(f"{stem}_{part}") for part in ("pads", "padding", "padded"))
    value = _padding_value(node.op_type, element_type)
    value.name = value_name
    made = [
        onnx.helper.make_node("Constant", [], [pads_name], name=names.fresh(f"{pads_name}_Constant"),
                              value=numpy_helper.from_array(np.array(begins + ends, np.int64), pads_name)),
        onnx.helper.make_node("Constant", [], [value_name], name=names.fresh(f"{value_name}_Constant"), value=value),
        onnx.helper.make_node("Pad", [node.input[0], pads_name, value_name], [padded],
                              name=names.fresh(f"{node.name or node.op_type}_Pad")),
    ]  # fmt: skip
    pooled = onnx.NodeProto()
    pooled.CopyFrom(node)
    pooled.input[0] = padded
    kept = [a for a in pooled.attribute if a.name not in ("pads", "count_include_pad")]
    del pooled.attribute[:]
    pooled.attribute.extend(kept)
    return [*made, pooled]


def _reshape_to_a_scalar(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """Reshape to the empty shape (a constant), a scalar, of a tensor whose every dimension is
    known to be 1 (one element; a scalar itself where it has none)."""
    shape = constants.get(node.input[1]) if len(node.input) > 1 else None
    if shape is None or list(shape.dims) != [0]:
        return False
    dims = shapes_and_types(node, types)[0].get(node.input[0])
    return dims is not None and all(size == 1 for size in dims)


def _squeezed(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types) -> list:
    """Reshape(x, []) = Squeeze(x), x of one element: Squeeze without axes drops every dimension
    of size 1, which is each of x's, leaving the scalar; Identity(x) where x is a scalar already."""
    scalar = shapes_and_types(node, types)[0].get(node.input[0]) == ()
    op_type = "Identity" if scalar else "Squeeze"
    return [onnx.helper.make_node(op_type, [node.input[0]], list(node.output), name=node.name)]


def _reading(node: onnx.NodeProto, position: int, name: str) -> onnx.NodeProto:
    """A copy of ``node`` reading ``name`` as its input at ``position``."""
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    copy.input[position] = name
    return copy


def _copies_a_length(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """A Reshape (5+) whose constant shape holds a 0 that copies the input's length there
    (``allowzero`` 0), the input's shape static, none of its lengths 0."""
    shape = _array_held(constants, node.input[1]) if len(node.input) > 1 and node.input[1] else None
    if shape is None or attribute_of(node, "allowzero") or not (shape == 0).any():
        return False
    dims = shapes_and_types(node, types)[0].get(node.input[0])
    return dims is not None and None not in dims and 0 not in dims


def _lengths_stated(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types) -> list:
    """Reshape(x, s) = Reshape(x, t), t the output's shape: t_i = d_i (x's length) where s_i is
    0, n / ∏_{j≠i} t_j (n x's element count) where s_i is -1, s_i otherwise (a Constant). None
    where s does not fit x (the node fails either way)."""
    dims = shapes_and_types(node, types)[0][node.input[0]]
    wanted = _array_held(constants, node.input[1]).reshape(-1).tolist()
    if len(wanted) > len(dims) and 0 in wanted[len(dims) :]:
        return None
    stated = [dims[i] if want == 0 else want for i, want in enumerate(wanted)]
    known = int(np.prod([length for length in stated if length != -1], dtype=np.int64))
    elements = int(np.prod(dims, dtype=np.int64))
    if stated.count(-1) > 1 or known == 0 or elements % known or (-1 not in stated and known != elements):
        return None
    stated = [elements // known if length == -1 else length for length in stated]
    label, shape = node.name or node.op_type, names.fresh(f"{node.input[1]}_stated")
    tensor = numpy_helper.from_array(np.array(stated, np.int64), shape)
    constant = onnx.helper.make_node("Constant", [], [shape], name=names.fresh(f"{label}_Constant"), value=tensor)
    return [constant, _reading(node, 1, shape)]


# ops that index their data along one axis by an input named "indices" (onnx.defs), each index i
# of [-s, s - 1] (s the data's size along the axis) meaning i + s where it is negative
INDEXING_ALONG_AN_AXIS = ("Gather", "GatherElements", "ScatterElements")


def _indexing_axis(node: onnx.NodeProto, rank: int | None) -> int | None:
    """The node's axis (attribute, default 0) counted from the first, where ``rank`` or its
    sign lets it be; None otherwise."""
    axis = attribute_of(node, "axis") or 0
    if axis >= 0:
        return axis if rank is None or axis < rank else None
    return axis + rank if rank is not None and axis + rank >= 0 else None


def _indices_may_be_negative(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """A Gather, GatherElements or ScatterElements whose indices (int32 or int64) are fed or
    computed, or constant holding a negative value, its axis known from the first, on
    versions where Less, Add and Where take the indices' type."""
    if len(node.input) < 2 or not node.input[0] or not node.input[1]:
        return False
    shapes = shapes_and_types(node, types)[0]
    rank = len(shapes[node.input[0]]) if node.input[0] in shapes else None
    if _index_type(node, constants, types) not in (onnx.TensorProto.INT32, onnx.TensorProto.INT64):
        return False
    given = _held_constant(constants, node.input[1])
    if given is not None and not (numpy_helper.to_array(given) < 0).any():
        return False
    return _indexing_axis(node, rank) is not None


def _held_constant(constants: Mapping[str, onnx.TensorProto], name: str) -> onnx.TensorProto | None:
    """The constant of that name whose values are at hand (not in an external file)."""
    given = constants.get(name)
    return None if given is None or given.data_location == onnx.TensorProto.EXTERNAL else given


def _index_type(node: onnx.NodeProto, constants, types) -> int | None:
    """The element type of the node's indices (its second input): its type, or its constant's."""
    known = shapes_and_types(node, types)[1].get(node.input[1])
    given = constants.get(node.input[1])
    return known if known is not None else given.data_type if given is not None else None


def _indexed_length_within_edges(node: onnx.NodeProto, types) -> bool:
    """Whether the data's length s along the axis is static and at most 2^23, so that every
    index of [-s, s - 1], and i + s, lies within ±2^24."""
    dims = shapes_and_types(node, types)[0].get(node.input[0])
    axis = _indexing_axis(node, None if dims is None else len(dims))
    return dims is not None and axis is not None and dims[axis] is not None and dims[axis] <= 2**23


def _indices_made_non_negative(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list[onnx.NodeProto] | None:
    """op(data, i) = op(data, Where(i < 0, i + s, i)), s the data's size along the axis (a
    constant where its shape says it, else Gather(Shape(data), axis)): an index i of [-s, -1]
    stands for i + s, one of [0, s - 1] for itself (an index out of [-s, s - 1] is an error
    either way but below -s, where the form gives i + s, one ONNX leaves undefined); indices
    that are constants are written non-negative as a Constant. None where Less, Add or Where
    at ``opset`` takes no indices of their type."""
    data, indices = node.input[0], node.input[1]
    index_type = _index_type(node, constants, types)
    dims = shapes_and_types(node, types)[0].get(data)
    axis = _indexing_axis(node, None if dims is None else len(dims))
    if not all(schemas.accepts(op, opset, index_type, at) for op, at in (("Less", 0), ("Add", 0), ("Where", 1))):
        return None
    dtype = onnx.helper.tensor_dtype_to_np_dtype(index_type)
    label, stem = node.name or node.op_type, names.fresh(f"{indices}_non_negative")

    def constant(name: str, values: np.ndarray) -> onnx.NodeProto:
        tensor = numpy_helper.from_array(values, name)
        return onnx.helper.make_node("Constant", [], [name], name=names.fresh(f"{label}_Constant"), value=tensor)

    def step(op_type: str, inputs: list[str], output: str, **attributes) -> onnx.NodeProto:
        return onnx.helper.make_node(op_type, inputs, [output], name=names.fresh(f"{label}_{op_type}"), **attributes)

    size = dims[axis] if dims is not None else None
    given = _held_constant(constants, indices)
    if given is not None and size is not None:
        values = numpy_helper.to_array(given)
        made = [constant(stem, np.where(values < 0, values + dtype.type(size), values).astype(dtype))]
    else:
        zero, size_name, negative, wrapped = (
            names.fresh(f"{indices}_{part}") for part in ("zero", "size", "negative", "wrapped")
        )
        made = [constant(zero, np.array(0, dtype))]
        if size is not None:
            made.append(constant(size_name, np.array(size, dtype)))
        else:
            shape, at, sizes = (names.fresh(f"{data}_{part}") for part in ("shape", "axis", "size_int64"))
            made += [step("Shape", [data], shape), constant(at, np.array(axis, np.int64))]
            if index_type == onnx.TensorProto.INT64:
                made.append(step("Gather", [shape, at], size_name))
            else:
                made += [step("Gather", [shape, at], sizes), step("Cast", [sizes], size_name, to=index_type)]
        made += [
            step("Less", [indices, zero], negative),
            step("Add", [indices, size_name], wrapped),
            step("Where", [negative, wrapped, indices], stem),
        ]
    return [*made, _reading(node, 1, stem)]


def indices_never_negative(
    node: onnx.NodeProto, producers: Mapping[str, onnx.NodeProto], constants: Mapping[str, onnx.TensorProto], types
) -> bool:
    """Whether a Gather's, GatherElements' or ScatterElements' indices are never negative (of
    the indices ONNX defines, [-s, s - 1]): a constant holding no negative value, or
    ``Where(Less(i, 0), Add(i, s), i)`` (:func:`_indices_made_non_negative`), 0 a constant zero
    and s the data's size along the axis (a constant its shape states, or Gather(Shape(data),
    axis), cast or not)."""
    if node.op_type not in INDEXING_ALONG_AN_AXIS or len(node.input) < 2 or not node.input[1]:
        return False
    if node.input[1] in constants:
        given = _held_constant(constants, node.input[1])
        return given is not None and not (numpy_helper.to_array(given) < 0).any()
    where = _made_by(producers, node.input[1], "Where")
    if where is None or len(where.input) != 3:
        return False
    less, add, indices = (
        _made_by(producers, where.input[0], "Less"),
        _made_by(producers, where.input[1], "Add"),
        where.input[2],
    )
    if less is None or add is None:
        return False
    zero = _held_constant(constants, less.input[1])
    if list(less.input[:1]) != [indices] or zero is None or numpy_helper.to_array(zero).tolist() != 0:
        return False
    return list(add.input[:1]) == [indices] and _is_size_along_axis(node, add.input[1], producers, constants, types)


def known_kinds(
    node: onnx.NodeProto, opset: int, constants: Mapping[str, onnx.TensorProto], producers, types
) -> tuple[str, str]:
    """(a kind of value the node is known never to be given, one it is known to be given), ""
    where none (:mod:`lowering.value_kinds`), read from its constants (those in scope, by name)
    and static shapes at ``opset``, the opset it is written at; indices written non-negative
    (:func:`indices_never_negative`, ``producers``: its graph's nodes by output name) are free of
    negative ones, a Cast of values its target type holds (:func:`cast_within_range`) of
    integers out of range."""
    held = kinds_held(node, opset, lambda name: _array_held(constants, name), shapes_and_types(node, types)[0])
    if indices_never_negative(node, producers, constants, types):
        held[NEGATIVE_INDICES] = False
    if shape_names_the_lengths(node, producers, constants, types):
        held[ONE_KEEPS_A_LENGTH] = False
    if OUT_OF_RANGE_CAST not in held and cast_within_range(node, producers, constants, types):
        held[OUT_OF_RANGE_CAST] = False
    free_of = next((kind for kind, is_held in held.items() if not is_held), "")
    if not free_of and _wraps_indices_within_edges(node, producers, constants, types):
        free_of = PAST_EDGES
    return free_of, next((kind for kind, is_held in held.items() if is_held), "")


def _wraps_indices_within_edges(node: onnx.NodeProto, producers, constants, types) -> bool:
    """Whether the node is the Less, Add or Where of ``Where(i < 0, i + s, i)`` read as the
    indices of a Gather, GatherElements or ScatterElements (:func:`indices_never_negative`) whose
    data's length s along its axis is static and at most 2^23: every integer it is given lies
    within ±2^24, as the form that writes it declares (:func:`_indexed_length_within_edges`)."""
    if node.op_type not in ("Less", "Add", "Where") or node.domain not in schemas.DEFAULT_DOMAINS:
        return False
    readers = _readers_in(producers)
    wheres = [node] if node.op_type == "Where" else [r for r in readers.get(node.output[0], ()) if r.op_type == "Where"]
    for where in wheres:
        if node is not where and node.output[0] not in where.input[:2]:
            continue
        for reader in readers.get(where.output[0], ()):
            if (
                reader.op_type in INDEXING_ALONG_AN_AXIS
                and list(reader.input[1:2]) == [where.output[0]]
                and indices_never_negative(reader, producers, constants, types)
                and _indexed_length_within_edges(reader, types)
            ):
                return True
    return False


class _Producers(dict):
    """A graph's nodes by the names they write (:func:`producers_in_graph`), keeping the nodes that
    read each name once asked for (:func:`_readers_in`)."""

    readers: dict[str, list[onnx.NodeProto]] | None = None


def _readers_in(producers: Mapping[str, onnx.NodeProto]) -> dict[str, list[onnx.NodeProto]]:
    """The nodes of a graph (``producers``: its nodes by the names they write) that read each
    name: kept with ``producers`` where it is a graph's own (:class:`_Producers`)."""
    found = getattr(producers, "readers", None)
    if found is not None:
        return found
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in {id(n): n for n in producers.values()}.values():
        for name in dict.fromkeys(node.input):
            if name:
                readers.setdefault(name, []).append(node)
    if isinstance(producers, _Producers):
        producers.readers = readers
    return readers


def _array_held(constants: Mapping[str, onnx.TensorProto], name: str) -> np.ndarray | None:
    """The values of the constant ``name`` where held here (not in an external file); None else."""
    given = _held_constant(constants, name)
    return None if given is None else numpy_helper.to_array(given)


def _is_size_along_axis(node: onnx.NodeProto, name: str, producers, constants, types) -> bool:
    """Whether ``name`` holds the size of the node's data along its axis: a constant scalar equal
    to the size its shape states, or Gather(Shape(data), axis), cast or not."""
    dims = shapes_and_types(node, types)[0].get(node.input[0])
    axis = _indexing_axis(node, None if dims is None else len(dims))
    given = _held_constant(constants, name)
    if given is not None:
        return dims is not None and axis is not None and numpy_helper.to_array(given).tolist() == dims[axis]
    cast = _made_by(producers, name, "Cast")
    made = _made_by(producers, cast.input[0] if cast is not None else name, "Gather")
    if made is None or attribute_of(made, "axis"):
        return False
    shape, at = _made_by(producers, made.input[0], "Shape"), _held_constant(constants, made.input[1])
    return (
        shape is not None and list(shape.input) == [node.input[0]] and not shape.attribute
        and at is not None and axis is not None and numpy_helper.to_array(at).tolist() == axis
    )  # fmt: skip


def _made_by(producers: Mapping[str, onnx.NodeProto], name: str, op_type: str) -> onnx.NodeProto | None:
    """The node of the default domain and of ``op_type`` that writes ``name``, if one does."""
    node = producers.get(name)
    return node if node is not None and node.op_type == op_type and node.domain in schemas.DEFAULT_DOMAINS else None


def cast_within_range(node: onnx.NodeProto, producers, constants, types, depth: int = 6) -> bool:
    """Whether a Cast from an integer type to another (not bool) is given only values its
    target type holds, by the ranges (:mod:`lowering.value_ranges`) of the values its input is
    computed from, through at most ``depth`` producers (``producers``: the graph's nodes by
    output name): the in-range form :func:`_cast_in_range` writes, ``Mod(c + 2^(n-1), 2^n) -
    2^(n-1)``, lies in [-2^(n-1), 2^(n-1) - 1] whatever c."""
    if node.op_type != "Cast" or not node.input:
        return False
    to = next((a.i for a in node.attribute if a.name == "to"), None)
    source = shapes_and_types(node, types)[1].get(node.input[0])
    if not (floats.is_integer(source) and floats.is_integer(to)):
        return False
    return value_ranges.fits(_range_of(node.input[0], producers, constants, types, depth), to)


def _range_of(name: str, producers, constants, types, depth: int) -> value_ranges.Range:
    """The least and greatest value ``name`` (of an integer type) may hold: a constant's own, else
    its producer's output range from its inputs' (:func:`value_ranges.output_range`, sizes taken
    up to 2^63), where that lies within its type (arithmetic past it wraps), else its type's. Its
    type is read from what writes it where that says (:func:`_written_type`)."""
    given = _held_constant(constants, name)
    if given is not None:
        return value_ranges.tensor_range(given) if floats.is_integer(given.data_type) else None
    element_type = _written_type(name, producers, constants, types, depth)
    own = value_ranges.type_range(element_type) if floats.is_integer(element_type) else None
    producer = producers.get(name)
    if own is None or producer is None or depth == 0 or producer.domain not in schemas.DEFAULT_DOMAINS:
        return own
    inputs = [_range_of(each, producers, constants, types, depth - 1) if each else None for each in producer.input]
    found = value_ranges.output_range(producer, list(producer.output).index(name), inputs, 1 << 63)
    return found if value_ranges.fits(found, element_type) else own


# ops whose output is of their first input's element type (onnx.defs: one type parameter for both)
_OF_THEIR_INPUT_S_TYPE = frozenset({"Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Min", "Max", "Clip", "Identity"})


def _written_type(name: str, producers, constants, types, depth: int) -> int | None:
    """The element type of ``name``: a constant's, a Cast's ``to``, that of the first input of an
    op whose output is of its input's type, traced through at most ``depth`` producers; else as
    ``types`` has it (whose values of a nested graph are merged by name across sibling graphs, so
    that a value written in each is read so only where nothing writing it says)."""
    given = constants.get(name)
    if given is not None:
        return given.data_type
    producer = producers.get(name)
    if producer is not None and producer.domain in schemas.DEFAULT_DOMAINS and depth > 0:
        if producer.op_type == "Cast":
            return next((a.i for a in producer.attribute if a.name == "to"), None)
        if producer.op_type in _OF_THEIR_INPUT_S_TYPE and producer.input:
            return _written_type(producer.input[0], producers, constants, types, depth - 1)
    type_proto = types.get(name)
    return type_proto.tensor_type.elem_type if type_proto is not None and type_proto.HasField("tensor_type") else None


def _shape_not_constant(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """An Expand whose shape is fed or computed, the input's rank and the shape's length known."""
    if len(node.input) < 2 or not node.input[1] or node.input[1] in constants:
        return False
    shapes = shapes_and_types(node, types)[0]
    return node.input[0] in shapes and len(shapes.get(node.input[1], ())) == 1 and shapes[node.input[1]][0] is not None


def _lengths_where_one(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list[onnx.NodeProto] | None:
    """Expand(x, s) = Expand(x, Where(s' = 1, d', s')), s' the shape and d' x's lengths, the two
    aligned at their last axes (the shorter led by 1s): broadcasting both ways gives s where x's
    length is 1 and x's length where s is 1, so the shape that names x's length there means the
    same (d' a constant where x's shape is static, else Shape(x)). None below opset 9 (no Where)."""
    data, shape = node.input[0], node.input[1]
    dims = shapes_and_types(node, types)[0][data]
    length = shapes_and_types(node, types)[0][shape][0]
    if not schemas.accepts("Where", opset, onnx.TensorProto.INT64, 1):
        return None
    label = node.name or node.op_type

    def constant(part: str, values: list[int] | int) -> tuple[str, onnx.NodeProto]:
        name = names.fresh(f"{shape}_{part}")
        tensor = numpy_helper.from_array(np.array(values, np.int64), name)
        return name, onnx.helper.make_node("Constant", [], [name], name=names.fresh(f"{label}_Constant"), value=tensor)

    def step(op_type: str, inputs: list[str], part: str, **attributes) -> tuple[str, onnx.NodeProto]:
        name = names.fresh(f"{shape}_{part}")
        return name, onnx.helper.make_node(
            op_type, inputs, [name], name=names.fresh(f"{label}_{op_type}"), **attributes
        )

    made = []

    def led_by_ones(name: str, rank: int) -> str:
        if rank >= max(length, len(dims)):
            return name
        ones, ones_node = constant("ones", [1] * (max(length, len(dims)) - rank))
        aligned, concat = step("Concat", [ones, name], "aligned", axis=0)
        made.extend([ones_node, concat])
        return aligned

    if None in dims:
        lengths, shape_node = step("Shape", [data], "input_lengths")
        made.append(shape_node)
        lengths = led_by_ones(lengths, len(dims))
    else:
        lengths, lengths_node = constant("input_lengths", [1] * max(length - len(dims), 0) + list(dims))
        made.append(lengths_node)
    wanted = led_by_ones(shape, length)
    one, one_node = constant("one", 1)
    keeps, equal = step("Equal", [wanted, one], "keeps")
    stated, where = step("Where", [keeps, lengths, wanted], "stated")
    made += [one_node, equal, where]
    return [*made, _reading(node, 1, stated)]


def shape_names_the_lengths(
    node: onnx.NodeProto, producers: Mapping[str, onnx.NodeProto], constants: Mapping[str, onnx.TensorProto], types
) -> bool:
    """Whether an Expand's shape is ``Where(Equal(s, 1), d, s)`` (:func:`_lengths_where_one`),
    d the input's lengths (Shape of it, or a constant its static shape states), led by a
    constant of 1s or not: it holds no 1 where the input's length is not 1. (A constant shape's
    values say it: :func:`lowering.value_kinds.kinds_held`.)"""
    if node.op_type != "Expand" or len(node.input) < 2 or not node.input[1]:
        return False
    dims = shapes_and_types(node, types)[0].get(node.input[0])
    where = _made_by(producers, node.input[1], "Where")
    equal = _made_by(producers, where.input[0], "Equal") if where is not None and len(where.input) == 3 else None
    if equal is None or list(equal.input[:1]) != [where.input[2]]:
        return False
    one = _held_constant(constants, equal.input[1])
    if one is None or numpy_helper.to_array(one).tolist() != 1:
        return False
    lengths = where.input[1]
    concat = _made_by(producers, lengths, "Concat")
    if concat is not None and len(concat.input) == 2:
        ones = _held_constant(constants, concat.input[0])
        if ones is None or not (numpy_helper.to_array(ones) == 1).all():
            return False
        lengths = concat.input[1]
    given = _held_constant(constants, lengths)
    if given is not None:
        stated = numpy_helper.to_array(given).tolist()
        return dims is not None and None not in dims and stated[len(stated) - len(dims) :] == list(dims)
    shape = _made_by(producers, lengths, "Shape")
    return shape is not None and list(shape.input) == [node.input[0]] and not shape.attribute


UNSIGNED_COMPARISONS = ("Less", "Greater", "Equal", "LessOrEqual", "GreaterOrEqual")


def wider_signed(element_type: int) -> int | None:
    """The narrowest of int32 and int64 holding every value of the unsigned integer type
    ``element_type`` (int32 for uint8 and uint16, int64 for uint32); None for any other type
    (uint64: none holds it)."""
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(element_type))
    if dtype.kind != "u":  # (numpy's own unsigned integers: not bool, not ml_dtypes' 4- and 2-bit types)
        return None
    info = np.iinfo(dtype)
    for wide in (onnx.TensorProto.INT32, onnx.TensorProto.INT64):
        if np.iinfo(onnx.helper.tensor_dtype_to_np_dtype(wide)).max >= info.max:
            return wide
    return None


def _compares_unsigned(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """A comparison of two tensors of one unsigned type that a wider signed type holds, at a
    version of the op that takes that signed type (onnx.defs says which)."""
    element_types = dict(form.types)
    if len(node.input) != 2 or sorted(element_types) != [0, 1] or element_types[0] != element_types[1]:
        return False
    wide = wider_signed(element_types[0])
    return wide is not None and schemas.accepts(node.op_type, version, wide)


def _compared_wider(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types) -> list:
    """op(a, b) = op(Cast(a, w), Cast(b, w)) for a, b unsigned and w = :func:`wider_signed`:
    every unsigned value is a value of w, so each pair compares alike."""
    casts, widened = _inputs_cast(node, names, wider_signed(dict(form.types)[0]), "widened")
    compare = onnx.helper.make_node(node.op_type, widened, list(node.output), name=node.name)
    return [*casts, compare]


def _casts_out_of_range(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """A Cast (13+, which wraps an integer out of range) from an integer type of at most 16 bits
    to another that does not hold every value of the first."""
    source = shapes_and_types(node, types)[1].get(node.input[0]) if node.input else None
    to = next((a.i for a in node.attribute if a.name == "to"), None)
    narrow = may_wrap(source, to) and all(floats.numpy_dtype(each).itemsize <= 2 for each in (source, to))
    return version >= WRAPPING_CAST_OPSET and narrow


def _cast_in_range(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types) -> list:
    """Cast(x, to) between integer types = Cast(w, to), w the value of ``to``'s range that Cast-13
    and later wrap x to (:func:`lowering.integer_casts.wrapped_cast`: in int32, Mod(c + 2^(n-1), 2^n)
    - 2^(n-1) for ``to`` signed of n bits); x has at most 16 bits, so every int32 there lies
    within ±2^17."""
    source = shapes_and_types(node, types)[1][node.input[0]]
    to = next(a.i for a in node.attribute if a.name == "to")
    b = Builder(opset=opset, target=DEFAULT_TARGET, names=names, constants=None, name_hint=node.name or node.output[0])
    wrapped_cast(b, Value(node.input[0], source), source, to, outputs=list(node.output))
    return b.nodes


def _product_of_two_halves(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """MatMul (9+) of two float16 tensors."""
    return version >= 9 and _two_inputs_of(node, form, onnx.TensorProto.FLOAT16)


def _product_in_float32(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types):
    """MatMul(a, b) = Cast(MatMul(Cast(a, float), Cast(b, float)), float16): each float16 is a
    float32 exactly, and the products and sums are rounded to float16 once, as onnxruntime's CPU
    kernel computes a float16 MatMul (bit for bit, measured)."""
    nodes, widened = _inputs_cast(node, names, onnx.TensorProto.FLOAT, "float")
    product = names.fresh(f"{node.output[0]}_float")
    nodes.append(onnx.helper.make_node("MatMul", widened, [product], name=node.name))
    label = names.fresh(f"{node.name or node.op_type}_Cast")
    nodes.append(onnx.helper.make_node("Cast", [product], list(node.output), name=label, to=onnx.TensorProto.FLOAT16))
    return nodes


def _product_of_a_vector(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """MatMul of a vector a by a tensor b of known rank. (Not a matrix by a vector b: onnxruntime
    sums a matrix times a column otherwise than a matrix times a vector, measured.)"""
    dims, _ = shapes_and_types(node, types)
    ranks = [len(dims[name]) if dims.get(name) is not None else None for name in node.input]
    return len(ranks) == 2 and ranks[0] == 1 and ranks[1] is not None


def _axes_changed(op_type: str, x: str, axes: list[int], output: str, names: NameAllocator, opset: int) -> list:
    """Unsqueeze or Squeeze of ``x`` by ``axes``: an attribute where the op's schema at ``opset``
    has one (below version 13), else a Constant input."""
    label = names.fresh(f"{x}_{op_type}")
    if "axes" in schemas.schema_in_force(op_type, opset).attributes:
        return [onnx.helper.make_node(op_type, [x], [output], name=label, axes=axes)]
    axes_name = names.fresh(f"{x}_{op_type.lower()}_axes")
    tensor = numpy_helper.from_array(np.array(axes, np.int64), axes_name)
    return [
        onnx.helper.make_node("Constant", [], [axes_name], name=names.fresh(f"{axes_name}_Constant"), value=tensor),
        onnx.helper.make_node(op_type, [x, axes_name], [output], name=label),
    ]


def _product_of_matrices(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types):
    """MatMul(a, b) of a vector a = Squeeze(MatMul(Unsqueeze(a, [0]), b'), axes): numpy's matmul,
    which MatMul is, makes the vector a a row and drops that axis, r - 2 of the product of rank r;
    a vector b is made a column the same way (b' = Unsqueeze(b, [1]), axis r - 1 dropped), else
    b' = b. onnxruntime gives the same sums bit for bit (measured)."""
    dims, _ = shapes_and_types(node, types)
    row = names.fresh(f"{node.input[0]}_row")
    nodes = _axes_changed("Unsqueeze", node.input[0], [0], row, names, opset)
    column, dropped = node.input[1], [len(dims[node.input[1]]) - 2]
    if len(dims[node.input[1]]) == 1:
        column = names.fresh(f"{node.input[1]}_column")
        nodes += _axes_changed("Unsqueeze", node.input[1], [1], column, names, opset)
        dropped = [0, 1]
    product = names.fresh(f"{node.output[0]}_of_matrices")
    nodes.append(onnx.helper.make_node("MatMul", [row, column], [product], name=node.name))
    nodes += _axes_changed("Squeeze", product, dropped, node.output[0], names, opset)
    return nodes


def _sums_of_int32(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """CumSum (11+) of an int32 tensor."""
    _, element_types = shapes_and_types(node, types)
    return bool(node.input) and element_types.get(node.input[0]) == onnx.TensorProto.INT32


def _sums_in_int64(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types):
    """CumSum(x, axis) on int32 = Cast(CumSum(Cast(x, int64), axis), int32), ``exclusive`` and
    ``reverse`` stated: sums agree modulo 2^32 whatever their width, and the Cast back keeps the
    low 32 bits, the int32 sum as onnxruntime's kernel wraps it (bit for bit, measured at the
    type's extremes); below opset 13, whose Cast leaves that undefined, the low bits are taken
    first (:func:`lowering.integer_casts.wrapped_cast`)."""
    wide_input = names.fresh(f"{node.input[0]}_int64")
    label = names.fresh(f"{node.name or node.op_type}_Cast")
    nodes = [onnx.helper.make_node("Cast", [node.input[0]], [wide_input], name=label, to=onnx.TensorProto.INT64)]
    stated = {a.name: a.i for a in node.attribute if a.name in ("exclusive", "reverse")}
    sums = names.fresh(f"{node.output[0]}_int64")
    exclusive, reverse = stated.get("exclusive", 0), stated.get("reverse", 0)
    inputs = [wide_input, *node.input[1:]]
    nodes.append(onnx.helper.make_node("CumSum", inputs, [sums], name=node.name, exclusive=exclusive, reverse=reverse))
    if opset < WRAPPING_CAST_OPSET:  # (Cast-9 leaves a sum past int32 undefined: the wraparound written)
        b = Builder(opset=opset, target=DEFAULT_TARGET, names=names, constants=None, name_hint=node.name or sums)
        wrapped_cast(b, Value(sums, onnx.TensorProto.INT64), onnx.TensorProto.INT64, onnx.TensorProto.INT32,
                     outputs=list(node.output))  # fmt: skip
        return nodes + b.nodes
    label = names.fresh(f"{node.name or node.op_type}_Cast")
    nodes.append(onnx.helper.make_node("Cast", [sums], list(node.output), name=label, to=onnx.TensorProto.INT32))
    return nodes


MOST_AXES_SELECTED = 8  # a CumSum of a fed axis is written as this many constant-axis CumSums at most


class _NodesWritten:
    """The nodes a choice writes in place of one node, in order (``made``), each named fresh
    from ``label``: Constants of integer values, and nodes of one output."""

    def __init__(self, label: str, names: NameAllocator) -> None:
        self.label, self.names, self.made = label, names, []

    def constant(self, values: list[int], element_type: int, hint: str, scalar: bool = False) -> str:
        name = self.names.fresh(f"{self.label}_{hint}")
        tensor = onnx.helper.make_tensor(name, element_type, [] if scalar else [len(values)], values)
        self.made.append(
            onnx.helper.make_node("Constant", [], [name], name=self.names.fresh(f"{name}_Constant"), value=tensor)
        )
        return name

    def node(self, op_type: str, inputs: list[str], hint: str, **attributes) -> str:
        output = self.names.fresh(f"{self.label}_{hint}")
        name = self.names.fresh(f"{self.label}_{op_type}")
        self.made.append(onnx.helper.make_node(op_type, inputs, [output], name=name, **attributes))
        return output


def _sums_along_a_fed_axis(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """CumSum of an axis given at run time, its input's rank known (1 to MOST_AXES_SELECTED)."""
    rank = dict(form.ranks).get(0)
    return 1 in form.fed and 1 in dict(form.types) and rank in range(1, MOST_AXES_SELECTED + 1)


def _sums_selected_by_axis(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list:
    """CumSum(x, a) = Gather(Concat(Unsqueeze(CumSum(x, 0)), ..., Unsqueeze(CumSum(x, r - 1))),
    Mod(a, r)) along the new first axis, for x of rank r and a in [-r, r - 1] (the range CumSum
    takes; Mod by r, positive, maps a negative a to a + r), each CumSum with the node's own
    exclusive and reverse. Gather moves the chosen sums' bits as they are (onnxruntime's Where
    gives -0.0 taken from its second input as +0.0). Rank 1: CumSum(x, 0), the one axis."""
    x, axis = node.input
    rank, axis_type = dict(form.ranks)[0], dict(form.types)[1]
    written = _NodesWritten(node.name or "CumSum", names)
    made, constant, fresh_node = written.made, written.constant, written.node
    if rank == 1:  # (0 and -1 both name the one axis)
        along = constant([0], axis_type, "axis_0", scalar=True)
        made.append(onnx.helper.make_node("CumSum", [x, along], list(node.output), name=node.name))
        made[-1].attribute.extend(node.attribute)
        return made
    unsqueeze = schemas.schema_in_force("Unsqueeze", opset)
    axes_attribute = unsqueeze is not None and "axes" in unsqueeze.attributes  # (an input from Unsqueeze-13 on)
    first_axis = "" if axes_attribute else constant([0], onnx.TensorProto.INT64, "first_axis")
    stacked = []
    for k in range(rank):
        summed = fresh_node("CumSum", [x, constant([k], axis_type, f"axis_{k}", scalar=True)], f"along_{k}")
        made[-1].attribute.extend(node.attribute)
        if axes_attribute:
            stacked.append(fresh_node("Unsqueeze", [summed], f"along_{k}_stacked", axes=[0]))
        else:
            stacked.append(fresh_node("Unsqueeze", [summed, first_axis], f"along_{k}_stacked"))
    every_sum = fresh_node("Concat", stacked, "every_axis", axis=0)
    chosen = fresh_node("Mod", [axis, constant([rank], axis_type, "rank", scalar=True)], "chosen_axis")
    made.append(onnx.helper.make_node("Gather", [every_sum, chosen], list(node.output), name=node.name, axis=0))
    return made


def _scatter_of_elements(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """A ScatterElements (11+) with no reduction whose data's rank r (at least 1) is known, its
    indices of rank r and of a known type (its schema's int32 or int64), its axis in [-r, r - 1]."""
    reduction = attribute_of(node, "reduction")
    ranks, given = dict(form.ranks), dict(form.types)
    rank = ranks.get(0)
    return (
        reduction in (None, b"none")
        and rank is not None
        and rank >= 1
        and ranks.get(1) == rank
        and -rank <= (attribute_of(node, "axis") or 0) < rank
        and given.get(1) is not None
    )


def _scattered_by_coordinates(
    node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types
) -> list:
    """ScatterElements(data, i, u, axis=a) = ScatterND(data, c, u), where c holds each element's
    coordinates: c[p] = (p_0, ..., i'[p], ..., p_{r-1}), its own position in i but along a, where
    i'[p] = i[p] + d_a if i[p] < 0, else i[p] (d_a = data's size along a). Both write u[p] to
    data at that position, the bits as they are, on every input ONNX defines: both ops require
    indices that repeat no position (with repeats onnxruntime's ScatterElements keeps the last
    update and its ScatterND the one its threads write last), and indices in [-d_a, d_a - 1]
    (one past that, an error in both, is wrapped once here and may then land)."""
    data, indices, updates = node.input
    rank = dict(form.ranks)[0]
    axis = (attribute_of(node, "axis") or 0) % rank
    written = _NodesWritten(node.name or "ScatterElements", names)
    made, fresh_node = written.made, written.node

    def constant(values: list[int], hint: str, scalar: bool = False) -> str:
        return written.constant(values, onnx.TensorProto.INT64, hint, scalar)

    unsqueeze = schemas.schema_in_force("Unsqueeze", opset)
    axes_attribute = unsqueeze is not None and "axes" in unsqueeze.attributes  # (an input from Unsqueeze-13 on)
    last_axis = None if axes_attribute else constant([-1], "last_axis")

    def with_a_last_axis(value: str, hint: str) -> str:
        if axes_attribute:
            return fresh_node("Unsqueeze", [value], hint, axes=[rank])
        return fresh_node("Unsqueeze", [value, last_axis], hint)

    if dict(form.types)[1] != onnx.TensorProto.INT64:
        indices = fresh_node("Cast", [indices], "indices_int64", to=onnx.TensorProto.INT64)
    shape = fresh_node("Shape", [indices], "indices_shape")
    zero = constant([0], "zero", scalar=True)
    one = constant([1], "one", scalar=True) if rank > 1 else None  # (a Range's step, for the other axes)
    size = fresh_node("Gather", [fresh_node("Shape", [data], "data_shape"), constant([axis], "axis", True)], "size")
    wrapped = fresh_node("Add", [indices, size], "wrapped")
    taken = fresh_node("Where", [fresh_node("Less", [indices, zero], "negative"), wrapped, indices], "along_axis")
    coordinates = []
    for k in range(rank):
        if k == axis:
            coordinates.append(with_a_last_axis(taken, f"coordinate_{k}"))
            continue
        length = fresh_node("Gather", [shape, constant([k], f"axis_{k}", scalar=True)], f"length_{k}")
        positions = fresh_node("Range", [zero, length, one], f"positions_{k}")
        laid = fresh_node("Reshape", [positions, constant([-1 if j == k else 1 for j in range(rank)], f"along_{k}")],
                          f"positions_{k}_laid")  # fmt: skip
        coordinates.append(with_a_last_axis(fresh_node("Expand", [laid, shape], f"grid_{k}"), f"coordinate_{k}"))
    every = fresh_node("Concat", coordinates, "coordinates", axis=-1)
    made.append(onnx.helper.make_node("ScatterND", [data, every, updates], list(node.output), name=node.name))
    return made


def _eye_of_another_type(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """EyeLike whose dtype is not its input's (known) element type."""
    dtype = next((attribute.i for attribute in node.attribute if attribute.name == "dtype"), None)
    given = dict(form.types).get(0)
    return dtype is not None and given is not None and dtype != given


def _eye_cast(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types) -> list:
    """EyeLike(x, dtype=t, k) = Cast(EyeLike(x, k), to=t): ones on the k-th diagonal and zeros
    elsewhere, values every type holds exactly."""
    eye = names.fresh(f"{node.output[0]}_of_its_input_type")
    kept = [attribute for attribute in node.attribute if attribute.name != "dtype"]
    made = onnx.helper.make_node("EyeLike", list(node.input), [eye], name=names.fresh(f"{node.name or 'EyeLike'}_eye"))
    made.attribute.extend(kept)
    dtype = next(attribute.i for attribute in node.attribute if attribute.name == "dtype")
    return [made, onnx.helper.make_node("Cast", [eye], list(node.output), name=node.name, to=dtype)]


def _an_if(node: onnx.NodeProto, form: NodeForm, version: int, constants, types) -> bool:
    """An If of the default domain (whose branches :func:`_branches_selected` may inline)."""
    return node.op_type == "If"


def _branches_selected(node: onnx.NodeProto, form: NodeForm, constants, names: NameAllocator, opset: int, types):
    """If(cond) then T else E = Where(cond, t, e) per output, T's and E's nodes inlined
    (:func:`lowering.branches_selected.both_branches_selected`: where both branches compute without
    failing and give outputs of one static shape)."""
    return both_branches_selected(node, names, opset, types)


OP_CHOICES: tuple[OpChoice, ...] = (
    OpChoice(
        "Equal",
        _of_two_bools,
        _xor_not,
        None,
        "Equal(a, b) on bool -> Xor(a, Not(b)) (the runtime runs Xor and Not better)",
    ),
    *(
        OpChoice(
            op_type,
            _of_two_bools,
            _counted_bools,
            None,
            f"{op_type}(a, b) on bool -> Cast({'Mul' if op_type == 'And' else 'Add'}(Cast(a, int32), "
            "Cast(b, int32)), bool) (the runtime runs those better)",
            supported_only=True,
        )
        for op_type in ("And", "Or")
    ),
    *(
        OpChoice(
            op_type,
            _extreme_of_two_integers,
            _where_less,
            None,
            f"{op_type}(a, b) on int64 -> Where(Less({'a, b' if op_type == 'Max' else 'b, a'}), b, a) "
            "(the runtime runs Less and Where better)",
            supported_only=True,
        )
        for op_type in ("Max", "Min")
    ),
    *(
        OpChoice(
            op_type,
            _of_two_uint64s,
            _signed_comparison,
            None,
            f"{op_type}(a, b) on uint64 -> Xor({'a' if op_type == 'Less' else 'b'}' < "
            f"{'b' if op_type == 'Less' else 'a'}', Xor(a' < 0, b' < 0)), x' = Cast(x, int64) "
            "(the runtime runs those better)",
            supported_only=True,
        )
        for op_type in ("Less", "Greater")
    ),
    OpChoice(
        "ConstantOfShape",
        _filled_shape,
        _expanded_scalar,
        None,
        "ConstantOfShape(shape) -> Expand(its value as a scalar, shape) (the runtime runs those better)",
        supported_only=True,
    ),
    OpChoice(
        "Gemm",
        _bias_of_one_row_at_most,
        _bias_as_a_row,
        None,
        "Gemm(A, B, C) of C of rank 0 or 1 -> Gemm(A, B, Expand(C, [1, N])) (the runtime runs those better)",
    ),
    OpChoice(
        "Pad",
        _pads_of_named_axes,
        _pads_over_every_axis,
        _without_axes,
        "Pad with axes -> Pad with pads for every axis (its pads and axes constants)",
    ),
    OpChoice(
        "MatMul",
        _product_of_two_halves,
        _product_in_float32,
        None,
        "MatMul(a, b) on float16 -> Cast(MatMul(Cast(a, float), Cast(b, float)), float16) (the runtime runs those "
        "better)",
        supported_only=True,
    ),
    OpChoice(
        "MatMul",
        _product_of_a_vector,
        _product_of_matrices,
        None,
        "MatMul(a, b) of a vector a -> Squeeze(MatMul(a made a row, b (a vector made a column))) (the runtime runs "
        "those better)",
    ),
    OpChoice(
        "BitShift",
        _shift_of_version_28,
        _shift_in_unsigned_carrier,
        None,
        "BitShift-28 -> a shift of an unsigned carrier by amounts in range (the runtime runs those better)",
    ),
    OpChoice(
        "Mod",
        _floored_remainder_on_floats,
        _floored_from_truncated,
        None,
        "Mod-28(a, b, fmod=0) on floats -> the truncated remainder Mod(a, b, fmod=1) moved by b where of the "
        "other sign (the runtime runs those better)",
    ),
    OpChoice(
        "Mod",
        _floored_remainder_on_floats,
        _floored_from_truncated_by_isnan,
        None,
        "Mod-28(a, b, fmod=0) on floats -> the truncated remainder Mod(a, b, fmod=1) moved by b where of the "
        "other sign, NaN found by IsNaN (the runtime runs those better)",
    ),
    OpChoice(
        "Reshape",
        _reshape_to_a_scalar,
        _squeezed,
        None,
        "Reshape(x, []) of one element -> Squeeze(x), Identity(x) of a scalar (the runtime runs those better)",
    ),
    OpChoice(
        "Reshape",
        _copies_a_length,
        _lengths_stated,
        None,
        "Reshape(x, s) of a constant s copying x's lengths by 0 -> Reshape(x, the output's shape) (the runtime is "
        "wrong only where a 0 copies a length)",
        free_of=COPIED_LENGTH,
    ),
    *(
        OpChoice(
            op_type,
            _compares_unsigned,
            _compared_wider,
            None,
            f"{op_type}(a, b) on unsigned integers -> {op_type} of both cast to a wider signed type "
            "(the runtime runs those better)",
        )
        for op_type in UNSIGNED_COMPARISONS
    ),
    OpChoice(
        "CumSum",
        _sums_along_a_fed_axis,
        _sums_selected_by_axis,
        None,
        "CumSum of a fed axis -> the CumSum along each constant axis, the one asked for gathered "
        "(the runtime runs those better)",
    ),
    OpChoice(
        "Cast",
        _casts_out_of_range,
        _cast_in_range,
        None,
        "Cast(x, to) between integer types of at most 16 bits -> Cast(w, to) of the w in to's range that Cast "
        "wraps x to, computed in int32 (the runtime is wrong only on integers out of the target's range)",
        free_of=OUT_OF_RANGE_CAST,
        within_edges=lambda node, types: True,  # (at most 16 bits: every int32 within ±2^17)
    ),
    OpChoice(
        "CumSum",
        _sums_of_int32,
        _sums_in_int64,
        None,
        "CumSum(x, axis) on int32 -> Cast(CumSum(Cast(x, int64), axis), int32) (the runtime runs those better)",
    ),
    OpChoice(
        "ScatterElements",
        _scatter_of_elements,
        _scattered_by_coordinates,
        None,
        "ScatterElements(data, i, u) -> ScatterND(data, each element's coordinates, i along the axis, u) "
        "(the runtime runs those better)",
    ),
    OpChoice(
        "EyeLike",
        _eye_of_another_type,
        _eye_cast,
        None,
        "EyeLike(x, dtype) -> Cast(EyeLike(x), dtype) (the runtime runs those better)",
    ),
    OpChoice(
        "MaxPool",
        _ceil_windows_of_version_22,
        _pool_in_floor_mode,
        None,
        "MaxPool-22 ceil_mode=1 -> ceil_mode=0 with the end pads that make the same windows",
    ),
    *(
        OpChoice(
            op_type,
            _auto_padded_pool,
            _pool_with_explicit_pads,
            None,
            f"{op_type} with auto_pad SAME or VALID -> the pads that make the same windows",
        )
        for op_type in ("AveragePool", "MaxPool")
    ),
    *(
        OpChoice(
            op_type,
            _dilated_pool,
            _dilated_windows_gathered,
            None,
            f"{op_type} with dilations -> {op_type} of its windows gathered side by side (the runtime runs those "
            "better)",
        )
        for op_type in ("AveragePool", "LpPool")
    ),
    OpChoice(
        "GlobalMaxPool",
        _globally_pooled,
        _pooled_over_everything,
        None,
        "GlobalMaxPool(x) -> MaxPool(x) of one window, x's spatial sizes (the runtime runs that better)",
    ),
    OpChoice(
        "ConvTranspose",
        _implicitly_padded_transpose,
        _transpose_with_explicit_pads,
        None,
        "ConvTranspose with output_shape or auto_pad SAME or VALID -> the pads and output_padding that give the "
        "same output",
    ),
    *(
        OpChoice(
            op_type,
            _indices_may_be_negative,
            _indices_made_non_negative,
            None,
            f"{op_type} of indices that may be negative -> {op_type} of Where(i < 0, i + s, i), s the data's size "
            "along the axis (the runtime is wrong only on negative indices)",
            free_of=NEGATIVE_INDICES,
            within_edges=_indexed_length_within_edges,
        )
        for op_type in INDEXING_ALONG_AN_AXIS
    ),
    OpChoice(
        "Expand",
        _shape_not_constant,
        _lengths_where_one,
        None,
        "Expand(x, s) of a shape not constant -> Expand(x, Where(s = 1, x's lengths, s)), the two aligned at their "
        "last axes (the runtime is wrong only where a 1 keeps a length of x)",
        free_of=ONE_KEEPS_A_LENGTH,
    ),
    OpChoice(
        "If",
        _an_if,
        _branches_selected,
        None,
        "If of branches computing without failing -> both computed, each output Where(cond, then, else) (the "
        "runtime runs those better)",
        supported_only=True,
        main_graph_only=True,
    ),
    *(
        OpChoice(
            op_type,
            _pool_padded_wide,
            _pool_of_padded,
            None,
            f"{op_type} padded by more than half its window -> {op_type} of x padded by a Pad with a value that "
            "leaves each window's value as it is",
            writes=_pad_where_padded_wide,
        )
        for op_type in ("AveragePool", "MaxPool", "LpPool")
    ),
)
_CHOSEN_OPS = frozenset(choice.op_type for choice in OP_CHOICES)


def better_ops(
    node: onnx.NodeProto,
    opset: int,
    check_form: FormJudge,
    constants: Mapping[str, onnx.TensorProto],
    trial_names: NameAllocator,
    kinds: tuple[str, str] = ("", ""),
    nested: bool = False,
) -> OpChoice | None:
    """The first of :data:`OP_CHOICES` that applies to ``node`` (of the main graph or a graph it
    holds) and whose nodes the runtime judges each better than ``node`` (``check_form``: the
    model's :class:`FormJudge`; the constants in scope by name; names for nodes only judged,
    fresh in the model; ``kinds``: the node's :func:`known_kinds`, which judge it; ``nested``: the
    node is of a graph a node holds). None where none."""
    if node.domain not in ("", "ai.onnx"):
        return None
    for choice in OP_CHOICES:
        if node.op_type != choice.op_type or (nested and choice.main_graph_only):
            continue
        version = schemas.version_in_force(node.op_type, opset)
        if version is None:
            continue
        before, form = check_form(node, None, *kinds)
        if not choice.applies(node, form, version, constants, check_form.types):
            continue
        replacement = choice.replacement(node, form, constants, trial_names, opset, check_form.types)
        if replacement is None:
            continue
        *made, last = replacement
        judge = check_form.with_nodes(replacement)  # (the values the nodes write typed, fed or constant)
        written = {**constants, **{n.output[0]: t for n in made if (t := constant_tensor(n)) is not None and n.output}}
        within = choice.within_edges(node, check_form.types)
        verdicts = [judge(new, None, *_known_within(new, opset, written, judge.types, within))[0] for new in made]
        verdicts.append(judge(last, None if choice.form_after is None else choice.form_after(form), choice.free_of)[0])
        if all(_RANK[verdict] > _RANK[before] for verdict in verdicts) and (
            not choice.supported_only
            or (all(verdict == SUPPORTED for verdict in verdicts) and _onnxruntime_runs(replacement, judge))
        ):
            return choice
    return None


def _known_within(node: onnx.NodeProto, opset: int, constants, types, within_edges: bool) -> tuple[str, str]:
    """The node's :func:`known_kinds`, free of :data:`PAST_EDGES` where ``within_edges`` says
    every integer it is given lies within ±2^24 and no kind of value is known free."""
    free_of, holding = known_kinds(node, opset, constants, {}, types)
    return (free_of or (PAST_EDGES if within_edges else ""), holding)


def _onnxruntime_runs(nodes: list[onnx.NodeProto], judge: FormJudge) -> bool:
    """Whether onnxruntime's CPU provider, which every lowered model must run in, refuses none
    of ``nodes`` on its types, as its probed profile says (Expand on bfloat16, for one)."""
    reference = load_profile("onnxruntime")
    return all(
        reference.verdict(node.op_type, version, element_type_name(node, judge.types)).kind != REFUSED
        for node in nodes
        if (version := schemas.version_in_force(node.op_type, judge.opset)) is not None
    )


def replace_ops(model: onnx.ModelProto, opset: int, check_form: FormJudge) -> Counter:
    """Each node of the model's main graph and the graphs its nodes hold that a choice of
    :data:`OP_CHOICES` betters (:func:`better_ops`), replaced in place, the initializers only they
    read dropped; what was, counted. Not in local functions, whose values' types are each
    call's: the judge knows the main graph's."""
    made: Counter = Counter()
    graphs = [model.graph, *nested_graphs(model.graph.node)]
    if not any(node.op_type in _CHOSEN_OPS for graph in graphs for node in graph.node):
        return made
    names, trial_names = NameAllocator(model=model), NameAllocator(model=model)
    constants_at, producers_at = constants_in_scope(model), producers_in_graph(model)
    read_before: set[str] = set()
    for graph in reversed(graphs):  # (inner graphs first: a node list rebuilt copies the graphs its nodes hold)
        nodes, replaced = [], False
        for node in graph.node:
            constants = constants_at(node)  # (a graph input of an outer constant's name hides it)
            kinds = known_kinds(node, opset, constants, producers_at(node), check_form.types)
            choice = better_ops(node, opset, check_form, constants, trial_names, kinds, graph is not model.graph)
            if choice is None:
                nodes.append(node)
                continue
            _, form = check_form(node, None)
            nodes.extend(choice.replacement(node, form, constants, names, opset, check_form.types))
            made[choice.said] += 1
            replaced = True
            read_before.update(node.input)
        if replaced:
            del graph.node[:]
            graph.node.extend(nodes)
    drop_left_unread(model, read_before)  # (a Reshape's shape written anew)
    return made


@dataclass(frozen=True)
class ModelFormChoice:
    """A form made of every node it applies to (given the constants in scope by name), where
    the runtime ran whole models better with it (:func:`model_forms_taken`); ``name`` is its
    key in a profile's ``model_forms``."""

    name: str
    op_type: str
    applies: Callable[[onnx.NodeProto, dict[str, onnx.TensorProto], int], bool]
    rewrite: Callable[[onnx.NodeProto], None]
    said: str

    def made_in(self, model: onnx.ModelProto, opset: int) -> int:
        """The form made (in place) of every node of ``model`` it applies to; how many."""
        made = 0
        for node, constants in nodes_with_constants(model):
            if node.domain not in schemas.DEFAULT_DOMAINS or node.op_type != self.op_type:
                continue
            version = schemas.version_in_force(node.op_type, opset)
            if version is not None and self.applies(node, constants, version):
                self.rewrite(node)
                made += 1
        return made


@dataclass(frozen=True)
class WholeModelForm:
    """A form made of a whole model at once (``make``, in place, returning how many nodes it
    changed), taken as a :class:`ModelFormChoice` is."""

    name: str
    make: Callable[[onnx.ModelProto], int]
    said: str

    def made_in(self, model: onnx.ModelProto, opset: int) -> int:
        return self.make(model)


def _values_computed_ahead(model: onnx.ModelProto) -> int:
    return computed_ahead(model, inferred_types(model))


def _nan_free_constant_at(position: int) -> Callable[[onnx.NodeProto, dict[str, onnx.TensorProto], int], bool]:
    """Whether a node of two inputs broadcasting by numpy's rule (not a version with a
    ``broadcast`` attribute, which broadcasts its second input only) holds at ``position`` a
    constant holding no NaN, at the other a value not constant."""

    def applies(node: onnx.NodeProto, constants: dict[str, onnx.TensorProto], version: int) -> bool:
        schema = schemas.schema_in_force(node.op_type, version)
        if schema is None or "broadcast" in schema.attributes or len(node.input) != 2:
            return False
        constant, other = constants.get(node.input[position]), constants.get(node.input[1 - position])
        if constant is None or other is not None or constant.data_location == onnx.TensorProto.EXTERNAL:
            return False
        values = numpy_helper.to_array(constant)
        return values.dtype.kind in "iub" or not np.isnan(values.astype(np.float64)).any()

    return applies


def _commute(node: onnx.NodeProto) -> None:
    node.input[:] = [node.input[1], node.input[0]]


MODEL_FORM_CHOICES = (  # (values computed ahead first: the commuting forms see them constant)
    WholeModelForm(
        "values computed ahead",
        _values_computed_ahead,
        "value computed from constants alone written as an initializer, onnxruntime's answer (the runtime ran "
        "whole models better so)",
    ),
    ModelFormChoice(
        "constant addend second",
        "Add",
        _nan_free_constant_at(0),
        _commute,
        "Add(c, x) -> Add(x, c) (c a constant holding no NaN: the runtime ran whole models better so)",
    ),
    ModelFormChoice(
        "constant factor first",
        "Mul",
        _nan_free_constant_at(1),
        _commute,
        "Mul(x, c) -> Mul(c, x) (c a constant holding no NaN: the runtime ran whole models better so)",
    ),
)


def model_forms_taken(model_forms: Mapping[str, Mapping[str, list]]) -> tuple[ModelFormChoice | WholeModelForm, ...]:
    """The choices a profile's ``model_forms`` records whole models as running better with
    (``"better"``: right with it, not without) and none worse (``"worse"``: right only without)."""
    return tuple(
        choice
        for choice in MODEL_FORM_CHOICES
        if model_forms.get(choice.name, {}).get("better") and not model_forms[choice.name].get("worse")
    )


def apply_model_forms(model: onnx.ModelProto, choices, opset: int) -> Counter:
    """Each of ``choices`` made (in place) of ``model``, in their order; what was made, counted."""
    made: Counter = Counter()
    for choice in choices:
        count = choice.made_in(model, opset)
        if count:
            made[choice.said] += count
    return made


def choose_forms(
    model: onnx.ModelProto, check_form, opset: int, model_forms: tuple[ModelFormChoice, ...] = ()
) -> tuple[onnx.ModelProto, Counter]:
    """``model`` with each node a choice of :data:`FORM_CHOICES` betters rewritten
    (:func:`better_form`), constants read from initializers where the runtime takes them better
    so, and ``model_forms`` made (:func:`apply_model_forms`); the model itself where there is
    none (else a copy), and what was chosen, counted."""
    chosen: Counter = Counter()
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    scopes = [(_nodes_in_scope(copy.graph.node, copy.graph.initializer, {}, copy.graph.input), check_form)]
    scopes += [(_nodes_in_scope(f.node, (), {}), check_form.for_function(f)) for f in copy.functions]
    producers_at = producers_in_graph(copy)
    for walked, judge in scopes:  # (a local function's nodes by its own judge)
        for node, constants in walked:
            kinds = known_kinds(node, opset, constants, producers_at(node), judge.types)
            choice = better_form(node, constants, opset, judge, kinds)
            if choice is not None:
                choice.rewrite(node)
                chosen[choice.said] += 1
            restated = restated_defaults(node, opset, judge) if choice is None else None  # (as check names it)
            if restated is not None:
                attributes, said = restated
                del node.attribute[:]
                node.attribute.extend(attributes)
                chosen[said] += 1
    chosen.update(replace_ops(copy, opset, check_form))
    chosen.update(apply_model_forms(copy, model_forms, opset))
    elided = identities_elided(copy, check_form)
    if elided:
        chosen[IDENTITY_SAID] += elided
    moved = constants_as_initializers(copy, check_form)
    if moved:
        chosen[CONSTANTS_SAID] += moved
    captured = scan_captures_passed_in(copy, opset, constants_in_scope(copy), check_form.types)
    if captured:
        chosen[SCAN_CAPTURES_SAID] += captured
    typed = typed_subgraph_inputs(copy)
    if typed:
        chosen[SUBGRAPH_TYPES_SAID] += typed
    one_dimensional = one_dimensional_axes(copy)
    if one_dimensional:
        chosen[AXES_SAID] += one_dimensional
    if not chosen:
        return model, chosen
    try:  # (a rewritten model passes the full checker as every lowered one does)
        onnx.checker.check_model(checkable(copy), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise LoweringError(f"the forms chosen ({', '.join(chosen)}) left an invalid model: "
                            f"{checker_message(error)}") from None  # fmt: skip
    return copy, chosen


CONSTANTS_SAID = "constant input read from an initializer, not a node (the runtime takes it better so)"
IDENTITY_SAID = "Identity(x) the runtime refuses left out, its readers reading x"
AXES_SAID = "scalar axes of Unsqueeze given as the 1-D tensor of one element the schema states"
SCAN_CAPTURES_SAID = "value a Scan body reads from outside passed in (a constant inside it, another as a kept state)"
SUBGRAPH_TYPES_SAID = "subgraph input given the element type and rank onnx's inference gives it (it stated none)"


def typed_subgraph_inputs(model: onnx.ModelProto) -> int:
    """Each input of a graph a node holds (a Scan's or Loop's body, at any depth; not in local
    functions) that states no type, given the element type and rank onnx's shape inference gives
    it from the node's inputs (in place; no sizes); how many were. A type stated says only what
    the node feeds the body, so the model means the same; tract refuses a body input of no type
    ("graph input has no type"), which ONNX's own function bodies write (LinearAttention's Scan)."""
    if not any(_untyped(info) for graph in nested_graphs(model.graph.node) for info in graph.input):
        return 0
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # (inference fails on the model: nothing stated)
        return 0
    typed = 0
    pairs = zip(nested_graphs(model.graph.node), nested_graphs(inferred.graph.node), strict=True)
    for graph, inferred_graph in pairs:
        for info, inferred_info in zip(graph.input, inferred_graph.input, strict=True):
            stated = inferred_info.type
            if _untyped(info) and stated.HasField("tensor_type") and stated.tensor_type.elem_type:
                info.type.tensor_type.elem_type = stated.tensor_type.elem_type
                if stated.tensor_type.HasField("shape"):  # (its rank; no sizes, which a state may change)
                    for _ in stated.tensor_type.shape.dim:
                        info.type.tensor_type.shape.dim.add()
                typed += 1
    return typed


def one_dimensional_axes(model: onnx.ModelProto) -> int:
    """Each Unsqueeze whose constant axes is a scalar a (onnx's AffineGrid body writes
    Unsqueeze(x, -1)) made to read a Constant [a] written just before it, in place; how many
    were. The schema states axes 1-D and onnxruntime reads a as [a], so the model means the
    same; onnx2torch sorts the axes and fails on a scalar. (onnxruntime's Squeeze fails on a
    scalar: such a Squeeze is left as it is.)"""
    graphs = [model.graph, *nested_graphs(model.graph.node)]
    constants_at = constants_in_scope(model)
    # (inner graphs first: a node list rebuilt copies the graphs its nodes hold)
    scopes = [f.node for f in model.functions] + [graph.node for graph in reversed(graphs)]
    names, made = NameAllocator(model=model), 0
    for nodes in scopes:
        if not any(_scalar_axes(node, constants_at(node)) is not None for node in nodes):
            continue
        written = []
        for node in nodes:
            scalar = _scalar_axes(node, constants_at(node))
            if scalar is not None:
                name = names.fresh(f"{node.input[1]}_1d")
                axes = numpy_helper.from_array(numpy_helper.to_array(scalar).reshape(1), name)
                written.append(onnx.helper.make_node("Constant", [], [name], name=name, value=axes))
                node.input[1] = name
                made += 1
            written.append(node)
        del nodes[:]
        nodes.extend(written)
    return made


def _scalar_axes(node: onnx.NodeProto, constants: Mapping[str, onnx.TensorProto]) -> onnx.TensorProto | None:
    """The axes of an Unsqueeze where they are a constant scalar, else None."""
    if node.op_type != "Unsqueeze" or node.domain not in schemas.DEFAULT_DOMAINS:
        return None
    axes = constants.get(node.input[1]) if len(node.input) > 1 else None
    return axes if axes is not None and len(axes.dims) == 0 else None


def _untyped(info: onnx.ValueInfoProto) -> bool:
    """Whether ``info`` states no type (none, an empty one, or a tensor of no element type)."""
    kind = info.type.WhichOneof("value")
    return kind is None or kind == "tensor_type" and not info.type.tensor_type.elem_type


def initializers_better(node: onnx.NodeProto, check_form, movable: set[str]) -> list[str]:
    """The inputs of ``node`` among ``movable`` (:func:`movable_constants`) that the runtime
    judges the node better with read from initializers (``check_form`` as :func:`better_form`
    takes it); else none."""
    before, form = check_form(node, None)
    moved = {i for i in form.from_nodes if node.input[i] in movable}
    if not moved:
        return []
    after, _ = check_form(node, dataclasses.replace(form, from_nodes=form.from_nodes - moved))
    return [node.input[i] for i in sorted(moved)] if _RANK[after] > _RANK[before] else []


def elidable_identities(model: onnx.ModelProto) -> frozenset[str]:
    """The outputs y of the Identity nodes (of the default domain) of the main graph and the
    graphs its nodes hold whose readers can read their input x instead: no graph gives y out,
    and y and x are each defined once in all those graphs (as an input, initializer or node
    output: a name a sibling branch or an inner graph defines again means another value there).
    Not in local functions, whose names are their own."""
    graphs = [model.graph, *nested_graphs(model.graph.node)]
    outputs = {info.name for graph in graphs for info in graph.output}
    defined = Counter(
        name
        for graph in graphs
        for name in [
            *(i.name for i in graph.input),
            *(t.name for t in graph.initializer),
            *(t.values.name for t in graph.sparse_initializer),
            *(name for node in graph.node for name in node.output),
        ]  # fmt: skip
        if name
    )
    return frozenset(
        node.output[0]
        for graph in graphs
        for node in graph.node
        if node.op_type == "Identity"
        and node.domain in schemas.DEFAULT_DOMAINS
        and len(node.input) == 1
        and len(node.output) == 1
        and node.input[0]
        and node.output[0] not in outputs
        and defined[node.output[0]] == 1
        and defined[node.input[0]] == 1
    )


def identities_elided(model: onnx.ModelProto, check_form) -> int:
    """Each Identity :func:`elidable_identities` names that the runtime refuses
    (``check_form``), left out: y = Identity(x) is x, so every node reading y (at any depth)
    reads x, and y's value_info goes. How many were."""
    elidable = elidable_identities(model)
    if not elidable:
        return 0
    graphs = [model.graph, *nested_graphs(model.graph.node)]
    renamed: dict[str, str] = {}
    held: list[onnx.NodeProto] = []  # (kept alive, so that each id below stays its node's)
    for graph in graphs:
        for node in graph.node:
            chosen = node.op_type == "Identity" and bool(node.output) and node.output[0] in elidable
            if chosen and check_form(node, None)[0] == REFUSED:
                renamed[node.output[0]] = node.input[0]
                held.append(node)
    left_out = {id(node) for node in held}  # (the nodes themselves: a name says nothing of its scope)
    if not renamed:
        return 0

    def source(name: str) -> str:
        while name in renamed:  # (an Identity of an Identity)
            name = renamed[name]
        return name

    for graph in reversed(graphs):  # (inner graphs first: a node list rebuilt copies the graphs its nodes hold)
        kept = [node for node in graph.node if id(node) not in left_out]
        for node in kept:
            node.input[:] = [source(name) if name else name for name in node.input]
        if len(kept) != len(graph.node):
            del graph.node[:]
            graph.node.extend(kept)
        kept_info = [info for info in graph.value_info if info.name not in renamed]
        if len(kept_info) != len(graph.value_info):
            del graph.value_info[:]
            graph.value_info.extend(kept_info)
    return len(renamed)


def movable_constants(model: onnx.ModelProto) -> set[str]:
    """The constants of the main graph :func:`constants_as_initializers` can read from an
    initializer: a Constant node's value (not a sparse one), an Identity of an initializer."""
    if model.ir_version < unlisted_initializers_ir():  # (an initializer must be a graph input before IR 4)
        return set()
    initialized = {t.name for t in model.graph.initializer}
    found = set()
    for node in model.graph.node:
        if not node.output or not node.output[0]:
            continue
        if constant_tensor(node) is not None:
            found.add(node.output[0])
        elif node.op_type == "Identity" and node.domain in ("", "ai.onnx") and node.input[0] in initialized:
            found.add(node.output[0])
    return found


def constants_as_initializers(model: onnx.ModelProto, check_form) -> int:
    """Each constant input a node of ``model``'s main graph reads from a node where the runtime
    judges it better read from an initializer (``check_form``, as :func:`better_form` takes it):
    a Constant node's value made an initializer of the same name and tensor (a sparse one stays);
    an Identity of an initializer read from the initializer itself (the Identity dropped where
    nothing else reads it). How many inputs were."""
    movable = movable_constants(model)
    if not movable:
        return 0
    graph = model.graph
    producers = {name: node for node in graph.node for name in node.output if name}
    initialized = {t.name for t in graph.initializer}
    moved: dict[str, onnx.NodeProto] = {}  # Constant nodes to make initializers, by value name
    bypassed: set[str] = set()  # outputs of Identity nodes of initializers some node no longer reads
    count = 0
    for node in graph.node:
        if node.op_type == "Constant" or node.domain not in ("", "ai.onnx"):
            continue
        for name in initializers_better(node, check_form, movable):
            producer = producers.get(name)
            if producer is None:
                continue
            if constant_tensor(producer) is not None:
                moved[name] = producer
                count += 1
            elif (
                producer.op_type == "Identity"
                and producer.domain in ("", "ai.onnx")
                and producer.input[0] in initialized
            ):
                node.input[:] = [producer.input[0] if given == name else given for given in node.input]
                bypassed.add(name)
                count += 1
    kept = [node for node in graph.node if not (node.output and node.output[0] in moved)]
    kept = without_unread(
        kept, [info.name for info in graph.output], lambda n: bool(n.output) and n.output[0] in bypassed
    )
    for name, node in moved.items():
        tensor = onnx.TensorProto()
        tensor.CopyFrom(constant_tensor(node))
        tensor.name = name
        graph.initializer.append(tensor)
    if len(kept) != len(graph.node):
        del graph.node[:]
        graph.node.extend(kept)
    return count


def better_form(
    node: onnx.NodeProto,
    constants: dict[str, onnx.TensorProto],
    opset: int,
    check_form,
    kinds: tuple[str, str] = ("", ""),
):
    """The first of :data:`FORM_CHOICES` that applies to ``node`` and whose form the runtime
    judges better than the node's own: ``check_form(node, form)`` gives the profile's verdict
    kind on the node in ``form`` (None: its own) at ``opset``, and that form, both judged by
    the node's ``kinds`` (:func:`known_kinds`: a form keeps its values). None where none."""
    if node.domain not in ("", "ai.onnx"):
        return None
    for choice in FORM_CHOICES:
        if node.op_type != choice.op_type:
            continue
        version = schemas.version_in_force(node.op_type, opset)
        if version is None or not choice.applies(node, constants, version):
            continue
        before, form = check_form(node, None, *kinds)
        after, _ = check_form(node, choice.form_after(form), *kinds)
        if _RANK[after] > _RANK[before]:
            return choice
    return None


def constants_by_name(
    model: onnx.ModelProto, function: onnx.FunctionProto | None = None
) -> dict[str, onnx.TensorProto]:
    """Every constant in scope in the model's main graph and the graphs its nodes hold (or, given
    one, in a local function), by name (names are unique over those; a function's are its own)."""
    scopes = {}
    walked = (
        _nodes_in_scope(model.graph.node, model.graph.initializer, {}, model.graph.input)
        if function is None
        else _nodes_in_scope(function.node, (), {})
    )
    for _, in_scope in walked:
        scopes[id(in_scope)] = in_scope  # (one dict per graph, filled as its nodes are walked)
    return {name: tensor for in_scope in scopes.values() for name, tensor in in_scope.items()}


def constants_in_scope(model: onnx.ModelProto) -> Callable[[onnx.NodeProto], dict[str, onnx.TensorProto]]:
    """The constants in scope at a node of the model's graphs or local functions, by name
    (:func:`nodes_with_constants`: a graph input of an outer constant's name hides it), looked
    up by the node itself, as the model is now (a node list rebuilt later holds other nodes)."""
    at = {id(node): (node, constants) for node, constants in nodes_with_constants(model)}  # (nodes kept alive)
    return lambda node: at[id(node)][1]


def producers_in_graph(model: onnx.ModelProto) -> Callable[[onnx.NodeProto], dict[str, onnx.NodeProto]]:
    """The nodes of a node's own graph (the main graph, one a node holds, a local function's),
    by the names they write, looked up by the node itself, as the model is now."""
    at = {}
    for nodes in [
        model.graph.node,
        *(g.node for g in nested_graphs(model.graph.node)),
        *(f.node for f in model.functions),
    ]:
        written = _Producers((name, node) for node in nodes for name in node.output if name)
        at.update({id(node): (node, written) for node in nodes})  # (nodes kept alive)
    return lambda node: at[id(node)][1]


def nodes_with_constants(model: onnx.ModelProto) -> Iterator[tuple[onnx.NodeProto, dict[str, onnx.TensorProto]]]:
    """Each node of the model's graphs (and its functions'), with the constants in scope there
    by name (initializers of its graph and the graphs around it, Constant nodes' tensors, an
    Identity's of a constant)."""
    yield from _nodes_in_scope(model.graph.node, model.graph.initializer, {}, model.graph.input)
    for function in model.functions:
        yield from _nodes_in_scope(function.node, (), {})


def _nodes_in_scope(nodes, initializers, outer: dict[str, onnx.TensorProto], inputs=()):
    """The nodes of one graph and the graphs they hold, each with the constants in scope there."""
    fed = {info.name for info in inputs}  # (an initializer a graph input names is a default)
    constants = {name: t for name, t in outer.items() if name not in fed}
    constants.update({t.name: t for t in initializers if t.name not in fed})
    for node in nodes:
        value = constant_tensor(node)
        if value is None and node.op_type == "Identity" and node.domain in schemas.DEFAULT_DOMAINS and node.input:
            value = constants.get(node.input[0])
        if value is not None and node.output:
            constants[node.output[0]] = value
        yield node, constants
        for _, _, inner in held_graphs(node):
            yield from _nodes_in_scope(inner.node, inner.initializer, constants, inner.input)
