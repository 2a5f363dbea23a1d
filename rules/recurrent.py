"""RNN, GRU and LSTM in primitive ops: each step's gates from MatMul, Add and the activations,
the hidden (and cell) state carried from one step to the next: the steps unrolled where the
sequence length is static, else the step written once as the body of a Scan."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from lowering import floats, schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

EMITS = (
    "Transpose", "Reshape", "Gather", "MatMul", "Add", "Sub", "Mul", "Min", "Max", "Where", "Less", "Greater",
    "Unsqueeze", "Concat", "Cast", "Constant", "Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid", "Elu",
    "Softsign", "Softplus", "Or", "Shape", "Expand", "Scan", "Identity",
)  # fmt: skip
# Every op above exists, and Constant holds int64 (the shapes and indices), from this opset on.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)

# How far the unrolled op may stray from onnxruntime's kernel and from the backend tests'
# expected outputs: the sums of a step are the same terms added in another order (a MatMul per
# gate, the biases added first), and onnxruntime's Sigmoid and Tanh inside its kernels are
# approximations of their own; the difference grows with every step the state is carried
# through. float16 and bfloat16 are computed in float32 and rounded once at the end (as
# onnxruntime computes float16 RNNs), so they stray by their own rounding.
RECURRENT_TOLERANCE = {
    onnx.TensorProto.FLOAT: Tolerance(rtol=1e-4, atol=1e-5),
    onnx.TensorProto.DOUBLE: Tolerance(rtol=1e-4, atol=1e-5),
    onnx.TensorProto.FLOAT16: Tolerance(rtol=2e-3, atol=2e-3),
    onnx.TensorProto.BFLOAT16: Tolerance(rtol=2e-2, atol=2e-2),
}

# The activations that take alpha, beta, or both from the attributes' lists (in order of use),
# and the defaults onnxruntime gives each where the list has run out. ThresholdedRelu (spec op:
# alpha 1.0; onnxruntime's RNNs: 0), Affine and ScaledTanh (no op of the spec to take defaults
# from) are not lowered without their values: no default is certain.
# Names as the spec spells them (onnxruntime's RNN refuses "elu").
USES_ALPHA = {"Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu"}
USES_BETA = {"Affine", "ScaledTanh", "HardSigmoid"}
DEFAULT_ALPHA = {"LeakyRelu": 0.01, "HardSigmoid": 0.2, "Elu": 1.0}
DEFAULT_BETA = {"HardSigmoid": 0.5}
ACTIVATIONS = {"Relu", "Tanh", "Sigmoid", "Softsign", "Softplus"} | USES_ALPHA


@dataclass(frozen=True)
class Activation:
    """One activation function of the op: its name and the alpha, beta it takes."""

    name: str
    alpha: float | None = None
    beta: float | None = None

    def __call__(self, b: Builder, x: Value) -> Value:
        """f(x) as the op's spec writes it (Affine: alpha·x + beta; ScaledTanh: alpha·Tanh(beta·x))."""
        if self.name == "Affine":
            scaled = b.Mul(x, b.constant(self.alpha, like=x, hint="alpha"))
            return b.Add(scaled, b.constant(self.beta, like=x, hint="beta"))
        if self.name == "ThresholdedRelu":  # (the op exists from opset 10 only)
            zero = b.constant(0, like=x, hint="zero")
            return b.Where(b.Greater(x, b.constant(self.alpha, like=x, hint="alpha")), x, zero)
        if self.name == "ScaledTanh":
            scaled = b.Mul(x, b.constant(self.beta, like=x, hint="beta"))
            return b.Mul(b.Tanh(scaled), b.constant(self.alpha, like=x, hint="alpha"))
        attributes = {"alpha": self.alpha} if self.alpha is not None else {}
        if self.beta is not None:
            attributes["beta"] = self.beta
        return b.op(self.name, x, **attributes)


def activations_of(names, alphas, betas, defaults: tuple[str, ...], directions: int) -> list[list[Activation]]:
    """Each direction's activations: the attribute's names (the op's defaults where absent), their
    alphas and betas taken in order of use; NotLowered where a name is unknown, the count is not
    the op's per direction, or a value no default settles is missing."""
    names = [name.decode() if isinstance(name, bytes) else name for name in names] or list(defaults) * directions
    if len(names) != len(defaults) * directions:
        raise NotLowered(f"{len(names)} activations given where the op takes {len(defaults)} per direction")
    alphas, betas = list(alphas), list(betas)
    chosen = []
    for name in names:
        key = name
        if key not in ACTIVATIONS:
            raise NotLowered(f"activation {name} is none the op defines")
        alpha = (alphas.pop(0) if alphas else DEFAULT_ALPHA.get(key)) if key in USES_ALPHA else None
        beta = (betas.pop(0) if betas else DEFAULT_BETA.get(key)) if key in USES_BETA else None
        if (key in USES_ALPHA and alpha is None) or (key in USES_BETA and beta is None):
            raise NotLowered(f"activation {name} without its activation_alpha/activation_beta: no default is certain")
        chosen.append(Activation(key, alpha, beta))
    per = len(defaults)
    return [chosen[d * per : (d + 1) * per] for d in range(directions)]


@dataclass(frozen=True)
class Recurrence:
    """What one op's cells are made of: its gates in the order W, R and B hold them, and its
    default activations."""

    op_type: str
    gates: str
    activations: tuple[str, ...]


RNN_CELL = Recurrence("RNN", "i", ("Tanh",))
GRU_CELL = Recurrence("GRU", "zrh", ("Sigmoid", "Tanh"))
LSTM_CELL = Recurrence("LSTM", "iofc", ("Sigmoid", "Tanh", "Tanh"))


@dataclass
class Direction:
    """One direction's weights, laid out for the steps: per gate the input term for every time
    step (X·Wg^T + Wbg + Rbg, [T, B, H]), the recurrence matrix Rg^T ([H, H]), and what a gate
    needs beside (GRU's Rbh, LSTM's peepholes); and its activations."""

    inputs: dict[str, Value]
    recurrence: dict[str, Value]
    recurrence_bias: Value | None
    peepholes: dict[str, Value]
    activations: list[Activation]
    clip: float | None


def _recurrent(b: Builder, cell: Recurrence, x, w, r, bias, sequence_lens, initial_h, initial_c, peepholes, attributes):
    """The op's outputs (Y, Y_h[, Y_c]): its time steps unrolled, or a Scan over them (see the rules' docstrings)."""
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the ops it writes do not all exist at opset {b.opset}")
    direction = attributes["direction"]
    direction = direction.decode() if isinstance(direction, bytes) else direction
    if direction not in ("forward", "reverse", "bidirectional"):
        raise NotLowered(f"direction {direction} is none the op defines")
    directions = 2 if direction == "bidirectional" else 1
    layout = attributes.get("layout", 0)
    gate_count = len(cell.gates)
    hidden = _hidden_size(b, cell, w, attributes.get("hidden_size"))
    x_shape = b.shape_of(x)
    if x_shape is None or len(x_shape) != 3:
        raise NotLowered("the rank of X is unknown")
    steps = x_shape[1] if layout else x_shape[0]
    if steps is None and b.opset < schemas.first_opset("Scan"):
        raise NotLowered(f"the sequence length (X's time dimension) is not static, and Scan is not at opset {b.opset}")
    if steps is None and "Scan" in b.target.lowered_ops:  # (Scan's rule unrolls a known number of steps)
        raise NotLowered("the sequence length (X's time dimension) is not static, and the Scan it would be is to be "
                         "lowered too: state the inputs' shapes (--input-shape) to unroll it")  # fmt: skip
    if steps == 0:
        raise NotLowered("the sequence is empty")
    activations = activations_of(
        attributes.get("activations", ()),
        attributes.get("activation_alpha", ()),
        attributes.get("activation_beta", ()),
        cell.activations,
        directions,
    )
    element_type = x.element_type
    compute_type = b.target.compute_type(element_type)  # (float16 and bfloat16 widened to float32 in onnxruntime)

    def computed(value: Value | None) -> Value | None:
        if value is None or value.element_type == compute_type:
            return value
        return b.Cast(value, to=compute_type)

    x, w, r, bias, initial_h, initial_c, peepholes = map(computed, (x, w, r, bias, initial_h, initial_c, peepholes))
    if layout:  # [B, T, I] -> [T, B, I]; states [B, D, H] -> [D, B, H]
        x = b.Transpose(x, perm=[1, 0, 2])
        initial_h, initial_c = (_transposed(b, s, [1, 0, 2]) for s in (initial_h, initial_c))
    # W [D, G·H, I] -> [D·G, I, H]; R likewise; B [D, 2·G·H] -> [D·2·G, H]; P [D, 3·H] -> [D·3, H]
    w = b.Transpose(b.Reshape(w, b.ints([directions * gate_count, hidden, -1], "gate_rows")), perm=[0, 2, 1])
    r = b.Transpose(b.Reshape(r, b.ints([directions * gate_count, hidden, hidden], "gate_rows")), perm=[0, 2, 1])
    if bias is not None:
        bias = b.Reshape(bias, b.ints([directions * 2 * gate_count, hidden], "bias_rows"))
    if peepholes is not None:
        peepholes = b.Reshape(peepholes, b.ints([directions * 3, hidden], "peephole_rows"))
    clip = attributes.get("clip")
    lengths = _checked_lengths(b, sequence_lens, x, steps) if sequence_lens is not None else None  # [B, 1]
    hiddens, finals_h, finals_c = [], [], []
    for d in range(directions):
        weights = _direction(b, cell, d, x, w, r, bias, peepholes, attributes, activations[d], clip)
        backward = direction == "reverse" or d == 1
        state_h, state_c = (_row(b, s, d) if s is not None else None for s in (initial_h, initial_c))
        if steps is not None:
            y, state_h, state_c = _unrolled(b, cell, weights, steps, backward, lengths, state_h, state_c, attributes)
        else:
            y, state_h, state_c = _scanned(b, cell, weights, x, hidden, backward, lengths, state_h, state_c, attributes)
        hiddens.append(y)
        finals_h.append(_final(b, lengths, state_h, initial_h))
        finals_c.append(_final(b, lengths, state_c, initial_c) if cell is LSTM_CELL else None)
    y = hiddens[0] if directions == 1 else b.Concat(*hiddens, axis=1)  # [T, D, B, H]
    results = [y, _stacked(b, finals_h, [0])]  # Y [T, D, B, H], Y_h [D, B, H]
    if cell is LSTM_CELL:
        results.append(_stacked(b, finals_c, [0]))
    if layout:
        results = [b.Transpose(results[0], perm=[2, 0, 1, 3])] + [b.Transpose(s, perm=[1, 0, 2]) for s in results[1:]]
    if compute_type != element_type:
        results = [b.Cast(value, to=element_type) for value in results]
    return tuple(results)


def _transposed(b: Builder, value: Value | None, perm: list[int]) -> Value | None:
    return b.Transpose(value, perm=perm) if value is not None else None


def _stacked(b: Builder, values: list[Value], axes: list[int]) -> Value:
    """The values each unsqueezed at ``axes`` and concatenated along the first of them."""
    unsqueezed = [b.over_axes("Unsqueeze", value, axes) for value in values]
    return unsqueezed[0] if len(unsqueezed) == 1 else b.Concat(*unsqueezed, axis=axes[0])


def _hidden_size(b: Builder, cell: Recurrence, w: Value, stated) -> int:
    """The hidden size: the attribute, else W's rows per gate; NotLowered where neither is known."""
    if stated:
        return int(stated)
    shape = b.shape_of(w)
    if shape is None or len(shape) != 3 or shape[1] is None:
        raise NotLowered("hidden_size is not given and W's shape is not static")
    return shape[1] // len(cell.gates)


def _row(b: Builder, value: Value, index: int) -> Value:
    """value[index] (a direction's or a gate's slice of a stacked tensor)."""
    return b.Gather(value, b.scalar(index, onnx.TensorProto.INT64, f"index_{index}"), axis=0)


def _direction(b: Builder, cell, d, x, w, r, bias, peepholes, attributes, activations, clip) -> Direction:
    """Direction ``d``'s weights per gate, the input terms of every step computed at once."""
    gate_count = len(cell.gates)
    inputs, recurrence = {}, {}
    recurrence_bias = None
    linear_before_reset = cell is GRU_CELL and attributes.get("linear_before_reset", 0)
    for g, gate in enumerate(cell.gates):
        term = b.MatMul(x, _row(b, w, d * gate_count + g))  # [T, B, H]
        if bias is not None:
            input_bias = _row(b, bias, d * 2 * gate_count + g)
            state_bias = _row(b, bias, d * 2 * gate_count + gate_count + g)
            if gate == "h" and linear_before_reset:
                term = b.Add(term, input_bias)
                recurrence_bias = state_bias
            else:
                term = b.Add(term, b.Add(input_bias, state_bias))
        inputs[gate] = term
        recurrence[gate] = _row(b, r, d * gate_count + g)
    held = {}
    if peepholes is not None:
        held = {gate: _row(b, peepholes, d * 3 + k) for k, gate in enumerate("iof")}
    return Direction(inputs, recurrence, recurrence_bias, held, activations, clip)


def _step(b: Builder, cell, weights: Direction, terms: dict[str, Value], h: Value | None, c: Value | None, attributes):
    """One time step's new hidden (and cell) state from the step's input terms (per gate,
    [B, H]); a state of None is zero (no initial state): its terms are left out."""

    def pre(gate: str, state: Value | None = h) -> Value:
        term = terms[gate]
        if state is not None:
            term = b.Add(term, b.MatMul(state, weights.recurrence[gate]))
        return term

    def clipped(value: Value) -> Value:
        if weights.clip is None:
            return value
        bound = b.constant(weights.clip, like=value, hint="clip")
        return b.Max(b.Min(value, bound), b.constant(-weights.clip, like=value, hint="minus_clip"))

    f, g, h_activation = [*weights.activations, None, None][:3]
    if cell is RNN_CELL:
        return f(b, clipped(pre("i"))), None
    if cell is GRU_CELL:
        z = f(b, clipped(pre("z")))
        reset = f(b, clipped(pre("r")))
        if attributes.get("linear_before_reset", 0):
            inner = weights.recurrence_bias
            if h is not None:
                product = b.MatMul(h, weights.recurrence["h"])
                inner = product if inner is None else b.Add(product, inner)
            term = pre("h", None)
            candidate = g(b, clipped(term if inner is None else b.Add(term, b.Mul(reset, inner))))
        else:
            candidate = g(b, clipped(pre("h", b.Mul(reset, h) if h is not None else None)))
        one = b.constant(1, like=z, hint="one")
        new_h = b.Mul(b.Sub(one, z), candidate)
        return (new_h if h is None else b.Add(new_h, b.Mul(z, h))), None
    peep = weights.peepholes

    def with_peephole(gate: str, cell_state: Value | None) -> Value:
        term = pre(gate)
        if gate in peep and cell_state is not None:
            term = b.Add(term, b.Mul(peep[gate], cell_state))
        return f(b, clipped(term))

    input_gate = with_peephole("i", c)
    if attributes.get("input_forget", 0):
        forget_gate = b.Sub(b.constant(1, like=input_gate, hint="one"), input_gate)
    else:
        forget_gate = with_peephole("f", c)
    new_c = b.Mul(input_gate, g(b, clipped(pre("c"))))
    if c is not None:
        new_c = b.Add(b.Mul(forget_gate, c), new_c)
    output_gate = with_peephole("o", new_c)
    return b.Mul(output_gate, h_activation(b, new_c)), new_c


def _unrolled(b: Builder, cell, weights: Direction, steps: int, backward: bool, lengths, h, c, attributes):
    """Y of one direction ([T, 1, B, H]) and its last states, the steps written one by one."""
    outputs = [None] * steps
    for t in reversed(range(steps)) if backward else range(steps):
        index = b.scalar(t, onnx.TensorProto.INT64, f"index_{t}")
        terms = {gate: b.Gather(term, index, axis=0) for gate, term in weights.inputs.items()}
        new_h, new_c = _step(b, cell, weights, terms, h, c, attributes)
        counts = b.Less(b.scalar(t, lengths.element_type, f"step_{t}"), lengths) if lengths is not None else None
        outputs[t] = _masked(b, counts, new_h, None)
        h = _masked(b, counts, new_h, h)
        c = _masked(b, counts, new_c, c) if cell is LSTM_CELL else None
    return _stacked(b, outputs, [0, 1]), h, c


def _scanned(b: Builder, cell, weights: Direction, x: Value, hidden: int, backward: bool, lengths, h, c, attributes):
    """Y of one direction ([T, 1, B, H]) and its last states, the step written once as the body
    of a Scan over the input terms (read from the end where ``backward``; Y written likewise);
    with sequence_lens the body carries the step's index beside the states."""
    if h is None or (cell is LSTM_CELL and c is None):
        batch = b.Gather(b.Shape(x), b.ints([1], "batch_axis"), axis=0)
        zeros = b.Expand(b.constant(0, like=x, hint="zero"), b.Concat(batch, b.ints([hidden], "hidden"), axis=0))
        h = h if h is not None else zeros
        c = (c if c is not None else zeros) if cell is LSTM_CELL else None
    body = b.nested("scan")
    h_in = body.fresh_value("h", h.element_type)
    c_in = body.fresh_value("c", h.element_type) if cell is LSTM_CELL else None
    states, initial = [h_in], [h]
    if cell is LSTM_CELL:
        states.append(c_in), initial.append(c)
    counts = None
    if lengths is not None:
        index_type = lengths.element_type
        t_in = body.fresh_value("t", index_type)
        counts = body.Less(t_in, lengths)
        stride = body.scalar(-1 if backward else 1, index_type, "minus_one" if backward else "one")
        t_out = body.Add(t_in, stride)
        if backward:
            steps = b.Gather(b.Shape(x), b.scalar(0, onnx.TensorProto.INT64, "index_0"), axis=0)
            first = b.Sub(b.Cast(steps, to=index_type), b.scalar(1, index_type, "one"))
        else:
            first = b.scalar(0, index_type, "zero")
        states.append(t_in), initial.append(first)
    terms = {gate: body.fresh_value(f"term_{gate}", term.element_type) for gate, term in weights.inputs.items()}
    new_h, new_c = _step(body, cell, weights, terms, h_in, c_in, attributes)
    outputs = [_masked(body, counts, new_h, h_in)]
    if cell is LSTM_CELL:
        outputs.append(_masked(body, counts, new_c, c_in))
    if lengths is not None:
        outputs.append(t_out)
    y = _masked(body, counts, new_h, None)
    outputs.append(body.Identity(y) if any(y.name == o.name for o in outputs) else y)
    graph = onnx.helper.make_graph(
        body.nodes,
        b.fresh("scan_body"),
        [onnx.helper.make_tensor_value_info(v.name, v.element_type, None) for v in [*states, *terms.values()]],
        [onnx.helper.make_tensor_value_info(v.name, v.element_type, None) for v in outputs],
    )
    results = [b.fresh("scan_h")] + ([b.fresh("scan_c")] if cell is LSTM_CELL else [])
    results += [b.fresh("scan_t")] if lengths is not None else []
    results.append(b.fresh("scan_y"))
    direction = [1 if backward else 0]
    b.op(
        "Scan", *initial, *weights.inputs.values(), outputs=results, body=graph, num_scan_inputs=len(terms),
        scan_input_directions=direction * len(terms), scan_output_directions=direction,
    )  # fmt: skip
    y = b.over_axes("Unsqueeze", Value(results[-1], h.element_type), [1])
    final_c = Value(results[1], h.element_type) if cell is LSTM_CELL else None
    return y, Value(results[0], h.element_type), final_c


def _checked_lengths(b: Builder, sequence_lens: Value, x: Value, steps: int | None) -> Value:
    """sequence_lens as [B, 1], failing where the op fails (a length below 0 or past T): each
    entry plus 0 gathered at index (length out of range), which is 1, past the end, for a bad one."""
    index_type = sequence_lens.element_type
    if steps is not None:
        time = b.scalar(steps, index_type, f"step_{steps}")
    else:
        time = b.Cast(b.Gather(b.Shape(x), b.scalar(0, onnx.TensorProto.INT64, "index_0"), axis=0), to=index_type)
    lengths = b.over_axes("Unsqueeze", sequence_lens, [1])
    outside = b.Or(b.Less(lengths, b.scalar(0, index_type, "zero")), b.Greater(lengths, time))
    guard = b.Gather(
        b.tensor(np.zeros(1, floats.numpy_dtype(index_type)), "no_length"),
        b.Cast(outside, to=onnx.TensorProto.INT64),
        axis=0,
    )
    return b.Add(lengths, guard)


def _masked(b: Builder, counts: Value | None, new: Value | None, old: Value | None) -> Value | None:
    """new where the step counts for the batch entry, else old (0 where old is None)."""
    if counts is None or new is None:
        return new
    return b.Where(counts, new, old if old is not None else b.constant(0, like=new, hint="zero"))


def _final(b: Builder, lengths: Value | None, state: Value | None, initial) -> Value:
    """The last state: 0 for a batch entry of length 0 (onnxruntime's kernels give 0, not the
    initial state)."""
    if lengths is None or initial is None:
        return state
    zero = b.tensor(np.array(0, floats.numpy_dtype(lengths.element_type)), "zero")  # (gone with Y_h, if unread)
    started = b.Greater(lengths, zero)
    return b.Where(started, state, b.constant(0, like=state, hint="zero"))


@rule("RNN", versions=(7, 14, 22), emits=EMITS, tolerance=RECURRENT_TOLERANCE)
def rnn_unrolled(
    b: Builder, x: Value, w: Value, r: Value, bias: Value | None = None, sequence_lens: Value | None = None,
    initial_h: Value | None = None, *, activation_alpha=(), activation_beta=(), activations=(),
    clip: float | None = None, direction: bytes = b"forward", hidden_size: int | None = None, layout: int = 0,
) -> tuple[Value, Value]:  # fmt: skip
    """Ht = f(clip(Xt·Wi^T + Ht-1·Ri^T + Wbi + Rbi)), t over the sequence (backwards for reverse),
    H-1 = initial_h or 0; Y = [H0, ..., HT-1] per direction, Y_h = the last H.

    Unrolled where X's time dimension is static, else one Scan per direction (from opset 9)
    whose body is the step. With sequence_lens, a step
    past a batch entry's length keeps its state and writes 0 to Y (a length of 0 gives Y_h 0, as
    onnxruntime's kernels do); a length below 0 or past T fails, as the op does (a Gather past
    its end). The input terms of every step are one MatMul per gate and
    direction; float16 and bfloat16 are computed in float32."""
    return _recurrent(b, RNN_CELL, x, w, r, bias, sequence_lens, initial_h, None, None, locals_attributes(locals()))


@rule("GRU", versions=(7, 14, 22), emits=EMITS, tolerance=RECURRENT_TOLERANCE)
def gru_unrolled(
    b: Builder, x: Value, w: Value, r: Value, bias: Value | None = None, sequence_lens: Value | None = None,
    initial_h: Value | None = None, *, activation_alpha=(), activation_beta=(), activations=(),
    clip: float | None = None, direction: bytes = b"forward", hidden_size: int | None = None, layout: int = 0,
    linear_before_reset: int = 0,
) -> tuple[Value, Value]:  # fmt: skip
    """zt = f(Xt·Wz^T + Ht-1·Rz^T + Wbz + Rbz), rt = f(Xt·Wr^T + Ht-1·Rr^T + Wbr + Rbr),
    ht = g(Xt·Wh^T + (rt ⊙ Ht-1)·Rh^T + Rbh + Wbh), or with linear_before_reset
    ht = g(Xt·Wh^T + rt ⊙ (Ht-1·Rh^T + Rbh) + Wbh); Ht = (1 - zt) ⊙ ht + zt ⊙ Ht-1
    (every gate's argument clipped where clip is given); unrolled as RNN's rule."""
    return _recurrent(b, GRU_CELL, x, w, r, bias, sequence_lens, initial_h, None, None, locals_attributes(locals()))


@rule("LSTM", versions=(7, 14, 22), emits=EMITS, tolerance=RECURRENT_TOLERANCE)
def lstm_unrolled(
    b: Builder, x: Value, w: Value, r: Value, bias: Value | None = None, sequence_lens: Value | None = None,
    initial_h: Value | None = None, initial_c: Value | None = None, peepholes: Value | None = None, *,
    activation_alpha=(), activation_beta=(), activations=(), clip: float | None = None, direction: bytes = b"forward",
    hidden_size: int | None = None, input_forget: int = 0, layout: int = 0,
) -> tuple[Value, Value, Value]:  # fmt: skip
    """it = f(Xt·Wi^T + Ht-1·Ri^T + Pi ⊙ Ct-1 + Wbi + Rbi), ft = f(... Pf ⊙ Ct-1 ...) or 1 - it
    with input_forget, ct = g(Xt·Wc^T + Ht-1·Rc^T + Wbc + Rbc), Ct = ft ⊙ Ct-1 + it ⊙ ct,
    ot = f(Xt·Wo^T + Ht-1·Ro^T + Po ⊙ Ct + Wbo + Rbo), Ht = ot ⊙ h(Ct) (the gates' arguments
    clipped where clip is given, Ct not); unrolled as RNN's rule, Y_c the last C."""
    attributes = locals_attributes(locals())
    return _recurrent(b, LSTM_CELL, x, w, r, bias, sequence_lens, initial_h, initial_c, peepholes, attributes)


def locals_attributes(names: dict) -> dict:
    """A rule's keyword arguments (its attributes) out of its locals."""
    return {key: names[key] for key in ATTRIBUTES if key in names}


ATTRIBUTES = ("activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "input_forget",
              "layout", "linear_before_reset")  # fmt: skip
