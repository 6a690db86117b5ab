"""The scikit-learn-style estimators (``mechanisms.estimators``): fit, predict, score, their
input checks (scikit-learn's, with its messages, with or without scikit-learn) and their labels."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import mechanisms.estimators as estimators
from mechanisms.estimators import (
    CLASSIFIERS,
    DPSGDClassifier,
    ExactERMClassifier,
    ExpMechClassifier,
    LogisticRegressionClassifier,
    OPDiscClassifier,
    RSPMClassifier,
)
from mechanisms.privacy import PrivacyLeakWarning
from mechanisms.release import PrivacyClaim
from tests.requirements import missing


@pytest.mark.parametrize("cls", [OPDiscClassifier, RSPMClassifier, ExactERMClassifier])
def test_estimators_fit_predict_score(small, cls):
    clf = cls(epsilon=2.0, oracle="enumerate", random_state=0).fit(small.features, small.labels)
    assert clf.coef_.shape == (small.d,)
    assert clf.predict(small.features).shape == (small.n,)
    assert 0.0 <= clf.score(small.features, small.labels) <= 1.0
    assert isinstance(clf.release_.privacy, PrivacyClaim)
    assert clf.release_.privacy.delta == pytest.approx(1 / small.n**2) or cls is ExactERMClassifier
    assert clf.n_features_in_ == small.d


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
    with pytest.raises(estimators.NotFittedError, match="is not fitted yet"):
        clf.predict(small.features)
    clf.fit(small.features, small.labels)
    assert clf.release_.privacy.holds and clf.release_.privacy.delta == 0.0


# --- labels: {-1, +1} as they are (the releases of before), any other two mapped onto them ------


def _golden_data():
    rng = np.random.default_rng(11)
    X = np.round(rng.uniform(-1, 1, size=(30, 3)), 2)
    return X, np.where(X @ np.array([1.0, -0.5, 0.25]) > 0, 1, -1)


#: coef_ of every estimator on _golden_data() with random_state=5 (batch_size=8 for DP-SGD), as
#: the estimators released them before labels other than -1/+1 were accepted: the mapping of
#: labels must not change a release on -1/+1 labels.
GOLDEN_COEF = {
    "opdisc": [-1.0, -1.0, 0.0],
    "rspm_gaussian": [-1.0, -1.0, -1.0],
    "rspm_laplace": [1.0, 1.0, 0.0],
    "opsamp": [0.5039532144081265, 16.390695489746562, -73.37660811917918],
    "dpsgd_lr": [3.8149531982411276, -6.110330878527218, 2.7496581051024847],
    "expmech": [1.0, 0.0, 0.0],
    "erm_01": [1.0, 0.0, 0.0],
    "logistic_regression": [182.32403039506247, -61.499608611573635, 41.29919129626357],
}


def _golden(name, y, **changes):
    X, _ = _golden_data()
    options = {"batch_size": 8} if name == "dpsgd_lr" else {}
    return CLASSIFIERS[name](1.0, random_state=5, **options, **changes).fit(X, y)


def test_the_golden_table_covers_the_catalog():
    assert set(GOLDEN_COEF) == set(CLASSIFIERS)


@pytest.mark.parametrize("name", sorted(GOLDEN_COEF))
def test_a_release_on_minus_one_plus_one_labels_is_unchanged(name):
    _, y = _golden_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # -1/+1: nothing read off the data
        clf = _golden(name, y)
    np.testing.assert_allclose(clf.coef_, GOLDEN_COEF[name], rtol=1e-9, atol=0)
    np.testing.assert_array_equal(clf.classes_, [-1, 1])
    assert set(np.unique(clf.predict(_golden_data()[0]))) <= {-1, 1}


@pytest.mark.parametrize(
    "labels", [(0, 1), (1, 2), ("no", "yes"), (False, True), (-1, 2)], ids=repr
)
@pytest.mark.parametrize("name", ["opdisc", "dpsgd_lr", "logistic_regression"])
def test_any_two_labels_are_mapped_onto_minus_one_plus_one_and_back(name, labels):
    X, signs = _golden_data()
    y = np.where(signs > 0, labels[1], labels[0])
    with pytest.warns(PrivacyLeakWarning, match=r"the label set classes_ = .* is read off"):
        clf = _golden(name, y)
    np.testing.assert_allclose(clf.coef_, GOLDEN_COEF[name], rtol=1e-9, atol=0)  # same release
    np.testing.assert_array_equal(clf.classes_, np.array(labels))
    predicted = clf.predict(X)
    assert set(predicted.tolist()) <= set(labels)
    np.testing.assert_array_equal(predicted == labels[1], _golden(name, signs).predict(X) == 1)
    assert clf.score(X, y) == _golden(name, signs).score(X, signs)


def test_score_on_zero_one_labels_is_the_accuracy():
    """The reliability report: {0, 1} labels scored 0.5 where the truth is 1.0."""
    X, signs = _golden_data()
    y = (signs > 0).astype(int)
    with pytest.warns(PrivacyLeakWarning):
        clf = LogisticRegressionClassifier().fit(X, y)
    assert clf.score(X, y) == 1.0
    np.testing.assert_array_equal(clf.predict(X), y)


def test_score_refuses_labels_fit_did_not_see():
    X, signs = _golden_data()
    clf = _golden("logistic_regression", signs)
    with pytest.raises(
        ValueError, match=re.escape("y has labels not seen in fit: [0]; fit's classes_ are [-1, 1]")
    ):
        clf.score(X, (signs > 0).astype(int))


def test_fit_refuses_more_than_two_classes():
    X, signs = _golden_data()
    y = np.arange(len(signs)) % 3
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        LogisticRegressionClassifier().fit(X, y)


def test_one_class_is_refused_unless_it_is_minus_one_or_plus_one():
    X, _ = _golden_data()
    with pytest.raises(ValueError, match=r"y has 1 class \(\['a'\]\): fit needs the two classes"):
        LogisticRegressionClassifier().fit(X, np.full(len(X), "a"))
    # +1 only: one of the mechanisms' own labels, classes_ still [-1, +1] (not read off the data)
    clf = OPDiscClassifier(random_state=0).fit(X, np.ones(len(X), dtype=int))
    np.testing.assert_array_equal(clf.classes_, [-1, 1])
    # what a private estimator does instead of scikit-learn's check_classifiers_one_label:
    # it predicts labels of classes_, and its guarantee holds whatever the noise made it predict
    assert set(np.unique(clf.predict(X))) <= {-1, 1} and clf.release_.privacy.holds


def test_logistic_regression_reports_its_iterations():
    X, y = _golden_data()
    clf = _golden("logistic_regression", y)
    assert clf.n_iter_ == clf.release_.params["iterations"] >= 1
    assert not hasattr(_golden("opdisc", y), "n_iter_")


# --- the input checks: scikit-learn's, with its messages, with and without scikit-learn -------


@pytest.fixture(params=["sklearn", "local"])
def validation(request, monkeypatch):
    """Each input check runs with scikit-learn's validation and with the local equivalent."""
    if request.param == "sklearn":
        if estimators._sklearn() is None:
            missing("scikit-learn >= 1.6 is not installed (pip install -e '.[test]')")
    else:
        monkeypatch.setattr(estimators, "_sklearn", lambda: None)
    return request.param


@pytest.fixture(scope="module")
def fitted(small):
    return OPDiscClassifier(epsilon=2.0, random_state=0).fit(small.features, small.labels)


def _raises(exc, message):
    return pytest.raises(exc, match=re.escape(message))


def test_predict_refuses_nan(validation, fitted, small):
    X = small.features[:4].copy()
    X[1, 2] = np.nan
    with _raises(ValueError, "Input X contains NaN."):
        fitted.predict(X)


def test_predict_refuses_infinity(validation, fitted, small):
    X = small.features[:4].copy()
    X[0, 0] = -np.inf
    with _raises(ValueError, "Input X contains infinity or a value too large for dtype('float64')"):
        fitted.predict(X)


def test_predict_refuses_a_wrong_width(validation, fitted, small):
    with _raises(
        ValueError, "X has 3 features, but OPDiscClassifier is expecting 5 features as input."
    ):
        fitted.predict(small.features[:4, :3])


@pytest.mark.parametrize("method", ["predict", "score"])
def test_a_1d_row_is_refused(validation, fitted, small, method):
    args = (small.features[0],) + ((small.labels[:1],) if method == "score" else ())
    with _raises(ValueError, "Expected 2D array, got 1D array instead:"):
        getattr(fitted, method)(*args)


def test_score_refuses_a_y_of_another_length(validation, fitted, small):
    with _raises(ValueError, "Found input variables with inconsistent numbers of samples: [5, 4]"):
        fitted.score(small.features[:5], small.labels[:4])


def test_fit_refuses_a_y_of_another_length(validation, small):
    with _raises(ValueError, "Found input variables with inconsistent numbers of samples: [5, 4]"):
        OPDiscClassifier().fit(small.features[:5], small.labels[:4])


def test_fit_refuses_nan_in_y(validation, small):
    y = small.labels[:6].astype(float)
    y[2] = np.nan
    with _raises(ValueError, "Input y contains NaN."):
        OPDiscClassifier().fit(small.features[:6], y)


def test_fit_refuses_a_continuous_y(validation, small):
    with _raises(ValueError, "Unknown label type: continuous."):
        OPDiscClassifier().fit(small.features[:3], [0.5, 1.5, 2.25])


def test_fit_refuses_strings_as_features(validation, small):
    with _raises(ValueError, "dtype='numeric' is not compatible with arrays of bytes/strings."):
        OPDiscClassifier().fit([["a", "b"], ["c", "d"]], [1, -1])


def test_fit_refuses_one_row_without_delta_in_user_terms(validation, small):
    X, y = small.features[:1], small.labels[:1]
    with _raises(
        ValueError,
        "fit got 1 sample: OPDiscClassifier's default delta = 1/n^2 needs n >= 2 samples "
        "(delta must be < 1); give more samples or pass delta explicitly",
    ):
        OPDiscClassifier().fit(X, y)
    assert OPDiscClassifier(delta=0.1, random_state=0).fit(X, y).coef_.shape == (small.d,)
    LogisticRegressionClassifier().fit(X, y)  # no delta to default: one row is fine


def test_fit_on_fewer_rows_than_the_default_batch_says_so_and_what_to_pass(small):
    X, y = small.features[:40], small.labels[:40]
    with _raises(
        ValueError,
        "fit got 40 samples, fewer than DPSGDClassifier's batch_size = 64 (the default): a "
        "batch is at most the training rows; pass batch_size <= 40, e.g. "
        "DPSGDClassifier(batch_size=40)",
    ):
        DPSGDClassifier(random_state=0).fit(X, y)
    with _raises(ValueError, "fewer than DPSGDClassifier's batch_size = 50: a batch"):
        DPSGDClassifier(batch_size=50, random_state=0).fit(X, y)  # given, not the default
    fitted = DPSGDClassifier(batch_size=40, random_state=0).fit(X, y)  # the advice works
    assert fitted.coef_.shape == (small.d,)


@pytest.mark.parametrize(
    "random_state, error, message",
    [
        (
            "x",
            TypeError,
            "random_state must be None, an int seed >= 0 or a numpy.random.Generator, found 'x'",
        ),
        (1.5, TypeError, "found 1.5"),
        (True, TypeError, "found True"),
        (-1, ValueError, "random_state must be an int seed >= 0, found -1"),
    ],
)
def test_a_bad_random_state_gets_the_projects_one_line(small, random_state, error, message):
    with pytest.raises(error) as raised:
        OPDiscClassifier(random_state=random_state).fit(small.features, small.labels)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert "SeedSequence" not in str(raised.value)


def test_random_state_takes_a_seed_a_numpy_integer_or_a_generator(small):
    X, y = small.features, small.labels
    seeded = ExpMechClassifier(random_state=3).fit(X, y).coef_
    np.testing.assert_array_equal(
        ExpMechClassifier(random_state=np.int64(3)).fit(X, y).coef_, seeded
    )
    given = ExpMechClassifier(random_state=np.random.default_rng(3)).fit(X, y).coef_
    np.testing.assert_array_equal(given, seeded)


@pytest.mark.parametrize("method", ["predict", "score"])
def test_predict_and_score_before_fit_raise_not_fitted(validation, small, method):
    args = (small.features, small.labels)[: 1 if method == "predict" else 2]
    with pytest.raises(estimators.NotFittedError) as raised:
        getattr(OPDiscClassifier(), method)(*args)
    assert str(raised.value).startswith("This OPDiscClassifier instance is not fitted yet.")
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, AttributeError)


def test_not_fitted_error_is_scikit_learns_where_installed(validation):
    error = estimators.NotFittedError
    if validation == "sklearn":
        from sklearn.exceptions import NotFittedError

        assert error is NotFittedError
    else:
        assert error.__module__ == "mechanisms.estimators" and error.__name__ == "NotFittedError"
    assert issubclass(error, ValueError) and issubclass(error, AttributeError)


def test_a_failed_fit_leaves_the_estimator_unfitted(validation, small):
    clf = OPDiscClassifier(random_state=0).fit(small.features, small.labels)
    with pytest.raises(ValueError, match="fit got 1 sample"):
        clf.fit(small.features[:1, :3], small.labels[:1])
    with pytest.raises(estimators.NotFittedError):
        clf.predict(small.features)
    assert not hasattr(clf, "n_features_in_") and not hasattr(clf, "classes_")


def test_a_column_vector_y_is_taken_with_a_warning(validation, small):
    X, y = small.features[:20], small.labels[:20]
    with pytest.warns(UserWarning, match="A column-vector y was passed when a 1d array"):
        column = OPDiscClassifier(random_state=0).fit(X, y[:, None])
    np.testing.assert_array_equal(column.coef_, OPDiscClassifier(random_state=0).fit(X, y).coef_)


def test_the_estimators_show_their_parameters_as_scikit_learn_does():
    assert repr(OPDiscClassifier(4.0, oracle="enumerate")) == (
        "OPDiscClassifier(epsilon=4.0, oracle='enumerate')"
    )
    assert repr(LogisticRegressionClassifier()) == "LogisticRegressionClassifier()"


# --- scikit-learn's own estimator checks ------------------------------------------------------

try:  # scikit-learn is optional: without it, only these checks are skipped
    from sklearn.utils.estimator_checks import parametrize_with_checks
except ImportError:
    parametrize_with_checks = None

#: The checks that cannot apply to a private estimator, and why (scikit-learn's check names).
#: Multiclass checks are not run (the estimators' tags say binary only, and scikit-learn checks
#: instead that fit refuses three classes), nor sample-weight ones (fit takes none).
NOT_FOR_PRIVATE = {
    "check_classifiers_one_label": (
        "labels in {-1, +1} are the mechanisms' own: a y of +1 only is one class of the two, "
        "classes_ stays [-1, +1] (never read off the data), and a private release may predict "
        "-1 for some rows; whether it does depends on the noise the seed draws "
        "(test_one_class_is_refused_unless_it_is_minus_one_or_plus_one asserts this behaviour)"
    ),
}


def _check_name(check) -> str:
    while hasattr(check, "func"):  # functools.partial, maybe nested
        check = check.func
    return check.__name__


#: The estimators checked, small and seeded (scikit-learn's checks set random_state): the two
#: that call no oracle and fit any data (the exponential mechanism's grid has up to 7^10 points
#: on the checks' 10 features, beyond its max_points) and one that calls an oracle.
CHECKED = [
    LogisticRegressionClassifier(),
    DPSGDClassifier(4.0, batch_size=10, epochs=1.0),
    OPDiscClassifier(4.0, oracle="structured"),
]

if parametrize_with_checks is None:

    def test_scikit_learn_estimator_checks():
        missing("scikit-learn >= 1.6 is not installed (pip install -e '.[test]')")

else:
    with warnings.catch_warnings():  # "does not inherit from BaseEstimator": sklearn is optional
        warnings.simplefilter("ignore", UserWarning)
        _checks = parametrize_with_checks(CHECKED)

    @pytest.mark.filterwarnings("ignore::mechanisms.privacy.PrivacyLeakWarning")  # {0, 1} labels
    @_checks
    def test_scikit_learn_estimator_checks(estimator, check):
        reason = NOT_FOR_PRIVATE.get(_check_name(check))
        if reason and estimator._entry.private:
            pytest.skip(reason)
        check(estimator)
