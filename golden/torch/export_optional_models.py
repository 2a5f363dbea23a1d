"""Exports the TorchScript models with an ``Optional[Tensor]`` local that
tests/test_optional_torch.py lowers. Needs torch (not a dependency of onnx-lower):

    pip install torch onnx && python golden/torch/export_optional_models.py

Writes ``optional_local_opset{15,16,18}.onnx`` beside this file.
"""

from __future__ import annotations

from pathlib import Path

import torch

HERE = Path(__file__).parent


class OptionalLocal(torch.nn.Module):
    """Keeps ``x * 2`` when its sum is positive, then adds it to ``y`` if it was kept."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        kept: torch.Tensor | None = None
        if bool(x.sum() > 0):
            kept = x * 2
        if kept is not None:
            return y + kept
        return y - 1


def main() -> None:
    module = torch.jit.script(OptionalLocal())
    example = (torch.ones(2, 3), torch.zeros(2, 3))
    for opset in (15, 16, 18):
        path = HERE / f"optional_local_opset{opset}.onnx"
        torch.onnx.export(
            module,
            example,
            str(path),
            opset_version=opset,
            input_names=["x", "y"],
            output_names=["out"],
            dynamo=False,
        )
        print("wrote", path)


if __name__ == "__main__":
    main()
