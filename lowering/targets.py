"""Targets: the runtime a lowered model must run on, which types its arithmetic runs in,
and which kernels it has."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import onnx

from . import floats, schemas

KernelTable = dict[str, list[tuple[int, int, frozenset[int]]]]
# Per op: each kernel's (first version, last version, element types per type constraint).
ConstraintTable = dict[str, list[tuple[int, int, dict[str, frozenset[int]]]]]


@dataclass(frozen=True)
class Target:
    """What a legal node is: the default-domain ``opset`` to write (None: the model's own),
    the ``lowered_ops`` that must not remain, and the runtime the result must run on.

    ``compute_types`` are the float element types the runtime compares and does arithmetic
    in; a rule casts any other float type, exactly, to ``widening_type`` first.
    ``kernels`` returns, per default-domain op, the (first version, last version, element
    types) its kernels cover, or None when the runtime's kernels are not known.
    ``lowered_ops`` are the ops that must not remain (the default when the caller names none
    is a product choice, not "every op a pattern covers", so a new pattern changes no one's
    output unasked). A node is legal when its op is not among them and, where ``opset`` is set,
    it means there what it meant at the model's opset.
    ``widens_float16``: the runtime runs an op it has no float16 kernel for on float16 by its
    float32 kernel between Casts (onnxruntime does), so the op's float16 answer is its float32
    answer rounded once (:meth:`runs_widened`).
    """

    name: str
    compute_types: frozenset[int]
    widening_type: int
    kernels: Callable[[], KernelTable | None] = lambda: None
    lowered_ops: frozenset[str] = frozenset()
    opset: int | None = None
    widens_float16: bool = False
    kernel_constraints: Callable[[], ConstraintTable | None] = lambda: None

    def takes_types(self, op_type: str, since_version: int, bound: dict[str, int]) -> bool:
        """Whether a kernel of the runtime runs this op version with each type constraint
        named in ``bound`` ("T", "Tind") on that element type (float16 by its float32 kernel
        where the runtime widens it); True where its kernels are not known (the checker then
        says what onnx allows)."""
        table = self.kernel_constraints()
        if table is None or op_type not in table:
            return table is None
        float16, float32 = onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT
        ways = [bound]
        if self.widens_float16 and float16 in bound.values():  # (run by its float32 kernel: runs_widened)
            ways.append({name: float32 if t == float16 else t for name, t in bound.items()})
        return any(
            first <= since_version <= last and all(t in types.get(name, (t,)) for name, t in way.items())
            for way in ways
            for first, last, types in table[op_type]
        )

    def compute_type(self, element_type: int) -> int:
        """The type to compute ``element_type`` values in: itself, or the exact widening."""
        if element_type in self.compute_types:
            return element_type
        if floats.is_float(element_type) and floats.numpy_dtype(element_type).itemsize < 4:
            return self.widening_type
        return element_type

    def runs_widened(self, op_type: str, since_version: int, element_type: int) -> bool:
        """True where the runtime computes this op version on ``element_type`` in float32 between
        Casts: float16 where it has the op's float32 kernel and not its float16 one."""
        float16, float32 = onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT
        return (
            self.widens_float16
            and element_type == float16
            and self.kernels() is not None
            and self.lacks_kernel(op_type, since_version, float16)
            and not self.lacks_kernel(op_type, since_version, float32)
        )

    def lacks_kernel(self, op_type: str, since_version: int, element_type: int) -> bool:
        """True only when the runtime's kernels are known and none runs this op version on this type."""
        table = self.kernels()
        if table is None:
            return False
        return not any(
            first <= since_version <= last and element_type in types for first, last, types in table.get(op_type, [])
        )


@functools.cache
def _onnxruntime_cpu_kernel_constraints() -> ConstraintTable | None:
    """onnxruntime's CPU kernels for the default domain, each with its types per constraint
    (OneHot runs on (int64, int64, int64), (int32, float, int32), ...: not every combination)."""
    try:
        from onnxruntime.capi.onnxruntime_pybind11_state import get_all_opkernel_def
    except ImportError:  # pragma: no cover - onnxruntime is a dependency
        return None
    table: ConstraintTable = {}
    for kernel in get_all_opkernel_def():
        if kernel.provider != "CPUExecutionProvider" or kernel.domain not in ("", "ai.onnx"):
            continue
        types = {name: schemas._tensor_element_types(allowed) for name, allowed in kernel.type_constraints.items()}
        table.setdefault(kernel.op_name, []).append((*kernel.version_range, types))
    return table


@functools.cache
def _onnxruntime_cpu_kernels() -> KernelTable | None:
    """onnxruntime's CPU kernels for the default domain: per kernel, every element type any of
    its type constraints takes (:func:`_onnxruntime_cpu_kernel_constraints`, merged)."""
    constraints = _onnxruntime_cpu_kernel_constraints()
    if constraints is None:
        return None
    return {
        op: [(first, last, frozenset().union(*types.values())) for first, last, types in kernels]
        for op, kernels in constraints.items()
    }


# The ops onnx-lower was made for: TensorRT's parser rejects every Optional op (older releases
# IsInf too), onnxruntime has no IsNaN-13 kernel for bfloat16 and no Optional-28 kernels.
SEED_OPS = frozenset({"IsInf", "IsNaN", "OptionalHasElement", "OptionalGetElement"})

# onnxruntime's CPU provider implements Abs, Equal, Greater and Less for float and double
# only (no float16, bfloat16 or float8 kernels); tests/test_targets.py checks this against
# the kernel registry of the installed onnxruntime. float16, bfloat16 and every float8
# embed exactly in float32, so widening them loses nothing; float64 is never narrowed.
ONNXRUNTIME_CPU = Target(
    name="onnxruntime-cpu",
    compute_types=frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE}),
    widening_type=onnx.TensorProto.FLOAT,
    kernels=_onnxruntime_cpu_kernels,
    kernel_constraints=_onnxruntime_cpu_kernel_constraints,
    lowered_ops=SEED_OPS,
    widens_float16=True,  # its graph transformer casts float16 around float32 kernels (FACTS.md)
)

DEFAULT_TARGET = ONNXRUNTIME_CPU
