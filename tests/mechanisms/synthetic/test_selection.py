"""mechanisms.synthetic.selection: the separator set is injective on the candidates (brute force
on small domains, both codes), the noise of an oracle problem is <eta, sig(c)>, and the record
weights sum to each conjunction's utility in counts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mechanisms.synthetic import selection
from mechanisms.synthetic.domain import Workload


def _candidates(sizes, k):
    for size in range(1, k + 1):
        for attrs in itertools.combinations(range(len(sizes)), size):
            for cell in itertools.product(*(range(sizes[a]) for a in attrs)):
                for sign in (1, -1):
                    yield tuple(zip(attrs, cell)), sign


@pytest.mark.parametrize("separator", selection.SEPARATORS)
@pytest.mark.parametrize("sizes", [(2,), (3, 2, 4), (1, 5, 7, 2), (8, 3, 2)])
def test_distinct_candidates_have_distinct_signatures(separator, sizes):
    k = len(sizes)
    signatures = {
        tuple(selection.signature(sizes, separator, q, s)) for q, s in _candidates(sizes, k)
    }
    assert len(signatures) == sum(1 for _ in _candidates(sizes, k))
    m = selection.signature_length(sizes, separator)
    assert all(len(sig) == m and set(sig) <= {0.0, 1.0} for sig in signatures)


def test_the_binary_code_needs_fewer_bits_than_one_hot():
    adult = (6, 9, 16, 7, 15, 6, 5, 2, 3, 3, 4, 42, 2)
    assert selection.signature_length(adult, "onehot") == 121
    assert selection.signature_length(adult, "binary") == 43


@pytest.mark.parametrize("separator", selection.SEPARATORS)
def test_the_problems_noise_is_eta_dot_the_signature(separator):
    sizes, eps0 = (3, 2, 4), 0.7
    m = selection.signature_length(sizes, separator)
    eta = np.random.default_rng(5).laplace(0.0, 2 * m / eps0, size=m)
    literal, sign_noise = selection.draw_noise(sizes, separator, eps0, np.random.default_rng(5))
    for q, s in _candidates(sizes, 3):
        noise = sum(literal[a][v] for a, v in q) + (sign_noise if s > 0 else 0.0)
        assert noise == pytest.approx(eta @ selection.signature(sizes, separator, q, s))
    assert selection.laplace_scale(sizes, separator, eps0) == 2 * m / eps0


def test_the_weights_sum_to_each_utility_in_counts():
    rng = np.random.default_rng(2)
    sizes = (3, 2, 4)
    codes = rng.integers(0, sizes, size=(200, 3))
    weights = selection.CountWeights(codes)
    workload = Workload.all_k_way(sizes, 2)
    for synthetic in (np.zeros((0, 3), dtype=int), rng.integers(0, sizes, size=(7, 3))):
        records, coefs = weights.weights(synthetic)
        answers = workload.answers(synthetic) if len(synthetic) else np.zeros(workload.queries)
        expected = 200 * (workload.answers(codes) - answers)  # count_D(q) - n q(S)
        for i in range(workload.queries):
            hold = np.all([records[:, a] == v for a, v in workload.conjunction(i)], axis=0)
            assert coefs[hold].sum() == pytest.approx(expected[i])
