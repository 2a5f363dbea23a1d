"""Runtime profiles: what a real runtime loads, runs and gets right, as data probed from it
(``targets/probe.py`` runs every single-op ONNX backend node case through the runtime and
records each case's op, op version, element type and verdict). Nothing here is typed by hand:
each profile is a JSON file in ``lowering/target_profiles/`` that names its source.

A (op, version, element type) the profile saw is ``supported`` where every case of it ran
right, ``partly`` where some did (the others depend on attributes), and refused where none did
(the runtime failed, crashed, hung or gave other outputs than the case expects). One it did not
see is ``unverified`` where the op ran right at another version or type, and refused where no
case of the op ever ran right there.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

PROFILES = Path(__file__).resolve().parent / "target_profiles"

SUPPORTED, PARTLY, UNVERIFIED, REFUSED = "supported", "partly", "unverified", "refused"


@dataclass(frozen=True)
class Verdict:
    """What a profile says of one (op, version, element type): ``kind`` (one of SUPPORTED,
    PARTLY, UNVERIFIED, REFUSED) and, where not supported, why, in the probe's words."""

    kind: str
    why: str = ""

    @property
    def blocks(self) -> bool:
        return self.kind == REFUSED


@dataclass(frozen=True)
class RuntimeProfile:
    """One runtime's probed facts: the default-domain ``opsets`` it loads, and per (op, version,
    element type name) the backend cases' verdicts (case name, verdict, detail)."""

    name: str
    runtime: str
    runtime_version: str
    source: dict
    opsets: tuple[int, ...]
    cases: dict[tuple[str, int, str], list[tuple[str, str, str]]] = field(repr=False)

    @functools.cached_property
    def _by_op(self) -> dict[str, list[tuple[int, str, list]]]:
        found = defaultdict(list)
        for (op, version, type_name), outcomes in self.cases.items():
            found[op].append((version, type_name, outcomes))
        return dict(found)

    def verdict(self, op_type: str, version: int, type_name: str) -> Verdict:
        """What the probe says of ``op_type``-``version`` on ``type_name`` (an element type's
        name as onnx spells it, "FLOAT"; "" where unknown)."""
        seen = self._by_op.get(op_type)
        if not seen:
            return Verdict(UNVERIFIED, f"no single-op backend case of {op_type} was probed")
        exact = [o for v, t, outcomes in seen if v == version and (t == type_name or not type_name) for o in outcomes]
        if exact and not type_name and any(o[1] != "right" for o in exact):
            return Verdict(UNVERIFIED, f"the element type is unknown here; {op_type}-{version} is not right on "
                           f"every type probed, e.g. {_said([o for o in exact if o[1] != 'right'])}")  # fmt: skip
        if exact:
            right = [o for o in exact if o[1] == "right"]
            if len(right) == len(exact):
                return Verdict(SUPPORTED)
            if right:
                wrong = len(exact) - len(right)
                not_right = [o for o in exact if o[1] != "right"]
                return Verdict(PARTLY, f"{wrong} of {len(exact)} cases not right, e.g. {_said(not_right)}")
            return Verdict(REFUSED, _said(exact))
        ran_right = sorted({(v, t) for v, t, outcomes in seen if any(o[1] == "right" for o in outcomes)})
        if ran_right:
            shown = ", ".join(f"{op_type}-{v} on {t or '?'}" for v, t in ran_right[:4])
            return Verdict(UNVERIFIED, f"{op_type}-{version} on {type_name or '?'} not probed; ran right: {shown}")
        any_case = [o for _, _, outcomes in seen for o in outcomes]
        return Verdict(REFUSED, f"no case of {op_type} ran right, e.g. {_said(any_case)}")

    def opset_for(self, model_opset: int) -> int:
        """The default-domain opset a model of ``model_opset`` goes to: its own where the runtime
        loads it, else the nearest the runtime loads (the newest below, or the oldest above)."""
        if model_opset in self.opsets or not self.opsets:
            return model_opset
        below = [o for o in self.opsets if o < model_opset]
        return max(below) if below else min(self.opsets)

    def describe(self) -> str:
        counts = defaultdict(int)
        for outcomes in self.cases.values():
            for _, verdict, _ in outcomes:
                counts[verdict] += 1
        total = ", ".join(f"{counts[k]} {k}" for k in sorted(counts))
        span = f"opsets {min(self.opsets)}-{max(self.opsets)}" if self.opsets else "no opset loaded"
        return f"{self.runtime} {self.runtime_version}: {span}; backend cases {total} ({self.source.get('kind', '?')})"


def _said(outcomes: list[tuple[str, str, str]]) -> str:
    case, verdict, detail = outcomes[0]
    return f"{case}: {verdict}" + (f" ({detail[:160]})" if detail else "")


@functools.cache
def profile_names() -> tuple[str, ...]:
    return tuple(sorted(path.stem for path in PROFILES.glob("*.json")))


@functools.cache
def load_profile(name: str) -> RuntimeProfile:
    """The profile called ``name`` (``onnx-lower --list-targets`` lists them)."""
    path = PROFILES / f"{name}.json"
    if name not in profile_names():
        from .errors import LoweringError

        known = ", ".join(profile_names()) or "none"
        raise LoweringError(f"no target called {name!r} (targets: {known})")
    return profile_from_data(json.loads(path.read_text()))


def profile_from_data(data: dict) -> RuntimeProfile:
    """A profile from its JSON form (as targets/probe.py writes it)."""
    cases: dict[tuple[str, int, str], list] = defaultdict(list)
    for case_name, entry in sorted(data["cases"].items()):
        key = (entry["op"], int(entry["version"]), entry.get("type", ""))
        cases[key].append((case_name, entry["verdict"], entry.get("detail", "")))
    return RuntimeProfile(
        name=data["name"],
        runtime=data["runtime"],
        runtime_version=data["runtime_version"],
        source=data["source"],
        opsets=tuple(data["opsets"]),
        cases=dict(cases),
    )
