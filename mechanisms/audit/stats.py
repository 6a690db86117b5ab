"""The statistics of the audit: Clopper-Pearson bounds, the epsilon lower bound, event choice.

A mechanism M is (epsilon, delta)-DP only if, for neighbouring D, D' and every event E,

    P[M(D) in E] <= e^epsilon P[M(D') in E] + delta,
    i.e.  epsilon >= ln( (P[M(D) in E] - delta) / P[M(D') in E] ).

With a lower confidence bound p1_low on P[M(D) in E] and an upper bound p0_high on
P[M(D') in E], both valid at once with probability >= 1 - 2 alpha, and an event E fixed
before the samples that estimate them were drawn,

    eps_lb = ln( (p1_low - delta) / p0_high )      (0 when p1_low <= delta or the ratio is < 1)

is a lower bound on the true epsilon of M on this pair with that probability. The audit takes
both directions (D, D') and (D', D), so each of the four one-sided Clopper-Pearson bounds is
taken at alpha = (1 - confidence) / 4 (Bonferroni): for each pair, both directions' eps_lb are
valid at once with probability >= confidence. The event is chosen on the first half of the
samples (``choose_event``) and evaluated on the second half, so the search over events costs
no correction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from core.validation import check_real

#: Bonferroni: two directions x (one lower + one upper) one-sided bound per pair.
BOUNDS_PER_PAIR = 4


def check_confidence(confidence: float) -> None:
    check_real("confidence", confidence, "(0, 1)")


def per_bound_alpha(confidence: float) -> float:
    """The error rate of each one-sided bound: (1 - confidence) / 4 (module docstring)."""
    check_confidence(confidence)
    return (1.0 - confidence) / BOUNDS_PER_PAIR


def cp_lower(count, total: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound: P[p < bound] <= alpha. 0 when count = 0."""
    count = np.asarray(count, dtype=float)
    safe = np.maximum(count, 1.0)
    low = stats.beta.ppf(alpha, safe, total - safe + 1.0)
    return np.where(count > 0, low, 0.0)


def cp_upper(count, total: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound: P[p > bound] <= alpha. 1 when count = total."""
    count = np.asarray(count, dtype=float)
    safe = np.minimum(count, total - 1.0)
    high = stats.beta.ppf(1.0 - alpha, safe + 1.0, total - safe)
    return np.where(count < total, high, 1.0)


def epsilon_lower_bound(count_num, count_den, total: int, delta: float, alpha: float) -> np.ndarray:
    """eps_lb = ln((p1_low - delta) / p0_high), floored at 0 (module docstring).

    ``count_num`` events among ``total`` runs on the numerator dataset, ``count_den`` on the
    other one; both arrays broadcast (one entry per candidate event).
    """
    p1_low = cp_lower(count_num, total, alpha)
    p0_high = cp_upper(count_den, total, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (p1_low - delta) / p0_high
        eps = np.where(p1_low > delta, np.log(np.maximum(ratio, 1.0)), 0.0)
    return np.maximum(eps, 0.0)


# --- events -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """A set of outputs fixed before the evaluation samples are looked at.

    Discrete outputs (cell indices): ``cells`` is the set. Continuous outputs (a scalar
    statistic s): ``s >= threshold`` when ``upper`` else ``s < threshold``.
    """

    description: str
    cells: tuple[int, ...] | None = None
    threshold: float | None = None
    upper: bool = True

    def contains(self, outputs: np.ndarray) -> np.ndarray:
        if self.cells is not None:
            return np.isin(outputs, np.asarray(self.cells, dtype=np.int64))
        if self.upper:
            return outputs >= self.threshold
        return outputs < self.threshold


def _discrete_candidates(num: np.ndarray, den: np.ndarray, k: int):
    """Top-j sets of cells ordered by the estimated ratio, j = 1..k-1: counts and members."""
    c_num = np.bincount(num, minlength=k).astype(float)
    c_den = np.bincount(den, minlength=k).astype(float)
    ratio = (c_num + 0.5) / (c_den + 0.5)
    order = np.lexsort((np.arange(k), -ratio))  # by ratio, descending; ties by index
    order = order[c_num[order] > 0]  # cells never seen on the numerator side add nothing
    return np.cumsum(c_num[order]), np.cumsum(c_den[order]), order


def choose_event(
    num: np.ndarray,
    den: np.ndarray,
    *,
    kind: str,
    delta: float,
    alpha: float,
    n_cells: int | None = None,
    describe=None,
    max_thresholds: int = 4000,
) -> Event:
    """The event with the largest eps_lb on these (selection) samples.

    ``num`` are outputs on the numerator dataset, ``den`` on the other, same length. Discrete:
    the sets of the j cells with the largest estimated ratio. Continuous: s >= t and s < t for
    thresholds t among the pooled sample values (quantiles when there are many).
    """
    total = len(num)
    if len(den) != total:
        raise ValueError(f"need equal sample sizes, found {total} and {len(den)}")
    if kind == "discrete":
        k = int(n_cells if n_cells is not None else max(num.max(), den.max()) + 1)
        cum_num, cum_den, order = _discrete_candidates(num, den, k)
        if len(order) == 0:
            return Event("empty (no output seen)", cells=())
        eps = epsilon_lower_bound(cum_num, cum_den, total, delta, alpha)
        j = int(np.argmax(eps)) + 1  # first maximum: the smallest set
        cells = tuple(sorted(int(c) for c in order[:j]))
        names = [describe(c) if describe else str(c) for c in cells]
        return Event("{" + ", ".join(names) + "}", cells=cells)
    if kind != "continuous":
        raise ValueError(f"kind must be 'discrete' or 'continuous', found {kind!r}")
    s_num, s_den = np.sort(num), np.sort(den)
    pooled = np.unique(np.concatenate([s_num, s_den]))
    if len(pooled) > max_thresholds:
        # dense in the tails, where the largest ratios of Gaussian-like outputs live
        tail = np.geomspace(1.0 / total, 0.5, max_thresholds // 2)
        levels = np.unique(np.concatenate([tail, 1.0 - tail]))
        pooled = np.unique(np.concatenate([np.quantile(pooled, levels), pooled[[0, -1]]]))
    # s >= t: count = total - #(s < t);  s < t: #(s < t)
    below_num = np.searchsorted(s_num, pooled, side="left")
    below_den = np.searchsorted(s_den, pooled, side="left")
    eps_up = epsilon_lower_bound(total - below_num, total - below_den, total, delta, alpha)
    eps_lo = epsilon_lower_bound(below_num, below_den, total, delta, alpha)
    if eps_up.max() >= eps_lo.max():
        t = float(pooled[int(np.argmax(eps_up))])
        return Event(f"s >= {t:.6g}", threshold=t, upper=True)
    t = float(pooled[int(np.argmax(eps_lo))])
    return Event(f"s < {t:.6g}", threshold=t, upper=False)
