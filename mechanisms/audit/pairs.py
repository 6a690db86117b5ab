"""Neighbouring pairs built to push each mechanism to its edge.

Notation for d = 1 (the grid {-1, 0, 1}; h_w(x) = +1 iff w x >= mu): w = 0 predicts -1
everywhere, w = 1 predicts +1 on x > 0, w = -1 on x < 0. The loss vectors (l(-1), l(0), l(1))
of the example types are

    (1, +1): (1, 1, 0)    (1, -1): (0, 0, 1)    (0, +1): (1, 1, 1)
    (-1, +1): (0, 1, 1)   (-1, -1): (1, 0, 0)   (0, -1): (0, 0, 0)

and a replacement changes the loss of each w by Delta(w) = l(new, w) - l(old, w) in {-1, 0, 1}.
Flipping the label of an example at x = +-1 is the largest change any one example makes; the
rest of each dataset only places the decision it flips (duplicated rows push it into the tail
of the noise, where the likelihood ratio is largest). The d = 2 pairs were found by a seeded
random search over small datasets on {-1, 0, 1}^2 (the best for the mutants named there) and
check that nothing is lost by auditing d = 1 instead.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from mechanisms.audit.core import NeighbouringPair

Row = tuple[tuple[float, ...], int, int]  # (x, y, count)


def _rows(spec: Iterable[Row]) -> tuple[np.ndarray, np.ndarray]:
    X, y = [], []
    for x, label, count in spec:
        X += [list(x)] * count
        y += [label] * count
    return np.array(X, dtype=float), np.array(y, dtype=np.int8)


def replace_pair(
    name: str, base: Iterable[Row], old: Row, new: Row, note: str, **kwargs
) -> NeighbouringPair:
    """D = base + old, D' = base + new (the replaced example is the last row)."""
    base = list(base)
    X0, y0 = _rows(base + [(old[0], old[1], 1)])
    X1, y1 = _rows(base + [(new[0], new[1], 1)])
    return NeighbouringPair(name, X0, y0, X1, y1, relation="replace", note=note, **kwargs)


def add_pair(name: str, base: Iterable[Row], added: Row, note: str, **kwargs) -> NeighbouringPair:
    """D = base, D' = base + added (add/remove)."""
    base = list(base)
    X0, y0 = _rows(base)
    X1, y1 = _rows(base + [(added[0], added[1], 1)])
    return NeighbouringPair(name, X0, y0, X1, y1, relation="add_remove", note=note, **kwargs)


# --- OPDisc and the exponential mechanism (OPDisc's grid) ---------------------------------------


def _d2_search_pair(name: str, note: str) -> NeighbouringPair:
    # (1,1): 3 x +1 and 6 x -1; (-1,-1): 3 x -1; (0,-1): 3 x +1; one (1,1) flips +1 -> -1
    base = [((1.0, 1.0), 1, 2), ((1.0, 1.0), -1, 6), ((-1.0, -1.0), -1, 3), ((0.0, -1.0), 1, 3)]
    return replace_pair(name, base, ((1.0, 1.0), 1), ((1.0, 1.0), -1), note)


def opdisc_pairs() -> list[NeighbouringPair]:
    return [
        replace_pair(
            "flip_far_label",
            [((-1.0,), -1, 1)],
            ((1.0,), -1),
            ((1.0,), 1),
            "the flip moves L(1) + L(-1) - 2 L(0) from 2 to 0: without the normalization pi "
            "(w = 0 gets no noise) w = 0 can win on D and never on D'",
        ),
        replace_pair(
            "duplicated_rows_tail",
            [((1.0,), 1, 30)],
            ((1.0,), 1),
            ((-1.0,), 1),
            "31 copies of (1, +1) make w = 1 win by 31: the other outputs need eta_1 about 2 s.d. "
            "(of sigma / 3) into the tail; the replacement shifts the noise by |v| = sqrt(2), "
            "the largest any d = 1 replacement makes",
        ),
        _d2_search_pair(
            "d2_duplicated_flip",
            "d = 2, 15 rows, a label flip at x = (1, 1) (best of a random search for sigma / 3)",
        ),
    ]


def expmech_pairs() -> list[NeighbouringPair]:
    return [
        replace_pair(
            "far_flip_rare_output",
            [((1.0,), 1, 7)],
            ((1.0,), 1),
            ((-1.0,), 1),
            "Delta = (-1, 0, 1) and w = -1 has small mass: its ratio approaches e^epsilon",
        ),
        replace_pair(
            "label_flip_duplicates",
            [((1.0,), 1, 5)],
            ((1.0,), -1),
            ((1.0,), 1),
            "Delta = (1, 1, -1) with w = 1 dominant: {-1, 0} is rare and moves by e^epsilon",
        ),
        _d2_search_pair("d2_duplicated_flip", "d = 2 (9 grid points), a label flip at (1, 1)"),
    ]


# --- RSPM --------------------------------------------------------------------------------------


def rspm_pairs() -> list[NeighbouringPair]:
    d2_base = [
        ((0.0, 0.0), -1, 1),
        ((1.0, 1.0), -1, 2),
        ((1.0, 0.0), -1, 2),
        ((-1.0, -1.0), -1, 1),
        ((1.0, 1.0), 1, 1),
        ((-1.0, 0.0), -1, 1),
        ((0.0, -1.0), -1, 1),
    ]
    return [
        replace_pair(
            "separator_aligned_flip",
            [((1.0,), 1, 1)],
            ((1.0,), -1),
            ((1.0,), 1),
            "the replaced example becomes a copy of the separator element (e_1, +1): "
            "L(1) - L(0) goes 0 -> -2, both in the left tail of the separator weight",
        ),
        replace_pair(
            "aligned_with_dropped_separator",
            [],
            ((-1.0,), -1),
            ((-1.0,), 1),
            "the new example is the separator element (-e_1, +1): L(-1) - L(0) goes +1 -> -1, "
            "the decision between w = -1 and w = 0 that only that element's weight randomizes",
        ),
        replace_pair(
            "duplicated_rows_tail",
            [((1.0,), 1, 28)],
            ((1.0,), 1),
            ((1.0,), -1),
            "28 duplicated rows put w = 0 about 2.5 s.d. (sigma / 3) into the tail; the "
            "replacement moves L(1) - L(0) by 2",
        ),
        replace_pair(
            "d2_random_search",
            d2_base,
            ((1.0, -1.0), -1),
            ((1.0, 1.0), 1),
            "d = 2, 10 rows (best of a random search for the quarter-scale Laplace mutant)",
        ),
    ]


# --- DP-SGD ------------------------------------------------------------------------------------


def dpsgd_pairs() -> list[NeighbouringPair]:
    """Replace-one pairs (DP-SGD's claim is replace-one by group privacy, mechanisms.dpsgd).

    The audit first ran add/remove pairs against an add/remove claim and found it broken (q = b/n
    and z calibrated from the private n: n = 2 -> 3 measured eps_lb 3.19 against 1), and found
    that a replacement moves the clipped sum by 2C (eps_lb 1.45 against 1). DP-SGD now claims
    replace-one, with n public: add/remove pairs are not neighbours of that claim.
    """
    # zero-feature rows have zero gradient, so they add no signal of their own
    pad = [((0.0,), 1, 10_000)]
    return [
        replace_pair(
            "replace_large_norm_flip",
            [((0.0,), 1, 50)],
            ((10.0,), 1),
            ((10.0,), -1),
            "the norm-10 example's label flipped: the clipped gradient goes -C -> +C; "
            "q = 1, T = 1: the Gaussian mechanism with sensitivity 2C",
            settings={"batch_size": 51, "steps": 1},
        ),
        replace_pair(
            "replace_zero_with_large_norm",
            pad,
            ((0.0,), 1),
            ((10.0,), 1),
            "a zero row replaced by an example of norm 10 (gradient clipped to C); "
            "Poisson sampling q = 1/2 and T = 4 averaged iterates",
            settings={"batch_size": 5_000, "steps": 4},
        ),
        replace_pair(
            "replace_with_duplicate",
            pad + [((3.0,), 1, 5)],
            ((0.0,), 1),
            ((3.0,), 1),
            "a zero row replaced by a 6th duplicate of a clipped example, T = 2",
            settings={"batch_size": 10_005, "steps": 2},
        ),
    ]


# --- OPSamp ------------------------------------------------------------------------------------


def opsamp_pairs() -> list[NeighbouringPair]:
    return [
        replace_pair(
            "flip_label_n1",
            [],
            ((1.0,), 1),
            ((1.0,), -1),
            "n = 1: on D f' < 0 on the whole box for every sigma >= 0, so every w_k = 1; on D' "
            "w_k < 1 whenever sigma_k < f'(1) (about 12% of releases have some w_k < 1)",
        ),
        replace_pair(
            "flip_label_zero_padding",
            [((0.0,), 1, 3)],
            ((1.0,), 1),
            ((1.0,), -1),
            "the same flip beside 3 zero-feature rows (n = 4: m = 13, smaller eta)",
        ),
        replace_pair(
            "zero_to_misclassified",
            [],
            ((0.0,), -1),
            ((1.0,), -1),
            "a zero-feature row (no gradient: w_k = 1 always) replaced by a misclassified one",
        ),
    ]
