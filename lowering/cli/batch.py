"""Many models at once: ``onnx-lower a.onnx b.onnx -o OUTDIR/ -j N``. Each model is lowered on
its own (in a pool of N processes), one line per model in the order given, then a summary; a
model that fails writes nothing and stops no other; the exit status is the highest of any."""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from ..errors import LoweringError
from .lower import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, LowerOptions, Outcome, counts_line, lower_file, most_severe


def plan_outputs(models: list[str], folder: Path | None, options: LowerOptions) -> list[str | None]:
    """Where each model goes: ``FOLDER/NAME``, the model itself (``--in-place``), or nowhere (a
    dry run without ``-o``); two models bound for one file are refused before anything runs."""
    if folder is None and not options.in_place and not options.dry_run:
        raise LoweringError("no output given for several models: add -o FOLDER/ (or --in-place, or --dry-run)")
    if folder is not None and folder.exists() and not folder.is_dir():
        raise LoweringError(f"-o {folder}: is not a folder")
    outputs: list[str | None] = []
    for model in models:
        if options.in_place:
            outputs.append(model)
        elif folder is not None:
            outputs.append(os.path.join(folder, Path(model).name))
        else:
            outputs.append(None)
    inputs = {os.path.realpath(model): model for model in models}
    claimed: dict[str, str] = {}
    for model, output in zip(models, outputs, strict=True):
        key = os.path.realpath(output if output is not None else model)
        if key in claimed:
            if os.path.realpath(claimed[key]) == os.path.realpath(model):
                raise LoweringError(f"{model}: given twice; give each model once")
            raise LoweringError(
                f"{claimed[key]} and {model} would both be written to {output}; lower them into different folders"
            )
        if output is not None and key in inputs and not options.in_place:
            raise LoweringError(
                f"{model}: its output {output} would overwrite the input model {inputs[key]}; choose another "
                "folder, or add --in-place"
            )
        claimed[key] = model
    return outputs


def run_batch(
    models: list[str], folder: Path | None, options: LowerOptions, *, jobs: int, as_json: bool, quiet: bool
) -> int:
    outputs = plan_outputs(models, folder, options)
    options = LowerOptions(**{**options.__dict__, "progress": False})
    workers = min(jobs or os.cpu_count() or 1, len(models))
    records: list[dict] = []
    status = EXIT_OK
    written = failed = 0
    try:
        for outcome in _outcomes(models, outputs, options, workers):
            records.append(outcome.record)
            status = most_severe(status, outcome.exit_code)
            if outcome.ok:
                written += 0 if options.dry_run else 1
                if not quiet and not as_json:
                    arrow = f" → {outcome.output}" if outcome.output and not options.dry_run else ""
                    elapsed = outcome.record["elapsed_s"]
                    print(f"{outcome.model}{arrow}: {counts_line(outcome.record)} ({elapsed:.2f} s)", flush=True)
            else:
                failed += 1
                print(f"onnx-lower: {_naming(outcome)}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print(f"onnx-lower: interrupted after {len(records)} of {len(models)} models; the rest were not written",
              file=sys.stderr)  # fmt: skip
        return EXIT_INTERRUPTED
    done = "checked" if options.dry_run else "written"
    summary = {"models": len(models), done: len(models) - failed, "failed": failed, "exit_code": status}
    if as_json:
        print(json.dumps({"models": records, "summary": summary}, indent=2))
    elif not quiet:
        print(f"{len(models)} model{'s' if len(models) != 1 else ''}: {len(models) - failed} {done}, {failed} failed")
    return status


def _naming(outcome: Outcome) -> str:
    """The outcome's problem, with the model's name in front where the message lacks it."""
    problem = outcome.problem or ""
    return problem if outcome.model in problem else f"{outcome.model}: {problem}"


def _outcomes(models, outputs, options: LowerOptions, workers: int):
    """Each model's outcome, in the order given: in this process, or in ``workers`` processes."""
    if workers <= 1:
        for model, output in zip(models, outputs, strict=True):
            yield lower_file(model, output, options)
        return
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # no fork of a process holding onnxruntime's threads
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        jobs = zip(models, outputs, strict=True)
        futures = [pool.submit(lower_file, model, output, options) for model, output in jobs]
        try:
            for model, output, future in zip(models, outputs, futures, strict=True):
                try:
                    yield future.result()
                except BrokenProcessPool:
                    yield _alone(model, output, options)
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def _alone(model: str, output: str | None, options: LowerOptions) -> Outcome:
    """A model whose pool broke (a worker died: this model's or another's), run again in a
    process of its own, so that only the model that kills its process fails."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            return pool.submit(lower_file, model, output, options).result()
    except BrokenProcessPool:
        outcome = Outcome(model, output, EXIT_INTERNAL)
        outcome.problem = "internal error: the process lowering it died (please report it with the model)"
        outcome.record.update(model=model, output=output, written=False, exit_code=EXIT_INTERNAL,
                              error={"kind": "internal", "message": outcome.problem})  # fmt: skip
        return outcome
