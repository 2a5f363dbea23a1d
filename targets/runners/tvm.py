"""Apache TVM (PyPI ``apache-tvm``) through its Relax ONNX frontend, compiled for the CPU.

The model is imported with ``tvm.relax.frontend.onnx.from_onnx``, each input's shape stated from
its feed (``shape_dict``, so every case is fully static, as one deploying with TVM states them),
its element type the model's own, initializers folded in as constants; the frontend picks, per
op, the newest converter (``_impl_vN``) not above the model's default-domain opset. The module
then gets ``relax.transform.DecomposeOpsForInference`` (batch norm and the like in inference
form) and is built by ``tvm.compile(mod, target="llvm")``, TVM's default Relax pipeline (its
operators legalized to TIR and compiled by LLVM for this CPU, no tuning); it is run on the feeds
by the Relax VM (``relax.VirtualMachine``, ``tvm.cpu()``) calling ``main``.

Feeds go in as ``tvm.runtime.tensor`` of the feed's own dtype (ml_dtypes' bfloat16 and float8
too); a feed that is no tensor (a sequence, a map, an optional, strings) is refused here, as
is any dtype TVM's tensors refuse. Outputs come back as numpy arrays of the dtype TVM gives. An
output the Relax VM holds as a shape (``Shape`` folds to one) comes back as int64 dimensions,
the type ONNX declares for it; a tuple output (a sequence) as a list of arrays.
"""

import numpy as np
import onnx
import tvm
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx

from . import fed_names

VERSION = tvm.__version__


def _to_tvm(name: str, value):
    if value is None or isinstance(value, (list, tuple, dict)):
        raise TypeError(f"input {name!r} is a {type(value).__name__}: no TVM tensor for a sequence, map or optional")
    array = np.asarray(value)
    if array.dtype.kind in "OUS":
        raise TypeError(f"input {name!r} holds strings: TVM's tensors take none")
    return tvm.runtime.tensor(np.ascontiguousarray(array).reshape(array.shape))


def _to_numpy(value):
    if isinstance(value, tvm.runtime.Tensor):
        return value.numpy()
    if isinstance(value, tvm.runtime.ShapeTuple):  # (a shape folded at compile time or computed by the VM)
        return np.array(list(value), dtype=np.int64)
    if isinstance(value, (tvm.ir.Array, list, tuple)):
        return [_to_numpy(item) for item in value]
    if isinstance(value, (bool, int, float)):
        return np.asarray(value)
    raise TypeError(f"TVM output of type {type(value).__name__} has no numpy equivalent here")


def run(model_bytes: bytes, feeds: dict) -> list:
    model = onnx.load_from_string(model_bytes)
    names = fed_names(model.graph.input, model.graph.initializer, feeds)
    tensors = [_to_tvm(name, feeds[name]) for name in names]
    shapes = {name: list(np.shape(feeds[name])) for name in names}
    mod = from_onnx(model, shape_dict=shapes)
    mod = relax.transform.DecomposeOpsForInference()(mod)
    executable = tvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(executable, tvm.cpu())
    result = vm["main"](*tensors)
    if len(model.graph.output) == 1:
        return [_to_numpy(result)]
    if not isinstance(result, (tvm.ir.Array, list, tuple)) or len(result) != len(model.graph.output):
        raise RuntimeError(f"TVM gave {type(result).__name__}, not the graph's {len(model.graph.output)} outputs")
    return [_to_numpy(item) for item in result]
