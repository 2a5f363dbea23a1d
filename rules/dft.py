"""DFT (versions 17, 20) and STFT (version 17), no function body, lowered to a MatMul by cosine and sine matrices."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

from .versions.dft import DEFAULT_AXIS_17, DEFAULT_AXIS_20

DFT_EMITS = (
    "Transpose",
    "Reshape",
    "MatMul",
    "Div",
    "Cast",
    "Gather",
    "Equal",
    "If",
    "Sub",
    "Range",
    "Constant",
    "Slice",
)
STFT_EMITS = (
    "Gather",
    "Mul",
    "Reshape",
    "MatMul",
    "Cast",
    "Range",
    "Abs",
    "Add",
    "Sub",
    "Div",
    "Unsqueeze",
    "Shape",
    "Concat",
    "Mod",
    "Cos",
    "Sin",
    "Neg",
    "Flatten",
    "Constant",
)
# The rules write ops as they are from this opset on: each exists (Range from 11) and Constant
# holds int64 shapes and indices (from 9), onnx.defs says; the types MatMul runs on are asked
# per node.
FIRST_OPSET = schemas.first_opset_writing((*DFT_EMITS, *STFT_EMITS), int64_constants=True)

# How far the lowered DFT and STFT may stray from the exact transform, per float type. The
# coefficients cos(2πjk/n), sin(2πjk/n) are numpy's float64 values rounded once to the type the
# MatMul computes in (exact at multiples of a quarter turn, and symmetric: the k-th and (n-k)-th
# the same up to sign); float16 and bfloat16 are computed in float32 and rounded once at the
# end. Measured against numpy's float64 FFT on standard normal signals of lengths 1 to 128
# (odd and even), real and complex, forward, inverse, one-sided, dft_length none, shorter and
# longer, axis inner and next to last, results up to 51 in magnitude: with the rtol below, the
# atol needed was float 1.2e-6, double 8.9e-15, float16 2.5e-7, bfloat16 7e-7 (an element
# that cancels to near zero keeps the float32 sum's error, about 1e-6); on the ONNX backend
# cases (float, results up to 1e3) the largest error was 1.9e-5, within rtol. The error of a
# sum of n terms grows with n and with its largest term, not with the result: the atol holds
# for signals of about unit scale.
DFT_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=1e-3, atol=1e-5),
    TensorProto.DOUBLE: Tolerance(rtol=1e-9, atol=1e-12),
    TensorProto.FLOAT16: Tolerance(rtol=2**-10, atol=1e-5),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=1e-5),
}

# The most values a constant the rules write may hold (a coefficient matrix: 16 MiB of float32,
# 32 MiB of double; STFT's frame indices): past it DFT is not lowered, and STFT builds its matrix
# and indices at run time.
LARGEST_CONSTANT = 1 << 22

# STFT's default (onesided=1), from onnx.defs.
_STFT_ONESIDED = schemas.schema_in_force("STFT", 17).attributes["onesided"].default_value.i


# -- the numpy references ------------------------------------------------------------------------


def _as_complex(x: np.ndarray) -> np.ndarray:
    """x's last axis (1: real, 2: real and imaginary) as complex128, that axis gone."""
    wide = x.astype(np.float64)
    return wide[..., 0] + 1j * wide[..., 1] if x.shape[-1] == 2 else wide[..., 0].astype(np.complex128)


def _as_pairs(y: np.ndarray, dtype) -> np.ndarray:
    """A complex array as [..., 2] (real, imaginary) in ``dtype``."""
    return np.stack([y.real, y.imag], axis=-1).astype(dtype)


def dft_reference(
    x: np.ndarray, dft_length=None, axis=DEFAULT_AXIS_20, *, inverse: int = 0, onesided: int = 0
) -> np.ndarray:
    """numpy's FFT in float64 (complex128), cast to x's type: fft or ifft with n = dft_length
    (the signal cut or padded with zeros), the first n // 2 + 1 bins where onesided; onesided
    and inverse: irfft (n from the one-sided input, 2 (m - 1) by default), a real [..., 1]
    answer; n = 0 an empty one. ``axis`` as DFT-20 takes it (a DFT-17 node's attribute passed
    here)."""
    axis = int(np.asarray(axis).reshape(-1)[0]) % x.ndim
    signal = _as_complex(x)
    length = x.shape[axis]
    if dft_length is None:
        n = 2 * (length - 1) if inverse and onesided else length
    else:
        n = int(np.asarray(dft_length).reshape(-1)[0])
    if n == 0:  # an empty transform, as onnxruntime's kernel gives
        shape = list(x.shape)
        shape[axis], shape[-1] = 0, 1 if inverse and onesided else 2
        return np.zeros(shape, x.dtype)
    if inverse and onesided:
        return np.fft.irfft(signal, n=n, axis=axis)[..., None].astype(x.dtype)
    y = np.fft.ifft(signal, n=n, axis=axis) if inverse else np.fft.fft(signal, n=n, axis=axis)
    if onesided:
        y = np.take(y, range(n // 2 + 1), axis=axis)
    return _as_pairs(y, x.dtype)


def stft_reference(signal: np.ndarray, frame_step, window=None, frame_length=None, *, onesided: int = 1):
    """The frames ``signal[:, f * step : f * step + frame_length]`` times the window, each
    through numpy's float64 FFT (the first frame_length // 2 + 1 bins where onesided), cast to
    the signal's type: [batch, frames, bins, 2]."""
    step = int(np.asarray(frame_step).reshape(-1)[0])
    length = signal.shape[1]
    if frame_length is not None:
        size = int(np.asarray(frame_length).reshape(-1)[0])
    else:
        size = window.shape[0] if window is not None else length
    weights = np.ones(size) if window is None else np.asarray(window).astype(np.float64)
    frames = 1 + (length - size) // step
    starts = np.arange(frames)[:, None] * step + np.arange(size)[None, :]
    framed = _as_complex(signal)[:, starts] * weights  # [batch, frames, size]
    y = np.fft.fft(framed, axis=-1)
    if onesided:
        y = y[..., : size // 2 + 1]
    return _as_pairs(y, signal.dtype)


# -- the coefficient matrices --------------------------------------------------------------------


def unit_circle(turns: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2π·turns/n in float64: turns taken modulo n and folded to the first half
    turn (so the k-th and (n-k)-th coefficients agree up to sign), multiples of a quarter turn
    exact (0, ±1)."""
    m = np.asarray(turns, dtype=np.int64) % n
    folded = np.minimum(m, n - m)
    sign = np.where(m > n - m, -1.0, 1.0)
    angle = 2 * np.pi * folded / n
    cos, sin = np.cos(angle), sign * np.sin(angle)
    quarter = (4 * m) % n == 0
    q = (4 * m) // n
    cos = np.where(quarter, np.choose(q % 4, [1.0, 0.0, -1.0, 0.0]), cos)
    sin = np.where(quarter, np.choose(q % 4, [0.0, 1.0, 0.0, -1.0]), sin)
    return cos, sin


def dft_matrix(length: int, channels: int, n: int, *, inverse: int, onesided: int) -> np.ndarray:
    """W, float64, [length · channels, bins · parts]: the signal along the axis laid out as
    (j, re/im) rows, the answer as (k, re/im) columns, so that ``X @ W`` is the transform
    before the 1/n of an inverse. Rows j ≥ n are zero (the signal cut to n; one padded with
    zeros needs no rows). Forward, inverse: Y_re = Σ X_re cos ∓ X_im sin,
    Y_im = Σ X_im cos ± X_re sin (cos, sin of 2πjk/n; the upper sign inverse), k < n, or
    k ≤ n // 2 onesided. IRFFT (inverse and onesided): the rows are bins k ≤ n // 2,
    y_t = Σ w_k (X_re cos − X_im sin), w_k 1 at k = 0 and k = n / 2, else 2 (the bins
    mirrored), one real part."""
    rows = np.arange(length)[:, None]
    if n == 0:  # an empty transform, as onnxruntime's kernel gives
        return np.zeros((length * channels, 0))
    if inverse and onesided:
        columns = np.arange(n)[None, :]
        cos, sin = unit_circle(rows * columns, n)
        weight = np.where((rows == 0) | (2 * rows == n), 1.0, 2.0) * (rows <= n // 2)
        matrix = np.stack([weight * cos, -weight * sin], axis=1)[:, :, :, None]  # [length, 2, n, 1]
    else:
        bins = n // 2 + 1 if onesided else n
        columns = np.arange(bins)[None, :]
        cos, sin = unit_circle(rows * columns, n)
        cos, sin = cos * (rows < n), sin * (rows < n)
        sigma = 1.0 if inverse else -1.0
        real_row = np.stack([cos, sigma * sin], axis=-1)  # X_re's contribution to (Y_re, Y_im)
        imaginary_row = np.stack([-sigma * sin, cos], axis=-1)
        matrix = np.stack([real_row, imaginary_row], axis=1)  # [length, 2, bins, 2]
    matrix = matrix[:, :channels]
    return matrix.reshape(length * channels, -1)


# -- DFT -----------------------------------------------------------------------------------------


@rule(
    "DFT",
    versions=(17, 20),
    emits=DFT_EMITS,
    rounding_invariant=False,
    reference=dft_reference,
    tolerance=DFT_TOLERANCE,
)
def dft_by_matmul(
    b: Builder,
    x: Value,
    dft_length: Value | None = None,
    axis_input: Value | None = None,
    *,
    axis: int | None = None,
    inverse: int = 0,
    onesided: int = 0,
) -> Value:
    """DFT(x) = Transpose(Reshape(MatMul(Reshape(Transpose(x), [..., L·c]), W), [..., bins, parts])).

    The axis moved next to the last (re/im) one, the two merged, one MatMul by the constant
    W = ``dft_matrix`` (cos and sin of 2πjk/n, built in float64, stored in the type the MatMul
    computes in: x's, float32 for float16 and bfloat16, Cast there and back) and, inverse, a
    Div by n. Real input (last dimension 1) and complex (2); onesided keeps bins k ≤ n // 2;
    onesided and inverse is IRFFT (real answer, n default 2 (m - 1)); dft_length cuts the signal
    (zero rows of W) or pads it with zeros (no rows needed). Within DFT_TOLERANCE of the exact
    transform (the MatMul sums in another order than an FFT). DFT-20's axis computed at run
    time: one transform per axis it may name, chosen by a chain of If on the axis, which Gather
    takes through [0, r) and [0, r - 1) first so that an axis out of range or the last one fails
    as the op does (an IRFFT along an axis of length 0, of length -2, and an RFFT along one of
    length 0 fail in their branch: Range of delta 0). An IRFFT along an axis of length 1 (n = 0)
    gives an empty transform, as onnxruntime's kernel does (Slices of x); other DFTs along an
    axis of length 0 an empty one by a matrix of no columns. Not lowered where dft_length is not 1 or more
    (onnxruntime's kernel refuses it, as an RFFT of no samples), dft_length or an axis' length
    is not known when converting, x's last
    dimension is not 1 or 2, the input is complex for RFFT or real for IRFFT (the op takes
    neither), a coefficient matrix would hold more than LARGEST_CONSTANT (2^22) values (the
    MatMul's work grows as n², an FFT's as n log n), or below opset 11.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    shape = b.shape_of(x)
    if shape is None:
        raise NotLowered("the rank of the DFT's input is unknown")
    rank = len(shape)
    channels = shape[-1]
    if channels not in (1, 2) or rank < 2:
        raise NotLowered("the DFT's input must end in a known dimension of 1 (real) or 2 (complex)")
    if onesided and not inverse and channels == 2:
        raise NotLowered("a one-sided forward DFT (RFFT) takes real input only, and this input is complex")
    if inverse and onesided and channels == 1:
        raise NotLowered("a one-sided inverse DFT (IRFFT) takes complex input only, and this input is real")
    given_length = None
    if dft_length is not None:
        given = b.constant_value(dft_length)
        if given is None or given.size != 1:
            raise NotLowered("dft_length is computed at run time, and the rule needs it known")
        given_length = int(given.reshape(-1)[0])
        if given_length <= 0:  # (onnxruntime's kernel: "dft_length must be greater than zero")
            raise NotLowered(f"dft_length is {given_length}, and the transform takes a length of 1 or more")
    run_time_axis = None
    if axis is None:
        if axis_input is None:
            axis = DEFAULT_AXIS_17 if b.source_version("DFT") == 17 else DEFAULT_AXIS_20
        else:
            given = b.constant_value(axis_input)
            if given is None:
                run_time_axis = axis_input
            elif given.size != 1:
                raise NotLowered(f"the DFT's axis holds {given.size} values, not one")
            else:
                axis = int(given.reshape(-1)[0])
    if run_time_axis is None and not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise NotLowered(f"axis {axis} is outside [-r, -2] and [0, r - 2] for an input of rank {rank}")
    candidates = list(range(rank - 1)) if run_time_axis is not None else [axis % rank]
    lengths = {}
    for candidate in candidates:
        if shape[candidate] is None:
            which = "" if run_time_axis is None else " (the axis is computed at run time: every axis it may name)"
            raise NotLowered(f"the length of the DFT's axis {candidate} is unknown{which}")
        default = 2 * (shape[candidate] - 1) if inverse and onesided else shape[candidate]
        lengths[candidate] = given_length if given_length is not None else default
    if run_time_axis is None and lengths[candidates[0]] < 0:
        raise NotLowered(f"the DFT's length would be {lengths[candidates[0]]}, and a length cannot be negative")
    rfft = bool(onesided and not inverse)
    if run_time_axis is None and rfft and lengths[candidates[0]] == 0:  # (onnxruntime's kernel refuses it)
        raise NotLowered("a one-sided forward DFT (RFFT) of no samples has a bin, which no sample gives")
    for candidate in candidates:
        bins = lengths[candidate] // 2 + 1 if onesided and not inverse else max(lengths[candidate], 0)
        values = shape[candidate] * channels * bins * 2
        if values > LARGEST_CONSTANT:
            raise NotLowered(
                f"the coefficient matrix for axis {candidate} would hold {values} values, more than the "
                f"{LARGEST_CONSTANT} this rule writes into a model"
            )
    wide = b.computable(x, emit=False)
    if not b.runs("MatMul", wide):
        raise NotLowered(f"MatMul does not run on {schemas.type_name(wide.element_type)} at opset {b.opset}")
    wide = b.computable(x)

    def along(builder: Builder, k: int) -> Value:
        if lengths[k] < 0 or (rfft and lengths[k] == 0):
            return _failing(builder, wide, normalized)
        return _dft_along(builder, wide, k, shape, lengths[k], inverse=inverse, onesided=onesided)

    def chain(builder: Builder, ks: list[int]) -> Value:
        if len(ks) == 1:
            return along(builder, ks[0])
        condition = builder.Equal(normalized, builder.constant(ks[0], like=normalized, hint=f"axis_{ks[0]}"))
        return builder.If(condition, lambda then: along(then, ks[0]), lambda otherwise: chain(otherwise, ks[1:]))

    normalized = None
    if run_time_axis is not None:
        # Gather through [0, r) (negative axes from the back, out of range an error), then through
        # [0, r - 1), which refuses r - 1, the last (re/im) axis, as the op does.
        scalar = b.Reshape(run_time_axis, b.ints([], "scalar_shape"))
        normalized = b.Gather(b.ints(range(rank - 1), "signal_axes"), b.Gather(b.ints(range(rank), "axes"), scalar))
    y = chain(b, candidates)
    return y if y.element_type == x.element_type else b.Cast(y, to=x.element_type)


def _dft_along(b: Builder, x: Value, axis: int, shape: list, n: int, *, inverse: int, onesided: int) -> Value:
    """The transform of x (in the type the MatMul computes in) along ``axis`` of static length."""
    rank, length, channels = len(shape), shape[axis], shape[-1]
    irfft = bool(inverse and onesided)
    if n == 0 and irfft:  # (along an axis of length 1 by default: no bins)
        return _empty_transform(b, x, axis, rank)
    matrix = dft_matrix(length, channels, n, inverse=inverse, onesided=onesided)
    y = _transposed(b, x, axis, rank)
    y = _through_matrix(b, y, rank, length * channels, matrix, 1 if irfft else 2, n if inverse else None)
    return _transposed(b, y, axis, rank, back=True)


def _empty_transform(b: Builder, x: Value, axis: int, rank: int) -> Value:
    """The IRFFT of n = 0 bins (along an axis of length 1, its default length 2 (1 - 1)): x cut
    to no element along ``axis`` and to its real part, Slices of x alone. No MatMul by a matrix
    of no columns (OpenVINO 2026.4 reads such a Constant as a scalar and refuses the MatMul) and
    no division by n = 0 (TVM 0.27 refuses to fold one): an If on an axis fed at run time holds
    such a branch."""
    none = b.Slice(x, b.ints([0], "start"), b.ints([0], "end"), b.ints([axis], "axis"))
    return b.Slice(none, b.ints([0], "start"), b.ints([1], "end"), b.ints([rank - 1], "axis"))


def _failing(b: Builder, x: Value, known_at_run_time: Value) -> Value:
    """A value of x's type that fails at run time: Range of delta 0, from a zero computed from
    a value known only at run time (so no runtime folds it when loading the model)."""
    zero = b.Sub(known_at_run_time, known_at_run_time)
    return b.Cast(b.Range(zero, zero, zero), to=x.element_type)


def _transposed(b: Builder, x: Value, axis: int, rank: int, *, back: bool = False) -> Value:
    """x with ``axis`` moved to rank - 2 (next to the re/im axis), the others in order; or back."""
    if axis == rank - 2:
        return x
    perm = [k for k in range(rank - 1) if k != axis] + [axis, rank - 1]
    if back:
        perm = [int(k) for k in np.argsort(perm)]
    return b.Transpose(x, perm=perm)


def _through_matrix(b: Builder, x: Value, rank: int, rows: int, matrix: np.ndarray, parts: int, n: int | None):
    """x's last two axes merged into ``rows``, times the matrix, split into (bins, parts);
    divided by n where given."""
    dtype = np.float64 if x.element_type == TensorProto.DOUBLE else np.float32
    flat = b.Reshape(x, b.ints([0] * (rank - 2) + [rows], "rows_shape"))
    y = b.MatMul(flat, b.tensor(matrix.astype(dtype), "dft_matrix"))
    if n is not None:
        y = b.Div(y, b.constant(n, like=y, hint=f"length_{n}"))
    bins = matrix.shape[1] // parts
    return b.Reshape(y, b.ints([0] * (rank - 2) + [bins, parts], "bins_shape"))


# -- STFT ----------------------------------------------------------------------------------------


@rule(
    "STFT",
    versions=(17,),
    emits=STFT_EMITS,
    rounding_invariant=False,
    reference=stft_reference,
    tolerance=DFT_TOLERANCE,
)
def stft_by_matmul(
    b: Builder,
    signal: Value,
    frame_step: Value | None = None,
    window: Value | None = None,
    frame_length: Value | None = None,
    *,
    onesided: int = _STFT_ONESIDED,
) -> Value:
    """STFT(x, s, w) = Reshape(MatMul(Reshape(Mul(Gather(x, f·s + t, axis=1), w), [B, F, l·c]), W), [B, F, bins, 2]).

    The frames gathered along the signal's axis at indices f·s + t (f < F = (L - l) // s + 1,
    t < l, l the frame length), times the window (Reshape to [l, 1]; none: ones), then the
    DFT's MatMul by W = ``dft_matrix`` (n = l; bins k ≤ l // 2 where onesided). A frame_step
    computed at run time: the indices from Range(0, F, 1)·s + t, F from Div. A frame length
    computed at run time (frame_length's value, or the window's length from its Shape): W
    built at run time as ``dft_matrix`` builds it, cos and sin of 2π·Mod(jk, l)/l in double
    (Range, Mul, Mod, Cast, Div, Cos, Sin, Concat, Flatten), then cast to the MatMul's type.
    So are W and the indices where as constants they would hold more than LARGEST_CONSTANT
    values. A step or frame length below 1, or a frame longer than the signal, fails as the op does
    (Gather of an empty Range, or Range of delta 0). float16 and bfloat16 computed in float32.
    Within DFT_TOLERANCE of the exact transform. Not lowered where the signal's length is not
    known when converting, the frame is longer than the signal, the signal is complex with
    onesided (the op defines no one-sided complex answer), or below opset 11.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    shape = b.shape_of(signal)
    if shape is None or len(shape) != 3:
        raise NotLowered("the STFT's signal must be of known rank 3")
    length, channels = shape[1], shape[2]
    if channels not in (1, 2):
        raise NotLowered("the STFT's signal must end in a known dimension of 1 (real) or 2 (complex)")
    if length is None:
        raise NotLowered("the length of the STFT's signal is unknown")
    if frame_step is None:
        raise NotLowered("the STFT has no frame_step")
    if onesided and channels == 2:
        raise NotLowered("a one-sided STFT takes a real signal only, and this signal is complex")
    wide = b.computable(signal, emit=False)
    if not b.runs("MatMul", wide) or not b.runs("Mul", wide):
        raise NotLowered(f"MatMul does not run on {schemas.type_name(wide.element_type)} at opset {b.opset}")
    size = _frame_length(b, length, window, frame_length)
    known_step = b.constant_value(frame_step)
    step = _int64_scalar(b, frame_step)
    if isinstance(size, int):
        indices, window_shape = _frame_indices(b, step, known_step, length, size), b.ints([size, 1], "window_shape")
        bins = size // 2 + 1 if onesided else size
        if size * channels * bins * 2 <= LARGEST_CONSTANT:
            matrix = dft_matrix(size, channels, size, inverse=0, onesided=onesided)
            matrix = b.tensor(matrix.astype(_dtype(wide)), "dft_matrix")
        else:
            known_size = b.Reshape(b.ints([size], "frame_length"), b.ints([], "scalar_shape"))
            matrix = _run_time_dft_matrix(b, known_size, channels, onesided, wide.element_type)
    else:
        indices = _run_time_frame_indices(b, step, length, size)
        window_shape = b.Concat(b.over_axes("Unsqueeze", size, [0]), b.ints([1], "one"), axis=0)
        matrix = _run_time_dft_matrix(b, size, channels, onesided, wide.element_type)
    frames = b.Gather(b.computable(signal), indices, axis=1)  # [B, F, l, c]
    if window is not None:  # Reshape fails, as the op, where the window's length is not l
        frames = b.Mul(frames, b.Reshape(b.computable(window), window_shape))
    y = b.MatMul(b.Reshape(frames, b.ints([0, 0, -1], "rows_shape")), matrix)
    y = b.Reshape(y, b.ints([0, 0, -1, 2], "bins_shape"))
    return y if y.element_type == signal.element_type else b.Cast(y, to=signal.element_type)


def _dtype(value: Value):
    return np.float64 if value.element_type == TensorProto.DOUBLE else np.float32


def _int64_scalar(b: Builder, value: Value) -> Value:
    """A scalar int32 or int64 input as an int64 scalar."""
    scalar = b.Reshape(value, b.ints([], "scalar_shape"))
    return scalar if scalar.element_type == TensorProto.INT64 else b.Cast(scalar, to=TensorProto.INT64)


def _at_least_one(b: Builder, value: Value) -> Value:
    """The int64 scalar ``value``, failing at run time where it is below 1: Range(0, v, |v|)
    holds one element (0) where v ≥ 1 and none where v < 0 (Gather of its first element then
    fails), and Range refuses v = 0 (a delta of 0)."""
    zero = b.constant(0, like=value, hint="zero")
    return b.Add(value, b.Gather(b.Range(zero, value, b.Abs(value)), zero, axis=0))


def _frame_length(b: Builder, length: int, window: Value | None, frame_length: Value | None):
    """The frame length: frame_length's constant, else the window's length, else the signal's;
    an int64 scalar Value where it is known only at run time; NotLowered where it is invalid."""
    window_shape = b.shape_of(window) if window is not None else None
    window_length = window_shape[0] if window_shape is not None and len(window_shape) == 1 else None
    given = b.constant_value(frame_length) if frame_length is not None else None
    if given is not None:
        if given.size != 1:
            raise NotLowered(f"frame_length holds {given.size} values, not one")
        size = int(given.reshape(-1)[0])
        if window_length is not None and window_length != size:
            raise NotLowered(f"the window's length {window_length} is not the frame_length {size}")
    elif window_length is not None:
        size = window_length  # the op requires a given frame_length to equal it
    elif frame_length is not None:
        return _at_least_one(b, _int64_scalar(b, frame_length))
    elif window is not None:
        zero = b.ints([0], "first")
        return _at_least_one(b, b.Reshape(b.Gather(b.Shape(window), zero, axis=0), b.ints([], "scalar_shape")))
    else:
        size = length
    if not 1 <= size <= length:
        raise NotLowered(f"the frame length {size} is not within 1 and the signal's length {length}")
    return size


def _frame_indices(b: Builder, step: Value, given: np.ndarray | None, length: int, size: int) -> Value:
    """The [F, l] int64 indices f·s + t of every frame's samples: constant where the step is
    (``given``)."""
    offsets = np.arange(size, dtype=np.int64)[None, :]
    known = int(given.reshape(-1)[0]) if given is not None and given.size == 1 else 0
    frames = (length - size) // known + 1 if known >= 1 else 0
    if known >= 1 and frames * size <= LARGEST_CONSTANT:
        return b.tensor(np.arange(frames, dtype=np.int64)[:, None] * known + offsets, "frame_indices")
    step = _at_least_one(b, step)
    zero, one = b.constant(0, like=step, hint="zero"), b.constant(1, like=step, hint="one")
    frames = b.Add(b.Div(b.constant(length - size, like=step, hint=f"span_{length - size}"), step), one)
    starts = b.Mul(b.Range(zero, frames, one), step)
    return b.Add(b.over_axes("Unsqueeze", starts, [1]), b.tensor(offsets, "frame_offsets"))


def _run_time_frame_indices(b: Builder, step: Value, length: int, size: Value) -> Value:
    """:func:`_frame_indices` for a frame length known at run time; F below 1 (a frame longer
    than the signal) fails."""
    step = _at_least_one(b, step)
    zero, one = b.constant(0, like=step, hint="zero"), b.constant(1, like=step, hint="one")
    span = b.Sub(b.constant(length, like=step, hint=f"length_{length}"), size)
    frames = _at_least_one(b, b.Add(b.Div(span, step), one))
    starts = b.over_axes("Unsqueeze", b.Mul(b.Range(zero, frames, one), step), [1])
    return b.Add(starts, b.over_axes("Unsqueeze", b.Range(zero, size, one), [0]))


def _run_time_dft_matrix(b: Builder, size: Value, channels: int, onesided: int, element_type: int) -> Value:
    """``dft_matrix(l, channels, l, inverse=0, onesided)`` for l known at run time: cos and sin
    of 2π·Mod(jk, l)/l computed in double, cast to ``element_type``."""
    zero, one = b.constant(0, like=size, hint="zero"), b.constant(1, like=size, hint="one")
    bins = b.Add(b.Div(size, b.constant(2, like=size, hint="two")), one) if onesided else size
    rows = b.over_axes("Unsqueeze", b.Range(zero, size, one), [1])
    columns = b.over_axes("Unsqueeze", b.Range(zero, bins, one), [0])
    turns = b.Cast(b.Mod(b.Mul(rows, columns), size), to=TensorProto.DOUBLE)
    angle = b.Div(b.Mul(turns, b.constant(2 * np.pi, like=turns, hint="two_pi")), b.Cast(size, to=TensorProto.DOUBLE))
    cos, sin = b.Cos(angle), b.Sin(angle)

    def pair(first: Value, second: Value) -> Value:  # [l, bins, 2]
        return b.Concat(b.over_axes("Unsqueeze", first, [2]), b.over_axes("Unsqueeze", second, [2]), axis=2)

    real_row = pair(cos, b.Neg(sin))  # a real sample's part of (Y_re, Y_im)
    if channels == 1:
        matrix = b.Flatten(real_row, axis=1)
    else:
        imaginary_row = pair(sin, cos)
        rows_of = [b.over_axes("Unsqueeze", row, [1]) for row in (real_row, imaginary_row)]
        matrix = b.Flatten(b.Concat(*rows_of, axis=1), axis=2)
    return b.Cast(matrix, to=element_type)
