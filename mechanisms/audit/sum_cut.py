"""The audit at d >= 5 at any d (SPEC 10.5): one sum-cut pair, the mechanism and its mutants.

The d >= 5 audits (``mechanisms.audit.audits``) stop at d = 200; the paper's OPDisc
sigma needs d of about 600, so this runs one sum-cut pair (``mechanisms.audit.highdim``) at a d of
the caller's choice, from Python or from the command line::

    python -m mechanisms.audit.sum_cut opdisc_d5 --d 600 --samples 1000000 --variants paper
"""

from __future__ import annotations

import argparse

from mechanisms.audit.audit_report import AuditReport, audit_table
from mechanisms.audit.audits import audit_variant, mechanism_audit
from mechanisms.audit.highdim import sum_cut_pair
from mechanisms.audit.mutants import MUTANTS


def audit_sum_cut(
    mechanism: str,
    d: int,
    *,
    samples: int,
    confidence: float = 0.95,
    seed: int = 0,
    variants: tuple[str, ...] = ("correct",),
) -> list[AuditReport]:
    """One sum-cut pair at any d for a registered d >= 5 audit, its mechanism and its mutants
    (the audits' pairs stop at d = 200; the paper's OPDisc sigma needs d of about 600)."""
    audit = mechanism_audit(mechanism)
    makers = {"correct": audit.make_sampler}
    makers |= {m.name: m.make for m in MUTANTS if m.mechanism == mechanism}
    unknown = [v for v in variants if v not in makers]
    if unknown:
        raise ValueError(f"unknown variants {unknown} of {mechanism}; known: {sorted(makers)}")
    options = {"samples": samples, "confidence": confidence, "seed": seed}
    return [
        report
        for v in variants
        for report in audit_variant(audit, v, makers[v], pairs=[sum_cut_pair(d)], **options)
    ]


def main(argv: list[str] | None = None) -> None:
    """``python -m mechanisms.audit.sum_cut opdisc_d5 --d 600 --samples 1000000 --variants paper``"""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("mechanism", choices=["opdisc_d5", "rspm_gaussian_d5"])
    parser.add_argument("--d", type=int, required=True)
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", nargs="+", default=["correct"])
    args = parser.parse_args(argv)
    reports = audit_sum_cut(
        args.mechanism, args.d, samples=args.samples, seed=args.seed, variants=tuple(args.variants)
    )
    for r in reports:
        print(f"{r.line()}; {r.seconds:.0f} s")
    print(audit_table(reports))


if __name__ == "__main__":
    main()
