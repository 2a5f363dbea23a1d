"""Probe a runtime: run every single-op ONNX backend node case through it and record, per case,
the op, its version, the element type it ran on, and whether the runtime loads it, runs it and
gives the case's expected outputs (within the case's own rtol/atol; or, missing them where
onnxruntime misses them too, as right as onnxruntime: :func:`as_onnxruntime`, with the outputs
targets/prepare_cases.py wrote beside the cases). Also which default-domain opsets it loads at
all. Writes a target profile (JSON) that ``lowering.target_profiles`` reads.

    python targets/probe.py RUNNER NAME [--cases CASES.pkl] [--out lowering/target_profiles/NAME.json] [--limit N]

RUNNER names a module of targets/runners/ with ``VERSION`` (the runtime's version string) and
``run(model_bytes, feeds) -> list[np.ndarray]`` (raising on any refusal or failure). Run it in a
virtual environment holding that runtime and onnx; the runtime is never a dependency of the
package. The runtime lives in a worker process, restarted where a case crashes it or hangs.

A runner whose runtime computes in a narrower arithmetic than the cases' (an NPU's float16)
states its own tolerance, ``TOLERANCE = (rtol, atol)`` and why, ``TOLERANCE_WHY``: outputs are
then compared within the looser of it and each case's own, and the profile records it
(``"tolerance"``). Cases at opsets newer than the onnx here knows (an op's version there is not
known here) are not probed; the profile says how many (``source.unprobed``). A runner raises
``runners.Unfed`` where the runtime fails a model for its interface whatever its ops (rknn: a 0-d
input, a constant output): such a case's verdict is ``unfed``; of a constant output, only where
the case has one (targets/prepare_cases.py records them, ``constant_outputs``), else it fails
(rknn calls a window's output of a fed size constant: it needs that size constant).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import functools
import importlib
import json
import multiprocessing
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper
from runners import CONSTANT_OUTPUT  # (targets/ is the script's folder, first on its path)

HERE = Path(__file__).resolve().parent
CASE_SECONDS = 60
# (the files prepare_sweep.py writes beside a model and run_sweep.py reads)
REFUSED = ".refused"  # (SIDE.refused: why onnx-lower refused to make that model, in words)
CONSTANT_PARAMETERS = "constant_parameters"  # (a case made for the target with its parameters constant)
PROBED_OPSETS = range(7, onnx.defs.onnx_opset_version() + 1)


@functools.cache
def backend_cases() -> tuple:
    """Every ONNX backend node test case (collected once: it takes seconds), with the elements
    Cast leaves undefined made defined (:func:`defined_casts`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        return tuple(defined_casts(case) for case in collect_testcases(None))


def defined_casts(case):
    """``case``, where it casts a float to an integer type (Cast, CastLike), with each element
    whose input is not finite or whose integer part (x truncated, as numpy and onnx.reference
    cast) is outside the type's range given input 0 and expected output 0 (Cast(0.0) = 0 in every
    integer type): Cast's spec leaves such an element undefined ("fixed point: undefined if OOR");
    the backend expects 0 for a float out of int4's range, onnxruntime wraps. Other cases as
    they are."""
    import ml_dtypes

    node = main_node(case.model)
    if node is None or node.op_type not in ("Cast", "CastLike") or not case.data_sets:
        return case
    graph = case.model.graph
    types = {info.name: info.type.tensor_type.elem_type for info in [*graph.input, *graph.output]}
    source, target = types.get(node.input[0]), types.get(node.output[0])
    try:
        limits = ml_dtypes.iinfo(helper.tensor_dtype_to_np_dtype(target))
        ml_dtypes.finfo(helper.tensor_dtype_to_np_dtype(source))
    except (KeyError, TypeError, ValueError):
        return case  # (not a float to an integer, or types not stated)
    data_sets = []
    for inputs, outputs in case.data_sets:
        x, y = np.asarray(feed(inputs[0])), np.asarray(feed(outputs[0]))
        with np.errstate(invalid="ignore"):
            whole = np.trunc(x.astype(np.float64))
            undefined = ~np.isfinite(whole) | (whole < limits.min) | (whole > limits.max)
        if not undefined.any():
            data_sets.append((inputs, outputs))
            continue
        x, y = np.where(undefined, np.zeros((), x.dtype), x), np.where(undefined, np.zeros((), y.dtype), y)
        data_sets.append(([_like(inputs[0], x), *inputs[1:]], [_like(outputs[0], y), *outputs[1:]]))
    return dataclasses.replace(case, data_sets=data_sets)


def _like(given, values: np.ndarray):
    """``values`` in the form ``given`` came in (a TensorProto of its name, or an array)."""
    return numpy_helper.from_array(values, name=given.name) if isinstance(given, onnx.TensorProto) else values


def main_node(model: onnx.ModelProto) -> onnx.NodeProto | None:
    """The case's one default-domain node that is not a Constant (a case's Constant gives an
    input), or its one node where that is a Constant; else None (a case of several)."""
    nodes = [n for n in model.graph.node if n.op_type != "Constant"] or list(model.graph.node)
    if len(nodes) != 1 or nodes[0].domain not in ("", "ai.onnx"):
        return None
    return nodes[0]


def element_type(model: onnx.ModelProto, node: onnx.NodeProto) -> int:
    """The element type of the node's first input that is declared (else its first output's,
    else its first initializer input's); in a model fed nothing (a ``#constant`` case of one
    input), its first input's, an initializer or a Constant's value, as check reads a node's
    (``lowering.target_forms.element_type_name``), not its output's."""
    infos = {i.name: i for i in [*model.graph.input, *model.graph.output, *model.graph.value_info]}
    held = {tensor.name: tensor.data_type for tensor in model.graph.initializer}
    if not model.graph.input:
        for other in model.graph.node:
            value = (
                next((a.t for a in other.attribute if a.name == "value"), None) if other.op_type == "Constant" else None
            )
            if value is not None:
                held[other.output[0]] = value.data_type
        for name in node.input:
            if name in held:
                return held[name]
    for name in [*node.input, *node.output]:
        info = infos.get(name)
        if info is not None and info.type.HasField("tensor_type"):
            return info.type.tensor_type.elem_type
    for init in model.graph.initializer:
        if init.name in node.input:
            return init.data_type
    return 0


def feed(value):
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def matches(got, want, rtol: float, atol: float) -> bool:
    if isinstance(want, list) or isinstance(got, list):
        return (
            isinstance(want, list)
            and isinstance(got, list)
            and len(got) == len(want)
            and all(matches(g, w, rtol, atol) for g, w in zip(got, want, strict=False))
        )
    got, want = np.asarray(feed(got)), np.asarray(feed(want))
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if want.dtype.kind in "fc" or want.dtype.type.__module__ == "ml_dtypes":
        try:
            wide_got, wide_want = got.astype(np.float64), want.astype(np.float64)
            return bool(np.allclose(wide_got, wide_want, rtol=rtol, atol=atol, equal_nan=True))
        except (TypeError, ValueError):
            return False
    try:
        return bool(np.array_equal(got, want))
    except (TypeError, ValueError):
        return False


def judged(runner, model_bytes: bytes, data_sets, rtol, atol, names, bounds=None, references=None) -> tuple[str, str]:
    """The verdict on one model; with ``bounds`` (per output, the largest error allowed where the
    tolerances are not met: twice what onnxruntime makes computing the model in float16), a
    model within them is "right in float16"; with ``references`` (per data set, onnxruntime's
    outputs on the model, None where not known), one that matches onnxruntime's outputs where it
    misses the expected ones (:func:`as_onnxruntime`) is "right as onnxruntime"."""
    try:
        verdict, said = "right", ""
        for number, (inputs, expected) in enumerate(data_sets):
            computed = references[number] if references is not None and number < len(references) else None
            feeds = {name: feed(value) for name, value in zip(names, inputs, strict=False)}
            got = runner.run(model_bytes, feeds)
            if len(got) != len(expected):
                return "wrong", f"{len(got)} outputs, not {len(expected)}"
            for index, (g, w) in enumerate(zip(got, expected, strict=True)):
                if matches(g, w, rtol, atol):
                    continue
                error = largest_error(g, w)
                reference = computed[index] if computed is not None and index < len(computed) else None
                if reference is not None and as_onnxruntime(g, w, reference, rtol, atol):
                    verdict = "right in float16" if verdict == "right in float16" else "right as onnxruntime"
                    said = f"output {index}: largest error {error:.3g}, onnxruntime's {largest_error(reference, w):.3g}"
                    continue
                if bounds is not None and error is not None and error <= bounds[index]:
                    verdict = "right in float16"
                    said = f"output {index}: largest error {error:.3g}, twice onnxruntime's in float16 "
                    said += f"{bounds[index]:.3g}"
                    continue
                where = "" if error is None else f": largest error {error:.3g}"
                if error is not None and bounds is not None:
                    where += f" (twice onnxruntime's in float16: {bounds[index]:.3g})"
                if error is not None and reference is not None and largest_error(reference, w) is not None:
                    where += f" (onnxruntime's: {largest_error(reference, w):.3g})"
                return "wrong", f"output {index}{where}"
        return verdict, said
    except Exception as error:  # the runtime's refusal or failure, in its words
        if type(error).__name__ == "Unfed":  # (a feed the runtime takes none of, whatever the op: its kind first)
            return "unfed", _shortened(" ".join(str(error).split()))
        return "fails", _shortened(" ".join(f"{type(error).__name__}: {error}".split()))


VERDICTS = ("right", "right as onnxruntime", "right in float16", "wrong", "fails", "unfed", "crashes", "hangs")

# The largest miss of onnxruntime's taken for rounding, in machine epsilons of the output's type
# times the output's largest magnitude (float32 sums in another order than the expected outputs'
# float64: the backend's DFT, STFT and float16 Attention cases miss by 0.4 to 5.3 of them in
# onnxruntime 1.32); past it onnxruntime departs from the spec (Resize's align_corners, 6e5 of
# them; a random op's other draw), and only an output within the tolerance of onnxruntime's own
# is right as onnxruntime.
ROUNDING_EPSILONS = 16


def as_onnxruntime(got, want, reference, rtol: float, atol: float) -> bool:
    """Whether a float output ``got`` that misses ``want``, where onnxruntime's ``reference`` (its
    output on the same model) misses it too, is as right as onnxruntime's: within the tolerance
    of it; or, where onnxruntime misses by rounding alone (no element further from ``want`` than
    ROUNDING_EPSILONS machine epsilons of the largest |want|), no element further from ``want``
    than onnxruntime's is or than the tolerance allows, |got - want| <= max(|reference - want|,
    atol + rtol·|want|), NaNs where ``want`` has them (a float32 DFT misses the backend's float64
    answer by 3.4e-4 in onnxruntime, by 1.5e-5 in tract); an infinity expected allows only itself
    there."""
    if largest_error(got, want) is None or largest_error(reference, want) is None:
        return False
    if matches(reference, want, rtol, atol):  # (onnxruntime is right: so must the runtime be)
        return False
    if matches(got, reference, rtol, atol):
        return True
    epsilon = float(np.finfo(np.asarray(feed(want)).dtype).eps)
    got, want, reference = (np.asarray(feed(v)).astype(np.float64) for v in (got, want, reference))
    missed, finite = _differences(reference, want), np.abs(want[np.isfinite(want)])
    if (missed > ROUNDING_EPSILONS * epsilon * (finite.max() if finite.size else 0.0)).any():
        return False
    # (an infinity expected allows nothing else: rtol·|want| would allow anything)
    allowed = np.maximum(missed, np.where(np.isinf(want), 0.0, atol + rtol * np.abs(want)))
    return bool((_differences(got, want) <= allowed).all())


def largest_error(got, want) -> float | None:
    """max |got - want| over two float arrays of one shape and type whose NaNs sit at the same
    places (inf where an inf differs; 0 where every element is NaN); None for others."""
    if isinstance(got, list) or isinstance(want, list):
        return None
    got, want = np.asarray(feed(got)), np.asarray(feed(want))
    if got.shape != want.shape or got.dtype != want.dtype or want.dtype.kind != "f":
        return None
    got, want = got.astype(np.float64), want.astype(np.float64)
    if (np.isnan(got) != np.isnan(want)).any():
        return None
    differences = _differences(got, want)
    return float(differences.max()) if differences.size else 0.0


def _differences(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| per element of two float64 arrays, 0 where they are equal (infinities alike)
    or ``want`` is NaN."""
    with np.errstate(invalid="ignore"):
        return np.where((got == want) | np.isnan(want), 0.0, np.abs(got - want))


def _shortened(text: str, limit: int = 400) -> str:
    """The text's start and its end (where a runtime's reason often is, after a dump of facts)."""
    return text if len(text) <= limit else f"{text[: limit // 4]} … {text[-(limit * 3 // 4) :]}"


def runner_tolerance(runner) -> dict | None:
    """The tolerance a runner states for its runtime's own arithmetic (``TOLERANCE = (rtol, atol)``,
    ``TOLERANCE_WHY``, and ``ARITHMETIC = "float16"`` where it computes floats so) as the profile
    records it, or None where it states none."""
    stated = getattr(runner, "TOLERANCE", None)
    if stated is None:
        return None
    rtol, atol = stated
    found = {"rtol": float(rtol), "atol": float(atol), "why": getattr(runner, "TOLERANCE_WHY", "")}
    if getattr(runner, "ARITHMETIC", None):
        found["arithmetic"] = runner.ARITHMETIC
    return found


def looser(rtol: float, atol: float, tolerance: dict | None) -> tuple[float, float]:
    """The looser of a case's rtol and atol and a runner's tolerance (each the larger)."""
    if not tolerance:
        return rtol, atol
    return max(rtol, tolerance["rtol"]), max(atol, tolerance["atol"])


def _serve(runner_name: str, connection) -> None:
    """The worker: imports the runtime once, then answers one case per message."""
    sys.path.insert(0, str(HERE))
    runner = importlib.import_module(f"runners.{runner_name}")
    connection.send((runner.VERSION, runner_tolerance(runner), getattr(runner, "SECONDS", None)))
    while True:
        job = connection.recv()
        if job is None:
            return
        connection.send(judged(runner, *job))


class Worker:
    """A process holding the runtime, restarted after a crash or a hang. Outputs are compared
    within the looser of each model's tolerance and the runner's own (``tolerance``, None where
    it states none)."""

    def __init__(self, runner_name: str, seconds: float = CASE_SECONDS):
        self.runner_name, self.process, self.connection = runner_name, None, None
        self.version, self.tolerance, stated = self._start()
        # (a model with no answer in this long hangs: the longer of ``seconds`` and the runner's
        # own ``SECONDS``, where its runtime takes longer to build a model: rknn's compiler)
        self.seconds = max(seconds, stated or 0)

    def _start(self) -> tuple[str, dict | None, float | None]:
        context = multiprocessing.get_context("spawn")
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(self.runner_name, theirs), daemon=True)
        self.process.start()
        theirs.close()  # (ours alone: a worker that dies at its start is an EOF here, not a wait)
        return self.connection.recv()

    def verdict(
        self, model: onnx.ModelProto, data_sets, rtol: float, atol: float, bounds=None, references=None
    ) -> tuple[str, str]:
        """("right" | "right in float16" | "right as onnxruntime" | "wrong" | "fails" | "unfed" |
        "crashes" | "hangs", detail) for one model (``bounds``, ``references``: see :func:`judged`)."""
        names = [i.name for i in model.graph.input]
        rtol, atol = looser(rtol, atol, self.tolerance)
        try:
            self.connection.send((model.SerializeToString(), data_sets, rtol, atol, names, bounds, references))
            if self.connection.poll(self.seconds):
                return self.connection.recv()
            outcome = ("hangs", f"no answer in {self.seconds:g} s")
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self.process.join(10)  # (reaped, its exit code is known)
            outcome = ("crashes", f"exit code {self.process.exitcode}")
        self.process.kill()
        self.process.join()
        self._start()
        return outcome

    def close(self) -> None:
        self.connection.send(None)
        self.process.join(10)


def probed_cases(prepared: Path | None):
    """(name, opset, model, data sets, rtol, atol, onnxruntime's outputs per data set or None) of
    each case to probe (the outputs as targets/prepare_cases.py wrote them beside the cases)."""
    if prepared is not None:
        import pickle

        written = pickle.loads(prepared.read_bytes())
        cases, references = (written, {}) if isinstance(written, list) else (written["cases"], written["onnxruntime"])
        for name, opset, model_bytes, data_sets, rtol, atol in cases:
            yield name, opset, onnx.load_from_string(model_bytes), data_sets, rtol, atol, references.get(name)
        return
    for case in backend_cases():
        opset = next((o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx")), None)
        if "_expanded" not in case.name and main_node(case.model) is not None and opset is not None:
            yield case.name, opset, case.model, case.data_sets, case.rtol, case.atol, None


def of_its_interface(
    verdict: str, detail: str, name: str, constants: dict[str, list[str]] | None, outputs: list[str]
) -> tuple[str, str]:
    """A case's verdict and detail with a runner's refusal of a constant output ("unfed") kept
    only where the outputs it names (``outputs ['y']: ...``; else, the builder refusing the model,
    every one of ``outputs``) are those ``constants`` (targets/prepare_cases.py's, None where not
    known) records of the case: else it fails, its words of its op (rknn drops LayerNormalization's
    Mean and calls a window of a fed size constant)."""
    if verdict != "unfed" or not detail.startswith(CONSTANT_OUTPUT) or constants is None:
        return verdict, detail
    said = detail.removeprefix(f"{CONSTANT_OUTPUT}: ")
    named = re.match(r"outputs (\[[^\]]*\]):", said)
    claimed = ast.literal_eval(named.group(1)) if named else outputs
    if set(claimed) <= set(constants.get(name, ())):
        return verdict, detail
    return "fails", f"outputs {sorted(claimed)} taken for constants, which vary: {said}"


def prepared_constant_outputs(prepared: Path | None) -> dict[str, list[str]] | None:
    """Per case targets/prepare_cases.py wrote with an output a runtime of static shapes finds
    constant, those outputs; None where it recorded none (no --cases, or cases written before)."""
    if prepared is None:
        return None
    import pickle

    written = pickle.loads(prepared.read_bytes())
    return written.get("constant_outputs") if isinstance(written, dict) else None


def to_probe(prepared: list[tuple], earlier: dict | None, again: tuple[str, ...], again_verdicts=()) -> list[tuple]:
    """The cases (name, ...) of ``prepared`` to probe: all without an ``earlier`` profile; with
    one, those it lacks, those whose names start with a prefix of ``again`` and those it gives a
    verdict of ``again_verdicts``."""
    if earlier is None:
        return list(prepared)
    held = earlier["cases"]
    return [case for case in prepared if case[0] not in held or case[0].startswith(again)
            or held[case[0]]["verdict"] in again_verdicts]  # fmt: skip


def added_profile(earlier: dict, cases: dict, prepared: set[str] | None, record: dict) -> dict:
    """The profile ``earlier`` with ``cases`` added (or, probed again, replaced) and ``record``
    appended to its ``source.added``; with ``prepared`` (the names of the cases prepared with
    --cases), the cases it no longer holds dropped (a pattern now writes another form, whose case
    replaces it) and named in the record."""
    stale = sorted(set(earlier["cases"]) - prepared - set(cases)) if prepared is not None else []
    record = {**record, "cases": len(cases), **({"dropped": stale} if stale else {})}
    source = {**earlier["source"], "added": [*earlier["source"].get("added", []), record]}
    dropped = set(stale)
    kept = {name: entry for name, entry in earlier["cases"].items() if name not in dropped}
    return {**earlier, "source": source, "cases": {**kept, **cases}}


def opset_probe_model(opset: int) -> tuple[onnx.ModelProto, list]:
    node = helper.make_node("Add", ["a", "b"], ["c"])
    graph = helper.make_graph(
        [node], "opset_probe",
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [2]) for n in "ab"],
        [helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [2])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(helper.find_min_ir_version_for([helper.make_opsetid("", opset)]), onnx.IR_VERSION)
    a, b = np.array([1, 2], np.float32), np.array([3, 4], np.float32)
    return model, [([a, b], [a + b])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runner")
    parser.add_argument("name")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--limit", type=int, help="probe only the first N cases (a quick try)")
    parser.add_argument("--note", default="", help="how the runtime was installed, what it is (with --add: why)")
    parser.add_argument("--cases", type=Path, help="the cases targets/prepare_cases.py wrote (with older op "
                        "versions); default: the backend cases at their own opsets")  # fmt: skip
    parser.add_argument(
        "--add",
        action="store_true",
        help="probe only the cases the profile at --out lacks "
        "and add them to it (the same runtime, at the same version); with --cases, drop "
        "those the cases no longer hold",
    )
    parser.add_argument("--again", nargs="+", metavar="PREFIX", help="with --add, probe again the cases whose "
                        "names start so (their models changed), replacing their verdicts")  # fmt: skip
    parser.add_argument("--again-verdicts", nargs="+", metavar="VERDICT", default=(), choices=VERDICTS,
                        help="with --add, probe again the cases the profile gives one of these verdicts (how "
                        "they are judged changed)")  # fmt: skip
    args = parser.parse_args()
    if (args.again or args.again_verdicts) and not args.add:
        parser.error("--again and --again-verdicts probe cases of a profile again: with --add")
    out = args.out or HERE.parent / "lowering" / "target_profiles" / f"{args.name}.json"
    worker = Worker(args.runner)
    earlier = json.loads(out.read_text()) if args.add else None
    if earlier is not None and (earlier["runtime"], earlier["runtime_version"]) != (args.runner, worker.version):
        worker.close()
        sys.exit(f"probe.py: {out} is of {earlier['runtime']} {earlier['runtime_version']}, not {args.runner} "
                 f"{worker.version}: probe it whole")  # fmt: skip
    if earlier is None:
        opsets = [o for o in PROBED_OPSETS if worker.verdict(*opset_probe_model(o), 1e-6, 0)[0] == "right"]
    else:
        opsets = earlier["opsets"]
    cases = {}
    prepared = list(probed_cases(args.cases))
    constants = prepared_constant_outputs(args.cases)
    again = tuple(args.again or ())
    selected = to_probe(prepared, earlier, again, args.again_verdicts)
    newest = onnx.defs.onnx_opset_version()
    beyond = sorted(opset for _, opset, *_ in selected if opset > newest)
    if beyond:  # (get_schema would give an older version of an op that has a newer one there)
        unprobed = (f"{len(beyond)} cases at opsets {beyond[0]}-{beyond[-1]}, newer than the {newest} onnx "
                    f"{onnx.__version__} here knows")  # fmt: skip
        print(f"not probed: {unprobed}", flush=True)
        selected = [case for case in selected if case[1] <= newest]
    # (a runtime that matches onnxruntime where both miss a case's expected outputs, a float32 DFT's
    # sums, is "right as onnxruntime"; onnxruntime itself too, what onnx-lower promises being its
    # meaning: --target onnxruntime keeps the DFT it computes 3.4e-4 off the float64 answer)
    for number, (name, opset, model, data_sets, rtol, atol, references) in enumerate(selected[: args.limit]):
        node = main_node(model)
        version = onnx.defs.get_schema(node.op_type, opset).since_version
        result, detail = worker.verdict(model, data_sets, rtol, atol, references=references)
        result, detail = of_its_interface(result, detail, name, constants, [o.name for o in model.graph.output])
        type_number = element_type(model, node)
        cases[name] = {
            "op": node.op_type,
            "version": version,
            "type": onnx.helper.tensor_dtype_to_string(type_number).removeprefix("TensorProto.") if type_number else "",
            "opset": opset,
            "verdict": result,
            **({"detail": detail} if detail else {}),
        }
        print(f"{number + 1}/{len(selected)} {name}: {result}", flush=True)
    how = f"python targets/probe.py {args.runner} {args.name}" + (
        " --cases (targets/prepare_cases.py: other op versions, the corpus's node forms)" if args.cases else ""
    )
    if earlier is not None:
        said, listed = again_recorded(again)
        if args.again_verdicts:
            said += " --again-verdicts " + " ".join(args.again_verdicts)
        record = {"how": how + " --add" + said, **listed, "onnx": onnx.__version__,
                  "date": datetime.date.today().isoformat(), **({"unprobed": unprobed} if beyond else {}),
                  **({"why": args.note} if args.note else {})}  # fmt: skip
        profile = added_profile(earlier, cases, {case[0] for case in prepared} if args.cases else None, record)
        if worker.tolerance:  # (as the runner states it now: its arithmetic, "float16", tells prepare_sweep.py)
            profile["tolerance"] = worker.tolerance
    else:
        profile = _new_profile(args, worker, how, unprobed if beyond else None, opsets, cases)
    worker.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(profile, indent=1, sort_keys=True) + "\n")
    counts = {}
    for entry in cases.values():
        counts[entry["verdict"]] = counts.get(entry["verdict"], 0) + 1
    print(f"wrote {out}: opsets {opsets[0] if opsets else None}..{opsets[-1] if opsets else None}, {counts}")


def again_recorded(prefixes: tuple[str, ...], listed: int = 3) -> tuple[str, dict]:
    """``--again`` as the profile's record keeps it: the words for ``how`` (the prefixes where
    they are few) and the record's other fields (``again``: the prefixes where they are many, so
    that the command can be run again)."""
    if not prefixes:
        return "", {}
    if len(prefixes) > listed:
        return f" --again (the {len(prefixes)} name prefixes of 'again')", {"again": list(prefixes)}
    return " --again " + " ".join(prefixes), {}


def _new_profile(args, worker: Worker, how: str, unprobed: str | None, opsets: list[int], cases: dict) -> dict:
    return {
        "name": args.name,
        "runtime": args.runner,
        "runtime_version": worker.version,
        "source": {
            "kind": "probed",
            "how": how,
            "note": args.note,
            "onnx": onnx.__version__,
            "date": datetime.date.today().isoformat(),
            **({"unprobed": unprobed} if unprobed else {}),
        },
        **({"tolerance": worker.tolerance} if worker.tolerance else {}),
        "opsets": opsets,
        "cases": cases,
    }


if __name__ == "__main__":
    main()
