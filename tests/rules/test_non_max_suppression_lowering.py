"""NonMaxSuppression lowered by its rule (rules/non_max_suppression.py): the backend cases against
their expected outputs; random boxes (flipped corners, centres, NaN, ±inf, ±0, empty and
overlapping boxes) against onnxruntime's kernel and an independent greedy selection, scores
distinct and tied (ties by index); NaN scores against the selection; K, t and s given, fed,
absent and out of range; inside If branches and local functions; the refusals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import make_model, nested_forms, op_type_set, slow_but_a_sample
from version_cases import fed_data_sets, node_cases_of

import lowering
from lowering.verification.runtime import run_onnxruntime

BACKEND_CASES = node_cases_of("NonMaxSuppression")
INPUTS = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold")


def nms_model(
    batches: int | str,
    classes: int | str,
    boxes: int | str,
    given: tuple[str, ...] = INPUTS[2:],
    opset: int = 11,
    constants: dict[str, np.ndarray] | None = None,
    **attributes,
) -> onnx.ModelProto:
    """``NonMaxSuppression`` with the optional inputs ``given`` (fed, or constants by name)."""
    constants = constants or {}
    inputs = [
        helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [batches, boxes, attributes.pop("coordinates", 4)]),
        helper.make_tensor_value_info("scores", TensorProto.FLOAT, [batches, classes, boxes]),
    ]
    nodes = []
    for name in given:
        element_type = TensorProto.INT64 if name == INPUTS[2] else TensorProto.FLOAT
        if name in constants:
            value = onnx.numpy_helper.from_array(constants[name], name)
            nodes.append(helper.make_node("Constant", [], [name], value=value))
        else:
            inputs.append(helper.make_tensor_value_info(name, element_type, [1]))
    names = ["boxes", "scores", *(name if name in given else "" for name in INPUTS[2:])]
    while names[-1] == "":
        names.pop()
    nodes.append(helper.make_node("NonMaxSuppression", names, ["selected"], name="nms", **attributes))
    outputs = [helper.make_tensor_value_info("selected", TensorProto.INT64, ["m", 3])]
    return make_model(nodes, inputs, outputs, opset=opset)


def lowered(model: onnx.ModelProto) -> onnx.ModelProto:
    result = lowering.lower_model(model, ops=["NonMaxSuppression"])
    assert result.report.complete, result.report.lines()
    assert "NonMaxSuppression" not in op_type_set(result.model)
    onnx.checker.check_model(result.model, full_check=True)
    return result.model


def greedy_reference(boxes, scores, k=0, t=0.0, s=None, center_point_box=0) -> np.ndarray:
    """The selection the rule states, written apart: per batch and class the candidates in order
    of score (ties by index, NaN last), each kept unless a kept box suppresses it, at most K;
    the IoU test in float32 as onnxruntime's kernel computes it."""
    f = np.float32

    def extents(box):
        if center_point_box:
            half_w, half_h = f(box[2]) / f(2), f(box[3]) / f(2)
            return f(box[0]) - half_w, f(box[0]) + half_w, f(box[1]) - half_h, f(box[1]) + half_h
        x = (box[3], box[1]) if box[1] >= box[3] else (box[1], box[3])
        y = (box[2], box[0]) if box[0] >= box[2] else (box[0], box[2])
        return f(x[0]), f(x[1]), f(y[0]), f(y[1])

    def suppresses(kept_box, box):
        x1_min, x1_max, y1_min, y1_max = extents(kept_box)
        x2_min, x2_max, y2_min, y2_max = extents(box)
        low_x, high_x = (x2_min if x1_min < x2_min else x1_min), (x2_max if x2_max < x1_max else x1_max)
        low_y, high_y = (y2_min if y1_min < y2_min else y1_min), (y2_max if y2_max < y1_max else y1_max)
        if high_x <= low_x or high_y <= low_y:
            return False
        intersection = f(high_x - low_x) * f(high_y - low_y)
        area1, area2 = f(x1_max - x1_min) * f(y1_max - y1_min), f(x2_max - x2_min) * f(y2_max - y2_min)
        union = f(f(area1 + area2) - intersection)
        if intersection <= 0 or area1 <= 0 or area2 <= 0 or union <= 0:
            return False
        return bool(f(intersection / union) > f(t))

    rows = []
    with np.errstate(all="ignore"):
        for batch in range(scores.shape[0]):
            for class_ in range(scores.shape[1]):
                row = scores[batch, class_]
                order = sorted(range(len(row)), key=lambda i: (np.isnan(row[i]), -np.nan_to_num(row[i], nan=0), i))
                kept = []
                for i in order:
                    if s is not None and not row[i] > s:
                        continue
                    if any(suppresses(boxes[batch, j], boxes[batch, i]) for j in kept):
                        continue
                    if len(kept) >= k:
                        break
                    kept.append(i)
                    rows.append([batch, class_, i])
    return np.array(rows, np.int64).reshape(-1, 3)


def random_boxes(rng: np.random.Generator, batches: int, count: int, center_point_box: int) -> np.ndarray:
    """Boxes that overlap often: corners in [0, 4] (flipped where drawn so), centres with sizes
    in [0, 3]; some empty, some NaN, ±inf, -0 among the coordinates."""
    boxes = rng.integers(0, 9, (batches, count, 4)).astype(np.float32) / 2
    if center_point_box:
        boxes[..., 2:] = rng.integers(0, 7, (batches, count, 2)) / 2
    draw = rng.random(boxes.shape)
    boxes[draw < 0.03] = np.nan
    boxes[(draw >= 0.03) & (draw < 0.05)] = np.inf
    boxes[(draw >= 0.05) & (draw < 0.07)] = -np.inf
    boxes[(boxes == 0) & (draw < 0.5)] = -0.0
    return boxes


def distinct_scores(rng: np.random.Generator, batches: int, classes: int, count: int) -> np.ndarray:
    """Scores in (0, 1], none of which ties another in its row."""
    rows = [(rng.permutation(count).astype(np.float32) + 1) / count for _ in range(batches * classes)]
    return np.stack(rows).reshape(batches, classes, count)


def feeds_of(boxes, scores, k, t, s) -> dict[str, np.ndarray]:
    return {"boxes": boxes, "scores": scores, "max_output_boxes_per_class": np.array([k], np.int64),
            "iou_threshold": np.array([t], np.float32), "score_threshold": np.array([s], np.float32)}  # fmt: skip


def test_backend_cases_are_found():
    assert len(BACKEND_CASES) >= 10


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_lowered(name):
    case = BACKEND_CASES[name]
    model = lowered(case.model)
    for feeds, expected in fed_data_sets(case):
        np.testing.assert_array_equal(run_onnxruntime(model, feeds)[0], expected[0], name)


# (batches, classes, boxes)
SIZES = [(1, 1, 6), (2, 3, 9), (1, 2, 1), (3, 1, 17)]


@slow_but_a_sample(keep=4)
@pytest.mark.parametrize("center_point_box", [0, 1])
@pytest.mark.parametrize("sizes", SIZES, ids=str)
def test_random_boxes_against_onnxruntime(sizes, center_point_box):
    batches, classes, count = sizes
    original = nms_model(batches, classes, count, center_point_box=center_point_box)
    model = lowered(original)
    rng = np.random.default_rng(11)
    compared = 0
    for draw in range(12):
        boxes = random_boxes(rng, batches, count, center_point_box)
        scores = distinct_scores(rng, batches, classes, count)
        k = int(rng.integers(-1, count + 2))
        t = float(rng.choice([0.0, 0.1, 0.25, 0.5, 1 / 3, 1.0]))
        s = float(rng.choice([-1.0, 0.0, 0.3, 0.9]))
        feeds = feeds_of(boxes, scores, k, t, s)
        want = run_onnxruntime(original, feeds)[0]
        np.testing.assert_array_equal(run_onnxruntime(model, feeds)[0], want, f"draw {draw}, K {k}, t {t}, s {s}")
        np.testing.assert_array_equal(greedy_reference(boxes, scores, k, t, s, center_point_box), want, "reference")
        compared += len(want)
    assert compared > 0


def test_ties_by_index_as_onnxruntime():
    """Scores drawn from a few values: equal scores taken by index, as onnxruntime's kernel takes
    them (measured: 3,000 draws of 2 to 59 boxes, every tie by index) and as the reference does."""
    rng = np.random.default_rng(3)
    original = nms_model(2, 2, 12)
    model = lowered(original)
    for draw in range(30):
        boxes = random_boxes(rng, 2, 12, 0)
        scores = rng.integers(0, 3, (2, 2, 12)).astype(np.float32)
        feeds = feeds_of(boxes, scores, 12, 0.3, -1.0)
        want = run_onnxruntime(original, feeds)[0]
        np.testing.assert_array_equal(run_onnxruntime(model, feeds)[0], want, f"draw {draw}")
        np.testing.assert_array_equal(greedy_reference(boxes, scores, 12, 0.3, -1.0), want, f"draw {draw}: reference")


def test_nan_scores_without_a_score_threshold_come_last():
    """NaN scores (candidates only where s is not given) below every number, as the reference
    takes them; onnxruntime's heap orders them by no rule (apart on most draws: pinned)."""
    rng = np.random.default_rng(8)
    original = nms_model(1, 2, 7, given=INPUTS[2:4])
    model = lowered(original)
    heap_apart = 0
    for draw in range(10):
        boxes = random_boxes(rng, 1, 7, 0)
        scores = distinct_scores(rng, 1, 2, 7)
        scores[rng.random(scores.shape) < 0.3] = np.nan
        feeds = {"boxes": boxes, "scores": scores, "max_output_boxes_per_class": np.array([5]),
                 "iou_threshold": np.array([0.2], np.float32)}  # fmt: skip
        got = run_onnxruntime(model, feeds)[0]
        np.testing.assert_array_equal(got, greedy_reference(boxes, scores, 5, 0.2), f"draw {draw}")
        heap_apart += not np.array_equal(got, run_onnxruntime(original, feeds)[0])
    assert heap_apart > 0


@pytest.mark.parametrize("given", [(), INPUTS[2:3], INPUTS[2:4], INPUTS[2:]], ids=len)
@pytest.mark.parametrize("constant", [False, True])
def test_optional_inputs_absent_fed_or_constant(given, constant):
    """K absent selects none; t absent is 0; s absent takes every box; each also as a constant."""
    rng = np.random.default_rng(len(given))
    boxes, scores = random_boxes(rng, 2, 8, 0), distinct_scores(rng, 2, 2, 8)
    values = {INPUTS[2]: np.array([3], np.int64), INPUTS[3]: np.array([0.4], np.float32),
              INPUTS[4]: np.array([0.25], np.float32)}  # fmt: skip
    original = nms_model(2, 2, 8, given=given, constants=values if constant else None)
    model = lowered(original)
    feeds = {"boxes": boxes, "scores": scores} | ({} if constant else {name: values[name] for name in given})
    want = run_onnxruntime(original, feeds)[0]
    np.testing.assert_array_equal(run_onnxruntime(model, feeds)[0], want)
    if not given:
        assert want.shape == (0, 3)


@pytest.mark.parametrize("t", [-0.5, 1.5, float("nan")])
def test_iou_threshold_outside_fails_as_the_kernel_fails(t):
    original = nms_model(1, 1, 4)
    model = lowered(original)
    rng = np.random.default_rng(1)
    feeds = feeds_of(random_boxes(rng, 1, 4, 0), distinct_scores(rng, 1, 1, 4), 2, t, 0.0)
    for each in (original, model):
        with pytest.raises(Exception):  # noqa: B017 (onnxruntime's own error types)
            run_onnxruntime(each, feeds)


@pytest.mark.parametrize(("given", "count"), [(INPUTS[3:4], 3), (INPUTS[2:4], 1)], ids=["K absent", "one box"])
def test_iou_threshold_checked_where_no_step_reads_it(given, count):
    """t is checked where K is absent (no row) and with one box (no step compares boxes)."""
    original = nms_model(1, 2, count, given=given)
    model = lowered(original)
    rng = np.random.default_rng(4)
    feeds = {"boxes": random_boxes(rng, 1, count, 0), "scores": distinct_scores(rng, 1, 2, count),
             INPUTS[2]: np.array([3]), INPUTS[3]: np.array([1.5], np.float32)}  # fmt: skip
    feeds = {name: value for name, value in feeds.items() if name in {"boxes", "scores", *given}}
    for each in (original, model):
        with pytest.raises(Exception):  # noqa: B017 (onnxruntime's own error types)
            run_onnxruntime(each, feeds)
    feeds[INPUTS[3]] = np.array([0.5], np.float32)
    np.testing.assert_array_equal(run_onnxruntime(model, feeds)[0], run_onnxruntime(original, feeds)[0])


@pytest.mark.parametrize(
    ("sizes", "fed_sizes"),
    [((2, 3, 0), (2, 3, 0)), (("b", "c", 3), (2, 0, 3)), ((0, 2, 4), (0, 2, 4))],
    ids=["no box", "no class", "no batch"],
)
def test_nothing_to_select(sizes, fed_sizes):
    """No box, class or batch: no row, as the kernel answers."""
    original = nms_model(*sizes, given=INPUTS[2:3])
    model = lowered(original)
    batches, classes, count = fed_sizes
    rng = np.random.default_rng(6)
    feeds = {"boxes": random_boxes(rng, batches, count, 0), "max_output_boxes_per_class": np.array([3]),
             "scores": rng.random((batches, classes, count)).astype(np.float32)}  # fmt: skip
    want = run_onnxruntime(original, feeds)[0]
    assert want.shape == (0, 3)
    np.testing.assert_array_equal(run_onnxruntime(model, feeds)[0], want)


@pytest.mark.parametrize(
    ("boxes_shape", "scores_shape"),
    [(("b", 3, "k"), (1, 1, 3)), (("b", 3, 4), ("b", 1, 3)), ((1, "n", 4), (1, 1, 3))],
    ids=["coordinates", "batches", "boxes"],
)
def test_shapes_apart_fail_as_the_kernel_fails(boxes_shape, scores_shape):
    """boxes not [B, n, 4] for scores [B, C, n], where the declared shapes leave it open: the
    lowered model fails at run time; fed as they should be, it answers as the kernel."""
    inputs = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, list(boxes_shape)),
              helper.make_tensor_value_info("scores", TensorProto.FLOAT, list(scores_shape)),
              helper.make_tensor_value_info(INPUTS[2], TensorProto.INT64, [1])]  # fmt: skip
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores", INPUTS[2]], ["selected"])
    outputs = [helper.make_tensor_value_info("selected", TensorProto.INT64, ["m", 3])]
    original = make_model([node], inputs, outputs, opset=11)
    model = lowered(original)
    rng = np.random.default_rng(9)
    scores = rng.random((1, 1, 3)).astype(np.float32)
    failing = 0
    for wrong in ((1, 3, 5), (2, 3, 4), (1, 1, 4)):
        if all(isinstance(d, str) or d == w for d, w in zip(boxes_shape, wrong, strict=True)):
            feeds = {"boxes": rng.random(wrong).astype(np.float32), "scores": scores, INPUTS[2]: np.array([2])}
            for each in (original, model):
                with pytest.raises(Exception):  # noqa: B017 (onnxruntime's own error types)
                    run_onnxruntime(each, feeds)
            failing += 1
    assert failing > 0
    feeds = {"boxes": random_boxes(rng, 1, 3, 0), "scores": scores, INPUTS[2]: np.array([2])}
    np.testing.assert_array_equal(run_onnxruntime(model, feeds)[0], run_onnxruntime(original, feeds)[0])


def test_boxes_of_unknown_shape():
    """boxes of a rank known only at run time (a Squeeze of fed axes): n from scores, boxes
    checked at run time, failing where the kernel fails."""
    inputs = [helper.make_tensor_value_info("unsqueezed", TensorProto.FLOAT, [2, 1, 5, 4]),
              helper.make_tensor_value_info("axes", TensorProto.INT64, [1]),
              helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 2, 5]),
              helper.make_tensor_value_info(INPUTS[2], TensorProto.INT64, [1])]  # fmt: skip
    nodes = [helper.make_node("Squeeze", ["unsqueezed", "axes"], ["boxes"]),
             helper.make_node("NonMaxSuppression", ["boxes", "scores", INPUTS[2]], ["selected"])]  # fmt: skip
    outputs = [helper.make_tensor_value_info("selected", TensorProto.INT64, ["m", 3])]
    original = make_model(nodes, inputs, outputs, opset=13)
    model = lowered(original)
    rng = np.random.default_rng(13)
    feeds = {"unsqueezed": random_boxes(rng, 2, 5, 0)[:, None], "axes": np.array([1]),
             "scores": distinct_scores(rng, 2, 2, 5), INPUTS[2]: np.array([3])}  # fmt: skip
    np.testing.assert_array_equal(run_onnxruntime(model, feeds)[0], run_onnxruntime(original, feeds)[0])
    feeds["unsqueezed"] = random_boxes(rng, 1, 5, 0)[None]  # [1, 1, 5, 4]: boxes [1, 5, 4], 1 batch of 2
    feeds["axes"] = np.array([0])
    for each in (original, model):
        with pytest.raises(Exception):  # noqa: B017 (onnxruntime's own error types)
            run_onnxruntime(each, feeds)


def test_nested():
    original = nms_model(2, 2, 5)
    rng = np.random.default_rng(2)
    feeds = feeds_of(random_boxes(rng, 2, 5, 0), distinct_scores(rng, 2, 2, 5), 3, 0.3, 0.1)
    want = run_onnxruntime(original, feeds)[0]
    for label, nested in nested_forms(original).items():
        model = lowered(nested)
        for branch in (True, False):
            got = run_onnxruntime(model, {**feeds, "branch": np.array(branch)})[0]
            np.testing.assert_array_equal(got, want, f"{label}, branch {branch}")


@pytest.mark.parametrize(
    ("model", "said"),
    [
        (nms_model(1, 1, 300), "more than the 256"),
        (nms_model(64, 64, 40), "more than the 2^24"),
        (nms_model(1, 1, 3, coordinates=5), "not 4"),
        (nms_model(1, 1, 4, center_point_box=2), "center_point_box=2"),
        (nms_model(1, 1, 4, constants={"iou_threshold": np.array([1.5], np.float32)}), "outside [0, 1]"),
        (nms_model(1, 1, 4, opset=10), "opset 11"),
    ],
    ids=["boxes", "pairs", "coordinates", "center_point_box", "constant t", "opset 10"],
)
def test_refused(model, said):
    result = lowering.lower_model(model, ops=["NonMaxSuppression"])
    assert "NonMaxSuppression" in op_type_set(result.model)
    assert said in " ".join(result.report.lines())
