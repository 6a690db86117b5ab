"""The audit's result record and its markdown table."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Iterable

#: Variant name of the mechanism as implemented (anything else is a mutant's name).
CORRECT = "correct"


@dataclass(frozen=True)
class AuditReport:
    """One neighbouring pair audited against one mechanism variant (mechanisms.audit.stats).

    ``eps_lb_forward`` bounds epsilon from below with the event chosen for (D, D') (numerator
    D), ``eps_lb_backward`` with the datasets swapped. Both hold at once with probability
    >= ``confidence`` (Clopper-Pearson, Bonferroni over the four one-sided bounds).
    ``samples`` releases were drawn on each dataset: the first half chose the events, the
    second half (``eval_samples``) gave the counts ``count_*`` and the bounds.
    ``claim_relation`` is the neighbouring relation the claim is stated for (``relation`` is the
    pair's); ``finding`` is set on pairs where the mechanism as implemented is known to exceed
    its claim (a reported bug, mechanisms.audit.pairs).
    """

    mechanism: str
    variant: str
    pair: str
    relation: str
    claimed_epsilon: float
    claimed_delta: float
    eps_lb_forward: float
    eps_lb_backward: float
    samples: int
    confidence: float
    seed: int
    event_forward: str
    event_backward: str
    #: Evaluation counts: forward event on D and on D', backward event on D' and on D.
    count_forward_d: int = 0
    count_forward_d_prime: int = 0
    count_backward_d_prime: int = 0
    count_backward_d: int = 0
    seconds: float = 0.0
    claim_relation: str = "replace"
    finding: str = ""

    def __post_init__(self) -> None:
        if self.samples < 2:
            raise ValueError(f"samples must be >= 2, found {self.samples!r}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), found {self.confidence!r}")
        for name in ("eps_lb_forward", "eps_lb_backward"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be finite and >= 0, found {value!r}")

    @property
    def eps_lb(self) -> float:
        """The larger of the two directions' lower bounds."""
        return max(self.eps_lb_forward, self.eps_lb_backward)

    @property
    def eval_samples(self) -> int:
        return self.samples - self.samples // 2

    @property
    def exceeds_claim(self) -> bool:
        """True when the audit refutes the claimed epsilon on this pair."""
        return self.eps_lb > self.claimed_epsilon

    @property
    def is_mutant(self) -> bool:
        return self.variant != CORRECT

    @property
    def in_claim_scope(self) -> bool:
        """The pair's relation is the one the claim is stated for."""
        return self.relation == self.claim_relation

    @property
    def decisive(self) -> bool:
        """A pair on which the mechanism as implemented must stay within its claim (in the
        claim's relation, no known finding): only these can pass or fail the mechanism, and
        only these can catch a mutant."""
        return self.in_claim_scope and not self.finding

    @property
    def catches(self) -> bool:
        """A mutant caught on a decisive pair."""
        return self.is_mutant and self.decisive and self.exceeds_claim

    def to_params(self) -> dict[str, Any]:
        keys = (
            "mechanism",
            "variant",
            "pair",
            "relation",
            "claim_relation",
            "claimed_epsilon",
            "claimed_delta",
            "samples",
            "confidence",
            "seed",
            "event_forward",
            "event_backward",
            "finding",
        )
        return {f"audit.{k}": getattr(self, k) for k in keys}

    def to_metrics(self) -> dict[str, float]:
        keys = (
            "eps_lb_forward",
            "eps_lb_backward",
            "count_forward_d",
            "count_forward_d_prime",
            "count_backward_d_prime",
            "count_backward_d",
            "seconds",
        )
        out = {f"audit.{k}": float(getattr(self, k)) for k in keys}
        out["audit.eps_lb"] = self.eps_lb
        out["audit.exceeds_claim"] = float(self.exceeds_claim)
        return out

    @classmethod
    def from_record(cls, params: dict[str, Any], metrics: dict[str, float]) -> "AuditReport":
        """Inverse of ``to_params`` / ``to_metrics`` (derived metrics are recomputed)."""
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            key = f"audit.{f.name}"
            value = params[key] if key in params else metrics[key]
            if f.type in ("int",):
                value = int(value)
            elif f.type in ("float",):
                value = float(value)
            kwargs[f.name] = value
        return cls(**kwargs)

    def line(self) -> str:
        """One line for test output."""
        verdict = "EXCEEDS" if self.exceeds_claim else "within"
        if self.finding:
            verdict += " (known finding)"
        return (
            f"{self.mechanism}[{self.variant}] {self.pair} ({self.relation}): eps_lb "
            f"{self.eps_lb_forward:.3f} / {self.eps_lb_backward:.3f} vs claimed "
            f"({self.claimed_epsilon:g}, {self.claimed_delta:g}) -> {verdict}; "
            f"{self.samples} samples/dataset; events {self.event_forward} | "
            f"{self.event_backward}; counts {self.count_forward_d}/"
            f"{self.count_forward_d_prime}, {self.count_backward_d_prime}/"
            f"{self.count_backward_d}"
        )


def _fmt_eps(value: float) -> str:
    return f"{value:.3f}"


def audit_table(reports: Iterable[AuditReport]) -> str:
    """The reports as a markdown table, one row per (mechanism variant, pair).

    Verdict, for the mechanisms as implemented: "ok" when eps_lb <= claimed epsilon, else
    "VIOLATION" ("(finding)": a known, reported bug on this pair). For mutants: "caught" on a
    decisive pair with eps_lb > claimed epsilon, "caught (other pair)" on the other pairs of a
    caught mutant, "NOT caught" on every pair of a mutant no pair catches, "n/a" on pairs
    with a finding (the mechanism itself exceeds there, so they prove nothing).
    """
    reports = list(reports)
    caught = {(r.mechanism, r.variant) for r in reports if r.catches}
    header = (
        "| mechanism | variant | claimed (eps, delta) | pair | relation | eps_lb D->D' "
        "| eps_lb D'->D | samples/dataset | verdict |"
    )
    lines = [header, "|" + "---|" * 9]
    for r in reports:
        if not r.is_mutant:
            verdict = "VIOLATION" if r.exceeds_claim else "ok"
            if r.finding:
                verdict += " (finding)"
        elif not r.decisive:
            verdict = "n/a (finding)"
        elif r.catches:
            verdict = "**caught**"
        else:
            verdict = "caught (other pair)" if (r.mechanism, r.variant) in caught else "NOT caught"
        lines.append(
            f"| {r.mechanism} | {r.variant} | ({r.claimed_epsilon:g}, {r.claimed_delta:g}) | "
            f"{r.pair} | {r.relation} | {_fmt_eps(r.eps_lb_forward)} | "
            f"{_fmt_eps(r.eps_lb_backward)} | {r.samples:,} | {verdict} |"
        )
    if reports:
        conf = sorted({r.confidence for r in reports})
        lines.append("")
        lines.append(
            f"eps_lb: lower bound on epsilon at confidence {', '.join(f'{c:g}' for c in conf)} "
            "per pair (one-sided Clopper-Pearson, Bonferroni over 2 directions x 2 bounds); "
            "half of each dataset's samples choose the event, the other half bound it."
        )
    return "\n".join(lines)
