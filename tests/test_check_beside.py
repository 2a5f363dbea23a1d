"""onnx's checker on the input, run in a child process beside the pass (lowering.fast.beside),
decides as the plain path's check run first does: the same refusals with the same message,
the input's fault before the pass's own, and no child left behind."""

from __future__ import annotations

import os
import threading

import onnx
import pytest
from onnx import helper

import lowering
import lowering.fast.beside as beside
from lowering import LoweringError
from lowering.engine import Legalizer
from lowering.fast import Shortcuts

F32 = onnx.TensorProto.FLOAT
BESIDE, FIRST = Shortcuts(), Shortcuts(check_beside=False)


@pytest.fixture(autouse=True)
def fork_for_every_model(monkeypatch):
    """The models here are small: a child is forked for them all the same."""
    monkeypatch.setattr(beside, "FROM_NODES", 0)


@pytest.fixture
def started(monkeypatch) -> list:
    """Every check started beside the pass, as :func:`beside.start` returned it."""
    children: list[beside.CheckBeside | None] = []
    original_start = beside.start

    def recording_start(data: bytes, nodes: int, then=None, **options):
        children.append(original_start(data, nodes, then, **options))
        return children[-1]

    monkeypatch.setattr(beside, "start", recording_start)
    return children


def chain(*nodes: onnx.NodeProto, opset: int = 18, outputs=("y",)) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        "g",
        [helper.make_tensor_value_info("x", F32, [2])],
        [helper.make_tensor_value_info(name, F32, [2]) for name in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def valid() -> onnx.ModelProto:
    return chain(helper.make_node("IsNaN", ["x"], ["m"]), helper.make_node("Cast", ["m"], ["y"], to=F32))


def not_sorted() -> onnx.ModelProto:
    return chain(helper.make_node("Relu", ["t"], ["y"]), helper.make_node("IsNaN", ["x"], ["t"]))


def not_ssa() -> onnx.ModelProto:
    return chain(helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Abs", ["x"], ["y"]))


def unknown_op() -> onnx.ModelProto:
    return chain(helper.make_node("NoSuchOp", ["x"], ["y"]))


def bad_attribute() -> onnx.ModelProto:
    return chain(helper.make_node("Softmax", ["x"], ["y"], axis=1, no_such_attribute=2))


def undefined_input_of_a_lowered_op() -> onnx.ModelProto:
    """The pass itself cannot lower this IsNaN (its input has no type anywhere)."""
    return chain(helper.make_node("IsNaN", ["nowhere"], ["m"]), helper.make_node("Cast", ["m"], ["y"], to=F32))


def refusal(model: onnx.ModelProto, shortcuts: Shortcuts, **options) -> str:
    with pytest.raises(LoweringError) as raised:
        lowering.lower(model, fast=shortcuts, **options)
    return str(raised.value)


@pytest.mark.parametrize("make", [not_sorted, not_ssa, unknown_op, bad_attribute, undefined_input_of_a_lowered_op])
@pytest.mark.parametrize("options", [{}, {"target_opset": 11}, {"target_opset": 999}])
def test_an_invalid_input_is_refused_alike_beside_and_first(make, options):
    """The same refusal, word for word, whether the checker ran first or beside the pass,
    and also where the pass (or the target's own check) would have stopped first."""
    beside_message = refusal(make(), BESIDE, **options)
    assert beside_message.startswith("the model is not valid ONNX: ")
    assert beside_message == refusal(make(), FIRST, **options)
    assert beside_message == refusal(make(), False, **options)


def test_a_valid_input_gives_the_same_bytes_beside_and_first():
    for options in ({}, {"target_opset": 11}):
        assert (
            lowering.lower(valid(), fast=BESIDE, **options).SerializeToString()
            == lowering.lower(valid(), fast=FIRST, **options).SerializeToString()
        )


def test_the_check_runs_in_a_child_and_its_verdict_is_awaited(started):
    lowering.lower(valid(), fast=BESIDE, target_opset=13)
    assert len(started) == 1 and started[0] is not None
    assert started[0].reaped and started[0].verdict() is None  # the child said "valid", and was waited for
    with pytest.raises(ChildProcessError):
        os.waitpid(started[0].pid, 0)  # reaped already


def bfloat16_value() -> onnx.ModelProto:
    """Valid ONNX holding a bfloat16 value: opsets below 13 lack the type."""
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["x"], ["b"], to=onnx.TensorProto.BFLOAT16),
            helper.make_node("Cast", ["b"], ["y"], to=F32),
        ],
        "g",
        [helper.make_tensor_value_info("x", F32, [2])],
        [helper.make_tensor_value_info("y", F32, [2])],
        value_info=[helper.make_tensor_value_info("b", onnx.TensorProto.BFLOAT16, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("make", [bfloat16_value, not_sorted])
@pytest.mark.parametrize("target_opset", [11, 999])
def test_the_target_opsets_own_check_follows_the_checker_in_the_child(make, target_opset, started):
    """A type the target lacks (and a target that does not exist) is refused as the plain path
    refuses it, after the checker's own refusal, whether the child or this process said it."""
    message = refusal(make(), BESIDE, target_opset=target_opset)
    assert started and started[0] is not None and started[0].reaped
    assert (
        message
        == refusal(make(), FIRST, target_opset=target_opset)
        == refusal(make(), False, target_opset=target_opset)
    )
    if make is bfloat16_value and target_opset == 11:
        assert "value 'b' has type bfloat16, which opset 11 does not have" in message
        assert started[0].verdict() is None and started[0].then_refusal() == message


def test_the_target_opsets_check_runs_here_where_the_child_cannot_tell(monkeypatch):
    """A child that dies without a verdict: both checks run in this process."""
    monkeypatch.setattr(onnx.checker, "check_model", _raising_other(onnx.checker.check_model))
    running = beside.start(bfloat16_value().SerializeToString(), 1, lambda: "refused by the follow-up")
    assert running is not None
    monkeypatch.undo()
    assert running.verdict() is None and running.then_refusal() == "refused by the follow-up"


def test_where_the_child_cannot_tell_the_checker_runs_here_once(monkeypatch):
    """The verdict and the follow-up's refusal both asked for (as settling does): onnx's checker
    runs once in this process, not again for the follow-up."""
    monkeypatch.setattr(onnx.checker, "check_model", _raising_other(onnx.checker.check_model))
    running = beside.start(bfloat16_value().SerializeToString(), 1, lambda: None)
    assert running is not None
    monkeypatch.undo()
    checks: list[bytes] = []
    original_check_here = beside.check_here

    def counted(data: bytes):
        checks.append(data)
        return original_check_here(data)

    monkeypatch.setattr(beside, "check_here", counted)
    assert running.verdict() is None and running.then_refusal() is None and running.verdict() is None
    assert len(checks) == 1


def _raising_other(check):
    def check_model(data, *args, **kwargs):
        raise RuntimeError("not a ValidationError")

    return check_model


def test_no_child_is_forked_for_a_small_model(monkeypatch):
    monkeypatch.setattr(beside, "FROM_NODES", 10_000)
    assert beside.start(valid().SerializeToString(), len(valid().graph.node)) is None
    running = beside.start(valid().SerializeToString(), 10_000)
    assert running is not None and running.verdict() is None


def test_no_child_is_forked_while_another_thread_runs():
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        assert beside.start(valid().SerializeToString()) is None
        assert refusal(not_sorted(), BESIDE) == refusal(not_sorted(), FIRST)  # checked here instead
    finally:
        release.set()
        worker.join()


def test_an_interrupted_pass_stops_the_child(monkeypatch):
    started: list[beside.CheckBeside] = []
    original_start = beside.start

    def recording_start(data: bytes, nodes: int, then=None, **options):
        started.append(original_start(data, nodes, then, **options))
        return started[-1]

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(beside, "start", recording_start)
    monkeypatch.setattr(Legalizer, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        lowering.lower(valid(), fast=BESIDE)
    assert started and started[0].reaped  # stopped and reaped


def test_a_checker_that_fails_otherwise_fails_alike(monkeypatch):
    """Where the checker raises something else than a refusal, the child says nothing and the
    parent runs the check itself: the same exception as the plain path's."""

    def broken(*args, **kwargs):
        raise RuntimeError("the checker broke")

    monkeypatch.setattr(onnx.checker, "check_model", broken)
    for shortcuts in (BESIDE, FIRST, False):
        with pytest.raises(RuntimeError, match="the checker broke"):
            lowering.lower(valid(), fast=shortcuts)


def test_with_sigchld_ignored_the_verdict_still_comes():
    """A host that ignores SIGCHLD reaps the child itself: waitpid finds none, the pipe told all."""
    import signal

    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert lowering.lower(valid(), fast=BESIDE, target_opset=13).SerializeToString() == (
            lowering.lower(valid(), fast=FIRST, target_opset=13).SerializeToString()
        )
        assert refusal(not_sorted(), BESIDE) == refusal(not_sorted(), FIRST)
    finally:
        signal.signal(signal.SIGCHLD, previous)


@pytest.mark.parametrize("failing", ["fork", "pipe"])
def test_where_no_child_can_be_made_the_check_runs_here(monkeypatch, failing):
    def no_resources(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(os, failing, no_resources)
    assert beside.start(valid().SerializeToString(), 10**6) is None
    assert refusal(not_sorted(), BESIDE) == refusal(not_sorted(), FIRST)
    lowering.lower(valid(), fast=BESIDE, target_opset=13)


def test_a_child_that_never_answers_is_killed_and_the_check_runs_here(monkeypatch):
    """A child stuck (a lock a native thread held at the fork) is given up on after the patience."""
    import time

    parent, checking = os.getpid(), onnx.checker.check_model

    def stuck_in_the_child(*args, **kwargs):
        if os.getpid() != parent:
            time.sleep(60)
        return checking(*args, **kwargs)

    monkeypatch.setattr(onnx.checker, "check_model", stuck_in_the_child)
    monkeypatch.setattr(beside, "PATIENCE_S", 0.5)
    monkeypatch.setattr(beside, "PATIENCE_PER_NODE_S", 0.0)
    started = time.monotonic()
    assert refusal(not_sorted(), BESIDE) == refusal(not_sorted(), FIRST)
    lowering.lower(valid(), fast=BESIDE)
    assert time.monotonic() - started < 30


def layer_norm_beside(taken: str) -> onnx.ModelProto:
    """A LayerNormalization-17 named 'ln' (its body at opset 13 names values 'ln_Mean2D',
    'ln_Var', ...), its output read by an Identity whose output is named ``taken``."""
    graph = helper.make_graph(
        [
            helper.make_node("LayerNormalization", ["x", "scale"], ["normed"], name="ln", axis=-1),
            helper.make_node("Identity", ["normed"], [taken]),
        ],
        "g",
        [helper.make_tensor_value_info("x", F32, [2, 3])],
        [helper.make_tensor_value_info(taken, F32, [2, 3])],
        [helper.make_tensor("scale", F32, [3], [1.0, 2.0, 3.0])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.fixture
def passes(monkeypatch) -> list:
    """Every pass made, as the assumption of free names it was made under."""
    made: list[bool] = []
    original = lowering.api._lowered

    def counted(*arguments, assume_free, **options):
        made.append(assume_free)
        return original(*arguments, assume_free=assume_free, **options)

    monkeypatch.setattr(lowering.api, "_lowered", counted)
    return made


@pytest.fixture
def asked(monkeypatch) -> list:
    """Every question put to a child about the names taken as free: (the names, its answer)."""
    answers: list[tuple[list[str], bool | None]] = []
    original = beside.CheckBeside.holds_any

    def holds_any(self, names):
        answers.append((list(names), original(self, names)))
        return answers[-1][1]

    monkeypatch.setattr(beside.CheckBeside, "holds_any", holds_any)
    return answers


@pytest.mark.parametrize("taken", ["ln_Mean2D", "ln_Var", "y"])
def test_names_taken_as_free_beside_the_child_give_the_plain_paths_bytes(taken, passes, started, asked, monkeypatch):
    """The child lists the model's names while the pass takes the names it asks for as free; a
    name the model holds (here the Identity's output, named as the body names a value) is
    found after by the child, asked with the names taken (once the walk is done, before the
    node list is rebuilt), and the pass is made again with the names listed: the plain path's
    bytes."""
    early: list[list[str]] = []
    original_ask = beside.CheckBeside.ask

    def ask(self, names):
        early.append(list(names))
        original_ask(self, names)

    monkeypatch.setattr(beside.CheckBeside, "ask", ask)
    plain = lowering.lower(layer_norm_beside(taken), target_opset=13, fast=False).SerializeToString()
    passes.clear()
    assert lowering.lower(layer_norm_beside(taken), target_opset=13, fast=BESIDE).SerializeToString() == plain
    assert started[-1] is not None and started[-1].reaped
    [(names, held)] = asked
    assert early[0] == names
    assert held is (taken != "y") and (taken in names) is held
    assert passes == ([True, False] if taken != "y" else [True])
    for shortcuts in (FIRST, Shortcuts(names_beside=False)):
        passes.clear()
        assert lowering.lower(layer_norm_beside(taken), target_opset=13, fast=shortcuts).SerializeToString() == plain
        assert passes == [False]


def test_where_the_child_sends_no_names_they_are_listed_here(monkeypatch, passes, started, asked):
    parent = os.getpid()
    original = lowering.api.names_in_model

    def listed_here_only(model):
        if os.getpid() != parent:
            raise MemoryError("no memory in the child")
        return original(model)

    monkeypatch.setattr(lowering.api, "names_in_model", listed_here_only)
    plain = lowering.lower(layer_norm_beside("ln_Var"), target_opset=13, fast=False).SerializeToString()
    passes.clear()
    assert lowering.lower(layer_norm_beside("ln_Var"), target_opset=13, fast=BESIDE).SerializeToString() == plain
    assert started[-1] is not None and started[-1].reaped
    assert [held for _, held in asked] == [None]  # the verdict came, the child could not tell
    assert passes == [True, False]


def test_the_child_is_not_asked_where_no_name_was_taken_as_free(passes, started, asked):
    """At opset 18 the LayerNormalization stays: no name is asked for, the child is ended after
    its verdict without being asked about names."""
    lowering.lower(layer_norm_beside("ln_Var"), target_opset=18, fast=BESIDE)
    assert passes == [True] and started[-1] is not None and started[-1].reaped
    assert asked == []
    lowering.lower(layer_norm_beside("ln_Var"), target_opset=13, fast=BESIDE)
    assert len(asked) == 1 and asked[0][1] is True and started[-1].reaped


@pytest.mark.parametrize(
    "sent, held",
    [
        (["x"], True),
        (["free"], False),
        (["free", "also_free", "y"], True),
        ([f"free_{k}_{'n' * 40}" for k in range(40_000)], False),  # megabytes: more than a pipe holds
        ([], False),
    ],
)
def test_the_child_answers_whether_the_model_holds_any_name_sent(sent, held):
    running = beside.start(valid().SerializeToString(), 1, names_of=lambda: {"x", "y", "m"})
    assert running is not None
    assert running.holds_any(sent) is held
    assert running.reaped


@pytest.mark.parametrize("memory_files", [True, False])
@pytest.mark.parametrize(
    "sent, held",
    [
        (["free", "y"], True),
        ([f"free_{k}_{'n' * 40}" for k in range(40_000)], False),
    ],
)
def test_names_asked_before_the_end_are_answered_alike(monkeypatch, memory_files, sent, held):
    """Names sent as soon as they are final (written to a memory file) get the answer they get
    sent at the end; without memory files they are sent at the end."""
    if not memory_files:
        monkeypatch.delattr(os, "memfd_create", raising=False)
    running = beside.start(valid().SerializeToString(), 1, names_of=lambda: {"x", "y", "m"})
    assert running is not None
    running.ask(sent)
    assert running.holds_any(sent) is held and running.reaped


def test_a_name_taken_after_the_question_leaves_the_answer_unknown():
    sent = ["free"]
    running = beside.start(valid().SerializeToString(), 1, names_of=lambda: {"x", "y", "m"})
    assert running is not None
    running.ask(sent)
    sent.append("y")  # (the pass took one more: the child was not asked about it)
    assert running.holds_any(sent) is None and running.reaped
    sent = ["free"]
    running = beside.start(valid().SerializeToString(), 1, names_of=lambda: {"x", "y", "m"})
    assert running is not None
    running.ask(sent)
    sent[:] = ["y"]  # (one given back and another taken: as many names, not the ones asked about)
    assert running.holds_any(sent) is None and running.reaped


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd") or not hasattr(os, "memfd_create"), reason="Linux")
@pytest.mark.parametrize("failing", ["model memory file", "its pipe"])
def test_where_the_child_cannot_be_set_up_no_descriptor_is_left_open(monkeypatch, failing):
    real_memfd, real_pipe = os.memfd_create, os.pipe
    pipes = []

    def memfd(name, *flags):
        if failing == "model memory file" and name == "onnx-lower-model":
            raise OSError(24, "Too many open files")
        return real_memfd(name, *flags)

    def pipe():
        pipes.append(1)
        if failing == "its pipe" and len(pipes) == 2:  # (the first is the verdict's)
            raise OSError(24, "Too many open files")
        return real_pipe()

    monkeypatch.setattr(os, "memfd_create", memfd)
    monkeypatch.setattr(os, "pipe", pipe)
    before = open_descriptors()
    model = valid()
    assert beside.start(None, 1, names_of=lambda: {"x"}, serialize=model.SerializeToString) is None
    assert open_descriptors() == before


def test_the_answer_does_not_wait_for_the_pipes_end_another_child_holds_open(monkeypatch):
    """A process forked from the parent after the check started (here a second check) holds a
    copy of the parent's end of the names pipe: the child reads the names to their stated
    length, not to the pipe's end, and answers at once."""
    import time

    monkeypatch.delattr(os, "memfd_create", raising=False)  # (the names go on the pipe)
    monkeypatch.setattr(beside, "PATIENCE_S", 20.0)
    first = beside.start(valid().SerializeToString(), 1, names_of=lambda: {"x", "y"})
    second = beside.start(valid().SerializeToString(), 1, names_of=lambda: {"x"})
    assert first is not None and second is not None
    began = time.monotonic()
    assert first.holds_any(["free", "y"]) is True
    assert time.monotonic() - began < 10
    assert second.holds_any(["free"]) is False


def test_a_child_that_could_not_list_the_names_says_so():
    def no_list():
        raise MemoryError("no memory in the child")

    running = beside.start(valid().SerializeToString(), 1, names_of=no_list)
    assert running is not None and running.holds_any(["x"]) is None and running.reaped


def test_a_child_asked_no_names_is_ended_without_a_question():
    running = beside.start(valid().SerializeToString(), 1, names_of=lambda: {"x"})
    assert running is not None and running.verdict() is None
    running.finish()
    assert running.reaped and running.holds_any(["x"]) is None


def test_a_child_gone_before_the_question_gives_no_answer():
    import signal

    running = beside.start(valid().SerializeToString(), 1, names_of=lambda: {"x"})
    assert running is not None and running.verdict() is None
    os.kill(running.pid, signal.SIGKILL)
    assert running.holds_any([f"n{k}" for k in range(100_000)]) is None and running.reaped


def test_a_child_stuck_listing_the_names_is_given_up_on(monkeypatch):
    import time

    def stuck():
        time.sleep(60)
        return {"x"}

    monkeypatch.setattr(beside, "PATIENCE_S", 0.5)
    monkeypatch.setattr(beside, "PATIENCE_PER_NODE_S", 0.0)
    began = time.monotonic()
    running = beside.start(valid().SerializeToString(), 1, names_of=stuck)
    assert running is not None and running.verdict() is None
    assert running.holds_any([f"n{k}_{'n' * 40}" for k in range(40_000)]) is None and running.reaped
    assert time.monotonic() - began < 30


def test_the_child_serializes_the_model_for_the_parent_where_no_bytes_are_given():
    model = valid()
    running = beside.start(None, 1, serialize=model.SerializeToString)
    assert running is not None
    assert running.verdict() is None  # the child wrote the bytes before checking them
    assert running.model_bytes() == model.SerializeToString()
    assert running.model_bytes() is None  # handed over once
    running.finish()
    assert running.reaped


def test_where_the_child_fails_to_serialize_the_parent_does_and_checks_here(monkeypatch):
    parent = os.getpid()
    model = not_sorted()

    def serialize():
        if os.getpid() != parent:
            raise MemoryError("no memory in the child")
        return model.SerializeToString()

    running = beside.start(None, 1, serialize=serialize)
    assert running is not None
    message = running.verdict()  # no verdict came: the checker ran here, on the bytes made here
    assert message is not None and message == refusal(not_sorted(), FIRST).removeprefix("the model is not valid ONNX: ")
    assert running.model_bytes() is None
    running.finish()


def test_model_bytes_made_elsewhere_are_taken_once_at_hand_else_made_here():
    from lowering.modelio import ModelBytes

    model = valid()
    arrivals = [None, b"made elsewhere"]
    made = ModelBytes(model, elsewhere=lambda: arrivals.pop(0))
    assert made.at_hand() is None  # not there yet: not waited for
    assert made.get() == b"made elsewhere" and made.at_hand() == b"made elsewhere"
    assert ModelBytes(model, elsewhere=lambda: None).get() == model.SerializeToString()
    assert ModelBytes(model, b"given").get() == b"given"


def test_without_memory_files_the_bytes_are_made_here_once_and_the_child_checks_them(monkeypatch):
    monkeypatch.delattr(os, "memfd_create", raising=False)
    model, made = not_sorted(), []

    def serialize():
        made.append(os.getpid())
        return model.SerializeToString()

    running = beside.start(None, 1, serialize=serialize)
    assert running is not None and made == [os.getpid()]
    assert running.verdict() == refusal(not_sorted(), FIRST).removeprefix("the model is not valid ONNX: ")
    assert running.model_bytes() == model.SerializeToString() and made == [os.getpid()]
    running.finish()


def is_nan_then_relu_beside(taken: str) -> onnx.ModelProto:
    """IsNaN (lowered, at 13, by a rule naming a constant 'bool_false') whose cast is named
    ``taken``."""
    return chain(
        helper.make_node("IsNaN", ["x"], ["m"], name="n"),
        helper.make_node("Cast", ["m"], [taken], to=F32),
        helper.make_node("Relu", [taken], ["y"]),
    )


@pytest.mark.parametrize(
    "make, options",
    [
        (lambda: layer_norm_beside("ln_Var"), {"ops": ["LayerNormalization"]}),
        (lambda: layer_norm_beside("ln_Mean2D"), {"ops": ["LayerNormalization"], "target_opset": 13}),
        (lambda: is_nan_then_relu_beside("bool_false"), {"target_opset": 13}),
    ],
)
def test_a_pass_that_fails_on_a_name_taken_as_free_is_made_again(make, options, passes, started):
    """A name taken as free that is the model's can make the first pass's result invalid, so
    that it raises: the names are checked before that is passed on, and the pass made again
    gives the plain path's bytes (review of this session)."""
    plain = lowering.lower(make(), fast=False, **options).SerializeToString()
    passes.clear()
    assert lowering.lower(make(), fast=BESIDE, **options).SerializeToString() == plain
    assert passes == [True, False]


def test_a_pass_that_fails_for_its_own_reason_says_it_once(passes):
    """No name of the model taken: what the pass raised is raised, with no second pass."""
    model = chain(helper.make_node("LayerNormalization", ["x", "nowhere"], ["y"], name="ln"))
    with pytest.raises(LoweringError) as fast_error:
        lowering.lower(model, fast=BESIDE, ops=["LayerNormalization"])
    assert passes == [True]  # (the model is refused by the checker in the child, after one pass)
    with pytest.raises(LoweringError) as plain_error:
        lowering.lower(model, fast=False, ops=["LayerNormalization"])
    assert str(fast_error.value) == str(plain_error.value)


def test_descriptors_numbered_past_1023_are_waited_on():
    """select() takes no descriptor past 1023: the child's pipe is polled instead."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1600:  # (raised for this test alone, within the hard limit)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 2048), hard))
    reader, writer = os.pipe()
    high = os.dup2(reader, 1500)
    try:
        assert not beside._ready(high, 0)
        os.write(writer, b"x")
        assert beside._ready(high, 1)
    finally:
        for descriptor in (reader, writer, high):
            os.close(descriptor)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
