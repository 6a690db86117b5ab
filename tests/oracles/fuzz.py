"""Fuzzing every oracle against an exact brute force: no certificate may be false.

The brute force is written from SPEC sections 2 to 4 alone and shares no code with the oracles:

* W_tau = { tau k : k integer, |k_j| <= B, tau^2 ||k||^2 <= D^2 } (section 3), the coordinates
  being the float64 values tau k (the grid every oracle returns);
* h_w(x) = +1 iff <w, x> >= mu (section 2), in EXACT integer arithmetic: every float64 is
  m 2^e, so scaling the features, the weights and mu by one power of two makes every score an
  exact Python integer;
* F(w) = sum_u pos_u 1[h = -1] + neg_u 1[h = +1] + <linear, w> + norm_coef sqrt(D^2 - ||w||^2)
  (sections 3 and 4), every term but the square root exact (integers over a power of two), the
  square root to 40 significant digits (``decimal``): two values are tied only if they are
  equal to that precision, i.e. exactly up to an irrational coincidence.

A certified answer is FALSE when F(w) exceeds the brute-force minimum by more than the stated
certificate tolerance ``OBJECTIVE_TOL`` (``oracles.contract.certificate``), or when the objective the oracle
reports is not F(w); a certified answer within that tolerance but not a minimizer is counted
apart as a NEAR TIE. An uncertified answer is acceptable, a false certificate never.

Instances (``fuzz_instance``): d from 2 to 6, one-hot cells plus continuous columns, repeated
rows, rows placed ON and NEAR the margin of a random grid point (offsets from 1e-16 to 1e-5 on
either side, and exactly on mu), OPDisc with both signs of eta_(d+1) and with eta = 0 (exact
0/1 ERM), RSPM with its separator rows and Gaussian (so negative) weights.

``parallel_instance`` builds the class where a MIP presolve's "parallel rows and
columns" reduction acts: rows left UNMERGED, so identical x appear as separate rows with
different labels (parallel z columns and identical indicator rows); rows that are multiples of
each other (x and c x, c of either sign: parallel indicator rows); repeated coordinates
(identical feature columns: parallel w columns); features on a coarse grid of a few values so
that many rows share coordinates; and noise from tiny (near ties broken by 1e-4) to large.
HiGHS 1.16 with that reduction on certifies false optima on such instances
(``tests/oracles/mip/test_highs_presolve.py`` measures how often).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

from core.objective import MergedRows
from core.problem import IntegerGrid, Problem
from oracles.contract.certificate import OBJECTIVE_TOL, budget_of
from tests.oracles.oracle_contract import opdisc_shaped

KINDS = ("opdisc", "erm", "rspm", "near")
#: Offsets of the rows placed near the margin: 0 puts a score on mu (as near as floats allow).
NEAR_OFFSETS = (
    0.0,
    1e-16,
    -1e-16,
    1e-12,
    -1e-12,
    1e-9,
    -1e-9,
    1e-7,
    -1e-7,
    5e-7,
    -5e-7,
    2e-6,
    -2e-6,
    1e-5,
    -1e-5,
)


# --- the brute force ---------------------------------------------------------------------------


def _as_int(values, scale_exp: int) -> list[int]:
    """Exact integers v 2^scale_exp (asserting that they are integers)."""
    out = []
    for v in values:
        f = Fraction(float(v)) * (1 << scale_exp) if scale_exp >= 0 else Fraction(float(v))
        assert f.denominator == 1, (v, scale_exp)
        out.append(int(f))
    return out


def _exponent(values) -> int:
    """The smallest e with every value times 2^e an integer."""
    e = 0
    for v in values:
        den = Fraction(float(v)).denominator
        e = max(e, den.bit_length() - 1)
    return e


@dataclass(frozen=True)
class BruteForce:
    """Every grid point with its exact objective (module docstring)."""

    points: np.ndarray  # (K, d) float64 grid points
    values: list  # Fraction objective of each point (square root to 40 digits)

    @property
    def minimum(self) -> Fraction:
        return min(self.values)

    def value_at(self, w: np.ndarray) -> Fraction:
        match = np.flatnonzero(np.all(self.points == np.asarray(w, dtype=float), axis=1))
        assert len(match) == 1, f"w={w} is not a grid point"
        return self.values[int(match[0])]


def brute_force(problem: Problem) -> BruteForce:
    domain = problem.domain
    assert isinstance(domain, IntegerGrid)
    d, B, tau = domain.d, domain.bound, domain.step
    ks = [
        k
        for k in itertools.product(range(-B, B + 1), repeat=d)
        if domain.norm_sq_max is None
        or tau * tau * sum(v * v for v in k) <= domain.norm_sq_max + 1e-9
    ]
    K = np.array(ks, dtype=np.int64).reshape(len(ks), d)
    W = tau * K.astype(float)  # the float64 grid points
    # exact scores: one power of two for the features, the weights and mu
    X = problem.points
    e_x = _exponent(X.ravel())
    e_w = _exponent(W.ravel())
    e_mu = _exponent([problem.margin])
    e = max(e_x + e_w, e_mu)
    Xi = np.array([_as_int(row, e_x) for row in X], dtype=object).reshape(X.shape)
    Wi = np.array([_as_int(row, e_w) for row in W], dtype=object).reshape(W.shape)
    mu_i = _as_int([problem.margin], e)[0]
    scores = Xi.dot(Wi.T) * (1 << (e - e_x - e_w)) if len(X) else np.zeros((0, len(W)), object)
    positive = np.asarray(scores >= mu_i, dtype=bool)  # (u, K)
    # exact label and linear parts over 2^e2
    e2 = max(_exponent(problem.pos), _exponent(problem.neg), _exponent(problem.linear) + e_w)
    pos = np.array(_as_int(problem.pos, e2), dtype=object)
    neg = np.array(_as_int(problem.neg, e2), dtype=object)
    lin = np.array(_as_int(problem.linear, e2 - e_w), dtype=object)
    label_part = (
        positive.T.astype(object).dot(neg) + (~positive).T.astype(object).dot(pos)
        if len(X)
        else np.zeros(len(W), dtype=object)
    )
    linear_part = Wi.dot(lin) if d else np.zeros(len(W), dtype=object)
    total = label_part + linear_part
    values = [Fraction(int(t), 1 << e2) for t in total]
    if problem.norm_coef != 0.0:
        cache: dict[int, Fraction] = {}
        with localcontext() as ctx:
            ctx.prec = 40
            coef = Decimal(Fraction(problem.norm_coef).numerator) / Decimal(
                Fraction(problem.norm_coef).denominator
            )
            radius = Fraction(problem.norm_radius_sq)
            for i, k in enumerate(ks):
                q = sum(v * v for v in k)
                if q not in cache:
                    slack = radius - Fraction(tau) ** 2 * q
                    slack = max(slack, Fraction(0))
                    root = (Decimal(slack.numerator) / Decimal(slack.denominator)).sqrt()
                    cache[q] = Fraction(coef * root)
                values[i] += cache[q]
    return BruteForce(W, values)


# --- judging an answer -------------------------------------------------------------------------


@dataclass
class Tally:
    """Counts for one oracle over a set of instances."""

    oracle: str
    instances: int = 0
    certified: int = 0
    uncertified: int = 0
    false: int = 0
    near_ties: int = 0
    seconds: float = 0.0
    failures: list = field(default_factory=list)

    def line(self) -> str:
        return (
            f"{self.oracle:>10}: {self.instances} instances, {self.certified} certified, "
            f"{self.false} false, {self.near_ties} near ties, {self.uncertified} "
            f"uncertified, {self.seconds:.1f} s"
        )


def judge(tally: Tally, seed: int, problem: Problem, truth: BruteForce, solution) -> None:
    """Count ``solution`` against ``truth`` (module docstring: false, near tie, uncertified)."""
    cert = solution.certificate
    tally.instances += 1
    if not cert.certified:
        tally.uncertified += 1
        return
    tally.certified += 1
    value = truth.value_at(solution.w)
    excess = float(value - truth.minimum)
    reported = abs(cert.objective - float(value))
    if excess > OBJECTIVE_TOL or reported > 1e-9 * max(1.0, abs(float(value))):
        tally.false += 1
        tally.failures.append(
            f"seed {seed} ({problem.label}): w={solution.w.tolist()} F={float(value)!r}, "
            f"min {float(truth.minimum)!r}, reported {cert.objective!r}, "
            f"fallback={cert.fallback!r}"
        )
    elif excess > 0:
        tally.near_ties += 1


# --- instances ---------------------------------------------------------------------------------


def _grid(rng: np.random.Generator, d: int, *, max_points: int, norm: bool) -> IntegerGrid:
    bounds = [b for b in (1, 2, 3) if (2 * b + 1) ** d <= max_points] or [1]
    B = int(rng.choice(bounds))
    if not norm:
        return IntegerGrid(d, B, 1.0)
    # the paper's D^2 = d (section 3), or a random part of the box
    norm_sq_max = float(rng.choice([d, int(rng.integers(1, d * B * B + 1))]))
    return IntegerGrid(d, B, 1.0, norm_sq_max)


def _features(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, int]:
    """n rows from a few distinct vectors (repeats): a one-hot block, then continuous columns."""
    n_onehot = int(rng.integers(0, d)) if d > 1 else 0
    if n_onehot == 1:
        n_onehot = 2 if d > 2 else 0
    distinct = max(2, n // 2)
    base = np.zeros((distinct, d))
    if n_onehot:
        base[np.arange(distinct), rng.integers(0, n_onehot, distinct)] = 1.0
    cont = rng.uniform(-1, 1, (distinct, d - n_onehot))
    cont[rng.uniform(size=cont.shape) < 0.2] = 0.0
    base[:, n_onehot:] = cont
    return base[rng.integers(0, distinct, n)], n_onehot


def _near_rows(
    rng: np.random.Generator,
    X: np.ndarray,
    n_onehot: int,
    domain: IntegerGrid,
    margin: float,
    count: int,
) -> np.ndarray:
    """``count`` rows whose score at a random grid point is mu + a small offset (or mu)."""
    d, B = domain.d, domain.bound
    rows = []
    for _ in range(count):
        x = X[int(rng.integers(0, len(X)))].copy()
        for _ in range(20):
            k = rng.integers(-B, B + 1, d)
            if domain.norm_sq_max is None or float(k @ k) <= domain.norm_sq_max:
                break
        cont = [j for j in range(n_onehot, d) if k[j] != 0]
        offset = float(rng.choice(NEAR_OFFSETS))
        if not cont:  # a single continuous coordinate equal to mu (+ offset) over k_j
            j = int(rng.integers(n_onehot, d)) if n_onehot < d else int(rng.integers(0, d))
            x = np.zeros(d)
            kj = int(rng.choice([v for v in range(-B, B + 1) if v != 0]))
            x[j] = (margin + offset) / kj
            rows.append(x)
            continue
        j = int(rng.choice(cont))
        rest = float(np.dot(np.delete(x, j), np.delete(k, j).astype(float)))
        x[j] = (margin + offset - rest) / k[j]
        rows.append(x)
    return np.array(rows).reshape(count, d)


def fuzz_instance(seed: int, *, max_points: int = 800) -> Problem:
    """Instance ``seed``: kinds cycle opdisc, erm, rspm, near (module docstring)."""
    rng = np.random.default_rng(seed)
    kind = KINDS[seed % len(KINDS)]
    d = int(rng.integers(2, 7))
    if kind == "rspm":
        max_points = max(max_points, 729)  # {-1, 0, 1}^6
    margin = float(rng.choice([1e-4, 1e-4, 1e-3, 0.05]))
    n = int(rng.integers(4, 24))
    X, n_onehot = _features(rng, n, d)
    if kind == "rspm":
        domain = IntegerGrid(d, 1, 1.0)
    else:
        domain = _grid(rng, d, max_points=max_points, norm=True)
    n_near = int(rng.integers(1, 6))
    X = np.vstack([X, _near_rows(rng, X, n_onehot, domain, margin, n_near)])
    y = rng.choice([-1, 1], len(X))
    dup = rng.integers(0, len(X), int(rng.integers(0, 4)))  # duplicates, maybe with other labels
    X, y = np.vstack([X, X[dup]]), np.r_[y, rng.choice([-1, 1], len(dup))]
    rows = MergedRows.from_xy(X, y)
    if kind == "rspm":
        data = Problem.from_rows(rows, domain, margin=margin, label=f"rspm/{seed}")
        separators = np.vstack([np.eye(d), -np.eye(d)])  # SPEC section 4
        noise = rng.normal(0.0, float(rng.choice([0.5, 3.0, 10.0])), 2 * d)
        return data.with_rows(separators, noise, np.zeros(2 * d))
    radius_sq = domain.norm_sq_max
    if kind in ("erm", "near") and seed % 2 == 0:
        return Problem.from_rows(rows, domain, margin=margin, label=f"{kind}/{seed}")
    sigma = float(rng.choice([0.3, 2.0, 10.0]))
    eta = rng.normal(0.0, sigma, d + 1)
    eta[d] = (1.0 if (seed // len(KINDS)) % 2 == 0 else -1.0) * abs(eta[d])  # both signs
    return opdisc_shaped(
        rows.points,
        rows.pos,
        rows.neg,
        domain,
        eta,
        radius_sq,
        margin=margin,
        label=f"{kind}/{seed}",
    )


#: Multipliers of the proportional rows: powers of two keep c x exact, -1 flips the row.
MULTIPLES = (2.0, 0.5, -1.0, 4.0, -0.5, 0.25)
#: The coarse feature values of ``parallel_instance`` (many rows share a coordinate).
COARSE_VALUES = (0.0, 0.1, 0.2, 0.25, 0.3, 0.375, 0.5, 0.7, 0.875, 0.9, 1.0)


def parallel_instance(seed: int, *, max_points: int = 800) -> Problem:
    """Instance ``seed`` of the parallel-row class (module docstring); kinds cycle as in
    ``fuzz_instance`` (OPDisc, exact ERM, RSPM, near-margin OPDisc)."""
    rng = np.random.default_rng(10**6 + seed)
    kind = KINDS[seed % len(KINDS)]
    d = int(rng.integers(2, 6))
    margin = float(rng.choice([2.0**-13, 1e-4, 1e-3]))
    distinct = int(rng.integers(3, 10))
    base = rng.choice(COARSE_VALUES, (distinct, d))
    base[:, 0] = rng.choice([0.0, 1.0, 1.0], distinct)  # a binary column shared by most rows
    if d > 2 and rng.uniform() < 0.5:  # repeated coordinates: identical feature columns
        j, k = rng.choice(np.arange(1, d), 2, replace=False)
        base[:, k] = base[:, j]
    scaled = base[rng.integers(0, distinct, int(rng.integers(1, 5)))]
    scaled = scaled * rng.choice(MULTIPLES, (len(scaled), 1))  # proportional rows
    X = np.vstack([base, scaled])
    if kind == "rspm":
        domain = IntegerGrid(d, 1, 1.0)
    else:
        domain = _grid(rng, d, max_points=max_points, norm=True)
    n_onehot = 0
    X = np.vstack([X, _near_rows(rng, X, n_onehot, domain, margin, int(rng.integers(1, 5)))])
    X = X[rng.integers(0, len(X), int(rng.integers(len(X), 3 * len(X) + 1)))]  # duplicates
    y = rng.choice([-1, 1], len(X))
    weight = rng.integers(1, 4, len(X)).astype(float)  # unmerged rows, counts up to 3
    pos, neg = np.where(y > 0, weight, 0.0), np.where(y < 0, weight, 0.0)
    label = f"parallel-{kind}/{seed}"
    if kind == "rspm":
        data = Problem(X, pos, neg, domain, margin=margin, label=label)
        separators = np.vstack([np.eye(d), -np.eye(d)])  # SPEC section 4
        noise = rng.normal(0.0, float(rng.choice([0.01, 0.5, 3.0])), 2 * d)
        return data.with_rows(separators, noise, np.zeros(2 * d))
    if kind == "erm" and seed % 2 == 0:
        return Problem(X, pos, neg, domain, margin=margin, label=label)
    radius_sq = domain.norm_sq_max
    sigma = float(rng.choice([1e-3, 0.05, 0.3, 2.0]))
    eta = rng.normal(0.0, sigma, d + 1)
    eta[d] = (1.0 if (seed // len(KINDS)) % 2 == 0 else -1.0) * abs(eta[d])  # both signs
    return opdisc_shaped(X, pos, neg, domain, eta, radius_sq, margin=margin, label=label)


#: The instance families by name: ``run_fuzz`` and the fuzz tests draw from both.
FAMILIES = {"mixed": fuzz_instance, "parallel": parallel_instance}


def run_fuzz(
    oracles: dict, seeds, *, max_points: int = 800, family: str = "mixed"
) -> dict[str, Tally]:
    """Solve every instance with every oracle; ``oracles`` maps a name to an Oracle."""
    tallies = {name: Tally(name) for name in oracles}
    for seed in seeds:
        problem = FAMILIES[family](seed, max_points=max_points)
        truth = brute_force(problem)
        for name, oracle in oracles.items():
            start = time.perf_counter()
            solution = oracle.solve(problem, budget_of(oracle))
            judge(tallies[name], seed, problem, truth, solution)
            tallies[name].seconds += time.perf_counter() - start
    return tallies


__all__ = [
    "FAMILIES",
    "KINDS",
    "BruteForce",
    "Tally",
    "brute_force",
    "fuzz_instance",
    "judge",
    "parallel_instance",
    "run_fuzz",
]
