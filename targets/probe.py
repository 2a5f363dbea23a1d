"""Probe a runtime: run every single-op ONNX backend node case through it and record, per case,
the op, its version, the element type it ran on, and whether the runtime loads it, runs it and
gives the case's expected outputs (within the case's own rtol/atol). Also which default-domain
opsets it loads at all. Writes a target profile (JSON) that ``lowering.target_profiles`` reads.

    python targets/probe.py RUNNER NAME [--cases CASES.pkl] [--out lowering/target_profiles/NAME.json] [--limit N]

RUNNER names a module of targets/runners/ with ``VERSION`` (the runtime's version string) and
``run(model_bytes, feeds) -> list[np.ndarray]`` (raising on any refusal or failure). Run it in a
virtual environment holding that runtime and onnx; the runtime is never a dependency of the
package. The runtime lives in a worker process, restarted where a case crashes it or hangs.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import multiprocessing
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = Path(__file__).resolve().parent
CASE_SECONDS = 60
PROBED_OPSETS = range(7, onnx.defs.onnx_opset_version() + 1)


def backend_cases() -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        return list(collect_testcases(None))


def main_node(model: onnx.ModelProto) -> onnx.NodeProto | None:
    """The case's one default-domain node that is not a Constant, or None (a case of several)."""
    nodes = [n for n in model.graph.node if n.op_type != "Constant"]
    if len(nodes) != 1 or nodes[0].domain not in ("", "ai.onnx"):
        return None
    return nodes[0]


def element_type(model: onnx.ModelProto, node: onnx.NodeProto) -> int:
    """The element type of the node's first input (its first output where it has none)."""
    infos = {i.name: i for i in [*model.graph.input, *model.graph.output, *model.graph.value_info]}
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


def _check(runner, model_bytes: bytes, data_sets, rtol, atol, names) -> tuple[str, str]:
    try:
        for inputs, expected in data_sets:
            feeds = {name: feed(value) for name, value in zip(names, inputs, strict=False)}
            got = runner.run(model_bytes, feeds)
            same = len(got) == len(expected) and all(
                matches(g, w, rtol, atol) for g, w in zip(got, expected, strict=True)
            )
            if not same:
                return "wrong", ""
        return "right", ""
    except Exception as error:  # the runtime's refusal or failure, in its words
        return "fails", _shortened(" ".join(f"{type(error).__name__}: {error}".split()))


def _shortened(text: str, limit: int = 400) -> str:
    """The text's start and its end (where a runtime's reason often is, after a dump of facts)."""
    return text if len(text) <= limit else f"{text[: limit // 4]} … {text[-(limit * 3 // 4) :]}"


def _serve(runner_name: str, connection) -> None:
    """The worker: imports the runtime once, then answers one case per message."""
    sys.path.insert(0, str(HERE))
    runner = importlib.import_module(f"runners.{runner_name}")
    connection.send(runner.VERSION)
    while True:
        job = connection.recv()
        if job is None:
            return
        connection.send(_check(runner, *job))


class Worker:
    """A process holding the runtime, restarted after a crash or a hang."""

    def __init__(self, runner_name: str):
        self.runner_name, self.process, self.connection = runner_name, None, None
        self.version = self._start()

    def _start(self) -> str:
        context = multiprocessing.get_context("spawn")
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(self.runner_name, theirs), daemon=True)
        self.process.start()
        theirs.close()  # (ours alone: a worker that dies at its start is an EOF here, not a wait)
        return self.connection.recv()

    def verdict(self, model: onnx.ModelProto, data_sets, rtol: float, atol: float) -> tuple[str, str]:
        """("right" | "wrong" | "fails" | "crashes" | "hangs", detail) for one model."""
        names = [i.name for i in model.graph.input]
        try:
            self.connection.send((model.SerializeToString(), data_sets, rtol, atol, names))
            if self.connection.poll(CASE_SECONDS):
                return self.connection.recv()
            outcome = ("hangs", f"no answer in {CASE_SECONDS} s")
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
    """(name, opset, model, data sets, rtol, atol) of each case to probe."""
    if prepared is not None:
        import pickle

        for name, opset, model_bytes, data_sets, rtol, atol in pickle.loads(prepared.read_bytes()):
            yield name, opset, onnx.load_from_string(model_bytes), data_sets, rtol, atol
        return
    for case in backend_cases():
        opset = next((o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx")), None)
        if "_expanded" not in case.name and main_node(case.model) is not None and opset is not None:
            yield case.name, opset, case.model, case.data_sets, case.rtol, case.atol


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
    parser.add_argument("--note", default="", help="how the runtime was installed, what it is")
    parser.add_argument("--cases", type=Path, help="the cases targets/prepare_cases.py wrote (with older op "
                        "versions); default: the backend cases at their own opsets")  # fmt: skip
    args = parser.parse_args()
    out = args.out or HERE.parent / "lowering" / "target_profiles" / f"{args.name}.json"
    worker = Worker(args.runner)
    opsets = [o for o in PROBED_OPSETS if worker.verdict(*opset_probe_model(o), 1e-6, 0)[0] == "right"]
    cases = {}
    selected = list(probed_cases(args.cases))
    for number, (name, opset, model, data_sets, rtol, atol) in enumerate(selected[: args.limit]):
        node = main_node(model)
        version = onnx.defs.get_schema(node.op_type, opset).since_version
        result, detail = worker.verdict(model, data_sets, rtol, atol)
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
    profile = {
        "name": args.name,
        "runtime": args.runner,
        "runtime_version": worker.version,
        "source": {
            "kind": "probed",
            "how": f"python targets/probe.py {args.runner} {args.name}"
            + (" --cases (targets/prepare_cases.py: older op versions too)" if args.cases else ""),
            "note": args.note,
            "onnx": onnx.__version__,
            "date": datetime.date.today().isoformat(),
        },
        "opsets": opsets,
        "cases": cases,
    }
    worker.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(profile, indent=1, sort_keys=True) + "\n")
    counts = {}
    for entry in cases.values():
        counts[entry["verdict"]] = counts.get(entry["verdict"], 0) + 1
    print(f"wrote {out}: opsets {opsets[0] if opsets else None}..{opsets[-1] if opsets else None}, {counts}")


if __name__ == "__main__":
    main()
