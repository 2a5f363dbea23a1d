"""What a lowering did: nodes rewritten per rule, nodes moved to a target opset, and every
requested op left, with why."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# A key of LoweringReport.adapted: "IsNaN-13→13", "Softmax-13→11 via Transpose".
_MOVED = re.compile(r"^(?P<op>.+?)-(?P<source>\w+)→(?P<target>\w+)(?: via (?P<how>.+))?$")


@dataclass(frozen=True)
class RemainingOp:
    """A node of a requested op type that is still in the lowered model (or, converting, one
    that cannot go to the target opset): where it is (``location``: its graph, then the node;
    ``graph`` and ``node`` apart, where known) and why."""

    op_type: str
    version: int | None
    location: str
    reason: str
    graph: str = ""
    node: str = ""

    def __str__(self) -> str:
        version = f"-{self.version}" if self.version is not None else ""
        return f"{self.op_type}{version} at {self.location}: {self.reason}"

    def as_dict(self) -> dict:
        return {
            "op_type": self.op_type,
            "version": self.version,
            "graph": self.graph,
            "node": self.node,
            "location": self.location,
            "reason": self.reason,
        }


@dataclass
class LoweringReport:
    """Per rule (``"IsNaN-13"``) how many nodes it rewrote, and the requested ops left."""

    rewritten: Counter = field(default_factory=Counter)
    remaining: list[RemainingOp] = field(default_factory=list)
    adapted: Counter = field(default_factory=Counter)  # nodes moved to a target opset, not lowered
    blockers: list[RemainingOp] = field(default_factory=list)  # converting: nodes that cannot go to the target
    folded: Counter = field(default_factory=Counter)  # nodes the shapes decide, now constants, per op
    retyping: object | None = None  # what retyping did (lowering.retyping.RetypeReport), where asked
    forms: Counter = field(default_factory=Counter)  # forms a target chose (lowering.target_forms), per choice
    # nodes left that the target's runtime runs right only in some probed cases ("Equal-13 on INT64")
    partly: Counter = field(default_factory=Counter)
    # per op version and type of the original model ("OneHot-28 on INT64"), what the target's
    # recorded sweep found the runtime still failing or getting wrong after --target
    swept: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """True when no node of a requested op type is left."""
        return not self.remaining

    def converted(self) -> Counter:
        """The moves that changed an op's version (``adapted`` less those kept as they are)."""
        return Counter({key: count for key, count in self.adapted.items() if not _kept_version(key)})

    def kept(self) -> Counter:
        """Nodes kept as they are at the target opset, as ``"IsNaN-13"``: only the opset declared changed."""
        kept: Counter = Counter()
        for key, count in self.adapted.items():
            version = _kept_version(key)
            if version is not None:
                kept[version] += count
        return kept

    def lines(self) -> list[str]:
        """The report as text lines, for the command line and logs."""
        lines = [f"lowered {count} x {key}" for key, count in sorted(self.rewritten.items())]
        lines += [f"converted {count} x {_shown_move(key)}" for key, count in sorted(self.converted().items())]
        lines += [f"kept {count} x {key} (unchanged at the target opset)" for key, count in sorted(self.kept().items())]
        if self.folded:
            shown = ", ".join(f"{count} x {op}" for op, count in sorted(self.folded.items()))
            lines.append(f"folded {shown} (values the shapes decide)")
        lines += [f"chose {count} x {choice}" for choice, count in sorted(self.forms.items())]
        lines += [f"left {count} x {key}: partly right on the runtime, as probed (check -v lists them)"
                  for key, count in sorted(self.partly.items())]  # fmt: skip
        lines += [f"note: {key}: {said}" for key, said in sorted(self.swept.items())]
        if self.retyping is not None:
            lines += self.retyping.lines()
        if not lines and not self.remaining:
            lines.append("nothing to lower")
        lines.extend(f"not lowered: {entry}" for entry in self.remaining)
        return lines

    def as_dict(self) -> dict:
        return {
            "rewritten": dict(sorted(self.rewritten.items())),
            "adapted": dict(sorted(self.adapted.items())),
            "converted": dict(sorted(self.converted().items())),
            "kept": dict(sorted(self.kept().items())),
            "remaining": [entry.as_dict() for entry in self.remaining],
            "folded": dict(sorted(self.folded.items())),
            **({"forms": dict(sorted(self.forms.items()))} if self.forms else {}),
            **({"partly": dict(sorted(self.partly.items()))} if self.partly else {}),
            **({"swept": dict(sorted(self.swept.items()))} if self.swept else {}),
            **({"retyped": self.retyping.as_dict()} if self.retyping is not None else {}),
        }


def _kept_version(key: str) -> str | None:
    """``"IsNaN-13"`` for ``"IsNaN-13→13"``: a node kept as it is at the target opset (only the
    declared opset changed); None for a move that changed the node."""
    found = _MOVED.match(key)
    if found is None or found["source"] != found["target"] or found["how"] is not None:
        return None
    return f"{found['op']}-{found['source']}"


def _shown_move(key: str) -> str:
    """``"IsNaN-13 via Cast to float"`` for ``"IsNaN-13→13 via Cast to float"``; others as they are."""
    found = _MOVED.match(key)
    if found is None or found["source"] != found["target"]:
        return key
    return f"{found['op']}-{found['source']} via {found['how']}"
