"""The synthetic generator (pipeline.data.synthetic): seeded, shaped as documented, labels at
the median of a hidden linear score with the stated noise rate, and bad arguments refused."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.data.synthetic import make_linear_threshold


def test_synthetic_is_seeded_and_shaped():
    a = make_linear_threshold(300, 2, groups=(3, 4), levels=4, seed=7)
    b = make_linear_threshold(300, 2, groups=(3, 4), levels=4, seed=7)
    c = make_linear_threshold(300, 2, groups=(3, 4), levels=4, seed=8)
    assert a.d == 9 and a.n == 300
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert not np.array_equal(a.features, c.features)
    assert (a.features[:, :3].sum(axis=1) == 1).all() and (
        a.features[:, 3:7].sum(axis=1) == 1
    ).all()
    assert a.merged().n_distinct < a.n  # rounding to levels makes duplicate rows


def test_synthetic_label_noise_is_near_its_rate():
    clean = make_linear_threshold(4000, 3, label_noise=0.0, seed=1)
    noisy = make_linear_threshold(4000, 3, label_noise=0.2, seed=1)
    flipped = (clean.labels != noisy.labels).mean()
    # Binomial(4000, 0.2): sd 0.0063, so +-0.03 is over 4.5 sd (error rate < 1e-5)
    assert abs(flipped - 0.2) < 0.03


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(n=1, n_continuous=2),
        dict(n=10, n_continuous=2, label_noise=0.7),
        dict(n=10, n_continuous=0),
        dict(n=10, n_continuous=1, groups=(1,)),
    ],
)
def test_synthetic_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        make_linear_threshold(**kwargs)


def test_names_provenance_and_levels_are_as_documented():
    data = make_linear_threshold(50, 2, groups=(2, 3), levels=3, label_noise=0.0, seed=4)
    assert data.feature_names == ("g0=0", "g0=1", "g1=0", "g1=1", "g1=2", "x0", "x1")
    assert set(np.unique(data.features[:, 5:])) <= {0.0, 0.5, 1.0}  # 3 levels on [0, 1]
    prov = data.provenance
    assert (prov["seed"], prov["groups"], prov["n_continuous"], prov["levels"]) == (4, [2, 3], 2, 3)
    assert len(prov["w_star"]) == data.d == 7
    # without noise the labels are the median cut of <w*, x>; the record rounds w* to 6 digits,
    # which moves a score by < 1e-5: rows that far from the median are labelled by their side
    scores = data.features @ np.array(prov["w_star"])
    far = np.abs(scores - np.median(scores)) > 1e-5
    assert far.sum() >= 40
    np.testing.assert_array_equal(data.labels[far] == 1, scores[far] > np.median(scores))


def test_without_levels_the_continuous_columns_are_uniform_and_the_classes_balanced():
    data = make_linear_threshold(2000, 2, label_noise=0.0, seed=3)
    assert (data.features >= 0).all() and (data.features < 1).all()
    assert len(np.unique(data.features[:, 0])) == 2000  # continuous: no two rows alike
    assert (data.labels == 1).sum() == 1000  # at or above the median: half of distinct scores


@pytest.mark.parametrize("n", [True, 2.0, "10"])
def test_n_must_be_an_integer(n):
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        make_linear_threshold(n, 2)
