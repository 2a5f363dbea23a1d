"""The cases targets/probe.py runs: every single-op ONNX backend node case at its own opset, and
the same case taken by onnx-lower to the first opset of each other version of its op (where the
op stays one node there), so that a profile knows the op versions real exports use, not only
the one the case was written at (older ones, and newer ones: ReduceMax-20 on the ReduceMax-18
cases, not only on its own empty-set ones); and each case of several inputs with all but the
first as constants (``#constant``: axes, shapes and scales as deployed models hold them;
``#node``, the same given by Constant nodes, as the patterns write them; and ``#stated``, each
int and string attribute the node leaves out stated at its default, as some exporters state
them); and each node of the real exports in golden/corpus of a form no other node there has
(``corpus_*``: its values fed where the model computes them from its inputs, constants
elsewhere, the inputs and outputs onnxruntime gives it inside the model), so that a profile knows the forms exports
write (a GatherND of rank-5 constant indices) beside the ones the backend cases hold. Written
once, in the package's environment, for probes in other environments; each case's form (which
inputs are fed, which constant, the attributes set: ``lowering/probe_case_forms.json``) is
written beside them, and the cases of each kind of value (``lowering/probe_case_values.json``:
``lowering.value_kinds``). Beside each case with a float output go onnxruntime's outputs on each of
its data sets: a runtime that misses the expected outputs where onnxruntime does too, and
matches it, is right as onnxruntime (``probe.as_onnxruntime``), as the sweep judges whole models:

    python targets/prepare_cases.py /tmp/probe_cases.pkl
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import pickle
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lowering.rules import empty_reduction  # noqa: E402
from prepare_sweep import CORPUS, CORPUS_ATOL, CORPUS_RTOL, corpus_feeds, drawn_at_random, onnxruntime_outputs  # noqa: E402
from probe import backend_cases, feed, main_node  # noqa: E402

import lowering  # noqa: E402
from lowering import floats, schemas  # noqa: E402
from lowering.api import lowerable_ops  # noqa: E402
from lowering.constant_outputs import constant_outputs  # noqa: E402
from lowering.graphs import constant_tensor  # noqa: E402
from lowering.integer_casts import WRAPPING_CAST_OPSET  # noqa: E402
from lowering.naming import NameAllocator  # noqa: E402
from lowering.node_forms import CASE_FORMS, NodeForm, constants_given_by_nodes, node_form, value_sources  # noqa: E402
from lowering.runtime_profiles import (  # noqa: E402
    EMPTY_CONSTANT_OUTPUT,
    EMPTY_FED_OUTPUT,
    INPUT_CASE,
    OUTPUT_CASE,
    PROFILES,
)
from lowering.schemas import RANDOM_OPS  # noqa: E402
from lowering.shape_folding import inferred_types  # noqa: E402
from lowering.target_forms import OP_CHOICES, constants_by_name, defaults_left_out, shapes_and_types  # noqa: E402
from lowering.targets import DEFAULT_TARGET  # noqa: E402
from lowering.value_kinds import CASE_VALUES, IN_RANGE_TWIN, KINDS, kinds_held  # noqa: E402

CHOSEN_OPS = frozenset(choice.op_type for choice in OP_CHOICES)

OLDEST_OPSET = 7
# The conversions of the cases to other versions keep a node onnx's schema takes there, not
# only one onnxruntime has a kernel for (its kernels unknown, as a probed runtime's are).
ANY_KERNELS = dataclasses.replace(DEFAULT_TARGET, kernels=lambda: None, kernel_constraints=lambda: None)


def with_variants(name: str, opset: int, model: onnx.ModelProto, case) -> list[tuple]:
    """The probed entry of ``model`` (the case's, or the case's taken to ``opset``), and beside
    it, where the case has several inputs, the same with every input but the first an
    initializer holding the first data set's value (``#constant``: axes, shapes, sizes, scales,
    as a deployed model holds them and as some runtimes take them only), and the same given by
    Constant nodes (``#node``, :func:`_constants_given_by_nodes`); where its one input sets how
    the node computes (ConstantOfShape's shape, a window's size: ``schemas.sets_parameters``),
    the same with that input a constant too, the model fed nothing."""
    found = [(name, opset, model.SerializeToString(), case.data_sets, case.rtol, case.atol)]
    if not case.data_sets or not (len(model.graph.input) > 1 or _one_input_of_parameters(model, opset)):
        return found
    kept = 1 if len(model.graph.input) > 1 else 0  # (the inputs left fed)
    inputs, expected = case.data_sets[0]
    values = [feed(value) for value in inputs]
    if len(values) != len(model.graph.input) or not all(isinstance(v, np.ndarray) for v in values):
        return found
    constant = onnx.ModelProto()
    constant.CopyFrom(model)
    for info, value in zip(model.graph.input[kept:], values[kept:], strict=True):
        constant.graph.initializer.append(numpy_helper.from_array(value, info.name))
    del constant.graph.input[kept:]
    found.append((f"{name}#constant", opset, constant.SerializeToString(), [(values[:kept], expected)], case.rtol,
                  case.atol))  # fmt: skip
    given = _constants_given_by_nodes(constant)
    if given is not None:
        found.append((f"{name}#node", opset, given.SerializeToString(), [(values[:kept], expected)], case.rtol,
                      case.atol))  # fmt: skip
    return found


def _one_input_of_parameters(model: onnx.ModelProto, opset: int) -> bool:
    """The model is fed one input, and its node reads it as what sets how it computes."""
    node = main_node(model)
    if len(model.graph.input) != 1 or node is None or not node.input or node.input[0] != model.graph.input[0].name:
        return False
    schema = schemas.schema_in_force(node.op_type, opset, node.domain)
    return schema is not None and schemas.sets_parameters(schema, 0)


def _constants_given_by_nodes(constant: onnx.ModelProto) -> onnx.ModelProto | None:
    """``constant`` (a ``#constant`` variant) with each initializer given by a Constant node
    instead (``#node``: as the patterns write their constants, and as some runtimes take them
    not: onnx2torch reads a Conv's weights from initializers only); None where onnx's full
    checker refuses that (a Constant of a type its opset's Constant does not hold)."""
    given = onnx.ModelProto()
    given.CopyFrom(constant)
    nodes = [onnx.helper.make_node("Constant", [], [t.name], name=f"{t.name}_constant", value=t)
             for t in given.graph.initializer]  # fmt: skip
    del given.graph.initializer[:]
    kept = list(given.graph.node)
    del given.graph.node[:]
    given.graph.node.extend([*nodes, *kept])
    try:
        onnx.checker.check_model(given, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
        return None
    return given


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
        converted = at_other_versions([v for v in variants if not v[0].endswith("#node")], node.op_type, opset)
        given = _given_by_nodes(converted)
        found += variants + converted + given + with_defaults_stated(variants + converted + given)
    return found


def with_defaults_stated(entries: list[tuple]) -> list[tuple]:
    """The ``#stated`` variant (``NAME#stated``, ``NAME#constant#stated``) of each entry whose
    node leaves out an int or string attribute its schema defaults: the same with each such
    attribute stated at its default (:func:`lowering.target_forms.defaults_left_out`; onnx2torch
    reads a CumSum's ``reverse`` left out as 1, stated 0 as 0)."""
    found = []
    for name, opset, model_bytes, *rest in entries:
        if IN_RANGE_TWIN in name:  # (a twin judges a Cast known in range by its verdict alone)
            continue
        model = onnx.load_from_string(model_bytes)
        node = main_node(model)
        version = schemas.version_in_force(node.op_type, opset)
        left_out = defaults_left_out(node, version)
        if not left_out:
            continue
        node.attribute.extend(left_out)
        found.append((f"{name}#stated", opset, model.SerializeToString(), *rest))
    return found


def _given_by_nodes(entries: list[tuple]) -> list[tuple]:
    """The ``#node`` variant of each ``#constant`` entry (:func:`_constants_given_by_nodes`), made of
    it rather than converted again: the same constants, at the same opset."""
    found = []
    for name, opset, model_bytes, *rest in entries:
        if name.endswith("#constant"):
            given = _constants_given_by_nodes(onnx.load_from_string(model_bytes))
            if given is not None:
                found.append((f"{name.removesuffix('#constant')}#node", opset, given.SerializeToString(), *rest))
    return found


def at_other_versions(
    variants: list[tuple], op_type: str, opset: int, others: bool = True, own: bool = False
) -> list[tuple]:
    """Each of ``variants`` (entries of one op at ``opset``) taken to the first opset of every
    other version of the op (with ``others``), where it stays one node there (``NAME@VERSION``);
    an older version's case that cannot be written at its first opset, at the first of the later
    ones where that version is in force, where it can be written at the newest of them
    (:func:`_first_written`). With ``own``, to the first opset of its own version too, where that
    is older than ``opset`` (a runtime that loads opsets up to 19 sees the Split-18 a pattern
    writes at 23)."""
    found = []
    own_version = schemas.version_in_force(op_type, opset)
    for version in schemas.op_versions(op_type):
        # (a version first defined before opset 7 is probed at 7 where still in force there)
        at = max(version, OLDEST_OPSET)
        wanted = own and at < opset if version == own_version else others
        if not wanted or schemas.version_in_force(op_type, at) != version:
            continue
        # (where the case cannot be written at that first opset, the next ones the version is in
        # force at: Loop-11's body holds a Slice-10, so Loop-1 is probed at 10)
        later = [o for o in range(at + 1, opset) if schemas.version_in_force(op_type, o) == version]
        for name, _, model_bytes, *rest in variants:
            converted, written_at = _first_written(onnx.load_from_string(model_bytes), [at, *later], op_type)
            if converted is not None:
                base, mark, variant = name.partition("#")
                found.append((f"{base}@{version}{mark}{variant}", written_at, converted.SerializeToString(), *rest))
    return found


def _first_written(model: onnx.ModelProto, opsets: list[int], op_type: str) -> tuple[onnx.ModelProto | None, int]:
    """The case taken to the first of ``opsets`` where it can be written (:func:`_converted`),
    and that opset; (None, 0) where none. The last is tried second: a case that cannot be written
    there, at the newest of them, is taken to be written at none between (most cannot be written
    at any: each try costs a conversion)."""
    first = _converted(model, opsets[0], op_type)
    if first is not None or len(opsets) == 1:
        return first, opsets[0]
    last = _converted(model, opsets[-1], op_type)
    if last is None:
        return None, 0
    for opset in opsets[1:-1]:
        converted = _converted(model, opset, op_type)
        if converted is not None:
            return converted, opset
    return last, opsets[-1]


def corpus_cases(folder: Path = CORPUS) -> list[tuple]:
    """(name, opset, model bytes, data sets, rtol, atol) of one node of each form the exports in
    ``folder`` hold (default domain, no subgraphs, not Constant), the first node of that form met
    (models by name, nodes in order), and the same taken to the op's other versions and to its own
    version's first opset where older (:func:`node_cases`): a model of that node alone, whose
    inputs are its fed values (computed from the export's inputs) and whose initializers are its
    other values, fed and expected as onnxruntime computes them
    inside the export on the export's own inputs; value_info where the export states it. Not a
    node of constants alone (``--target`` folds what it can, the runtime the rest: rknn refuses
    a model whose outputs are all constants, whatever its node), nor a node whose values ONNX
    leaves undefined (a float cast to an integer type it lies outside: T5's log of 0, -inf,
    cast to int64; the export masks them later), nor one computed from them."""
    exports = ((path.stem, onnx.load(path), corpus_feeds(path)) for path in sorted(folder.glob("*.onnx")))
    return node_cases(exports, "corpus", other_versions=True)


def _single_op_cases_fed(op_types: frozenset[str]):
    """(case, its node, its first inputs by name) of each single-op backend case (not an
    ``_expanded`` one) of an op of ``op_types`` whose first inputs are all tensors."""
    for case in backend_cases():
        node = main_node(case.model) if "_expanded" not in case.name else None
        if node is None or node.op_type not in op_types or not case.data_sets:
            continue
        inputs, _ = case.data_sets[0]
        feeds = {info.name: feed(value) for info, value in zip(case.model.graph.input, inputs, strict=False)}
        if all(isinstance(value, np.ndarray) for value in feeds.values()):
            yield case, node, feeds


def lowered_cases() -> list[tuple]:
    """The same of the models onnx-lower's patterns write: each single-op backend case whose op a
    pattern lowers, lowered (``ops=[op]``, at the case's opset), fed the case's first inputs; one
    node of each form those models hold, at their own opset (``lowered_CASE_NODE``: SwiGLU's
    alpha becomes a Swish with that alpha, which no backend case of Swish holds) and taken to
    its op's versions (``@VERSION``, :func:`node_cases`: BitShift lowered on int8 writes a Where
    of int8 data, which ``--target`` may take to Where-9); and each with
    its defaults stated (``#stated``, :func:`with_defaults_stated`: the lowered Range's float
    CumSum leaves ``reverse`` out, which onnx2torch reads as 1, and no backend case of CumSum is
    of float)."""
    models = []
    for case, node, feeds in _single_op_cases_fed(lowerable_ops()):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lowered = lowering.lower(case.model, ops=[node.op_type], fold="none")
        except Exception:  # (a case the pattern declines or refuses: nothing written to probe)
            continue
        if any(n.op_type == node.op_type for n in lowered.graph.node):
            continue
        models.append((case.name, lowered, feeds))
    found = node_cases(models, "lowered", other_versions=True, constants_from_nodes=False)
    return found + with_defaults_stated(found)


def chosen_cases() -> list[tuple]:
    """The same of the nodes the forms ``--target`` chooses write
    (:data:`lowering.target_forms.OP_CHOICES`): each single-op backend case a choice applies
    to, its node replaced by the choice's nodes, fed the case's first inputs; one node of each
    form those models hold (``chosen_CASE_NODE``: Mod-28's floored remainder on float16 writes
    a Sign and an Abs of float16, which no backend case holds), each with its defaults stated.
    A choice is judged by the runtime's verdicts on its nodes, so these are what it is judged by."""
    models = []
    for case, node, feeds in _single_op_cases_fed(CHOSEN_OPS):
        for index, replaced in enumerate(_with_each_choice(case.model, node)):
            models.append((case.name if index == 0 else f"{case.name}_{index}", replaced, feeds))
    found = node_cases(models, "chosen", other_versions=True, constants_from_nodes=False)
    return found + with_defaults_stated(found)


def _with_each_choice(model: onnx.ModelProto, node: onnx.NodeProto) -> list[onnx.ModelProto]:
    """``model`` with ``node`` replaced by the nodes of each op choice that applies to it."""
    opset = schemas.default_opset(model.opset_import)
    version = schemas.version_in_force(node.op_type, opset)
    types = inferred_types(model)
    fed, constant = value_sources(model)
    shapes, element_types = shapes_and_types(node, types)
    form = node_form(node, opset, fed, constant, shapes, element_types, constants_given_by_nodes(model, constant))
    constants = constants_by_name(model)
    made = []
    for choice in OP_CHOICES:
        if choice.op_type != node.op_type or version is None:
            continue
        if not choice.applies(node, form, version, constants, types):
            continue
        replacement = choice.replacement(node, form, constants, NameAllocator(model=model), opset, types)
        if replacement is None:
            continue
        for index, new in enumerate(replacement):  # (each case named by its node: PREFIX_CASE_NODE)
            new.name = new.name or f"{new.op_type}_{index}"
        replaced = onnx.ModelProto()
        replaced.CopyFrom(model)
        nodes = [new for each in replaced.graph.node for new in (replacement if each == node else [each])]
        del replaced.graph.node[:]
        replaced.graph.node.extend(nodes)
        made.append(replaced)
    return made


CONSTANT_VALUES = (1, 0, 3)  # (bool and unsigned types hold them; FLOAT8E8M0, of powers of two only: [1, nan, 4])
# Constants not probed: strings and complex numbers (no export or pattern writes them), and types
# of fewer than 8 bits (:func:`element_bits`), which numpy does not hold as they are.
UNPROBED_CONSTANT_TYPES = frozenset({onnx.TensorProto.STRING, onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128})


def element_bits(element_type: int) -> int:
    """The bits one element of ``element_type`` holds, as ml_dtypes' iinfo or finfo says (a byte's
    where neither knows the type: bool)."""
    dtype = floats.numpy_dtype(element_type)
    for info in (ml_dtypes.iinfo, ml_dtypes.finfo):
        try:
            return info(dtype).bits
        except ValueError:
            continue
    return 8 * dtype.itemsize


def constant_cases() -> list[tuple]:
    """A Constant node alone, of every element type its version's schema takes (but
    :data:`UNPROBED_CONSTANT_TYPES` and those of fewer than 8 bits), at each
    version's first opset (7 at least; ``constant_TYPE@VERSION``): no backend case of a tensor
    Constant feeds a runtime anything else, and the patterns write Constants at the model's
    opset (onnx2torch implements Constant-13, not Constant-25). Its output is the value."""
    found = []
    for version in schemas.op_versions("Constant"):
        opset = max(version, OLDEST_OPSET)
        if schemas.version_in_force("Constant", opset) != version:
            continue
        for element_type in sorted(schemas.output_element_types("Constant", opset)):
            if element_type in UNPROBED_CONSTANT_TYPES or element_bits(element_type) < 8:
                continue
            dtype = floats.numpy_dtype(element_type)
            value = np.array(CONSTANT_VALUES).astype(dtype)
            node = onnx.helper.make_node("Constant", [], ["value"], name="constant", value=floats.tensor(value))
            output = onnx.helper.make_tensor_value_info("value", element_type, list(value.shape))
            graph = onnx.helper.make_graph([node], "constant", [], [output])
            opset_imports = [onnx.helper.make_opsetid("", opset)]
            ir_version = onnx.helper.find_min_ir_version_for(opset_imports)
            model = onnx.helper.make_model(graph, opset_imports=opset_imports, ir_version=ir_version)
            name = f"constant_{onnx.helper.tensor_dtype_to_string(element_type).removeprefix('TensorProto.')}"
            found.append((f"{name}@{version}", opset, model.SerializeToString(), [([], [value])], 0.0, 0.0))
    return found


INPUT_RANKS = range(1, 6)  # (rank 0 is judged apart: a runner raises Unfed where a 0-d input fails whatever the op)
INPUT_LENGTHS = (2, 3, 4, 5, 6)  # (an input of rank r has the first r)
# the element types of the optional inputs probed (the backend's optional graph inputs hold float32)
OPTIONAL_INPUT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.INT32, onnx.TensorProto.INT64)
OPTIONAL_IDENTITY = 16  # (the first Identity that takes an optional)


def input_cases() -> list[tuple]:
    """An Identity of one graph input, of each element type (but :data:`UNPROBED_CONSTANT_TYPES`
    and those of fewer than 8 bits) at each rank of :data:`INPUT_RANKS`, at the first opset from
    13 whose Identity takes the type (``input_TYPE_RANKd``), and of an optional holding such a
    tensor of :data:`OPTIONAL_INPUT_TYPES` at opset 16 (``input_OPTIONAL_TYPE_RANKd``): whether
    the runtime takes such an input whatever the graph (rknn's simulator crashes on an int8 input
    of rank 4, even an Identity's, and fails to load an optional one), which
    ``lowering.runtime_profiles`` keeps out of Identity's verdicts."""
    found = []
    for element_type in sorted(schemas.input_element_types("Identity", schemas.newest_opset())):
        if element_type in UNPROBED_CONSTANT_TYPES or element_bits(element_type) < 8:
            continue
        opset = next(o for o in range(13, schemas.newest_opset() + 1)
                     if element_type in schemas.input_element_types("Identity", o))  # fmt: skip
        found += [_input_case(element_type, rank, opset, optional=False) for rank in INPUT_RANKS]
    for element_type in OPTIONAL_INPUT_TYPES:
        found += [_input_case(element_type, rank, OPTIONAL_IDENTITY, optional=True) for rank in INPUT_RANKS]
    return found


def _input_case(element_type: int, rank: int, opset: int, optional: bool) -> tuple:
    """The case of an Identity of one graph input of ``element_type`` and ``rank`` (an optional
    holding such a tensor where ``optional``), fed and giving back counted values."""
    dtype = floats.numpy_dtype(element_type)
    type_name = onnx.helper.tensor_dtype_to_string(element_type).removeprefix("TensorProto.")
    shape = list(INPUT_LENGTHS[:rank])
    value = (np.arange(int(np.prod(shape))) % (2 if dtype == np.bool_ else 100)).astype(dtype).reshape(shape)
    value_type = onnx.helper.make_tensor_type_proto(element_type, shape)
    if optional:
        value_type = onnx.helper.make_optional_type_proto(value_type)
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Identity", ["x"], ["y"], name="identity")], "input",
        [onnx.helper.make_value_info("x", value_type)], [onnx.helper.make_value_info("y", value_type)],
    )  # fmt: skip
    opset_imports = [onnx.helper.make_opsetid("", opset)]
    ir_version = onnx.helper.find_min_ir_version_for(opset_imports)
    model = onnx.helper.make_model(graph, opset_imports=opset_imports, ir_version=ir_version)
    name = f"{INPUT_CASE}{'OPTIONAL_' if optional else ''}{type_name}_{rank}d"
    return (name, opset, model.SerializeToString(), [([value], [value])], 0.0, 0.0)


EMPTY_OUTPUT_OPSET = 13  # (Slice-13: its starts and ends are inputs, as --target's folding leaves them)


def output_cases() -> list[tuple]:
    """A graph output of no elements as --target leaves one (lowering/shape_folding.py folds no
    output to a Constant of no elements, which OpenVINO gives back as a scalar): a Slice from 1
    to 1 (not past its end: tract and TVM fail such a Slice whatever its output) at opset 13, its
    starts and ends Constants, of the Constant [3, 4], of no graph input, giving int64 [0]
    (``output_constant_empty``), and of a fed float32 x of shape [3, 4], giving [0, 4]
    (``output_fed_empty``). OpenVINO 2024.6 crashes on the first, whatever computes it, and runs
    the second; ``lowering.runtime_profiles`` keeps them out of Slice's verdicts."""
    bounds = [
        onnx.helper.make_node("Constant", [], [name], name=name, value=onnx.numpy_helper.from_array(value, name))
        for name, value in (("starts", np.array([1], np.int64)), ("ends", np.array([1], np.int64)))
    ]
    data = onnx.helper.make_node("Constant", [], ["data"], name="data",
                                 value=onnx.numpy_helper.from_array(np.array([3, 4], np.int64), "data"))  # fmt: skip
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    found = []
    for kind, constants, inputs, feeds, expected in (
        (EMPTY_CONSTANT_OUTPUT, [data, *bounds], [], [], np.zeros([0], np.int64)),
        (EMPTY_FED_OUTPUT, bounds, [onnx.helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [3, 4])], [x],
         np.zeros([0, 4], np.float32)),
    ):  # fmt: skip
        node = onnx.helper.make_node("Slice", ["data", "starts", "ends"], ["empty"], name="slice")
        element_type = onnx.helper.np_dtype_to_tensor_dtype(expected.dtype)
        output = onnx.helper.make_tensor_value_info("empty", element_type, list(expected.shape))
        graph = onnx.helper.make_graph([*constants, node], "output", inputs, [output])
        model = _case_model(graph, EMPTY_OUTPUT_OPSET)
        found.append((f"{OUTPUT_CASE}{kind}", EMPTY_OUTPUT_OPSET, model.SerializeToString(), [(feeds, [expected])],
                      0.0, 0.0))  # fmt: skip
    return found


def expand_scalar_cases() -> list[tuple]:
    """Expand of a scalar to a shape, both fed, of every element type its version takes that
    a ConstantOfShape's value may hold too (but :data:`UNPROBED_CONSTANT_TYPES` and those of fewer
    than 8 bits), at each version's first opset (``expand_TYPE@VERSION``): the form that writes a
    ConstantOfShape so (lowering/target_forms.py) writes it on any of them, and every lowered model
    must run in onnxruntime, which has no Expand on bfloat16; the backend's Expand cases are of
    float only. Its output is the scalar's value, 1, in the shape [2, 3]."""
    found = []
    for version in schemas.op_versions("Expand"):
        opset = max(version, OLDEST_OPSET)
        if schemas.version_in_force("Expand", opset) != version:
            continue
        filled = schemas.output_element_types("ConstantOfShape", schemas.newest_opset())
        for element_type in sorted(schemas.input_element_types("Expand", opset) & filled):
            if element_type in UNPROBED_CONSTANT_TYPES or element_bits(element_type) < 8:
                continue
            value = np.array(1).astype(floats.numpy_dtype(element_type))
            node = onnx.helper.make_node("Expand", ["value", "shape"], ["y"], name="expand")
            graph = onnx.helper.make_graph(
                [node], "expand",
                [onnx.helper.make_tensor_value_info("value", element_type, []),
                 onnx.helper.make_tensor_value_info("shape", onnx.TensorProto.INT64, [2])],
                [onnx.helper.make_tensor_value_info("y", element_type, [2, 3])],
            )  # fmt: skip
            shape, expected = np.array([2, 3], np.int64), np.full([2, 3], value)
            name = f"expand_{onnx.helper.tensor_dtype_to_string(element_type).removeprefix('TensorProto.')}"
            found.append((f"{name}@{version}", opset, _case_model(graph, opset).SerializeToString(),
                          [([value, shape], [expected])], 0.0, 0.0))  # fmt: skip
    return found


IF_CASE = "if_"  # (if_same_shapes@VERSION, if_other_shapes@VERSION)


def if_cases() -> list[tuple]:
    """An If on a fed condition at each version's first opset (7 at least) whose branches read a
    fed float32 x of shape [2, 3]: Neg(x) or Abs(x), outputs of one shape (``if_same_shapes``),
    and Neg(x) or Transpose(x), of the shapes [2, 3] and [3, 2] (``if_other_shapes``: the form
    lowering.node_forms calls OTHER_SHAPES, which a DFT's rule writes for an axis fed at run
    time; tract analyses no such If). Each is run on both branches (two data sets); none that
    onnx's full check refuses (If-1 with branches of other shapes)."""
    x = (np.arange(6, dtype=np.float32) - 2).reshape(2, 3)
    float32 = onnx.TensorProto.FLOAT
    then = onnx.helper.make_graph([onnx.helper.make_node("Neg", ["x"], ["negated"])], "then", [],
                                  [onnx.helper.make_tensor_value_info("negated", float32, [2, 3])])  # fmt: skip
    otherwise = {
        "same_shapes": (onnx.helper.make_node("Abs", ["x"], ["other"]), [2, 3], np.abs(x), [2, 3]),
        "other_shapes": (onnx.helper.make_node("Transpose", ["x"], ["other"], perm=[1, 0]), [3, 2], x.T, ["a", "b"]),
    }
    found = []
    for version in schemas.op_versions("If"):
        opset = max(version, OLDEST_OPSET)
        if schemas.version_in_force("If", opset) != version:
            continue
        for kind, (node, shape, expected, stated) in otherwise.items():
            branch = onnx.helper.make_graph(
                [node], "else", [], [onnx.helper.make_tensor_value_info("other", float32, shape)]
            )
            graph = onnx.helper.make_graph(
                [onnx.helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=branch)], "if",
                [onnx.helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, []),
                 onnx.helper.make_tensor_value_info("x", float32, [2, 3])],
                [onnx.helper.make_tensor_value_info("y", float32, stated)],
            )  # fmt: skip
            model = _case_model(graph, opset)
            try:  # (If-1's inference takes branches of other shapes for an error: no such case)
                onnx.checker.check_model(model, full_check=True)
            except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
                continue
            data_sets = [([np.array(True), x], [-x]), ([np.array(False), x], [expected])]
            found.append((f"{IF_CASE}{kind}@{version}", opset, model.SerializeToString(), data_sets, 0.0, 0.0))
    return found


# Bool and the integer types of 8 bits or more Cast takes (onnx.defs), and of those the unsigned ones.
INTEGER_TYPES = tuple(
    t for t in sorted(schemas.input_element_types("Cast", onnx.defs.onnx_opset_version()))
    if (floats.is_integer(t) or t == onnx.TensorProto.BOOL) and element_bits(t) >= 8
)  # fmt: skip


def integer_cast_cases() -> list[tuple]:
    """A Cast alone from each integer type (and bool) to each other one, of a fed input holding
    the type's least and greatest values, -1, 0, 1 and 100 (those it holds), at each Cast
    version's first opset (7 at least; ``cast_FROM_TO@VERSION``): the backend's Cast cases are
    of floats and strings, and the patterns cast between integer types (BitShift-28's unsigned
    carrier, retyping int64 to int32). Out of range, Cast-13 and later discard the higher bits
    (two's complement), as numpy does; earlier versions leave it undefined, so their cases hold
    only the values the target type holds too. To bool, nonzero is true."""
    found = []
    for version, opset in _first_opsets("Cast"):
        for source in INTEGER_TYPES:
            values = _integer_cast_values(source)
            for to in INTEGER_TYPES:
                if to == source:
                    continue
                if version < 13 and to != onnx.TensorProto.BOOL and source != onnx.TensorProto.BOOL:
                    target = np.iinfo(floats.numpy_dtype(to))  # (out of range: undefined before Cast-13)
                    given = values[(values >= target.min) & (values <= target.max)]
                else:
                    given = values
                name = f"cast_{_type_name(source)}_{_type_name(to)}@{version}"
                found.append(_cast_case(name, opset, source, to, given))
                in_range = _in_range_values(source, to)
                if version >= WRAPPING_CAST_OPSET and in_range.size and not np.isin(given, in_range).all():
                    found.append(_cast_case(f"{name}{IN_RANGE_TWIN}", opset, source, to, in_range))
    return found


def integer_castlike_cases() -> list[tuple]:
    """A CastLike alone from each integer type (and bool) to each other one, of the values
    :func:`integer_cast_cases` gives Cast-13 and later (CastLike wraps as they do), at each
    CastLike version's first opset: ``castlike_FROM_TO@VERSION`` its target type given by a
    Constant node (as the patterns write it), ``...#fed`` fed at run time (as the backend's
    CastLike cases), each of one element and, ``#scalar``, of none (the nearest cases are taken
    by the target's rank before its type: a scalar target is not judged by a float case of the
    patterns). The backend's are of floats alone, and a CastLike is judged by the cases of its
    input's type: OpenVINO 2024.6 saturates a CastLike between integer types as it does a Cast,
    where the spec wraps."""
    found = []
    for version, opset in _first_opsets("CastLike"):
        for source in INTEGER_TYPES:
            values = _integer_cast_values(source)
            for to in INTEGER_TYPES:
                if to != source:
                    name = f"castlike_{_type_name(source)}_{_type_name(to)}@{version}"
                    for fed, scalar in itertools.product((False, True), repeat=2):
                        named = name + "#fed" * fed + "#scalar" * scalar
                        found.append(_castlike_case(named, opset, source, to, values, fed, scalar))
    return found


def _integer_cast_values(source: int) -> np.ndarray:
    """The values a cast from ``source`` (an integer type or bool) is probed on: the type's least
    and greatest, -1, 0, 1 and 100 (those it holds); false, true, true, false for bool."""
    if source == onnx.TensorProto.BOOL:
        return np.array([False, True, True, False])
    dtype = floats.numpy_dtype(source)
    limits = np.iinfo(dtype)
    held = [v for v in (limits.min, -1, 0, 1, 100, limits.max) if limits.min <= v <= limits.max]
    return np.array(sorted(set(held)), dtype)


def _castlike_case(name: str, opset: int, source: int, to: int, given: np.ndarray, fed: bool, scalar: bool) -> tuple:
    """(name, opset, model bytes, data sets, rtol, atol) of a CastLike alone of ``given`` to the
    type of a target of ``to`` (one element, or a scalar), fed at run time or given by a
    Constant node."""
    like = np.zeros(() if scalar else 1, floats.numpy_dtype(to))
    node = onnx.helper.make_node("CastLike", ["x", "like"], ["y"], name="castlike")
    inputs = [onnx.helper.make_tensor_value_info("x", source, list(given.shape))]
    nodes = [node]
    if fed:
        inputs.append(onnx.helper.make_tensor_value_info("like", to, list(like.shape)))
    else:
        nodes.insert(0, onnx.helper.make_node("Constant", [], ["like"], value=numpy_helper.from_array(like, "like")))
    outputs = [onnx.helper.make_tensor_value_info("y", to, list(given.shape))]
    model = _case_model(onnx.helper.make_graph(nodes, "castlike", inputs, outputs), opset)
    feeds = [given, like] if fed else [given]
    return (name, opset, model.SerializeToString(), [(feeds, [given.astype(floats.numpy_dtype(to))])], 0.0, 0.0)


def _in_range_values(source: int, to: int) -> np.ndarray:
    """The values of ``source`` (an integer type) that ``to`` (another) holds too, of its least
    and greatest, -1, 0, 1, 100 and ``to``'s least and greatest: what a Cast known never to be
    given a value out of range (lowering.value_kinds.OUT_OF_RANGE_CAST) is judged by. Empty for bool."""
    if onnx.TensorProto.BOOL in (source, to):
        return np.array([], floats.numpy_dtype(source))
    held, target = np.iinfo(floats.numpy_dtype(source)), np.iinfo(floats.numpy_dtype(to))
    low, high = max(held.min, target.min), min(held.max, target.max)
    values = {v for v in (held.min, -1, 0, 1, 100, held.max, target.min, target.max) if low <= v <= high}
    return np.array(sorted(values), floats.numpy_dtype(source))


# The float types whose Casts to and from the integer types are probed (the patterns write them:
# QuantizeLinear's formula casts float to its integer type, DequantizeLinear's the other way).
CAST_FLOATS = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE)


def float_integer_cast_cases() -> list[tuple]:
    """A Cast alone from each of float, float16 and double to each integer type (and bool), and
    back, at each Cast version's first opset (7 at least): ``cast_FROM_TO@VERSION`` of the
    ordinary values -1, 0, 1 and 100 (those the integer type holds), and
    ``cast_FROM_TO@VERSION#extremes`` of the integer type's least and greatest values that the
    float holds exactly (none: no such case). A value only where the float holds it exactly: a
    float outside an integer type's range casts to what no version defines. The extremes stand
    apart so that a runtime wrong only there (OpenVINO and tract cast -2^63 as a float to int64
    otherwise) has its Cast judged partly, not refused. To bool, nonzero is true."""
    found = []
    pairs = [(f, i) for f in CAST_FLOATS for i in INTEGER_TYPES] + [(i, f) for f in CAST_FLOATS for i in INTEGER_TYPES]
    for version, opset in _first_opsets("Cast"):
        for source, to in pairs:
            name = f"cast_{_type_name(source)}_{_type_name(to)}@{version}"
            ordinary, extremes = _float_integer_cast_values(source, to)
            for case_name, given in ((name, ordinary), (f"{name}#extremes", extremes)):
                if given.size:
                    found.append(_cast_case(case_name, opset, source, to, given))
    return found


def _float_integer_cast_values(source: int, to: int) -> tuple[np.ndarray, np.ndarray]:
    """The ordinary values and the extremes a Cast from ``source`` to ``to`` (one of them a float
    type of :data:`CAST_FLOATS`) is probed on, in ``source``'s type (see :func:`float_integer_cast_cases`)."""
    integer, float_type = (to, source) if source in CAST_FLOATS else (source, to)
    dtype = floats.numpy_dtype(source)
    if integer == onnx.TensorProto.BOOL:
        ordinary = [False, True, True, False] if source == integer else [-1, 0, 1, 100]
        return np.array(ordinary, dtype), np.array([], dtype)
    limits = np.iinfo(floats.numpy_dtype(integer))
    exact = floats.numpy_dtype(float_type).type
    with np.errstate(over="ignore"):
        held = {v for v in (limits.min, -1, 0, 1, 100, limits.max) if limits.min <= v <= limits.max}
        held = sorted(v for v in held if np.isfinite(exact(v)) and int(exact(v)) == v)
    ordinary = [v for v in held if v in (-1, 0, 1, 100)]
    extremes = [v for v in held if v not in ordinary]
    return np.array(ordinary, dtype), np.array(extremes, dtype)


def _cast_case(name: str, opset: int, source: int, to: int, given: np.ndarray) -> tuple:
    """(name, opset, model bytes, data sets, rtol, atol) of a Cast alone of ``given`` to ``to``."""
    node = onnx.helper.make_node("Cast", ["x"], ["y"], name="cast", to=to)
    graph = onnx.helper.make_graph(
        [node], "cast", [onnx.helper.make_tensor_value_info("x", source, list(given.shape))],
        [onnx.helper.make_tensor_value_info("y", to, list(given.shape))],
    )  # fmt: skip
    opset_imports = [onnx.helper.make_opsetid("", opset)]
    ir_version = onnx.helper.find_min_ir_version_for(opset_imports)
    model = onnx.helper.make_model(graph, opset_imports=opset_imports, ir_version=ir_version)
    expected = given.astype(floats.numpy_dtype(to))
    return (name, opset, model.SerializeToString(), [([given], [expected])], 0.0, 0.0)


UNSIGNED_TYPES = tuple(t for t in INTEGER_TYPES if floats.numpy_dtype(t).kind == "u")


def _upper_half_pairs(op_type: str, bits: int, attributes: dict) -> tuple[list[int], list[int]]:
    """Operands (a, b) of ``op_type`` on a ``bits``-bit unsigned type, most of them at or above
    2^(bits-1) (the half of the range a signed type of that width holds negative), each exact
    result in range (no bit shifted out, no sum past the top, no difference below 0)."""
    top, half = 2**bits - 1, 2 ** (bits - 1)
    if op_type in ("Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Equal"):
        return [top, half, half + 3, 7, half], [half, top, 5, half + 1, half]
    if op_type == "Mod":
        return [top, half + 5, 7, half], [32, 3, half, 7]
    if op_type == "Mul":
        return [top, half + 5, 7, half], [1, 0, 2, 1]
    if op_type == "Add":
        return [top - 1, half, 7, half + 2], [1, half - 1, half, 0]
    if op_type == "Sub":
        return [top, half + 5, top, half], [1, 5, half, half]
    if op_type == "Div":
        return [top, half + 5, 7, top], [2, 3, half, top]
    if op_type in ("Max", "Min"):
        return [top, half, 7, half + 1], [half, top, half + 1, 3]
    if attributes.get("direction") == "LEFT":
        return [half, top, 1, 3], [0, 0, bits - 1, bits - 2]
    return [top, half, half + 1, 7], [bits - 1, 1, 3, 0]


UPPER_HALF_OPS = (
    ("Less", {}), ("LessOrEqual", {}), ("Greater", {}), ("GreaterOrEqual", {}), ("Equal", {}), ("Mod", {}),
    ("Mul", {}), ("Add", {}), ("Sub", {}), ("Div", {}), ("Max", {}), ("Min", {}),
    ("BitShift", {"direction": "LEFT"}), ("BitShift", {"direction": "RIGHT"}),
)  # fmt: skip


def _numpy_result(op_type: str, a: np.ndarray, b: np.ndarray, attributes: dict) -> np.ndarray:
    if op_type == "BitShift":
        return np.left_shift(a, b) if attributes["direction"] == "LEFT" else np.right_shift(a, b)
    function = {"Less": np.less, "LessOrEqual": np.less_equal, "Greater": np.greater,
                "GreaterOrEqual": np.greater_equal, "Equal": np.equal, "Mod": np.mod, "Mul": np.multiply,
                "Add": np.add, "Sub": np.subtract, "Div": np.floor_divide, "Max": np.maximum,
                "Min": np.minimum}[op_type]  # fmt: skip
    return function(a, b)


def unsigned_upper_half_cases() -> list[tuple]:
    """Each of :data:`UPPER_HALF_OPS` alone on each unsigned type its version takes, fed operands
    mostly in the upper half of the type's range (:func:`_upper_half_pairs`), at each version's
    first opset (7 at least; ``upper_OP_TYPE@VERSION``, ``upper_BitShift_LEFT_...``; and each with
    its second operand a constant, ``#constant``, as :func:`with_variants` makes): the backend's
    unsigned cases hold small values only, which a runtime comparing or dividing them as signed
    gets right (OpenVINO 2026.4 finds 4294967295 < 32 in uint32), and the patterns compute in
    unsigned carriers (BitShift-28's)."""
    found = []
    for op_type, attributes in UPPER_HALF_OPS:
        for version, opset, element_type in _versions_taking(op_type, UNSIGNED_TYPES):
            dtype = floats.numpy_dtype(element_type)
            a, b = (np.array(values, dtype) for values in _upper_half_pairs(op_type, 8 * dtype.itemsize, attributes))
            expected = _numpy_result(op_type, a, b, attributes)
            label = "_".join([op_type, *attributes.values(), _type_name(element_type)])
            found += _op_cases(f"upper_{label}@{version}", op_type, attributes, opset, [a, b], expected, "upper_half")
    return found


def _first_opsets(op_type: str) -> list[tuple[int, int]]:
    """(version, its first opset, 7 at least) of each version of ``op_type`` still in force at
    that opset (a version first defined before 7 and replaced by 7 is left out)."""
    found = []
    for version in schemas.op_versions(op_type):
        opset = max(version, OLDEST_OPSET)
        if schemas.version_in_force(op_type, opset) == version:
            found.append((version, opset))
    return found


def _versions_taking(op_type: str, element_types: tuple[int, ...]):
    """(version, its first opset (7 at least), element type) of each version of ``op_type`` in
    force at that opset and each of ``element_types`` it takes (as Where's values, not its
    condition)."""
    operand = 1 if op_type == "Where" else 0
    for version, opset in _first_opsets(op_type):
        for element_type in element_types:
            if schemas.accepts(op_type, opset, element_type, operand):
                yield version, opset, element_type


def _case_model(graph: onnx.GraphProto, opset: int) -> onnx.ModelProto:
    """``graph`` as a model of the default domain at ``opset``, at the IR version it needs and 4
    at least (an initializer alone, as a ``#constant`` variant holds)."""
    opset_imports = [onnx.helper.make_opsetid("", opset)]
    ir_version = max(onnx.helper.find_min_ir_version_for(opset_imports), 4)
    return onnx.helper.make_model(graph, opset_imports=opset_imports, ir_version=ir_version)


def _op_cases(
    name: str,
    op_type: str,
    attributes: dict,
    opset: int,
    inputs: list,
    expected: np.ndarray,
    graph_name: str,
    rtol: float = 0.0,
    atol: float = 0.0,
) -> list[tuple]:
    """The case ``name`` of ``op_type`` alone (a graph called ``graph_name``), fed ``inputs``
    (one-dimensional, of one length, called a, b, ...) and giving ``expected`` (called by the
    next letter) within ``rtol`` and ``atol`` (exactly by default), and its ``#constant`` and
    ``#node`` variants (:func:`with_variants`)."""
    names, output = "abcdefgh"[: len(inputs)], "abcdefgh"[len(inputs)]
    node = onnx.helper.make_node(op_type, list(names), [output], name="node", **attributes)
    graph = onnx.helper.make_graph(
        [node], graph_name,
        [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), [v.size])
         for n, v in zip(names, inputs, strict=True)],
        [onnx.helper.make_tensor_value_info(output, onnx.helper.np_dtype_to_tensor_dtype(expected.dtype),
                                            [expected.size])],
    )  # fmt: skip
    model = _case_model(graph, opset)
    case = SimpleNamespace(data_sets=[(list(inputs), [expected])], rtol=rtol, atol=atol)
    return with_variants(name, opset, model, case)


SIGNED_WIDE_TYPES = (onnx.TensorProto.INT32, onnx.TensorProto.INT64)


def _wide_edges(bits: int) -> list[int]:
    """The magnitudes past which a ``bits``-bit signed integer computed another way goes wrong:
    2^24 (float32 holds every integer up to it, not 2^24 + 1), and in 64 bits 2^31 and 2^32
    (an int32 holds neither: a runtime narrowing int64 to int32 saturates or wraps there) and
    2^53 (float64's)."""
    float32_exact, float64_exact = (2 ** (np.finfo(t).nmant + 1) for t in (np.float32, np.float64))
    int32_past, uint32_past = (int(np.iinfo(t).max) + 1 for t in (np.int32, np.uint32))
    edges = (float32_exact, int32_past, uint32_past, float64_exact)
    return [edge for edge in edges if edge < 2 ** (bits - 1) // 3]  # (3 times an edge stays in range)


def _signed_wide_operands(op_type: str, bits: int) -> list[list[int]]:
    """Operands of ``op_type`` on a ``bits``-bit signed type at the type's least and greatest
    values and one step from each edge of :func:`_wide_edges`, each exact result in range (no
    sum past the top, no quotient of the least value by -1, no absolute value of it)."""
    top, bottom = 2 ** (bits - 1) - 1, -(2 ** (bits - 1))
    edges = _wide_edges(bits)
    if op_type in ("Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Equal", "Max", "Min"):
        pairs = [(top, top - 1), (bottom, bottom + 1), (top, top)]
        pairs += [p for e in edges for p in ((e + 1, e), (-e - 1, -e), (e, e + 1), (e + 1, 2), (e + 1, e + 1))]
    elif op_type == "Add":
        pairs = [(top - 1, 1), (bottom + 1, -1)] + [p for e in edges for p in ((e, 1), (-e, -1), (e + 1, e))]
    elif op_type == "Sub":
        pairs = [(top, 1), (bottom, -1)] + [p for e in edges for p in ((e + 1, 1), (e, -1), (-e, e + 1))]
    elif op_type == "Mul":
        pairs = [(top, 1), (bottom, 1), (top, -1)] + [p for e in edges for p in ((e + 1, 1), (e + 1, -3), (-e - 1, 2))]
    elif op_type in ("Div", "Mod"):
        pairs = [(top, 1), (top, 2), (bottom, 2), (bottom, 7), (top, -7)]
        pairs += [p for e in edges for p in ((e + 1, 1), (-e - 1, 2), (e + 1, -3), (e + 3, 7))]
    elif op_type in ("Abs", "Neg"):
        return [[top, bottom + 1] + [v for e in edges for v in (e + 1, -e - 1, e + 3)]]
    else:  # (Where: each of a and b chosen by turns)
        a = [top, bottom] + [v for e in edges for v in (e + 1, -e - 1)]
        b = [bottom, top] + [v for e in edges for v in (-e - 1, e + 1)]
        return [[i % 2 == 0 for i in range(len(a))], a, b]
    return [list(column) for column in zip(*pairs, strict=True)]


def _signed_small_operands(op_type: str) -> list[list[int]]:
    """Operands of ``op_type`` as small as the backend's cases hold, of both signs (each quotient
    and remainder sign once), so that a runtime wrong only past the edges has the op judged
    partly, not refused, where no backend case holds its type (Add on int64)."""
    if op_type in ("Abs", "Neg"):
        return [[3, -5, 0, 7]]
    if op_type == "Where":
        return [[True, False, True, False], [3, -5, 0, 7], [-2, 4, 6, -1]]
    return [[7, -7, 7, -7, 3, 0], [2, 2, -2, -2, 3, 5]]


def _exact_result(op_type: str, attributes: dict, operands: list[list]) -> list:
    """``op_type`` of ``operands`` in Python's integers: Div truncates toward zero, Mod takes the
    divisor's sign (the dividend's with ``fmod=1``), as ONNX defines them on integers."""

    def quotient(a: int, b: int) -> int:
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q

    binary = {
        "Less": lambda a, b: a < b,
        "LessOrEqual": lambda a, b: a <= b,
        "Greater": lambda a, b: a > b,
        "GreaterOrEqual": lambda a, b: a >= b,
        "Equal": lambda a, b: a == b,
        "Max": max,
        "Min": min,
        "Add": lambda a, b: a + b,
        "Sub": lambda a, b: a - b,
        "Mul": lambda a, b: a * b,
        "Div": quotient,
        "Mod": (lambda a, b: a - b * quotient(a, b)) if attributes.get("fmod") else (lambda a, b: a % b),
    }
    if op_type == "Abs":
        return [abs(v) for v in operands[0]]
    if op_type == "Neg":
        return [-v for v in operands[0]]
    if op_type == "Where":
        return [a if c else b for c, a, b in zip(*operands, strict=True)]
    return [binary[op_type](a, b) for a, b in zip(*operands, strict=True)]  # fmt: skip


SIGNED_WIDE_OPS = (
    ("Less", {}), ("LessOrEqual", {}), ("Greater", {}), ("GreaterOrEqual", {}), ("Equal", {}), ("Max", {}),
    ("Min", {}), ("Add", {}), ("Sub", {}), ("Mul", {}), ("Div", {}), ("Mod", {}), ("Mod", {"fmod": 1}),
    ("Abs", {}), ("Neg", {}), ("Where", {}),
)  # fmt: skip


def signed_wide_cases() -> list[tuple]:
    """Each of :data:`SIGNED_WIDE_OPS` alone on int32 and int64 where its version takes them, fed
    the type's extremes and values one step past 2^24, 2^31, 2^32 and 2^53
    (:func:`_signed_wide_operands`; ``wide_OP_TYPE_INT32@VERSION``, ``wide_Mod_1_INT64@...`` for
    ``fmod=1``), and beside each the same fed small values (``small_...``), at each version's
    first opset (7 at least), with ``#constant`` and ``#node`` variants: the backend's signed
    cases hold small values only, which a runtime computing int32 through float32 or narrowing
    int64 to int32 gets right (OpenVINO 2026.4's Div of 2147483647 by 1 is -2147483648). Each
    expected value is Python's exact integer."""
    found = []
    for op_type, attributes in SIGNED_WIDE_OPS:
        for version, opset, element_type in _versions_taking(op_type, SIGNED_WIDE_TYPES):
            dtype = floats.numpy_dtype(element_type)
            label = "_".join([op_type, *map(str, attributes.values()), _type_name(element_type)])
            for prefix, operands in (("small", _signed_small_operands(op_type)),
                                     ("wide", _signed_wide_operands(op_type, 8 * dtype.itemsize))):  # fmt: skip
                exact = _exact_result(op_type, attributes, operands)
                inputs = [np.array(values, np.bool_ if op_type == "Where" and i == 0 else dtype)
                          for i, values in enumerate(operands)]  # fmt: skip
                expected = np.array(exact, np.bool_ if isinstance(exact[0], bool) else dtype)
                found += _op_cases(f"{prefix}_{label}@{version}", op_type, attributes, opset, inputs, expected, prefix)
    return found


IEEE_TYPES = (onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
# (op, attributes, numpy's answer, correctly rounded): the exact ops are judged exactly (but for
# the sign of a zero: probe.matches compares values), the correctly rounded ones within 2 machine
# epsilons of the answer, relative (2 to 4 ulps), and 2 subnormal steps (a runtime dividing by
# multiplying by the reciprocal is 1 ulp off, and still right)
IEEE_OPS = (
    ("Abs", {}, np.abs, False), ("Neg", {}, np.negative, False), ("Floor", {}, np.floor, False),
    ("Ceil", {}, np.ceil, False), ("Round", {}, np.round, False), ("Sqrt", {}, np.sqrt, True),
    ("Reciprocal", {}, np.reciprocal, True), ("Add", {}, np.add, True), ("Sub", {}, np.subtract, True),
    ("Mul", {}, np.multiply, True), ("Div", {}, np.divide, True), ("Mod", {"fmod": 1}, np.fmod, False),
    ("Max", {}, np.maximum, False), ("Min", {}, np.minimum, False), ("Less", {}, np.less, False),
    ("LessOrEqual", {}, np.less_equal, False), ("Greater", {}, np.greater, False),
    ("GreaterOrEqual", {}, np.greater_equal, False), ("Equal", {}, np.equal, False),
    ("Sign", {}, np.sign, False), ("IsNaN", {}, np.isnan, False),
)  # fmt: skip
IEEE_SPREAD = 2000  # (values spread over every binade, beside the special ones)
# Ops ONNX defines on NaN by nothing: Sign is 1 above 0, -1 below and 0 at 0, and NaN is none
# of those (onnxruntime gives 0 on float16, NaN on float): their cases hold no NaN.
NAN_UNDEFINED = frozenset({"Sign"})


def _special_floats(dtype: np.dtype) -> np.ndarray:
    """Each class of value of a float type, of both signs: 0, the least subnormal, a subnormal of
    half the least normal, the least normal, the machine epsilon, 1/2, 1, the next after 1, 3/2,
    2, 5/2 (ties of Round), 3, 7, the greatest finite value, infinity, and NaN."""
    info = np.finfo(dtype)
    magnitudes = [0.0, info.smallest_subnormal, info.smallest_normal / 2, info.smallest_normal, info.eps, 0.5, 1.0,
                  1 + info.eps, 1.5, 2.0, 2.5, 3.0, 7.0, info.max, np.inf]  # fmt: skip
    values = np.array(magnitudes, dtype)
    return np.concatenate([values, -values, np.array([np.nan], dtype)])


def _spread_floats(dtype: np.dtype, seed: int) -> np.ndarray:
    """:data:`IEEE_SPREAD` values of random sign and mantissa, their exponents drawn evenly from
    the least subnormal's to the greatest finite value's."""
    info, rng = np.finfo(dtype), np.random.default_rng(seed)
    exponents = rng.integers(info.minexp - info.nmant, info.maxexp, IEEE_SPREAD)
    mantissas = rng.uniform(1, 2, IEEE_SPREAD) * rng.choice([-1.0, 1.0], IEEE_SPREAD)
    with np.errstate(over="ignore", under="ignore"):
        return (np.ldexp(mantissas, exponents)).astype(dtype)


def _ieee_operands(dtype: np.dtype, arity: int) -> list[np.ndarray]:
    """Every special value (:func:`_special_floats`) of a float type, or every pair of them, then
    spread values (:func:`_spread_floats`, one draw per operand)."""
    special = _special_floats(dtype)
    if arity == 1:
        return [np.concatenate([special, _spread_floats(dtype, 1)])]
    a, b = (grid.reshape(-1) for grid in np.meshgrid(special, special, indexing="ij"))
    return [np.concatenate([a, _spread_floats(dtype, 1)]), np.concatenate([b, _spread_floats(dtype, 2)])]


def _operands_of(op_type: str, version: int) -> int:
    """How many operands a case of the op feeds: its schema's inputs, two for a variadic one (Max)."""
    inputs = schemas.schema_in_force(op_type, version).inputs
    variadic = inputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
    return len(inputs) + (1 if variadic else 0)


def ieee_cases() -> list[tuple]:
    """Each of :data:`IEEE_OPS` alone on float16, float and double where its version takes them,
    fed every class of value (zeros, subnormals, the extremes, infinities and NaN, each pair of
    them for two operands) and values spread over the whole exponent range
    (:func:`_ieee_operands`), at each version's first opset (7 at least;
    ``ieee_OP_TYPE_FLOAT@VERSION``, ``ieee_Mod_1_DOUBLE@13`` for ``fmod=1``), with ``#constant``
    and ``#node`` variants. The backend's float cases hold ordinary values only, which a runtime
    computing double as float, dividing by multiplying by the reciprocal, taking fmod through a
    float32 quotient or comparing NaN as greater gets right. Each expected value is numpy's: IEEE
    754's correctly rounded answer (within the tolerance of :data:`IEEE_OPS`), C's fmod, Round's
    ties to even, comparisons false for NaN; Max and Min propagate NaN as numpy, onnxruntime and
    onnx.reference do (ONNX says nothing of it, and IEEE 754's maxNum drops it); no NaN is fed to
    :data:`NAN_UNDEFINED`'s ops."""
    found = []
    for op_type, attributes, answer, rounded in IEEE_OPS:
        for version, opset, element_type in _versions_taking(op_type, IEEE_TYPES):
            arity = _operands_of(op_type, version)
            dtype = floats.numpy_dtype(element_type)
            inputs = _ieee_operands(dtype, arity)
            if op_type in NAN_UNDEFINED:
                defined = ~np.any([np.isnan(operand) for operand in inputs], axis=0)
                inputs = [operand[defined] for operand in inputs]
            with np.errstate(all="ignore"):
                expected = np.asarray(answer(*inputs))
            info = np.finfo(dtype)
            rtol, atol = (2 * float(info.eps), 2 * float(info.smallest_subnormal)) if rounded else (0.0, 0.0)
            label = "_".join([op_type, *map(str, attributes.values()), _type_name(element_type)])
            found += _op_cases(f"ieee_{label}@{version}", op_type, attributes, opset, inputs, expected, "ieee",
                               rtol=rtol, atol=atol)  # fmt: skip
    return found


CUMSUM_TYPES = (onnx.TensorProto.INT32, onnx.TensorProto.INT64)
# (label, attributes): plain, its defaults stated, exclusive, exclusive with reverse stated,
# reversed, both
CUMSUM_ATTRIBUTES = (("", {}), ("_stated", {"exclusive": 0, "reverse": 0}), ("_exclusive", {"exclusive": 1}),
                     ("_exclusive_stated", {"exclusive": 1, "reverse": 0}), ("_reverse", {"reverse": 1}),
                     ("_exclusive_reverse", {"exclusive": 1, "reverse": 1}))  # fmt: skip


def integer_cumsum_cases() -> list[tuple]:
    """CumSum of small int32 and int64 values of both signs along their one axis (a 0-D int64
    input), plain, with its defaults stated, exclusive (reverse left out and stated), reversed,
    and both, at each version's first opset (``small_CumSum_stated_INT64@11``...), with
    ``#constant`` and ``#node`` variants: the
    backend's CumSum cases hold float, double and int32 only, so no runtime's int64 sums were
    probed (onnx2torch sums int32 into int64, which a Cast around an int64 CumSum avoids). Each
    expected value is Python's exact integer."""
    x = [3, -5, 0, 7, -2, 4]
    found = []
    for version, opset, element_type in _versions_taking("CumSum", CUMSUM_TYPES):
        dtype = floats.numpy_dtype(element_type)
        for label, attributes in CUMSUM_ATTRIBUTES:
            order = x[::-1] if attributes.get("reverse") else x
            running = [sum(order[: k + (0 if attributes.get("exclusive") else 1)]) for k in range(len(order))]
            expected = np.array(running[::-1] if attributes.get("reverse") else running, dtype)
            node = onnx.helper.make_node("CumSum", ["a", "b"], ["c"], name="node", **attributes)
            graph = onnx.helper.make_graph(
                [node], "small",
                [onnx.helper.make_tensor_value_info("a", element_type, [len(x)]),
                 onnx.helper.make_tensor_value_info("b", onnx.TensorProto.INT64, [])],
                [onnx.helper.make_tensor_value_info("c", element_type, [len(x)])],
            )  # fmt: skip
            model = _case_model(graph, opset)
            inputs = [np.array(x, dtype), np.array(0, np.int64)]
            case = SimpleNamespace(data_sets=[(inputs, [expected])], rtol=0.0, atol=0.0)
            name = f"small_CumSum{label}_{_type_name(element_type)}@{version}"
            found += with_variants(name, opset, model, case)
    return found


# 2-D pads padding some axis more at one end: the end only, the begin only, crossed
UNEVEN_PADS = ([0, 0, 1, 1], [1, 1, 0, 0], [0, 1, 1, 0])
# (op, label, attributes) of the uneven-pads cases
UNEVEN_POOLINGS = (("AveragePool", "", {}), ("AveragePool", "_include", {"count_include_pad": 1}),
                   ("MaxPool", "", {}), ("LpPool", "", {}), ("Conv", "", {}))  # fmt: skip


def uneven_pads_cases() -> list[tuple]:
    """AveragePool (count_include_pad 0 and 1), MaxPool, LpPool and Conv (its weights an
    initializer) of a fed float 1x1x5x5 input, kernel 2x2, strides left out and 2x2, with each
    of :data:`UNEVEN_PADS`, at the first opset of each version onnxruntime runs
    (``uneven_AveragePool_include_2@19``, ``uneven_MaxPool_strided_0@22``...): every backend
    case of these ops pads both ends of each axis alike, and runtimes take uneven pads otherwise
    (onnx2torch pools no AveragePool-7 to -11 so; it converts no later version at all).
    Expected values are onnxruntime's, as the corpus cases' are (checked against numpy's for
    the poolings: tests/targets/test_prepare_cases.py)."""
    from lowering.verification.runtime import run_onnxruntime

    x = (np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5) - 12) / 4
    weights = numpy_helper.from_array(np.array([[[[1.0, -2.0], [0.5, 3.0]]]], np.float32), "w")
    found = []
    for op_type, label, attributes in UNEVEN_POOLINGS:
        for version, opset, _ in _versions_taking(op_type, (onnx.TensorProto.FLOAT,)):
            for strided, strides in (("", {}), ("_strided", {"strides": [2, 2]})):
                for k, pads in enumerate(UNEVEN_PADS):
                    inputs, initializers = (["x", "w"], [weights]) if op_type == "Conv" else (["x"], [])
                    node = onnx.helper.make_node(op_type, inputs, ["y"], name="node", kernel_shape=[2, 2], pads=pads,
                                                 **strides, **attributes)  # fmt: skip
                    fed = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 5, 5])
                    given = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
                    graph = onnx.helper.make_graph([node], "uneven", [fed], [given], initializers)
                    model = _case_model(graph, opset)
                    try:
                        [expected] = run_onnxruntime(model, {"x": x})
                    except Exception as error:  # (a version onnxruntime has no kernel for: AveragePool-1)
                        if "NOT_IMPLEMENTED" not in str(error):
                            raise
                        continue
                    output = model.graph.output[0].type.tensor_type
                    output.shape.dim.extend(onnx.TensorShapeProto.Dimension(dim_value=d) for d in expected.shape)
                    name = f"uneven_{op_type}{label}{strided}_{k}@{version}"
                    found.append((name, opset, model.SerializeToString(), [([x], [expected])], 0.0, 0.0))
    return found


# (input shape, shape) of the copied-lengths cases: 0s copying lengths behind a leading 1 or not,
# of a rank-4 input, and of a rank-3 one made rank 4 (the DFT rule's bins)
COPIED_LENGTHS = (((1, 3, 2, 4), [0, 0, -1]), ((1, 3, 2, 4), [1, 0, 8]), ((1, 3, 2, 4), [0, 0, 2, 4]),
                  ((3, 1, 2, 4), [0, 0, -1]), ((1, 3, 8), [0, 0, 4, 2]))  # fmt: skip
COPIED_TYPED = (0, 3)  # (those made of each of RESHAPED_TYPES too; float alone for the others)
# the types beside float the cases of a kind of value that concerns shapes alone are made of (a
# verdict on a node holding the kind is read from the cases of its own type that hold it)
KIND_TYPES = (onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.INT64, onnx.TensorProto.INT32,
              onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.BOOL)  # fmt: skip
RESHAPED_TYPES = (*KIND_TYPES, onnx.TensorProto.BFLOAT16)  # (onnxruntime has no Expand of bfloat16)


def _values_of(element_type: int, dims: tuple[int, ...]) -> np.ndarray:
    """0, 1, 2, ... in ``dims`` (bool: alternating), of ``element_type``."""
    counted = np.arange(int(np.prod(dims, dtype=np.int64))).reshape(dims)
    return (counted % 2 if element_type == onnx.TensorProto.BOOL else counted).astype(floats.numpy_dtype(element_type))


def _shape_fed_cases(op_type: str, name: str, element_type: int, dims, shape, expected_dims, opset: int) -> list:
    """``op_type``(x, shape), x of ``dims`` and the shape fed, with its ``#constant`` and ``#node``
    variants (:func:`with_variants`), giving x's values in ``expected_dims``."""
    x = _values_of(element_type, dims)
    expected = x.reshape(expected_dims) if op_type == "Reshape" else np.broadcast_to(x, expected_dims).copy()
    node = onnx.helper.make_node(op_type, ["x", "shape"], ["y"], name="node")
    fed = [onnx.helper.make_tensor_value_info("x", element_type, list(dims)),
           onnx.helper.make_tensor_value_info("shape", onnx.TensorProto.INT64, [len(shape)])]  # fmt: skip
    given = onnx.helper.make_tensor_value_info("y", element_type, list(expected.shape))
    model = _case_model(onnx.helper.make_graph([node], name.split("@")[0], fed, [given]), opset)
    case = SimpleNamespace(data_sets=[([x, np.array(shape, np.int64)], [expected])], rtol=0.0, atol=0.0)
    return with_variants(name, opset, model, case)


def copied_lengths_cases() -> list[tuple]:
    """Reshape of a fed input by a shape whose 0s copy the input's lengths, fed, constant and
    given by a node (:func:`with_variants`), at the first opset of each version of Reshape taking
    a shape input: float of each of :data:`COPIED_LENGTHS` (``copied_Reshape_0@14``), and each of
    :data:`RESHAPED_TYPES` of those :data:`COPIED_TYPED` names (``copied_Reshape_0_INT64@14``): the
    backend's cases copy lengths only behind a leading length above 1, and tract 0.21 copies them
    wrong (or aborts) behind a leading 1, which every batch of one has."""
    found = []
    for version, opset, element_type in _versions_taking("Reshape", (onnx.TensorProto.FLOAT, *RESHAPED_TYPES)):
        if "shape" not in [formal.name for formal in schemas.schema_in_force("Reshape", version).inputs]:
            continue  # (Reshape-1 takes its shape as an attribute)
        typed = "" if element_type == onnx.TensorProto.FLOAT else f"_{_type_name(element_type)}"
        for k, (dims, shape) in enumerate(COPIED_LENGTHS):
            if typed and k not in COPIED_TYPED:
                continue
            copied = [dims[i] if want == 0 else want for i, want in enumerate(shape)]
            name = f"copied_Reshape_{k}{typed}@{version}"
            found += _shape_fed_cases("Reshape", name, element_type, dims, shape, copied, opset)
    return found


def kept_lengths_cases() -> list[tuple]:
    """Expand of a fed x of shape [3, 1] by a shape [2, 1, 6], whose 1 keeps x's length 3 (the
    backend's test_expand_dim_changed, of float only), fed, constant and given by a node, of each
    of :data:`KIND_TYPES` at the first opset of each version of Expand (``kept_Expand_INT64@13``):
    TVM 0.27 takes a fed shape as the output's."""
    found = []
    for version, opset, element_type in _versions_taking("Expand", KIND_TYPES):
        name = f"kept_Expand_{_type_name(element_type)}@{version}"
        found += _shape_fed_cases("Expand", name, element_type, (3, 1), [2, 1, 6], [2, 3, 6], opset)
    return found


def empty_reduction_cases() -> list[tuple]:
    """ReduceMax and ReduceMin of a fed x of shape [2, 0, 4] over axis 1 (keepdims), whose
    answer is the reduction's identity (-inf or the type's lowest for Max, +inf or its highest
    for Min; False and True of bools), of each of :data:`KIND_TYPES` and float at the first
    opset of each version taking it (``empty_ReduceMax_UINT8@18``), the axes an attribute or,
    from version 18, an input (with its ``#constant`` and ``#node`` variants): the backend's
    empty-set cases are of float and bool only, and TVM 0.27 reduces no uint8 element wrong."""
    found = []
    for op_type in ("ReduceMax", "ReduceMin"):
        for version, opset, element_type in _versions_taking(op_type, (onnx.TensorProto.FLOAT, *KIND_TYPES)):
            dtype = floats.numpy_dtype(element_type)
            identity = empty_reduction.identity_of(op_type, element_type)
            x, expected = np.zeros((2, 0, 4), dtype), np.full((2, 1, 4), identity, dtype)
            axes_input = "axes" in [formal.name for formal in schemas.schema_in_force(op_type, version).inputs]
            inputs, data = [onnx.helper.make_tensor_value_info("x", element_type, [2, 0, 4])], [x]
            if axes_input:
                inputs.append(onnx.helper.make_tensor_value_info("axes", onnx.TensorProto.INT64, [1]))
                data.append(np.array([1], np.int64))
            node = onnx.helper.make_node(op_type, [info.name for info in inputs], ["y"], name="node", keepdims=1,
                                         **({} if axes_input else {"axes": [1]}))  # fmt: skip
            name = f"empty_{op_type}_{_type_name(element_type)}@{version}"
            output = onnx.helper.make_tensor_value_info("y", element_type, [2, 1, 4])
            model = _case_model(onnx.helper.make_graph([node], name.split("@")[0], inputs, [output]), opset)
            case = SimpleNamespace(data_sets=[(data, [expected])], rtol=0.0, atol=0.0)
            found += with_variants(name, opset, model, case)
    return found


def _type_name(element_type: int) -> str:
    return onnx.helper.tensor_dtype_to_string(element_type).removeprefix("TensorProto.")


def node_cases(models, prefix: str, other_versions: bool, constants_from_nodes: bool = True) -> list[tuple]:
    """Per (name, model, feeds) of ``models``, the cases of one node of each form not met before
    (see :func:`corpus_cases`), named ``PREFIX_NAME_NODE``, each also at the first opset of its op
    version where older and, with ``other_versions``, at its op's other versions
    (:func:`at_other_versions`: ``--target`` may take a model to an older opset, where the node
    is of another version); with ``constants_from_nodes``, a constant a node gives in the
    model is given by a Constant in the case (else by an initializer: the patterns' Constants
    are at the case's opset, whose Constant onnx2torch may lack, and --target moves them)."""
    import onnxruntime

    found, seen = [], set()
    for stem, model, feeds in models:
        opset = schemas.default_opset(model.opset_import)
        try:
            values = _every_value(model, feeds, onnxruntime)
        except Exception:  # (onnxruntime cannot run it: nothing of it to probe)
            continue
        fed, constant = value_sources(model)
        declared = {info.name: info for info in model.graph.value_info}
        given_by_nodes = constants_given_by_nodes(model, constant) if constants_from_nodes else set()
        undefined: set[str] = set()  # values ONNX leaves undefined here, and what is computed from them
        for node in model.graph.node:
            if any(name in undefined for name in node.input) or casts_out_of_range(node, values):
                undefined.update(node.output)
                continue
            if (
                node.domain not in ("", "ai.onnx")
                or node.op_type == "Constant"
                or node.op_type in RANDOM_OPS  # (its values are one draw: no runtime is asked to match them)
                or any(a.g.node or a.graphs for a in node.attribute)
            ):
                continue
            names = [name for name in [*node.input, *node.output] if name]
            if not all(isinstance(values.get(name), np.ndarray) for name in names):
                continue
            if not any(name in fed for name in node.input):  # (constants alone: folded, or the runtime's to fold)
                continue
            case = _node_case(node, opset, model.ir_version, values, fed, declared, given_by_nodes)
            form = case_form(case, opset)
            key = (
                node.op_type,
                schemas.version_in_force(node.op_type, opset),
                json.dumps(form.as_data(), sort_keys=True),
            )
            if key in seen:
                continue
            seen.add(key)
            inputs = [values[info.name] for info in case.graph.input]
            expected = [values[name] for name in node.output if name]
            name = f"{prefix}_{stem}_{node.name or len(found)}"
            entry = (name, opset, case.SerializeToString(), [(inputs, expected)], CORPUS_RTOL, CORPUS_ATOL)
            found += [entry, *at_other_versions([entry], node.op_type, opset, others=other_versions, own=True)]
    return found


def casts_out_of_range(node: onnx.NodeProto, values: dict) -> bool:
    """Whether ``node`` (Cast, CastLike) casts a float value (bfloat16 and float8 too) to an
    integer type where some of it lies outside that type (infinities, NaN among them), which
    ONNX's Cast leaves undefined."""
    if node.op_type not in ("Cast", "CastLike") or not isinstance(values.get(node.input[0]), np.ndarray):
        return False
    value = values[node.input[0]]
    if node.op_type == "CastLike":
        like = values.get(node.input[1]) if len(node.input) > 1 else None
        target = like.dtype if isinstance(like, np.ndarray) else None
    else:
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        target = onnx.helper.tensor_dtype_to_np_dtype(to) if to else None
    floating = value.dtype.kind == "f" or value.dtype.kind == "V" and value.dtype.itemsize <= 2  # (ml_dtypes' floats)
    if not floating or target is None or np.dtype(target).kind not in "iu":
        return False
    limits = np.iinfo(target)
    with np.errstate(invalid="ignore"):
        wide = value.astype(np.float64)
        return bool(((~np.isfinite(wide)) | (wide < limits.min) | (wide >= float(limits.max) + 1)).any())


def _every_value(model: onnx.ModelProto, feeds: dict, onnxruntime) -> dict[str, np.ndarray]:
    """Every tensor value of the main graph, as onnxruntime computes it (no graph optimization)
    on ``feeds`` (onnx.reference where onnxruntime cannot run the model); the model's
    initializers and Constants among them."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {info.name: info.type for info in [*inferred.graph.value_info, *inferred.graph.output]}
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    asked = []
    for node in model.graph.node:
        for name in node.output:
            type_proto = types.get(name)
            if name and type_proto is not None and type_proto.tensor_type.elem_type:
                output = probe.graph.output.add(name=name)
                output.type.tensor_type.elem_type = type_proto.tensor_type.elem_type
                asked.append(name)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = onnxruntime.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
        values = dict(zip(asked, session.run(asked, feeds), strict=True))
    except Exception:  # (an op onnxruntime has no kernel for, such as Swish-24: onnx's reference computes it)
        from onnx.reference import ReferenceEvaluator

        values = dict(zip(asked, ReferenceEvaluator(probe).run(asked, feeds), strict=True))
    values.update(feeds)
    values.update({t.name: numpy_helper.to_array(t) for t in model.graph.initializer})
    return values


def _node_case(
    node: onnx.NodeProto,
    opset: int,
    ir_version: int,
    values: dict,
    fed: set[str],
    declared: dict,
    given_by_nodes: set[str],
) -> onnx.ModelProto:
    """The model of ``node`` alone: its fed inputs graph inputs, its other inputs Constant nodes
    where a node gives the export's (``given_by_nodes``: a Constant, an Identity of a weight), else
    initializers, each value's type and shape
    as computed; value_info for the values the export states there,
    with the shapes they have (tract 0.21 fails GatherND where its output's shape is stated there,
    and not otherwise; the export's own names of dimensions would not fit the values fed)."""

    def info(name):
        value = values[name]
        return onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)

    inputs, initializers, constants = [], [], []
    for name in dict.fromkeys(n for n in node.input if n):
        if name in fed:
            inputs.append(info(name))
        elif name in given_by_nodes:
            constants.append(onnx.helper.make_node("Constant", [], [name], value=numpy_helper.from_array(values[name])))
        else:
            initializers.append(numpy_helper.from_array(values[name], name))
    outputs = [info(name) for name in node.output if name]
    stated = [info(name) for name in dict.fromkeys([*node.input, *node.output]) if name in declared]
    nodes = [*constants, node]
    graph = onnx.helper.make_graph(nodes, node.name or node.op_type, inputs, outputs, initializers, value_info=stated)
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)], ir_version=ir_version)


def _converted(model: onnx.ModelProto, opset: int, op_type: str) -> onnx.ModelProto | None:
    """The case taken by onnx-lower to ``opset``, where its op stays one node there, or becomes
    one node of the op that takes its place where its version there is deprecated (Upsample-10
    is written as Resize-10, Scatter-11 as ScatterElements-11: cases of those). Kept where onnx's
    schema takes it, whatever kernels onnxruntime has (:data:`ANY_KERNELS`: a TopK-11 of uint64,
    which onnxruntime's kernels do not run, is probed too)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            converted = lowering.lower(model, target_opset=opset, ops=[], fold="none", target=ANY_KERNELS)
    except Exception:  # (the case cannot be written at that opset: not probed there)
        return None
    moved = main_node(converted)
    if moved is None:
        return None
    replaced = schemas.schema_in_force(op_type, opset)
    return converted if moved.op_type == op_type or (replaced is not None and replaced.deprecated) else None


def case_form(model: onnx.ModelProto, opset: int) -> NodeForm:
    """The form of the case's node: its graph inputs fed, its initializers and Constants
    constant (Constant nodes' given by nodes), the shapes and element types of its graph inputs,
    initializers and Constant nodes."""
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
    from_nodes = {o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    for node in model.graph.node:
        tensor = constant_tensor(node)
        if tensor is not None and node.output:
            shapes[node.output[0]], element_types[node.output[0]] = tuple(tensor.dims), tensor.data_type
    return node_form(main_node(model), opset, fed, constants, shapes, element_types, from_nodes)


def onnxruntime_references(cases: list[tuple]) -> dict[str, list]:
    """Per case (name, opset, model bytes, data sets, ...) with a float expected output,
    onnxruntime's outputs on each data set (None for a set it does not run or gives other than
    arrays for, and for one whose outputs are drawn at random: another draw is no reference)."""
    references = {}
    for name, _, model_bytes, data_sets, *_ in cases:
        if not any(_float_array(feed(value)) for _, expected in data_sets for value in expected):
            continue
        model = onnx.load_from_string(model_bytes)
        node, names = main_node(model), [info.name for info in model.graph.input]
        computed = []
        constants = {name: numpy_helper.to_array(tensor) for name, tensor in constants_by_name(model).items()}
        for inputs, _ in data_sets:
            feeds = dict(zip(names, map(feed, inputs), strict=False))
            # (a Dropout's ratio and training mode may be constants: #constant, #node)
            drawn = node is not None and drawn_at_random(node, {**constants, **feeds})
            computed.append(None if drawn else onnxruntime_outputs(model, feeds))
        if any(outputs is not None for outputs in computed):
            references[name] = computed
    return references


def _float_array(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind == "f"


def write_forms(cases: list[tuple], path: Path) -> None:
    """Each case's form by name (what lowering.node_forms reads; the same for every runtime), and
    the forms already written of cases a shipped profile still holds that the set no longer makes
    (a profile keeps its verdicts until its runtime is probed again with ``--cases``)."""
    forms = {name: case_form(onnx.load_from_string(data), opset).as_data() for name, opset, data, *_ in cases}
    path.write_text(json.dumps(forms | retired_forms(forms, path), sort_keys=True, separators=(",", ":")) + "\n")


def kinds_of_case(case: tuple) -> set[str]:
    """The kinds of value (lowering.value_kinds) the case's node is given in some data set: its
    constants, and its graph inputs as each data set feeds them (their shapes too)."""
    _, opset, model_bytes, data_sets, *_ = case
    model = onnx.load_from_string(model_bytes)
    node = main_node(model)
    if node is None:
        return set()
    constants = {name: numpy_helper.to_array(tensor) for name, tensor in constants_by_name(model).items()}
    names = [info.name for info in model.graph.input]
    found = set()
    for inputs, _ in data_sets or [((), ())]:
        values = {**dict(zip(names, map(feed, inputs), strict=False)), **constants}
        arrays = {name: value for name, value in values.items() if isinstance(value, np.ndarray)}
        shapes = {name: value.shape for name, value in arrays.items()}
        held = kinds_held(node, opset, arrays.get, shapes)
        found |= {kind for kind, is_held in held.items() if is_held}
    return found


def write_values(cases: list[tuple], path: Path) -> None:
    """The cases of each kind of value (what lowering.value_kinds reads as ``cases_of_values``),
    and of the names already written, those a shipped profile still holds that the set no
    longer makes."""
    made = {case[0] for case in cases}
    written = json.loads(path.read_text()) if path.exists() else {}
    held = set().union(*(profile.get("cases", {}) for profile in shipped_profiles()))
    kinds = {case[0]: kinds_of_case(case) for case in cases}
    values = {}
    for kind in KINDS:
        kept = {name for name in written.get(kind, []) if name in held and name not in made}
        values[kind] = sorted({name for name, found in kinds.items() if kind in found} | kept)
    path.write_text(json.dumps(values, indent=1) + "\n")


def retired_forms(forms: dict, path: Path) -> dict:
    """The forms in ``path`` of cases some shipped profile holds and ``forms`` lacks."""
    written = json.loads(path.read_text()) if path.exists() else {}
    held = set().union(*(profile.get("cases", {}) for profile in shipped_profiles()))
    return {name: form for name, form in written.items() if name in held and name not in forms}


def shipped_profiles() -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(PROFILES.glob("*.json"))]


def all_cases() -> list[tuple]:
    """The backend cases with their variants and other op versions, the Constants, the inputs of
    each type and rank, outputs of no elements, Expands of a
    scalar, the Casts and CastLikes between integer types, the Casts to and from floats, unsigned
    arithmetic in the upper half of the range, signed arithmetic past 2^24, 2^31 and 2^53, float arithmetic on
    every class of IEEE value, integer CumSum, pooling and convolution padded unevenly, Reshapes
    copying lengths behind a leading 1, Expands keeping a length by a 1, ReduceMax and ReduceMin of
    no element (each of these made here
    with its ``#stated`` twin too, :func:`with_defaults_stated`: stating a default is judged by
    twins of the same values, and onnx2torch's int64 CumSum has only these cases), the corpus's
    nodes, then the nodes the patterns write and those the forms write."""
    made = (constant_cases() + input_cases() + output_cases() + expand_scalar_cases() + if_cases()
            + integer_cast_cases() + integer_castlike_cases()
            + float_integer_cast_cases()
            + unsigned_upper_half_cases() + signed_wide_cases() + ieee_cases() + integer_cumsum_cases()
            + uneven_pads_cases() + copied_lengths_cases() + kept_lengths_cases()
            + empty_reduction_cases())  # fmt: skip
    return prepared_cases() + made + with_defaults_stated(made) + corpus_cases() + lowered_cases() + chosen_cases()


def constant_outputs_of(cases: list[tuple]) -> dict[str, list[str]]:
    """Per case (name, opset, model bytes, ...) with an output a runtime of static shapes finds
    constant (``lowering.constant_outputs``), those outputs: targets/probe.py takes a runner's
    refusal of a constant output as the case's interface only there (rknn says "All outputs [...]
    are constants" of a window whose fed size it needs constant, too)."""
    found = {}
    for name, _, model_bytes, *_ in cases:
        model = onnx.load_from_string(model_bytes)
        constant = constant_outputs(model, inferred_types(model))
        if constant:
            found[name] = sorted(constant)
    return found


if __name__ == "__main__":
    cases = all_cases()
    references = onnxruntime_references(cases)
    constants = constant_outputs_of(cases)
    Path(sys.argv[1]).write_bytes(pickle.dumps({"cases": cases, "onnxruntime": references,
                                                "constant_outputs": constants}))  # fmt: skip
    write_forms(cases, CASE_FORMS)
    write_values(cases, CASE_VALUES)
    print(f"wrote {len(cases)} cases to {sys.argv[1]} (onnxruntime's outputs on {len(references)}), "
          f"their forms to {CASE_FORMS}, the kinds of values they hold to {CASE_VALUES}")  # fmt: skip
