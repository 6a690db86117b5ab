"""The scikit-learn-style estimators (``mechanisms.estimators``): fit, predict, score."""

from __future__ import annotations

import pytest

from mechanisms.base import PrivacyClaim
from mechanisms.estimators import (
    ExactERMClassifier,
    ExpMechClassifier,
    OPDiscClassifier,
    RSPMClassifier,
)


@pytest.mark.parametrize("cls", [OPDiscClassifier, RSPMClassifier, ExactERMClassifier])
def test_estimators_fit_predict_score(small, cls):
    clf = cls(epsilon=2.0, oracle="enumerate", random_state=0).fit(small.features, small.labels)
    assert clf.coef_.shape == (small.d,)
    assert clf.predict(small.features).shape == (small.n,)
    assert 0.0 <= clf.score(small.features, small.labels) <= 1.0
    assert isinstance(clf.release_.privacy, PrivacyClaim)
    assert clf.release_.privacy.delta == pytest.approx(1 / small.n**2) or cls is ExactERMClassifier


@pytest.mark.parametrize("cls", [OPDiscClassifier, RSPMClassifier])
def test_estimators_default_to_the_structured_oracle_and_agree_with_enumeration(small, cls):
    fast = cls(epsilon=2.0, random_state=0).fit(small.features, small.labels)
    exact = cls(epsilon=2.0, oracle="enumerate", random_state=0).fit(small.features, small.labels)
    (cert,) = fast.release_.certificates
    assert cert.backend == "structured" and cert.certified and fast.release_.privacy.holds
    # the same seed draws the same noise, so both solve the same problem
    assert cert.objective == pytest.approx(exact.release_.certificates[0].objective, abs=1e-6)


def test_expmech_estimator_and_unfitted_error(small):
    clf = ExpMechClassifier(epsilon=1.0, random_state=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        clf.predict(small.features)
    clf.fit(small.features, small.labels)
    assert clf.release_.privacy.holds and clf.release_.privacy.delta == 0.0
