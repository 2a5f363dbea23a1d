"""Exports tiny random-weight Hugging Face transformers and timm models for
benchmarks/corpus_sweep.py, which takes each to every opset 11..21. Needs torch, transformers,
timm, onnxscript and onnxruntime (dev tools, never dependencies of onnx-lower):

    python3 -m venv /work/corpusenv
    PIP_FIND_LINKS=" " /work/corpusenv/bin/pip install torch==2.13.0 torchvision==0.28.0 \\
        transformers timm onnx==1.23.2 onnxscript==0.7.2 onnxruntime==1.32.0 numpy
    /work/corpusenv/bin/python golden/corpus/export_corpus.py [MODEL ...]

(timm imports torchvision, and torchvision's PyPI wheels link the CUDA build of torch: with the
CPU-only torch wheel `import timm` fails, so this venv takes torch from PyPI, ``PIP_FIND_LINKS=" "``
keeping pip from a local CPU wheel; the other models need no timm, which only the timm models
import, and export with the local CPU torch wheel too. Nothing here runs on a GPU.)

Named MODELs (``bert``) are exported alone, every other file left as it is.

Every model is built from a small config written here (no pretrained weights, nothing
downloaded), with random weights from a fixed seed (norm layers' scales, shifts and running
statistics drawn too), hidden sizes of 8 to 64 and two layers or so: each file is about 100 to
400 KB, all of them with their inputs about 8.8 MB. Each is exported by the dynamo exporter at
opset 18 and by the TorchScript exporter at opset 17 (those in MORE_EXPORTS at more opsets:
LLaMA and Qwen2 by the dynamo exporter at 23, with Attention-23), with static shapes; the models named in
DYNAMIC_AXES also with their batch (and sequence) axes dynamic, as ``<name>_dynamic``. The
dynamo exporter's per-node metadata (most of the bytes, and this machine's paths) is dropped.
Each is written as ``<name>_<exporter><opset>.onnx`` (weights inline) beside this file, with
``<name>_<exporter><opset>.npz`` holding the inputs (``input:<graph input name>``) and
onnxruntime's outputs of that file (``output:<graph output name>``), the reference a converted
model is compared with. The largest difference between onnxruntime's and PyTorch's outputs is
printed. An export that fails, that onnx's full checker refuses, or that onnxruntime cannot
run, is written to ``export_failures.txt`` and stdout instead, never hidden; the script then
goes on (torch 2.13 exports every model here; T5 only with eager attention, see t5_encoder).
"""

from __future__ import annotations

import io
import itertools
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import torch
import transformers
from torch import nn
from transformers.models.whisper.modeling_whisper import WhisperEncoder

HERE = Path(__file__).parent
EXPORTS = (("dynamo", 18), ("torchscript", 17))
BATCH, LENGTH, VOCABULARY = 2, 8, 100
ANSI_ESCAPES = re.compile(r"\x1b\[[0-9;]*m")


class NamedOutputs(nn.Module):
    """A Hugging Face model called with its inputs by name, returning the named fields of its
    output as a tuple (the exporters take positional tensors and give flat outputs)."""

    def __init__(self, model: nn.Module, input_names: list[str], fields: list[str]) -> None:
        super().__init__()
        self.model = model
        self.input_names = input_names
        self.fields = fields

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        output = self.model(**dict(zip(self.input_names, tensors, strict=True)), return_dict=True)
        return tuple(output[field] for field in self.fields)


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(1234)


def _text_inputs(*names: str) -> dict[str, torch.Tensor]:
    """Token ids, an attention mask whose second sequence is 5 long (padded on the right) and,
    where named, token type ids (the second half of each sequence is segment 1)."""
    inputs = {"input_ids": torch.randint(0, VOCABULARY, (BATCH, LENGTH), generator=_generator())}
    if "attention_mask" in names:
        mask = torch.ones(BATCH, LENGTH, dtype=torch.int64)
        mask[1, 5:] = 0
        inputs["attention_mask"] = mask
    if "token_type_ids" in names:
        segments = torch.zeros(BATCH, LENGTH, dtype=torch.int64)
        segments[:, LENGTH // 2 :] = 1
        inputs["token_type_ids"] = segments
    return inputs


def _image(size: int = 32) -> dict[str, torch.Tensor]:
    return {"pixel_values": torch.randn(1, 3, size, size, generator=_generator())}


def _hugging_face(model: nn.Module, inputs: dict[str, torch.Tensor], fields: list[str]):
    model.config.use_cache = False
    return NamedOutputs(model, list(inputs), fields), inputs, fields


def bert():
    config = transformers.BertConfig(
        vocab_size=VOCABULARY, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64,
    )  # fmt: skip
    inputs = _text_inputs("attention_mask", "token_type_ids")
    return _hugging_face(transformers.BertModel(config), inputs, ["last_hidden_state", "pooler_output"])


def distilbert():
    config = transformers.DistilBertConfig(
        vocab_size=VOCABULARY, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=64
    )
    return _hugging_face(transformers.DistilBertModel(config), _text_inputs("attention_mask"), ["last_hidden_state"])


def gpt2():
    config = transformers.GPT2Config(vocab_size=VOCABULARY, n_embd=32, n_layer=2, n_head=2, n_positions=64)
    return _hugging_face(transformers.GPT2LMHeadModel(config), _text_inputs("attention_mask"), ["logits"])


def _decoder_config(config_class):
    """A LLaMA-style config: grouped-query attention (4 query heads, 2 key/value heads)."""
    return config_class(
        vocab_size=VOCABULARY, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip


def llama():
    model = transformers.LlamaForCausalLM(_decoder_config(transformers.LlamaConfig))
    return _hugging_face(model, _text_inputs("attention_mask"), ["logits"])


def qwen2():
    model = transformers.Qwen2ForCausalLM(_decoder_config(transformers.Qwen2Config))
    return _hugging_face(model, _text_inputs("attention_mask"), ["logits"])


def t5_encoder():
    """Eager attention: with the default (SDPA) the dynamo exporter of torch 2.13 fails in its
    decompositions ("Cannot view a tensor with shape [2, 8, 2, 16] and strides (256, 16, 128, 1)
    as a tensor with shape (2, 8, 32)", T5Attention's final reshape)."""
    config = transformers.T5Config(
        vocab_size=VOCABULARY, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
        relative_attention_num_buckets=8, relative_attention_max_distance=16, attn_implementation="eager",
    )  # fmt: skip
    return _hugging_face(transformers.T5EncoderModel(config), _text_inputs("attention_mask"), ["last_hidden_state"])


def vit():
    config = transformers.ViTConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        image_size=32, patch_size=8, num_labels=10,
    )  # fmt: skip
    return _hugging_face(transformers.ViTForImageClassification(config), _image(), ["logits"])


def whisper_encoder():
    """The encoder alone: 16 mel bins over 32 frames (two convolutions, the second strided)."""
    config = transformers.WhisperConfig(
        vocab_size=VOCABULARY, num_mel_bins=16, d_model=32, encoder_layers=2, encoder_attention_heads=2,
        encoder_ffn_dim=64, max_source_positions=16, decoder_layers=1, decoder_attention_heads=2,
    )  # fmt: skip
    inputs = {"input_features": torch.randn(1, 16, 32, generator=_generator())}
    return _hugging_face(WhisperEncoder(config), inputs, ["last_hidden_state"])


def wav2vec2():
    """Two feature-extractor convolutions (group norm), a weight-normed positional convolution
    and two encoder layers, on 400 samples of raw audio."""
    config = transformers.Wav2Vec2Config(
        vocab_size=VOCABULARY, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, do_stable_layer_norm=False,
    )  # fmt: skip
    inputs = {"input_values": torch.randn(1, 400, generator=_generator())}
    return _hugging_face(transformers.Wav2Vec2Model(config), inputs, ["last_hidden_state"])


def _timm(model: nn.Module, size: int = 32):
    return model, {"x": _image(size)["pixel_values"]}, ["logits"]


def efficientnet_b0():
    """EfficientNet-B0's stages (MBConv with squeeze-excite, SiLU) at an eighth of its widths
    and a quarter of its depth."""
    from timm.models import efficientnet

    model = efficientnet._gen_efficientnet(
        "efficientnet_b0", channel_multiplier=0.125, depth_multiplier=0.25, num_classes=10
    )
    return _timm(model)


def convnext_atto():
    import timm

    return _timm(
        timm.create_model("convnext_atto", pretrained=False, num_classes=10, dims=(8, 16, 32, 48), depths=(1, 1, 1, 1))
    )


def regnety():
    """A RegNetY (group convolutions, squeeze-excite) of four stages 8 to 64 wide."""
    from timm.models import regnet

    config = regnet.RegNetCfg(depth=6, w0=8, wa=8, wm=2.0, group_size=8, se_ratio=0.25, stem_width=8)
    return _timm(regnet.RegNet(config, num_classes=10))


def deit_tiny():
    import timm

    model = timm.create_model(
        "deit_tiny_patch16_224", pretrained=False, num_classes=10, img_size=32, patch_size=8, embed_dim=32,
        depth=2, num_heads=2,
    )  # fmt: skip
    return _timm(model)


def mobilevitv2():
    """MobileViTv2 (separable linear attention) at an eighth of its widths, on 64x64 images."""
    from timm.models import byobnet, mobilevit

    return _timm(byobnet.ByobNet(mobilevit._mobilevitv2_cfg(0.125), num_classes=10), size=64)


class TinyUNet(nn.Module):
    """A two-level U-Net: each level two 3x3 convolutions with batch norm and ReLU; down by max
    pooling; up by a transposed convolution from the bottom, and by bilinear resizing (and a
    nearest-resized copy of the same features added) to the top; each skip concatenated."""

    def __init__(self, channels: int = 3, width: int = 8, classes: int = 3) -> None:
        super().__init__()

        def block(inputs: int, outputs: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(inputs, outputs, 3, padding=1), nn.BatchNorm2d(outputs), nn.ReLU(),
                nn.Conv2d(outputs, outputs, 3, padding=1), nn.BatchNorm2d(outputs), nn.ReLU(),
            )  # fmt: skip

        self.top, self.middle, self.bottom = (
            block(channels, width),
            block(width, 2 * width),
            block(2 * width, 4 * width),
        )
        self.pool = nn.MaxPool2d(2)
        self.up_bottom = nn.ConvTranspose2d(4 * width, 2 * width, 2, stride=2)
        self.middle_up = block(4 * width, 2 * width)
        self.bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.top_up = block(3 * width, width)
        self.head = nn.Conv2d(width, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        top = self.top(x)
        middle = self.middle(self.pool(top))
        bottom = self.bottom(self.pool(middle))
        middle = self.middle_up(torch.cat([self.up_bottom(bottom), middle], dim=1))
        up = self.bilinear(middle) + self.nearest(middle)
        return self.head(self.top_up(torch.cat([up, top], dim=1)))


def unet():
    """A segmentation net (:class:`TinyUNet`) of 3 classes on 32x32 images: ConvTranspose,
    Resize (linear and nearest), MaxPool and Concat, as deployed segmentation models hold them."""
    return TinyUNet(), {"x": _image()["pixel_values"]}, ["logits"]


class Tagger(nn.Module):
    """Token embeddings, a two-layer bidirectional LSTM, a GRU over its outputs, and a linear
    layer giving each token's tag logits."""

    def __init__(self, width: int = 16, tags: int = 5) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCABULARY, width)
        self.lstm = nn.LSTM(width, width, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(2 * width, width, batch_first=True)
        self.tags = nn.Linear(width, tags)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        states, _ = self.lstm(self.embed(input_ids))
        states, _ = self.gru(states)
        return self.tags(states)


def lstm_tagger():
    """A sequence tagger (:class:`Tagger`): LSTM and GRU, the recurrent ops NPUs and compilers
    lack."""
    return Tagger(), _text_inputs(), ["logits"]


MODELS: dict[str, Callable] = {
    "bert": bert,
    "distilbert": distilbert,
    "gpt2": gpt2,
    "llama": llama,
    "qwen2": qwen2,
    "t5_encoder": t5_encoder,
    "vit": vit,
    "whisper_encoder": whisper_encoder,
    "wav2vec2": wav2vec2,
    "efficientnet_b0": efficientnet_b0,
    "convnext_atto": convnext_atto,
    "regnety": regnety,
    "deit_tiny": deit_tiny,
    "mobilevitv2": mobilevitv2,
    "unet": unet,
    "lstm_tagger": lstm_tagger,
}


def _text_axes(*names: str) -> dict[str, dict[int, str]]:
    return {name: {0: "batch", 1: "sequence"} for name in names}


# The models also exported with dynamic axes (as ``<name>_dynamic_<exporter><opset>``): input
# name → {axis: name}. Their sizes are then computed from the input's shape at run time.
DYNAMIC_AXES = {
    "bert": _text_axes("input_ids", "attention_mask", "token_type_ids"),
    "distilbert": _text_axes("input_ids", "attention_mask"),
    "gpt2": _text_axes("input_ids", "attention_mask"),
    "llama": _text_axes("input_ids", "attention_mask"),
    "qwen2": _text_axes("input_ids", "attention_mask"),
    "t5_encoder": _text_axes("input_ids", "attention_mask"),
    "vit": {"pixel_values": {0: "batch"}},
    "whisper_encoder": {"input_features": {0: "batch"}},
    "wav2vec2": {"input_values": {0: "batch", 1: "samples"}},
    "deit_tiny": {"x": {0: "batch"}},
    "unet": {"x": {0: "batch"}},
    "lstm_tagger": _text_axes("input_ids"),
}
# Exports beside :data:`EXPORTS` of some models: at opset 23, where the dynamo exporter writes
# scaled dot-product attention as Attention-23 and RMS norm as RMSNormalization-23, the fused
# ops runtimes lack
MORE_EXPORTS = {"llama": (("dynamo", 23),), "qwen2": (("dynamo", 23),)}


def _randomize_norms(module: nn.Module) -> None:
    """Random affine parameters and running statistics for every norm layer, so that a norm
    does more than standardize (fresh ones scale by 1 and shift by 0)."""
    for child in module.modules():
        if isinstance(child, nn.modules.batchnorm._BatchNorm) and child.running_mean is not None:
            child.running_mean.uniform_(-0.5, 0.5)
            child.running_var.uniform_(0.5, 2.0)
        if isinstance(child, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm)):
            if getattr(child, "weight", None) is not None:
                child.weight.data.uniform_(0.5, 1.5)
            if getattr(child, "bias", None) is not None:
                child.bias.data.uniform_(-0.2, 0.2)


def export(
    module: nn.Module, inputs: dict, output_names: list[str], exporter: str, opset: int, dynamic: dict | None
) -> onnx.ModelProto:
    """``dynamic``: input name → {axis: name} of the axes exported as dynamic (None: all static)."""
    args = tuple(inputs.values())
    if exporter == "torchscript":
        buffer = io.BytesIO()
        torch.onnx.export(
            module, args, buffer, input_names=list(inputs), output_names=output_names, opset_version=opset,
            dynamo=False, dynamic_axes=dynamic,
        )  # fmt: skip
        return onnx.load_from_string(buffer.getvalue())
    shapes = None
    if dynamic:
        shapes = tuple({axis: torch.export.Dim.DYNAMIC for axis in dynamic.get(name, {})} for name in inputs)
        if isinstance(module, NamedOutputs):  # one spec for its one parameter, *tensors
            shapes = {"tensors": shapes}
    program = torch.onnx.export(
        module, args, input_names=list(inputs), output_names=output_names, opset_version=opset, dynamo=True,
        dynamic_shapes=shapes,
    )  # fmt: skip
    model = program.model_proto
    _drop_node_metadata(model.graph)
    return model


def _drop_node_metadata(graph: onnx.GraphProto) -> None:
    """The dynamo exporter's per-node metadata (module path, FX node, stack trace with this
    machine's paths) is most of a small model's bytes and means nothing to a converter."""
    for node in graph.node:
        del node.metadata_props[:]
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                _drop_node_metadata(attribute.g)
            for subgraph in attribute.graphs:
                _drop_node_metadata(subgraph)


def _flat_outputs(result) -> list[np.ndarray]:
    if isinstance(result, torch.Tensor):
        return [result.detach().numpy()]
    return [t.detach().numpy() for t in result]


def _reason(error: BaseException) -> str:
    """The exception's message and, where it wraps others (the dynamo exporter's errors do),
    the innermost one's, which says what went wrong."""
    message = " ".join(traceback.format_exception_only(type(error), error))
    cause = error
    while cause.__cause__ is not None:
        cause = cause.__cause__
    if cause is not error:
        message = f"{message.splitlines()[0]} ... caused by {type(cause).__name__}: {cause}"
    return _shortened(ANSI_ESCAPES.sub("", message))


def _shortened(message: str) -> str:
    """The head and the tail of a long message (onnxruntime puts its reason last)."""
    message = " ".join(message.split())
    return message if len(message) <= 600 else f"{message[:200]} ... {message[-380:]}"


def _onnxruntime_outputs(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _timm_version() -> str:
    """timm's version, or "absent": it is needed for the timm models alone."""
    try:
        import timm
    except ImportError:
        return "absent"
    return timm.__version__


def main(only: list[str]) -> int:
    """Export every model, or only those named in ``only`` (the others' files stay as they are)."""
    unknown = sorted(set(only) - set(MODELS))
    if unknown:
        print(f"unknown models {unknown}; known: {', '.join(MODELS)}", file=sys.stderr)
        return 2
    failures = []
    total_bytes = 0
    for number, (name, build) in enumerate(MODELS.items()):
        if only and name not in only:
            continue
        torch.manual_seed(number)
        module, inputs, output_names = build()
        _randomize_norms(module)
        module.eval()
        with torch.no_grad():
            want = _flat_outputs(module(*inputs.values()))
        variants = [(name, None)]
        if name in DYNAMIC_AXES:
            variants.append((f"{name}_dynamic", DYNAMIC_AXES[name]))
        for (variant, dynamic), (exporter, opset) in itertools.product(variants, EXPORTS + MORE_EXPORTS.get(name, ())):
            stem = f"{variant}_{exporter}{opset}"
            try:
                model = export(module, inputs, output_names, exporter, opset, dynamic)
                onnx.checker.check_model(model, full_check=True)
            except Exception as error:  # noqa: BLE001 - every failure is written down
                failures.append(f"{stem}: {_reason(error)}")
                print("FAILED", failures[-1], flush=True)
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
                reason = _reason(error)
                failures.append(f"{stem}: exported, but onnxruntime {onnxruntime.__version__} cannot run it: {reason}")
                print("FAILED", failures[-1], flush=True)
                continue
            difference = max(float(np.max(np.abs(g.astype(np.float64) - w))) for g, w in zip(got, want, strict=True))
            path = HERE / f"{stem}.onnx"
            onnx.save_model(model, path, save_as_external_data=False)
            arrays = {f"input:{k}": v for k, v in feeds.items()}
            arrays.update({f"output:{k}": v for k, v in zip(graph_outputs, got, strict=True)})
            np.savez(HERE / f"{stem}.npz", **arrays)
            size = path.stat().st_size
            total_bytes += size
            opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
            print(
                f"wrote {path.name} ({size / 1024:.0f} KB, opsets {opsets}, {len(model.graph.node)} nodes); "
                f"max |onnxruntime - torch| = {difference:.3g}",
                flush=True,
            )
    summary = f"{total_bytes / 1024:.0f} KB of models; {len(failures)} exports failed"
    if not only:  # (the failures file lists every model's: written by a whole run alone)
        (HERE / "export_failures.txt").write_text(
            f"# failed exports of export_corpus.py (torch {torch.__version__}, transformers "
            f"{transformers.__version__}, timm {_timm_version()}, onnx {onnx.__version__})\n"
            + "".join(f"{line}\n" for line in failures)
        )
    print(summary, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
