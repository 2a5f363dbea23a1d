"""Lowering one model file for the command line: read, lower, verify, write (or, on a dry run,
not), and the outcome as text lines and as a JSON record; used alone and by the batch."""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import schemas
from ..api import lower_model
from ..errors import ConversionRefused, IncompleteLowering, LoweringError
from ..modelio import ModelFile, external_file, external_tensors, same_file, with_external_data
from ..opcount import count_ops
from ..progress import Progress
from .files import file_format, human_size, prepared, read_model, stored_size, write_model

EXIT_OK = 0
EXIT_FAILED = 1  # a requested op left (--strict), or the lowered model differs (--verify)
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_REFUSED = 4  # the model cannot go to the target opset: every node that cannot is listed
EXIT_INTERRUPTED = 130
# Several models: the status of the batch is its most severe, least first.
SEVERITY = (EXIT_OK, EXIT_FAILED, EXIT_REFUSED, EXIT_BAD_INPUT, EXIT_INTERNAL)


def most_severe(first: int, second: int) -> int:
    """The more severe of two exit statuses (:data:`SEVERITY`)."""
    return max(first, second, key=lambda status: SEVERITY.index(status) if status in SEVERITY else len(SEVERITY))


@dataclass(frozen=True)
class LowerOptions:
    """What to do with each model: the options of ``onnx-lower MODEL ...``."""

    ops: tuple[str, ...] | None = None
    target_opset: int | None = None
    target: str | None = None  # --target: a runtime's profile name
    input_shapes: tuple[tuple[str, list[int] | int], ...] = ()  # --input-shape, in the order given
    fold: str | None = None  # --fold (emitted, all, inner, none), else the API's default
    retype: str | None = None  # --retype FROM=TO,...
    retype_io: bool = False  # --retype-io: the model's inputs and outputs retyped too
    strict: bool = False
    verify: bool = False
    plain: bool = False
    dry_run: bool = False
    in_place: bool = False
    custom_op_libraries: tuple[str, ...] = ()
    atol: float | dict[str, float] | None = None  # --verify's tolerances (None: bit for bit)
    rtol: float | dict[str, float] | None = None
    progress: bool = False  # draw a progress line on stderr (one model, on a terminal)
    locations: bool = False  # list where each replaced node was in the JSON record (--json)


@dataclass
class Outcome:
    """What lowering one model gave: the exit status, the lines for stdout, the one line for
    stderr where it failed (after ``onnx-lower: ``), and the JSON record."""

    model: str
    output: str | None
    exit_code: int = EXIT_OK
    lines: list[str] = field(default_factory=list)
    problem: str | None = None
    record: dict = field(default_factory=dict)
    verify_lines: list[str] = field(default_factory=list)  # shown even with --quiet on a mismatch

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK


def lower_file(model_path: str, output_path: str | None, options: LowerOptions) -> Outcome:
    """Lower one model file; every failure becomes the outcome's exit status and problem, with
    nothing written and the input untouched."""
    started = time.perf_counter()
    outcome = Outcome(model_path, output_path)
    record = outcome.record
    record.update(model=model_path, output=output_path, dry_run=options.dry_run, written=False, exit_code=0)
    try:
        _lower(model_path, output_path, options, outcome)
    except IncompleteLowering as error:
        record["remaining"] = [entry.as_dict() for entry in error.remaining]
        _fail(outcome, EXIT_FAILED, f"{error}; {_nothing_written(output_path, options)}", "incomplete")
    except ConversionRefused as error:
        record["remaining"] = [entry.as_dict() for entry in error.blockers]
        count, where = len(error.blockers), error.where
        listed = "".join(f"\n  {entry}" for entry in error.blockers)
        written = _nothing_written(output_path, options)
        problem = f"{count} node{'s' * (count != 1)} cannot go to {where} ({written}):{listed}"
        _fail(outcome, EXIT_REFUSED, problem, "refused")
    except LoweringError as error:
        _fail(outcome, EXIT_BAD_INPUT, f"error: {error}", "bad input")
    except KeyboardInterrupt:
        raise
    except Exception as error:  # one line, never a traceback
        text = str(error).splitlines()[0] if str(error) else ""
        problem = f"internal error: {type(error).__name__}: {text} (please report it with the model)"
        _fail(outcome, EXIT_INTERNAL, problem, "internal")
    record["elapsed_s"] = round(time.perf_counter() - started, 4)
    if outcome.ok:
        outcome.lines.append(_final_line(outcome, options, record["elapsed_s"]))
    return outcome


def _fail(outcome: Outcome, code: int, problem: str, kind: str) -> None:
    outcome.exit_code, outcome.problem = code, problem
    message = problem.removeprefix("error: ")
    outcome.record.update(exit_code=code, written=False, error={"kind": kind, "message": message})


def _nothing_written(output_path: str | None, options: LowerOptions) -> str:
    return "nothing was written" if output_path and not options.dry_run else "nothing would be written"


def _final_line(outcome: Outcome, options: LowerOptions, elapsed: float) -> str:
    if options.dry_run:
        where = f" to {outcome.output}" if outcome.output else ""
        return f"dry run: nothing written{where} ({elapsed:.2f} s)"
    return f"wrote {outcome.output} ({elapsed:.2f} s)"


def _refuse_a_file_as_folder(output_path: str) -> None:
    """Refuse, before any work, an output whose folder is a file (``-o model.onnx/out.onnx``):
    the nearest existing folder above it must be a folder (missing ones are made on writing)."""
    folder = Path(output_path).absolute().parent
    for above in [folder, *folder.parents]:
        if above.exists() or above.is_symlink():
            if not above.is_dir():
                raise LoweringError(f"{output_path}: {above} is not a folder")
            return


def _refuse_writing_over_input_data(model_file: ModelFile, model_path: str, output_path: str) -> None:
    """Refuse an output that is a file the input keeps its weights in (external data): writing
    the model there would destroy the input's weights."""
    if not model_file.has_external_data:
        return
    for tensor in external_tensors(model_file.model, model_file.data):
        data_file, _, _ = external_file(tensor, model_file.folder, Path(model_path))
        if same_file(data_file, output_path):
            raise LoweringError(
                f"{output_path}: the output would overwrite the file the input keeps its weights in "
                f"(tensor '{tensor.name}'); choose another output"
            )


def _lower(model_path: str, output_path: str | None, options: LowerOptions, outcome: Outcome) -> None:
    record = outcome.record
    if output_path is not None and not options.in_place and same_file(model_path, output_path):
        raise LoweringError(
            f"{output_path}: the output would overwrite the input model; choose another path or add --in-place"
        )
    if output_path is not None and not options.dry_run:
        _refuse_a_file_as_folder(output_path)
    model_file = read_model(model_path)
    model = model_file.model
    if output_path is not None:
        _refuse_writing_over_input_data(model_file, model_path, output_path)
    counts_before = count_ops(model)
    size_before = stored_size(model_file, model_path)
    record.update(opset={"before": schemas.default_opset(model.opset_import)}, size_bytes={"before": size_before})
    record["ops"] = {"before": dict(sorted(counts_before.items()))}
    before = _main_graph_nodes(model) if options.locations else None
    progress = Progress(sum(counts_before.values())) if options.progress and sys.stderr.isatty() else None
    try:
        result = lower_model(
            model,
            ops=list(options.ops) if options.ops is not None else None,
            target_opset=options.target_opset,
            **({"target": options.target} if options.target else {}),
            input_shapes=dict(options.input_shapes) or None,
            fold=options.fold,
            retype=options.retype,
            retype_io=options.retype_io,
            external_folder=model_file.folder if model_file.has_external_data else None,
            progress=progress,
            fast=False if options.plain else None,
            strict=options.strict,
            serialized=model_file.data,
        )
        model_file.data = None  # read by the pass alone: not kept through the verification and the write
    finally:
        if progress is not None:
            progress.close()
    counts_after = count_ops(result.model)
    record["opset"]["after"] = schemas.default_opset(result.model.opset_import)
    record["ops"]["after"] = dict(sorted(counts_after.items()))
    report = result.report.as_dict()
    record.update(lowered=report["rewritten"], converted=report["converted"], kept=report["kept"])
    record["folded"] = report["folded"]
    if "retyped" in report:
        record["retyped"] = report["retyped"]
    record["remaining"] = report["remaining"]
    if before is not None:
        record["replaced"] = replaced_nodes(before, result.model)
    fmt = file_format(output_path) if output_path else "protobuf"
    size_after, text = prepared(result.model, fmt, model_file)
    record["size_bytes"]["after"] = size_after
    outcome.lines += summary_table(counts_before, counts_after, size_before, size_after)
    outcome.lines += result.report.lines()
    if options.verify:
        _verify(model_path, output_path, model_file, result.model, options, outcome, result.report)
        if not outcome.ok:
            return
    if output_path is not None and not options.dry_run:
        write_model(result.model, output_path, model_file, in_place=options.in_place, input_path=model_path, data=text)
        record["written"] = True


def _static_input_shapes(model) -> dict[str, list[int]]:
    """The sizes of each input the model declares static (verify feeds both models those)."""
    shapes = {}
    for info in model.graph.input:
        if info.type.WhichOneof("value") == "tensor_type" and info.type.tensor_type.HasField("shape"):
            dims = info.type.tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims):
                shapes[info.name] = [d.dim_value for d in dims]
    return shapes


def _main_graph_nodes(model) -> list[tuple[str, tuple[str, ...], str]]:
    return [(node.op_type, tuple(node.output), node.name) for node in model.graph.node]


def replaced_nodes(before: list[tuple[str, tuple[str, ...], str]], lowered) -> list[dict]:
    """Where the main graph's nodes were replaced (lowered, converted by an adapter, expanded):
    each node of the original whose op and outputs no node of the result has, as its op, its
    name (``#index`` where it has none) and the graph. Nodes kept as they are (re-versioned
    included) are not listed; nodes inside subgraphs and local functions are counted only."""
    kept = {(node.op_type, tuple(node.output)) for node in lowered.graph.node}
    graph = lowered.graph.name
    return [
        {"op_type": op_type, "node": name or f"#{index}", "graph": graph}
        for index, (op_type, outputs, name) in enumerate(before)
        if (op_type, outputs) not in kept
    ]


def _verify(
    model_path, output_path, model_file, lowered, options: LowerOptions, outcome: Outcome, lowering_report=None
) -> None:
    """Run original and lowered on edge-value inputs; on a mismatch the outcome fails (exit 1)
    and the inputs are saved beside the output (or in a temporary folder), the path said."""
    from ..verification import check_tolerances, verify

    saved = inputs_path(output_path if not options.dry_run else None, model_path)
    original = model_file.model
    outputs = [output.name for output in original.graph.output]
    check_tolerances(options.atol, outputs, "--atol")
    check_tolerances(options.rtol, outputs, "--rtol")
    if model_file.has_external_data:  # onnxruntime needs the weights to run either model
        original, lowered = with_external_data(model_file), with_external_data(model_file, lowered)
    try:
        report = verify(
            original,
            lowered,
            atol=options.atol,
            rtol=options.rtol,
            save_inputs=saved,
            custom_op_libraries=options.custom_op_libraries,
            shapes=_static_input_shapes(lowered) if options.input_shapes else None,
            narrowed_inputs=lowering_report.retyping.rounded_inputs
            if lowering_report is not None and lowering_report.retyping is not None
            else None,
            retyped_io=options.retype_io,
        )
    except LoweringError as error:
        verify_only = [o for o in ("--shape", "--samples", "--inputs", "--value-range") if o in str(error)]
        hint = (
            f" ({', '.join(verify_only)}: options of onnx-lower verify; write the model without --verify, then run "
            f"onnx-lower verify {model_path} OUTPUT with them)"
            if verify_only
            else ""
        )
        raise LoweringError(f"--verify: {error}{hint}; {_nothing_written(output_path, options)}") from None
    if report.inputs_error and saved.parent != _temporary_folder():  # beside the output could not be written
        fallback = _temporary_folder() / saved.name
        from ..verification import save_feeds

        try:
            save_feeds(fallback, report.feeds)
            report.inputs_file, report.inputs_error = str(fallback), None
        except LoweringError:
            pass
    outcome.record["verify"] = report.as_dict()
    outcome.lines += report.lines()
    if not report.match:
        outcome.verify_lines = report.lines()
    if report.match:
        return
    if report.inputs_file:
        shown = output_path if output_path and not options.dry_run else "LOWERED.onnx"
        kept = (  # (the lowered model is not written: it is to be written without --verify first)
            f"inputs saved to {report.inputs_file}; to replay them, write the lowered model without --verify, "
            f"then run: onnx-lower verify {model_path} {shown} --inputs {report.inputs_file}"
        )
    else:
        kept = f"the inputs were not saved: {report.inputs_error}"
    where = f"{output_path} was not written" if output_path and not options.dry_run else "nothing written"
    outcome.exit_code = EXIT_FAILED
    outcome.problem = (
        f"the lowered model differs from the original; {where}. {kept}{_tolerance_hint(lowering_report, options)}"
    )
    outcome.record.update(exit_code=EXIT_FAILED, error={"kind": "mismatch", "message": outcome.problem})


def _tolerance_hint(report, options: LowerOptions) -> str:
    """Where no tolerance was given and the lowering used patterns that state one (function
    bodies, rules that sum in another order), a sentence saying so."""
    if report is None or options.atol is not None or options.rtol is not None:
        return ""
    if report.retyping is not None and report.retyping.inexact:
        return " (--retype rounds floats to a narrower type, which is not exact: compare with --rtol/--atol)"
    from ..registry import rule_for

    stating = sorted(
        {key.split("-")[0] for key in report.rewritten if key.endswith("by its function body")}
        | {
            key.split("-")[0]
            for key in report.rewritten
            if (rule := rule_for("", key.split("-")[0])) and rule.tolerance
        }
    )
    if not stating:
        return ""
    return (
        f" ({', '.join(stating)} lowered by patterns that compute otherwise than a fused kernel, within the "
        "tolerances they state: compare with --rtol/--atol; --list-rules -v shows them)"
    )


_TEMPORARY: list[Path] = []


def _temporary_folder() -> Path:
    """One folder per process for files of a run that has no output to sit beside."""
    if not _TEMPORARY:
        _TEMPORARY.append(Path(tempfile.mkdtemp(prefix="onnx-lower-")))
    return _TEMPORARY[0]


def inputs_path(beside: str | None, model_path: str) -> Path:
    """Where the inputs of a mismatch go: ``OUTPUT.inputs.npz`` beside the output, or in a
    temporary folder where there is no output (a dry run)."""
    if beside:
        path = Path(beside)
        return path.with_name(f"{path.name}.inputs.npz")
    return _temporary_folder() / f"{Path(model_path).name}.inputs.npz"


def summary_table(before, after, size_before: int, size_after: int) -> list[str]:
    """Op counts before and after, the total and the model's size, as onnxsim prints them."""
    op_types = sorted(set(before) | set(after))
    rows = [(op, str(before[op]), str(after[op])) for op in op_types]
    rows.append(("Total", str(sum(before.values())), str(sum(after.values()))))
    rows.append(("Model size", human_size(size_before), human_size(size_after)))
    width = max(len(row[0]) for row in [("Op", "", ""), *rows])
    number = max(len("Original"), *(max(len(row[1]), len(row[2])) for row in rows))
    lines = [f"{'Op':<{width}}  {'Original':>{number}}  {'Lowered':>{number}}"]
    lines += [f"{name:<{width}}  {a:>{number}}  {b:>{number}}" for name, a, b in rows]
    return lines


def counts_line(record: dict) -> str:
    """``lowered 3, converted 2, kept 0, left 1; 1.2 KiB → 1.9 KiB`` for one model of a batch."""
    parts = [
        f"lowered {sum(record.get('lowered', {}).values())}",
        f"converted {sum(record.get('converted', {}).values())}",
        f"left {len(record.get('remaining', []))}",
    ]
    sizes = record.get("size_bytes", {})
    size = f"; {human_size(sizes['before'])} → {human_size(sizes['after'])}" if "after" in sizes else ""
    return ", ".join(parts) + size
