"""mechanisms.synthetic.domain: a public domain codes records, a workload of marginals answers
every cell as a fraction, each cell a conjunction, and a class of conjunctions too large to list
is measured exactly without listing it."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from mechanisms.synthetic.domain import ConjunctionClass, Domain, Workload, conjunction_count

DOMAIN = Domain(("sex", "age", "income"), (("f", "m"), ("<30", "30-50", ">50"), ("<=50K", ">50K")))


def test_records_are_coded_by_their_public_levels_and_back():
    rows = [("f", "<30", ">50K"), ("m", ">50", "<=50K")]
    codes = DOMAIN.encode(rows)
    assert codes.tolist() == [[0, 0, 1], [1, 2, 0]] and DOMAIN.sizes == (2, 3, 2)
    assert DOMAIN.decode(codes) == rows


def test_a_value_outside_the_levels_names_the_row_and_the_attribute():
    with pytest.raises(ValueError, match=r"row 1: 'age' is '99', not one of its levels"):
        DOMAIN.encode([("f", "<30", ">50K"), ("m", "99", ">50K")])


def test_a_domain_needs_distinct_names_and_levels():
    with pytest.raises(ValueError, match="distinct attribute names"):
        Domain(("a", "a"), (("x",), ("y",)))
    with pytest.raises(ValueError, match="'a': its levels must be distinct"):
        Domain(("a",), (("x", "x"),))


def test_a_workload_answers_each_cell_as_a_fraction_and_names_its_conjunction():
    codes = np.array([[0, 0, 1], [1, 2, 0], [1, 2, 1], [1, 0, 1]])
    workload = Workload(DOMAIN.sizes, ((0, 2), (1,)))
    answers = workload.answers(codes)
    assert workload.queries == 4 + 3
    assert answers.tolist() == [0, 0.25, 0.25, 0.5, 0.5, 0, 0.5]
    assert workload.conjunction(3) == ((0, 1), (2, 1))  # sex = m and income > 50K
    assert workload.conjunction(6) == ((1, 2),)
    by_hand = np.mean([all(r[a] == v for a, v in workload.conjunction(3)) for r in codes])
    assert answers[3] == by_hand
    with pytest.raises(IndexError):
        workload.conjunction(7)


def test_weighted_answers_and_errors():
    workload = Workload(DOMAIN.sizes, ((0,),))
    codes = np.array([[0, 0, 0], [1, 0, 0]])
    assert workload.answers(codes, weights=np.array([3.0, 1.0])).tolist() == [0.75, 0.25]
    assert workload.errors(codes, codes[:1]).tolist() == [0.5, 0.5]


def test_all_k_way_marginals():
    workload = Workload.all_k_way(DOMAIN.sizes, 2)
    assert workload.marginals == ((0, 1), (0, 2), (1, 2))
    assert workload.queries == 6 + 4 + 6
    with pytest.raises(ValueError, match="k must be <= the 3 attributes"):
        Workload.all_k_way(DOMAIN.sizes, 4)
    with pytest.raises(ValueError, match="distinct attributes of the domain"):
        Workload(DOMAIN.sizes, ((0, 0),))


def test_counts_and_cells_add_up_round_by_round_to_the_answers():
    # the game keeps its table's counts by adding each round's records (docs/synthetic.md 2.6)
    workload = Workload.all_k_way(DOMAIN.sizes, 2)
    rng = np.random.default_rng(3)
    codes = np.stack([rng.integers(0, k, 40) for k in DOMAIN.sizes], 1)
    cells = workload.cells(codes)
    assert cells.shape == (40, 3)
    for i, record in enumerate(codes):
        for j, query in enumerate(cells[i]):
            literals = workload.conjunction(int(query))
            assert all(record[a] == v for a, v in literals)
            assert [a for a, _ in literals] == list(workload.marginals[j])
    running = sum(workload.counts(block) for block in np.split(codes, 4))
    assert np.array_equal(running / 40, workload.answers(codes))


def _every_conjunction(sizes, k):
    for j in range(1, k + 1):
        for attrs in itertools.combinations(range(len(sizes)), j):
            for levels in itertools.product(*(range(sizes[a]) for a in attrs)):
                yield tuple(zip(attrs, levels))


def _brute_errors(sizes, k, real, synthetic):
    """Every conjunction's |q(real) - q(synthetic)| as an exact fraction, by listing the class."""
    out = {}
    for conjunction in _every_conjunction(sizes, k):
        hold = [np.all([t[:, a] == v for a, v in conjunction], axis=0) for t in (real, synthetic)]
        out[conjunction] = Fraction(int(hold[0].sum()), len(real)) - Fraction(
            int(hold[1].sum()), len(synthetic)
        )
    return out


def test_the_class_largest_error_is_the_listed_maximum_exactly_ties_included():
    # docs/synthetic.md 5: the search with zero noise, on integer weights, returns the maximum
    # a listing of the class finds, to the last bit, and a conjunction and sign that reach it
    rng = np.random.default_rng(0)
    ties = 0
    for trial in range(60):
        sizes = tuple(int(v) for v in rng.integers(1, 4, size=int(rng.integers(2, 5))))
        k = int(rng.integers(1, len(sizes) + 1))
        n, size = int(rng.integers(1, 12)), int(rng.integers(1, 9))
        real = np.stack([rng.integers(0, s, n) for s in sizes], 1)
        synthetic = np.stack([rng.integers(0, s, size) for s in sizes], 1)
        if trial % 3 == 0:  # the same records: every error 0, all tied
            synthetic = real[rng.permutation(n)]
        brute = _brute_errors(sizes, k, real, synthetic)
        largest = max(abs(e) for e in brute.values())
        ties += sum(abs(e) == largest for e in brute.values()) > 1
        found = ConjunctionClass(sizes, k).max_error(real, synthetic)
        assert found.value == float(largest)
        assert found.sign * brute[found.conjunction] == largest
        assert found.certificate.certified
        assert len(brute) == conjunction_count(sizes, k) == ConjunctionClass(sizes, k).queries
    assert ties >= 20  # the maximum was tied in many of the instances


def test_the_class_mean_error_is_the_k_way_marginals_mean_cell():
    rng = np.random.default_rng(1)
    sizes = (3, 2, 4, 2)
    real = np.stack([rng.integers(0, s, 40) for s in sizes], 1)
    synthetic = np.stack([rng.integers(0, s, 15) for s in sizes], 1)
    listed = Workload.all_k_way(sizes, 3)
    cls = ConjunctionClass(sizes, 3)
    assert cls.marginals == listed.marginals
    assert cls.mean_error(real, synthetic) == pytest.approx(
        listed.errors(real, synthetic).mean(), rel=1e-12
    )


def test_a_class_needs_at_most_as_many_literals_as_attributes():
    with pytest.raises(ValueError, match="max_literals must be <= the 2 attributes"):
        ConjunctionClass((2, 3), 3)
