#!/usr/bin/env bash
# The virtual environments the shipped profiles were probed in, one per runtime, under FOLDER
# (dev tools, never dependencies of onnx-lower): each holds the runtime at the version its
# profile names, the onnx its runner reads models with, numpy and ml_dtypes (the cases' floats).
# tract 0.23 and onnxruntime are this package's own environment (the [runtimes] extra).
#
#   bash targets/setup_runtimes.sh FOLDER [NAME ...]     # NAME: tract021 ov2024 ov2026 tvm027 o2t rknn
#
# then, for instance:  FOLDER/ov2026/bin/python targets/probe.py openvino openvino-2026.4 --cases ...
set -euo pipefail
folder=${1:?usage: setup_runtimes.sh FOLDER [NAME ...]}
shift
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(tract021 ov2024 ov2026 tvm027 o2t rknn)
mkdir -p "$folder"
python=${PYTHON:-python3.11}

environment() {  # NAME PACKAGE...: a fresh environment holding the packages
    local name=$1
    shift
    rm -rf "${folder:?}/$name"
    "$python" -m venv "$folder/$name"
    "$folder/$name/bin/pip" install -q "$@"
}

rknn() {
    # rknn-toolkit2 pins torch<=2.4 but only imports it, and runs onnxruntime 1.26 in its build:
    # the toolkit without its dependencies, then its other requirements as its metadata lists
    # them, onnx 1.18.0 and numpy 1.26.4 it takes, setuptools below 81 (pkg_resources), torch.
    environment rknn --no-deps 'rknn-toolkit2==2.5.0'
    # (one requirement a line: a requirement may hold spaces, "protobuf <=4.25.4,>=4.21.6")
    local requirements="$folder/rknn/requirements.txt"
    "$folder/rknn/bin/python" -c "
import importlib.metadata as m
print('\n'.join(r for r in m.requires('rknn-toolkit2') or []
                if not r.lower().startswith(('torch', 'onnx', 'numpy', 'setuptools'))))" > "$requirements"
    "$folder/rknn/bin/pip" install -q 'onnx==1.18.0' 'numpy==1.26.4' 'onnxruntime==1.26.0' 'setuptools<81' \
        ml_dtypes -r "$requirements"
    "$folder/rknn/bin/pip" install -q --no-deps 'torch==2.13.0'
    "$folder/rknn/bin/python" -c "from rknn.api import RKNN"
}

for name in "${names[@]}"; do
    case $name in
        tract021) environment tract021 'tract==0.21.19' 'onnx==1.23.2' numpy ml_dtypes ;;
        ov2024) environment ov2024 'openvino==2024.6.0' 'onnx==1.23.2' numpy ml_dtypes ;;
        ov2026) environment ov2026 'openvino==2026.4.1' 'onnx==1.23.2' numpy ml_dtypes ;;
        tvm027) environment tvm027 'apache-tvm==0.27.0.post1' 'onnx==1.23.2' numpy ml_dtypes ;;
        # (probed on torch 2.13.0+cpu: TORCH_INDEX=https://download.pytorch.org/whl/cpu gives that
        # build where the default index gives another; torchvision, which onnx2torch imports for
        # NonMaxSuppression and RoiAlign, is stood in for by PYTHONPATH=targets/stand_ins)
        o2t) environment o2t ${TORCH_INDEX:+--extra-index-url "$TORCH_INDEX"} 'torch==2.13.0' 'onnx2torch==1.5.15' \
            'onnx==1.23.2' numpy ml_dtypes ;;
        rknn) rknn ;;
        *) echo "setup_runtimes.sh: no runtime named $name" >&2; exit 2 ;;
    esac
    echo "$folder/$name: ready"
done
