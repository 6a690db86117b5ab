"""The query player's RSPM selection (docs/synthetic.md, section 4): Laplace noise on a separator
set, an exact argmax over every conjunction of at most k literals and both signs.

A candidate c = (q, s) has a signature sig(c) in {0, 1}^m: per attribute a, the code of q's
literal on a (the zero vector when q has none), then the sign bit [s = +1]. ``separator``
chooses the codes:

* ``"onehot"``: one bit per level (a, v), set iff (a, v) is in q: m = sum_a L_a + 1;
* ``"binary"``: level v of attribute a as v + 1 in ceil(log2(L_a + 1)) bits (none = 0):
  m = sum_a ceil(log2(L_a + 1)) + 1 (43 on Adult, where one-hot needs 121).

Both are injective on the candidates (distinct candidates differ on some bit), which is all the
proof needs, and <eta, sig(c)> is linear in q's literals: it is sum_{(a, v) in q}
<eta_a, code_a(v)> + eta_sign [s = +1], the ``literal_noise`` and ``sign_noise`` of an
``core.problem.SelectionProblem``. The utility is in counts,
U_D(q, s) = s (count_D(q) - n q(S)), sensitivity 1; eta_j ~ Lap(2m / eps0) i.i.d. makes the
selection eps0-DP when the argmax is exact.

``rspm_rounds`` and ``rspm_samples`` are RSPM's schedule (docs/synthetic.md 4.8): T and the
records a round from the budget, n, m and k alone, never the data.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from core.problem import Conjunction, SelectionProblem
from core.validation import check_choice, check_int
from mechanisms.privacy import PrivacyTarget
from mechanisms.synthetic.accounting import ZCDP_DIVISOR, zcdp_target

SEPARATORS = ("binary", "onehot")


def separator_codes(sizes: Sequence[int], separator: str) -> tuple[np.ndarray, ...]:
    """Per attribute a, an (L_a, bits_a) 0/1 array: row v is the code of literal (a, v)."""
    check_choice("separator", separator, SEPARATORS)
    codes = []
    for k in sizes:
        if separator == "onehot":
            codes.append(np.eye(int(k)))
        else:
            bits = max(1, math.ceil(math.log2(int(k) + 1)))
            values = np.arange(1, int(k) + 1)[:, None]
            codes.append(((values >> np.arange(bits)) & 1).astype(float))
    return tuple(codes)


def signature_length(sizes: Sequence[int], separator: str) -> int:
    """m: the bits of every attribute's code and the sign bit."""
    return sum(c.shape[1] for c in separator_codes(sizes, separator)) + 1


def signature(
    sizes: Sequence[int], separator: str, conjunction: Conjunction, sign: int
) -> np.ndarray:
    """sig((q, s)) in {0, 1}^m (module docstring)."""
    codes = separator_codes(sizes, separator)
    blocks = [np.zeros(c.shape[1]) for c in codes]
    for a, v in conjunction:
        blocks[a] = codes[a][v]
    return np.concatenate(blocks + [np.array([1.0 if sign > 0 else 0.0])])


def laplace_scale(sizes: Sequence[int], separator: str, round_epsilon: float) -> float:
    """2m / eps0: each bit's Laplace scale (docs/synthetic.md 4.3)."""
    return 2.0 * signature_length(sizes, separator) / round_epsilon


def draw_noise(
    sizes: Sequence[int], separator: str, round_epsilon: float, rng: np.random.Generator
) -> tuple[tuple[np.ndarray, ...], float]:
    """eta ~ Lap(2m / eps0)^m (one draw), as (literal_noise, sign_noise): the weight of literal
    (a, v) is <eta_a, code_a(v)>, the sign's the last bit's."""
    codes = separator_codes(sizes, separator)
    m = sum(c.shape[1] for c in codes) + 1
    eta = rng.laplace(0.0, 2.0 * m / round_epsilon, size=m)
    starts = np.concatenate([[0], np.cumsum([c.shape[1] for c in codes])])
    literal = tuple(c @ eta[starts[a] : starts[a + 1]] for a, c in enumerate(codes))
    return literal, float(eta[-1])


class CountWeights:
    """c_x = count_D(x) - n count_S(x) / |S| on the distinct records of D and S, so that
    sum_{x : q(x) = 1} c_x = count_D(q) - n q(S) (q(S) = 0 while S is empty)."""

    def __init__(self, codes: np.ndarray) -> None:
        self.n = len(codes)
        self.distinct, self.counts = np.unique(codes, axis=0, return_counts=True)

    def weights(self, synthetic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(records, c_x) against the synthetic records ``synthetic`` (possibly none)."""
        if len(synthetic) == 0:
            return self.distinct, self.counts.astype(float)
        records, inverse = np.unique(
            np.vstack([self.distinct, synthetic]), axis=0, return_inverse=True
        )
        inverse = inverse.ravel()
        coefs = np.zeros(len(records))
        np.add.at(coefs, inverse[: len(self.distinct)], self.counts.astype(float))
        np.add.at(coefs, inverse[len(self.distinct) :], -self.n / len(synthetic))
        return records, coefs


def problem(
    sizes: Sequence[int],
    max_literals: int,
    weights: tuple[np.ndarray, np.ndarray],
    noise: tuple[tuple[np.ndarray, ...], float],
) -> SelectionProblem:
    """The round's argmax of U_D(c) + <eta, sig(c)> as a SelectionProblem."""
    records, coefs = weights
    literal, sign = noise
    return SelectionProblem(tuple(sizes), max_literals, records, coefs, literal, sign)


#: RSPM's schedule draws at least this many records a round (FEM's 50, as the exponential
#: mechanism's game when it answers every round, docs/synthetic.md 2.6).
RSPM_LEAST_SAMPLES = 50


def rspm_error_model(
    target: PrivacyTarget, n: int, bits: int, max_literals: int, rounds: np.ndarray
) -> np.ndarray:
    """The error model of docs/synthetic.md 4.8 at each T of ``rounds``, at the ``target``:
    1 / sqrt(T) (the game's regret term) + 2 m k / (n eps0(T)) (the selection's noise, k literal
    codes of Laplace scale 2m / eps0, in fractions), with eps0(T) = max(sqrt(2 rho / T),
    epsilon / T) the pure rounds' calibration (4.5; rho = ``zcdp_target``, 0 when delta = 0)."""
    epsilon = target.epsilon
    rounds = np.asarray(rounds, dtype=float)
    rho = zcdp_target(target) if not target.pure else 0.0
    eps0 = np.maximum(np.sqrt(ZCDP_DIVISOR["pure"] * rho / rounds), epsilon / rounds)
    return 1.0 / np.sqrt(rounds) + 2.0 * bits * max_literals / (n * eps0)


@functools.lru_cache(maxsize=256)
def rspm_rounds(target: PrivacyTarget, n: int, bits: int, max_literals: int, most: int) -> int:
    """RSPM's T (docs/synthetic.md 4.8): the T in 1..``most`` where ``rspm_error_model`` is
    least (the first on a tie). Public: the budget, n, m = ``bits`` and k only."""
    for name, value in (("n", n), ("bits", bits), ("max_literals", max_literals), ("most", most)):
        check_int(name, value)
    rounds = np.arange(1, most + 1)
    return int(rounds[np.argmin(rspm_error_model(target, n, bits, max_literals, rounds))])


def rspm_samples(rounds: int, error: float, candidates: int) -> int:
    """Records a round of RSPM's schedule (docs/synthetic.md 4.8): enough that the T s records'
    sampling error over the 2 |Q| candidates (Hoeffding and a union bound,
    sqrt(ln(2 |Q|) / (2 T s))) is at most half the modelled ``error``, and at least
    ``RSPM_LEAST_SAMPLES``."""
    check_int("rounds", rounds)
    check_int("candidates", candidates)
    need = math.ceil(2.0 * math.log(2.0 * candidates) / (rounds * error**2))
    return max(RSPM_LEAST_SAMPLES, need)


__all__ = [
    "RSPM_LEAST_SAMPLES",
    "SEPARATORS",
    "CountWeights",
    "draw_noise",
    "laplace_scale",
    "problem",
    "rspm_error_model",
    "rspm_rounds",
    "rspm_samples",
    "separator_codes",
    "signature",
    "signature_length",
]
