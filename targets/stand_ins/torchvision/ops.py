"""torchvision.ops as onnx2torch imports it: nothing here runs (see the package's docstring)."""


def _unavailable(*args, **kwargs):
    raise RuntimeError(
        "torchvision is not installed in this probe (PyPI's torchvision is a CUDA build, "
        "unloadable beside torch +cpu): NonMaxSuppression and RoiAlign not probed"
    )


nms = roi_align = box_convert = _unavailable
