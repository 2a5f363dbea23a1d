"""A stand-in for torchvision, for probing onnx2torch beside torch +cpu (targets/runners/onnx2torch.py).

PyPI's torchvision 0.28.0 (the release for torch 2.13) is a CUDA build: its _C.so needs
libtorch_cuda.so, libc10_cuda.so and libcudart, so beside torch 2.13.0+cpu it cannot load and its
import fails ("operator torchvision::nms does not exist"); PyPI has no CPU build. onnx2torch
imports torchvision for its NonMaxSuppression and RoiAlign converters only: with this stand-in
first on the path (``PYTHONPATH=targets/stand_ins``), those two fail when run, saying so, and
every other op is onnx2torch's own.
"""

from . import ops  # noqa: F401
