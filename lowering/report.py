"""What a lowering did: nodes rewritten per rule, and every requested op left, with why."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RemainingOp:
    """A node of a requested op type that is still in the lowered model."""

    op_type: str
    version: int | None
    location: str
    reason: str

    def __str__(self) -> str:
        version = f"-{self.version}" if self.version is not None else ""
        return f"{self.op_type}{version} at {self.location}: {self.reason}"


@dataclass
class LoweringReport:
    """Per rule (``"IsNaN-13"``) how many nodes it rewrote, and the requested ops left."""

    rewritten: Counter = field(default_factory=Counter)
    remaining: list[RemainingOp] = field(default_factory=list)
    adapted: Counter = field(default_factory=Counter)  # nodes moved to a target opset, not lowered

    @property
    def complete(self) -> bool:
        """True when no node of a requested op type is left."""
        return not self.remaining

    def lines(self) -> list[str]:
        """The report as text lines, for the command line and logs."""
        lines = [f"lowered {count} x {key}" for key, count in sorted(self.rewritten.items())]
        lines += [f"converted {count} x {key}" for key, count in sorted(self.adapted.items())]
        if not self.rewritten and not self.adapted:
            lines.append("nothing to lower")
        lines.extend(f"not lowered: {entry}" for entry in self.remaining)
        return lines

    def as_dict(self) -> dict:
        return {
            "rewritten": dict(sorted(self.rewritten.items())),
            "adapted": dict(sorted(self.adapted.items())),
            "remaining": [
                {"op_type": r.op_type, "version": r.version, "location": r.location, "reason": r.reason}
                for r in self.remaining
            ],
        }
