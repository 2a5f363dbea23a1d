"""The proof of a target on its real runtime, part 1 (in this package's environment): for each
corpus export (golden/corpus) and each single-op backend case, write the model as exported, the
model made for the target (``lowering.lower_model(model, target=NAME, input_shapes=...)``,
the inputs' shapes stated) or why onnx-lower refused it, the inputs, and the outputs the model
must give (onnxruntime's on the export, node by node as verification runs it: its graph
optimizations off; the case's expected ones). Part 2,
``targets/run_sweep.py``, runs both through the runtime.

Each corpus export's outputs as onnxruntime computes the export in float16
(``onnxruntime.transformers.float16``, inputs and outputs kept float32) go to ``float16.npz``:
a runtime that computes floats in float16 (rknn) is judged on a whole model against that error.
Each backend case's outputs as onnxruntime computes the export go to ``onnxruntime.npz``: a
runtime that misses the case's expected outputs where onnxruntime does too, and matches it, is
right as onnxruntime (``probe.as_onnxruntime``).

Each backend case fed an input that only sets how a node computes (its axes, shape, pads,
scales: ``parameters_fed``) is made for the target once more with those inputs given as
constants (``constant_parameters.onnx``, or ``.refused``): ``run_sweep.py`` runs it where the
case does not run right as fed, to tell a runtime that needs them constant from one that fails
the op whatever its parameters.

Trials (each corpus export): for each form of ``lowering.target_forms.MODEL_FORM_CHOICES``
that changes the model made for the target, that model made with the other forms the profile
takes (``trials/SLUG/without.onnx``) and with those and that one
(``trials/SLUG/with.onnx``); ``run_sweep.py --record-forms`` records in the profile which ran
better.

    python targets/prepare_sweep.py NAME FOLDER [--cases-only | --corpus-only] [--only NAME ...]

With ``--only`` it makes only the models whose names start so (a change's own cases, checked on
the runtime before a whole sweep); ``run_sweep.py`` records no such partial folder.
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from probe import CONSTANT_PARAMETERS, REFUSED, backend_cases, feed, main_node  # noqa: E402

import lowering  # noqa: E402
from lowering import schemas  # noqa: E402
from lowering.ir_versions import unlisted_initializers_ir  # noqa: E402
from lowering.runtime_profiles import RuntimeProfile, load_profile  # noqa: E402
from lowering.schemas import RANDOM_OPS  # noqa: E402
from lowering.target_forms import MODEL_FORM_CHOICES, apply_model_forms, model_forms_taken  # noqa: E402
from lowering.verification.runtime import run_onnxruntime  # noqa: E402

CORPUS = HERE.parent / "golden" / "corpus"
CORPUS_RTOL, CORPUS_ATOL = 1e-3, 1e-5  # (an export's outputs against onnxruntime's: other kernels' sums)


def corpus_feeds(path: Path) -> dict[str, np.ndarray]:
    """The inputs an export of golden/corpus is run on (``input:NAME`` in the .npz beside it)."""
    data = np.load(path.with_suffix(".npz"))
    return {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}


def corpus_items():
    for path in sorted(CORPUS.glob("*.onnx")):
        model = onnx.load(path)
        feeds = corpus_feeds(path)
        yield path.stem, model, feeds, run_onnxruntime(model, feeds), CORPUS_RTOL, CORPUS_ATOL


def case_items():
    for case in backend_cases():
        node = main_node(case.model)
        if "_expanded" in case.name or node is None or not case.data_sets:
            continue
        inputs, expected = case.data_sets[0]
        if drawn_at_random(node, dict(zip([info.name for info in case.model.graph.input], inputs, strict=False))):
            continue  # (its expected outputs are one draw of onnx's: no runtime is asked to match them)
        feeds = {info.name: feed(value) for info, value in zip(case.model.graph.input, inputs, strict=False)}
        if any(not _plain(value) for value in [*feeds.values(), *(feed(v) for v in expected)]):
            continue  # (sequences, optionals and ml_dtypes' types, which .npz files do not carry: not swept)
        yield case.name, case.model, feeds, [feed(value) for value in expected], case.rtol, case.atol


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray] | None:
    """onnxruntime's outputs of a backend case's export (the reference the sweep also judges a
    runtime by: ``probe.as_onnxruntime``); None where it does not run it or gives other than
    arrays."""
    try:
        computed = run_onnxruntime(model, feeds)
    except Exception:  # (its refusal: no reference)
        return None
    return [np.asarray(value) for value in computed] if all(_plain(v) for v in computed) else None


def drawn_at_random(node: onnx.NodeProto, feeds: dict) -> bool:
    """Whether the node's outputs are drawn at random: a random op's, or a Dropout's in training
    (its training_mode input fed true, with a ratio above 0)."""
    if node.op_type in RANDOM_OPS:
        return True
    if node.op_type != "Dropout" or len(node.input) < 3 or node.input[2] not in feeds:
        return False
    ratio = feeds.get(node.input[1]) if len(node.input) > 1 and node.input[1] else 0.5
    return bool(np.asarray(feeds[node.input[2]])) and (ratio is None or float(np.asarray(ratio)) > 0)


def trial_models(
    model: onnx.ModelProto, profile, shapes
) -> dict[str, tuple[onnx.ModelProto | str, onnx.ModelProto | str]]:
    """Per form of MODEL_FORM_CHOICES (by its name) that changes the model made for the
    target's ``profile``: (the model made with the profile's other forms, the model made with
    those and that one), each side why onnx-lower refused to make it where it did. A form is
    tried beside the forms the profile takes, as ``--target`` would make it (rknn runs LLaMA's
    rotary embedding right only with its tables computed ahead and then put first in their
    products)."""
    if not isinstance(profile, RuntimeProfile):
        return {}
    taken = {choice.name for choice in model_forms_taken(profile.model_forms)}
    trials: dict[str, tuple[onnx.ModelProto | str, onnx.ModelProto | str]] = {}
    for choice in MODEL_FORM_CHOICES:
        others = taken - {choice.name}
        without = _made_for(model, profile.taking_forms(others), shapes)
        made = _made_for(model, profile.taking_forms(others | {choice.name}), shapes)
        if isinstance(made, str):  # (refused with the form: a trial where the form applies without it)
            if isinstance(without, str):
                continue
            changed = onnx.ModelProto()
            changed.CopyFrom(without.model)
            if apply_model_forms(changed, (choice,), schemas.default_opset(changed.opset_import)):
                trials[choice.name] = (without.model, made)
        elif choice.said in made.report.forms:
            trials[choice.name] = (without if isinstance(without, str) else without.model, made.model)
    return trials


def _made_for(model: onnx.ModelProto, profile, shapes):
    """The lowering result of ``model`` made for ``profile``, or why onnx-lower refused it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lowering.lower_model(model, target=profile, input_shapes=shapes)
    except lowering.LoweringError as error:
        return refusal_words(error)


def refusal_words(error: lowering.LoweringError, limit: int = 300) -> str:
    """onnx-lower's refusal on one line, at most ``limit`` characters, as the sweep keeps it."""
    return " ".join(str(error).split())[:limit]


def parameters_fed(model: onnx.ModelProto) -> list[str]:
    """The graph inputs a main-graph node reads as a parameter (:func:`schemas.sets_parameters`,
    at the node's domain's opset), in the graph's order. A runtime that needs such a value
    constant ("expected axes as a constant") cannot run the model fed it, whatever onnx-lower
    writes."""
    opsets = {schemas.canonical_domain(entry.domain): entry.version for entry in model.opset_import}
    fed = {info.name for info in model.graph.input} - {tensor.name for tensor in model.graph.initializer}
    found = set()
    for node in model.graph.node:
        domain = schemas.canonical_domain(node.domain)
        schema = schemas.schema_in_force(node.op_type, opsets[domain], node.domain) if domain in opsets else None
        if schema is None or not schema.inputs:
            continue
        for position, name in enumerate(node.input):
            if name in fed and schemas.sets_parameters(schema, position):
                found.add(name)
    return [info.name for info in model.graph.input if info.name in found]


def with_constants(model: onnx.ModelProto, values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """``model`` with each graph input of ``values`` an initializer holding its value instead,
    no longer a graph input (IR 4 on: ``ir_versions.unlisted_initializers_ir``)."""
    made = onnx.ModelProto()
    made.CopyFrom(model)
    kept = [info for info in made.graph.input if info.name not in values]
    del made.graph.input[:]
    made.graph.input.extend(kept)
    made.graph.initializer.extend(numpy_helper.from_array(np.asarray(value), name) for name, value in values.items())
    made.ir_version = max(made.ir_version, unlisted_initializers_ir())
    return made


def blockers_named(error: lowering.LoweringError) -> list[str]:
    """The ops and versions a refusal names as blockers, once each in its order ("ReduceMax-18";
    the op alone where no version is known; "(input)" for a graph input the runtime takes none
    of, as ``check`` names it); none where the refusal names no blocker."""
    named = []
    for blocker in getattr(error, "blockers", []):
        said = blocker.op_type if blocker.version is None else f"{blocker.op_type}-{blocker.version}"
        if said not in named:
            named.append(said)
    return named


def float16_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """The model's outputs as onnxruntime computes it in float16 (its float32 tensors and ops
    made float16, its inputs and outputs kept float32), computed in a child process; None where
    that model does not run, or onnxruntime crashes on it (its CPU provider dies on the float16
    LSTM of a TorchScript export)."""
    context = multiprocessing.get_context("spawn")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_send_float16_outputs, args=(model.SerializeToString(), feeds, sending))
    child.start()
    sending.close()
    try:
        outputs = receiving.recv()
    except EOFError:  # (the child died before it sent anything)
        outputs = None
    child.join()
    return outputs if child.exitcode == 0 else None


def _send_float16_outputs(model_bytes: bytes, feeds: dict[str, np.ndarray], sending) -> None:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            halved = convert_float_to_float16(onnx.load_from_string(model_bytes), keep_io_types=True)
        outputs = run_onnxruntime(halved, feeds)
    except Exception:  # (a model the conversion leaves invalid: no reference, judged as before)
        outputs = None
    sending.send(outputs)
    sending.close()


def commit(name: str) -> str:
    """The onnx-lower commit the models for target ``name`` are made with (this checkout's; "+"
    where it holds changes not committed that bear on them: any but other targets' profiles,
    which sweeps write, and docs; files not yet added count)."""
    run = functools.partial(subprocess.run, cwd=HERE.parent, capture_output=True, text=True)
    head = run(["git", "rev-parse", "--short=12", "HEAD"]).stdout.strip() or "unknown"
    status = run(["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"]).stdout
    return head + ("+" if changes_bearing_on(name, status) else "")


def changes_bearing_on(name: str, status: str) -> list[str]:
    """The paths of ``git status --porcelain=v1 -z`` output (``XY PATH``, NUL-separated; a
    rename or copy followed by its source path) that bear on target ``name``'s models."""
    own = f"lowering/target_profiles/{name}.json"
    paths, fields = [], iter(status.split("\0"))
    for field in fields:
        if len(field) < 4:
            continue
        paths.append(field[3:])
        if field[0] in "RC":
            paths.append(next(fields, ""))
    return [path for path in paths if path == own or not path.startswith(("lowering/target_profiles/", "docs/"))]


def dynamic(model: onnx.ModelProto) -> bool:
    """Whether an input's shape has a dimension that is not a number."""
    return any(not d.HasField("dim_value") for info in model.graph.input for d in info.type.tensor_type.shape.dim)


def _plain(value) -> bool:
    """An array of numbers or bools of one of numpy's own element types."""
    return isinstance(value, np.ndarray) and value.dtype.type.__module__ == "numpy" and value.dtype.kind in "biufc"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--cases-only", action="store_true")
    parser.add_argument("--corpus-only", action="store_true")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="make only the models whose names start so")
    args = parser.parse_args()
    made_by = commit(args.name)  # (as the code is when it is imported: before anything is made)
    items = []
    if not args.cases_only:
        items += list(corpus_items())
    corpus_names = {item[0] for item in items}
    if not args.corpus_only:
        items += list(case_items())
    if args.only:
        items = [item for item in items if item[0].startswith(tuple(args.only))]
    index = []
    for name, model, feeds, expected, rtol, atol in items:
        folder = args.folder / name
        if folder.exists():  # (nothing of an earlier sweep is read as this one's)
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        onnx.save(model, folder / "exported.onnx")
        np.savez(folder / "inputs.npz", **feeds)
        if any(not isinstance(value, np.ndarray) for value in expected):
            continue
        np.savez(folder / "expected.npz", *[np.asarray(value) for value in expected])
        entry = {"name": name, "rtol": rtol, "atol": atol}
        # (the inputs' shapes stated, as one deploying to a runtime of static shapes states them)
        shapes = {key: list(value.shape) for key, value in feeds.items()} if dynamic(model) else None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = lowering.lower_model(model, target=args.name, input_shapes=shapes)
            onnx.save(result.model, folder / "target.onnx")
            if result.report.partly:  # (nodes left that the runtime computes wrong on some probed values)
                entry["partly"] = sorted(result.report.partly)
        except lowering.LoweringError as error:
            entry["refused"] = refusal_words(error)
            entry["blockers"] = blockers_named(error)
        parameters = parameters_fed(model) if name not in corpus_names else []
        if parameters:  # (the case made for the target with those inputs given as constants)
            constant = with_constants(model, {key: feeds[key] for key in parameters})
            stated = {key: shape for key, shape in (shapes or {}).items() if key not in parameters}
            made = _made_for(constant, load_profile(args.name), stated if dynamic(constant) else None)
            if isinstance(made, str):
                (folder / f"{CONSTANT_PARAMETERS}{REFUSED}").write_text(made)
            else:
                onnx.save(made.model, folder / f"{CONSTANT_PARAMETERS}.onnx")
            entry["constant_parameters"] = parameters
        if name not in corpus_names:  # (a corpus export's expected outputs are onnxruntime's)
            computed = onnxruntime_outputs(model, feeds)
            if computed is not None:
                np.savez(folder / "onnxruntime.npz", *computed)
        if name in corpus_names:
            halved = float16_outputs(model, feeds)
            if halved is not None:
                np.savez(folder / "float16.npz", *[np.asarray(value) for value in halved])
        if name in corpus_names:  # (refused as made for the target too: a form the profile takes may be why)
            for choice_name, sides in trial_models(model, load_profile(args.name), shapes).items():
                place = folder / "trials" / "-".join(choice_name.split())
                place.mkdir(parents=True, exist_ok=True)
                for side, made in zip(("without", "with"), sides, strict=True):
                    if isinstance(made, str):  # (onnx-lower refused to make that side)
                        (place / f"{side}{REFUSED}").write_text(made)
                    else:
                        onnx.save(made, place / f"{side}.onnx")
                entry.setdefault("trials", {})[choice_name] = str(place.relative_to(folder))
        index.append(entry)
        print(name, "refused" if "refused" in entry else "lowered", flush=True)
    made = {"target": args.name, "onnx_lower": made_by, "items": index, **({"only": args.only} if args.only else {})}
    (args.folder / "index.json").write_text(json.dumps(made, indent=1))


if __name__ == "__main__":
    main()
