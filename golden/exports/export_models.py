"""Exports the small real PyTorch models that tests/test_real_exports.py takes down to opsets
11, 13, 15 and 17. Needs torch and onnxscript (dev tools, not dependencies of onnx-lower):

    python3 -m venv /work/torchenv
    /work/torchenv/bin/pip install torch==2.13.0 onnx==1.23.2 onnxscript numpy onnxruntime==1.32.0
    /work/torchenv/bin/python golden/exports/export_models.py [MODEL ...]

Named MODELs (``attention_dynamic``) are exported alone, every other file left as it is.

Each model has random weights from a fixed seed and tiny sizes. It is exported by the
TorchScript exporter at opset 17 and by the dynamo exporter at opsets 18 and 23, and written
as ``<name>_<exporter><opset>.onnx`` (weights inline) beside this file, with
``<name>_<exporter><opset>.npz`` holding the inputs (``input:<graph input name>``) and the
PyTorch outputs (``output:<graph output name>``). An export that fails, or that onnxruntime
cannot run (tests compare against onnxruntime's outputs of the original), is written to
``export_failures.txt`` and stdout instead, never hidden; the script then goes on.
"""

from __future__ import annotations

import io
import sys
import traceback
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).parent
EXPORTS = (("torchscript", 17), ("dynamo", 18), ("dynamo", 23))


class ResNetBlock(nn.Module):
    """A basic residual block: conv-BN-ReLU-conv-BN, plus a strided 1x1 shortcut, then ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.shortcut = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        y = F.relu(y + self.shortcut(x))
        return self.head(torch.flatten(self.pool(y), 1))


class MobileNetBlock(nn.Module):
    """An inverted residual: 1x1 expand, 3x3 depthwise, squeeze-excite, 1x1 project, HardSwish."""

    def __init__(self) -> None:
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(8, 32, 1, bias=False), nn.BatchNorm2d(32), nn.Hardswish())
        self.depthwise = nn.Sequential(
            nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False), nn.BatchNorm2d(32), nn.Hardswish()
        )
        self.se_reduce = nn.Conv2d(32, 8, 1)
        self.se_expand = nn.Conv2d(8, 32, 1)
        self.project = nn.Sequential(nn.Conv2d(32, 8, 1, bias=False), nn.BatchNorm2d(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.depthwise(self.expand(x))
        scale = F.adaptive_avg_pool2d(y, 1)
        scale = F.hardsigmoid(self.se_expand(F.relu(self.se_reduce(scale))))
        return x + self.project(y * scale)


class ViTBlock(nn.Module):
    """Patch embedding (a strided conv), a class token and position embedding, one pre-norm
    encoder layer with nn.MultiheadAttention and a GELU MLP, then the class token's head."""

    def __init__(self, dim: int = 32, heads: int = 4, patch: int = 4, image: int = 16) -> None:
        super().__init__()
        self.embed = nn.Conv2d(3, dim, patch, stride=patch)
        tokens = (image // patch) ** 2 + 1
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.position = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
        self.norm1 = nn.LayerNorm(dim)
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), tokens], dim=1) + self.position
        normed = self.norm1(tokens)
        tokens = tokens + self.attention(normed, normed, normed, need_weights=False)[0]
        tokens = tokens + self.mlp(self.norm2(tokens))
        return self.head(tokens[:, 0])


class TransformerEncoder(nn.Module):
    """One nn.TransformerEncoderLayer (post-norm, ReLU) with a key padding mask input."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        return self.layer(x, src_key_padding_mask=padding)


class GPTBlock(nn.Module):
    """Token and position embeddings, one pre-norm decoder block with causal
    scaled_dot_product_attention and a tanh-GELU MLP, a final LayerNorm and the LM head."""

    def __init__(self, vocabulary: int = 64, dim: int = 32, heads: int = 4, context: int = 16) -> None:
        super().__init__()
        self.heads = heads
        self.tokens = nn.Embedding(vocabulary, dim)
        self.positions = nn.Embedding(context, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))
        self.final_norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocabulary, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        batch, length = ids.shape
        x = self.tokens(ids) + self.positions(torch.arange(length, device=ids.device))
        q, k, v = self.qkv(self.norm1(x)).split(x.shape[-1], dim=-1)
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attended.transpose(1, 2).reshape(batch, length, -1))
        x = x + self.mlp(self.norm2(x))
        return self.lm_head(self.final_norm(x))


class DynamicAttention(nn.Module):
    """Causal multi-head self-attention on float input whose batch and length are dynamic in the
    export: the dynamo exporter then computes each view's sizes at run time from the input's shape
    (Reshape-14 with allowzero=1), which going below 14 must prove free of a 0 of its own."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(attended.transpose(1, 2).reshape(batch, length, dim))


class LSTMModel(nn.Module):
    """A two-layer LSTM from a given initial state; returns the sequence and the final states."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True)

    def forward(self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor):
        y, (h, c) = self.lstm(x, (h0, c0))
        return y, h, c


class GRUModel(nn.Module):
    """A bidirectional GRU from a zero state, then a linear layer on every step."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(16, 24, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(48, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.gru(x)
        return self.proj(y)


class UNetBlock(nn.Module):
    """Down (strided conv), bottleneck, up by nearest interpolation with a skip concat, then a
    bilinear upsampling to twice the input size."""

    def __init__(self) -> None:
        super().__init__()
        self.inc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.up_conv = nn.Conv2d(16 + 8, 8, 3, padding=1)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = self.inc(x)
        y = self.down(skip)
        y = F.interpolate(y, scale_factor=2, mode="nearest")
        y = F.relu(self.up_conv(torch.cat([y, skip], dim=1)))
        y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(y)


class RMSNormMLP(nn.Module):
    """torch.nn.RMSNorm then a SwiGLU MLP with a residual, as in Llama-style blocks."""

    def __init__(self, dim: int = 32, hidden: int = 64) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Conv1dAudio(nn.Module):
    """A raw-waveform front end: strided conv1d, GroupNorm, GELU, conv1d with BatchNorm1d,
    max pooling, global average and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(1, 16, 10, stride=5)
        self.norm1 = nn.GroupNorm(4, 16)
        self.conv2 = nn.Conv1d(16, 32, 3, padding=1)
        self.norm2 = nn.BatchNorm1d(32)
        self.pool = nn.MaxPool1d(2)
        self.classifier = nn.Linear(32, 6)

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        y = F.gelu(self.norm1(self.conv1(wave)))
        y = self.pool(F.relu(self.norm2(self.conv2(y))))
        return self.classifier(y.mean(dim=-1))


def _randomize_batchnorm(module: nn.Module) -> None:
    """Random running statistics, so that BatchNormalization does more than scale by ~1."""
    for child in module.modules():
        if isinstance(child, nn.modules.batchnorm._BatchNorm):
            child.running_mean.uniform_(-0.5, 0.5)
            child.running_var.uniform_(0.5, 2.0)
            child.weight.data.uniform_(0.5, 1.5)
            child.bias.data.uniform_(-0.2, 0.2)


# Inputs' dynamic axes, by model (the others are exported with static shapes): axis → name.
DYNAMIC_AXES = {"attention_dynamic": {"x": {0: "batch", 1: "length"}}}


def model_cases() -> list[tuple[str, nn.Module, dict[str, torch.Tensor], list[str]]]:
    """(name, module in eval mode, named example inputs, output names), from fixed seeds."""
    cases = []

    def add(name, factory, inputs, outputs):
        torch.manual_seed(len(cases))
        module = factory()
        _randomize_batchnorm(module)
        cases.append((name, module.eval(), inputs(), outputs))

    def gen():
        return torch.Generator().manual_seed(1234)

    add("resnet_block", ResNetBlock, lambda: {"x": torch.randn(2, 8, 16, 16, generator=gen())}, ["logits"])
    add("mobilenet_block", MobileNetBlock, lambda: {"x": torch.randn(2, 8, 16, 16, generator=gen())}, ["y"])
    add("vit_block", ViTBlock, lambda: {"x": torch.randn(2, 3, 16, 16, generator=gen())}, ["logits"])

    def encoder_inputs():
        padding = torch.zeros(2, 10, dtype=torch.bool)
        padding[1, 7:] = True  # the second sequence is 7 long
        return {"x": torch.randn(2, 10, 32, generator=gen()), "padding": padding}

    add("transformer_encoder", TransformerEncoder, encoder_inputs, ["y"])
    add("gpt_block", GPTBlock, lambda: {"ids": torch.randint(0, 64, (2, 12), generator=gen())}, ["logits"])

    def lstm_inputs():
        g = gen()
        return {"x": torch.randn(2, 7, 16, generator=g), "h0": torch.randn(2, 2, 24, generator=g),
                "c0": torch.randn(2, 2, 24, generator=g)}  # fmt: skip

    add("lstm", LSTMModel, lstm_inputs, ["y", "h", "c"])
    add("gru", GRUModel, lambda: {"x": torch.randn(2, 7, 16, generator=gen())}, ["y"])
    add("unet_block", UNetBlock, lambda: {"x": torch.randn(1, 3, 16, 16, generator=gen())}, ["y"])
    add("rmsnorm_mlp", RMSNormMLP, lambda: {"x": torch.randn(2, 6, 32, generator=gen())}, ["y"])
    add("conv1d_audio", Conv1dAudio, lambda: {"wave": torch.randn(2, 1, 400, generator=gen())}, ["logits"])
    add("attention_dynamic", DynamicAttention, lambda: {"x": torch.randn(2, 6, 32, generator=gen())}, ["y"])
    return cases


def export(
    module, inputs: dict, output_names: list[str], exporter: str, opset: int, dynamic: dict | None = None
) -> onnx.ModelProto:
    """``dynamic``: input name → {axis: name} of the axes exported as dynamic."""
    args = tuple(inputs.values())
    dynamic = dynamic or {}
    if exporter == "torchscript":
        buffer = io.BytesIO()
        torch.onnx.export(
            module,
            args,
            buffer,
            input_names=list(inputs),
            output_names=output_names,
            opset_version=opset,
            dynamo=False,
            dynamic_axes=dynamic or None,
        )
        return onnx.load_from_string(buffer.getvalue())
    shapes = tuple({axis: torch.export.Dim.DYNAMIC for axis in dynamic.get(name, {})} for name in inputs)
    program = torch.onnx.export(
        module,
        args,
        input_names=list(inputs),
        output_names=output_names,
        opset_version=opset,
        dynamo=True,
        dynamic_shapes=shapes if dynamic else None,
    )
    return program.model_proto


def _flat_outputs(result) -> list[np.ndarray]:
    if isinstance(result, torch.Tensor):
        return [result.detach().numpy()]
    return [t.detach().numpy() for t in result]


def _shortened(message: str) -> str:
    """The head and the tail of a long message (onnxruntime puts its reason last)."""
    return message if len(message) <= 600 else f"{message[:200]} ... {message[-380:]}"


def _onnxruntime_outputs(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def main(only: list[str]) -> int:
    """Export every model, or only those named in ``only`` (the others' files stay as they are)."""
    failures = []
    total_bytes = 0
    for name, module, inputs, output_names in model_cases():
        if only and name not in only:
            continue
        with torch.no_grad():
            want = _flat_outputs(module(*inputs.values()))
        for exporter, opset in EXPORTS:
            stem = f"{name}_{exporter}{opset}"
            try:
                # Not under no_grad: there nn.MultiheadAttention and nn.TransformerEncoderLayer
                # take their fused fast paths, which the TorchScript exporter cannot export.
                model = export(module, inputs, output_names, exporter, opset, DYNAMIC_AXES.get(name))
                onnx.checker.check_model(model, full_check=True)
            except Exception as error:  # noqa: BLE001 - every failure is written down
                lines = traceback.format_exception_only(type(error), error)
                reason = _shortened(" ".join(line.strip() for line in lines))
                failures.append(f"{stem}: {reason}")
                print(f"FAILED {stem}: {reason}", flush=True)
                continue
            graph_inputs = [i.name for i in model.graph.input]
            graph_outputs = [o.name for o in model.graph.output]
            if len(graph_inputs) != len(inputs) or len(graph_outputs) != len(want):
                failures.append(f"{stem}: inputs {graph_inputs} / outputs {graph_outputs} do not line up")
                print("FAILED", failures[-1], flush=True)
                continue
            feeds = {graph_name: value.numpy() for graph_name, value in zip(graph_inputs, inputs.values(), strict=True)}
            try:
                got = _onnxruntime_outputs(model, feeds)
            except Exception as error:  # noqa: BLE001 - written down, and the model left out
                reason = _shortened(f"{type(error).__name__}: {' '.join(str(error).split())}")
                failures.append(f"{stem}: exported, but onnxruntime {onnxruntime.__version__} cannot run it: {reason}")
                print("FAILED", failures[-1], flush=True)
                continue
            difference = max(float(np.max(np.abs(g.astype(np.float64) - w))) for g, w in zip(got, want, strict=True))
            path = HERE / f"{stem}.onnx"
            onnx.save_model(model, path, save_as_external_data=False)
            arrays = {f"input:{k}": v for k, v in feeds.items()}
            arrays.update({f"output:{k}": v for k, v in zip(graph_outputs, want, strict=True)})
            np.savez(HERE / f"{stem}.npz", **arrays)
            size = path.stat().st_size
            total_bytes += size
            opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
            print(
                f"wrote {path.name} ({size / 1024:.0f} KB, opsets {opsets}, {len(model.graph.node)} nodes); "
                f"max |onnxruntime - torch| = {difference:.3g}",
                flush=True,
            )
    if only:  # (the failures file lists every model's: written by a whole run alone)
        print(f"{total_bytes / 1024:.0f} KB of models; {len(failures)} exports failed", flush=True)
        return 0
    (HERE / "export_failures.txt").write_text(
        f"# failed exports of export_models.py (torch {torch.__version__}, onnx {onnx.__version__})\n"
        + "".join(f"{line}\n" for line in failures)
    )
    print(f"{total_bytes / 1024:.0f} KB of models; {len(failures)} exports failed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
