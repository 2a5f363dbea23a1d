"""Peak memory of the whole ``onnx-lower`` process: a model with 256 MiB of external weights,
and one over 2 GiB (its data file made sparse, so the benchmark itself needs no memory).

    python benchmarks/bench_memory.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import helper


def external_model(folder: Path, element_count: int, sparse: bool) -> Path:
    weight = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[element_count])
    weight.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", str(4 * element_count))):
        weight.external_data.add(key=key, value=value)
    with open(folder / "weights.bin", "wb") as handle:
        if sparse:
            handle.truncate(4 * element_count)
        else:
            for start in range(0, element_count, 1 << 22):
                np.arange(start, min(start + (1 << 22), element_count), dtype=np.float32).tofile(handle)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("IsNaN", ["s"], ["y"])],
        "main",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [element_count])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, [element_count])],
        initializer=[weight],
    )
    path = folder / "model.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    return path


def peak_of(command: list[str]) -> tuple[float, float]:
    """(peak resident MiB, seconds) of one child process."""
    wrapper = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t)"
    )
    done = subprocess.run([sys.executable, "-c", wrapper, *command], capture_output=True, text=True, check=True)
    peak_kib, seconds = done.stdout.split()
    return int(peak_kib) / 1024, float(seconds)


def main() -> None:
    print(f"{'case':<28} {'weights MiB':>11} {'peak MiB':>9} {'seconds':>8}")
    for label, count, sparse in (("256 MiB external weights", 64 << 20, False),
                                 ("over 2 GiB (sparse file)", (2 << 30) // 4 + 1024, True)):  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "src").mkdir()
            source = external_model(folder / "src", count, sparse)
            peak, seconds = peak_of(
                [sys.executable, "-m", "lowering", str(source), "-o", str(folder / "out" / "m.onnx")]
            )
            print(f"{label:<28} {4 * count / 2**20:>11.0f} {peak:>9.0f} {seconds:>8.1f}")
    baseline, _ = peak_of([sys.executable, "-c", "import lowering, lowering.cli"])
    print(f"{'(importing onnx-lower alone)':<28} {'':>11} {baseline:>9.0f}")


if __name__ == "__main__":
    main()
