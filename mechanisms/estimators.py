"""Scikit-learn style estimators over the catalog's mechanisms (fit / predict / score / ``coef_``).

    clf = OPDiscClassifier(epsilon=1.0, random_state=0).fit(X, y)   # oracle="structured"
    clf.score(X_test, y_test); clf.coef_; clf.release_.privacy.holds

One class per catalog entry (``mechanisms.catalog``), made from it: its keywords are the entry's
settings with their defaults, beside ``epsilon``, ``delta``, ``margin``, ``random_state`` and,
for a mechanism that calls an oracle, ``oracle``, ``time_limit`` and ``threads``; ``fit`` takes
the entry's one path (``Entry.release``). A mechanism added to the catalog has its estimator.

``delta`` defaults to 1/n^2 (SPEC section 9; n is public under replace-one neighbouring), so
``fit`` needs n >= 2 unless ``delta`` is given (or the mechanism takes none).
``oracle`` is an oracle object or a name for ``oracles.routing.registry.make_oracle`` (used where the
entry lets the caller choose; OPSamp's logistic loss always takes the convex oracle).
``random_state`` is None, an int seed >= 0 or a ``numpy.random.Generator``; anything else is a
one-line TypeError (ValueError for a negative seed) naming it. A ``batch_size`` (DP-SGD's,
default 64) larger than the rows ``fit`` gets is refused before anything runs, saying whether
it is the default and what to pass (the batch stays as given: q = batch_size / n is what the
accountant is told, so it is never shrunk behind the caller's back).

Labels. The mechanisms classify into -1 and +1. Labels in {-1, +1} (numbers) are taken as they
are: ``classes_`` is [-1, +1] whatever the data hold, even one class only (it does not
depend on which labels occur). Any other binary labels ({0, 1}, two strings, ...) are mapped,
as scikit-learn's classifiers do, ``classes_[0]`` (the smaller) to -1 and ``classes_[1]`` to
+1, and ``predict`` answers in ``classes_``; which two labels occur is then read off the data (a
``PrivacyLeakWarning``), and y must hold exactly two. More than two classes, or labels at
``score`` that fit did not see, are a ValueError.

Input is checked as scikit-learn checks it, with its messages (``sklearn.utils.validation``
where scikit-learn >= 1.6 is installed, an equivalent here otherwise; scikit-learn is optional):
X 2-D, numeric, finite, with the ``n_features_in_`` columns of fit; y 1-D, as long as X.
``predict`` or ``score`` before ``fit`` raise ``NotFittedError`` (scikit-learn's where it is
installed; ``mechanisms.estimators.NotFittedError`` is that class, or a local
``NotFittedError(ValueError, AttributeError)`` without it).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import warnings
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from core.objective import DEFAULT_MARGIN, predict
from mechanisms.catalog import BY_KIND, CATALOG
from mechanisms.entries import ClassifierEntry, Entry, Labelled, Request
from mechanisms.privacy import warn_data_dependent
from mechanisms.release import Release
from oracles.contract.certificate import Configured
from oracles.contract.budget import DEFAULT_THREADS, DEFAULT_TIME_LIMIT, Limited
from oracles.routing.registry import make_oracle
from oracles.routing.routes import DEFAULT_ROUTE

#: The oracle an estimator uses where its entry lets the caller choose.
DEFAULT_ORACLE = DEFAULT_ROUTE
#: The mechanisms' own labels: y in these is taken as it is (module docstring).
NATIVE_CLASSES = (-1, 1)


class _LocalNotFittedError(ValueError, AttributeError):
    """An estimator used before ``fit`` (scikit-learn's ``NotFittedError`` without it)."""


_LocalNotFittedError.__name__ = _LocalNotFittedError.__qualname__ = "NotFittedError"


@functools.cache
def _sklearn() -> SimpleNamespace | None:
    """What the estimators use of scikit-learn (>= 1.6), imported on first use; None without it."""
    try:
        from sklearn import exceptions, utils
        from sklearn.utils import multiclass, validation

        return SimpleNamespace(
            NotFittedError=exceptions.NotFittedError,
            Tags=utils.Tags,  # 1.6
            TargetTags=utils.TargetTags,
            ClassifierTags=utils.ClassifierTags,
            InputTags=utils.InputTags,
            check_classification_targets=multiclass.check_classification_targets,
            type_of_target=multiclass.type_of_target,
            check_consistent_length=validation.check_consistent_length,
            check_is_fitted=validation.check_is_fitted,
            column_or_1d=validation.column_or_1d,
            validate_data=validation.validate_data,  # 1.6
        )
    except (ImportError, AttributeError):  # not installed, or older than 1.6
        return None


def __getattr__(name: str) -> Any:
    if name == "NotFittedError":  # scikit-learn's class where it is installed (module docstring)
        sk = _sklearn()
        return _LocalNotFittedError if sk is None else sk.NotFittedError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _generator(random_state: Any) -> np.random.Generator:
    """The generator of ``random_state``: None (fresh entropy), an int seed >= 0, or a
    ``numpy.random.Generator`` (used as it is); anything else is refused in one line naming
    ``random_state`` (not numpy's ``SeedSequence`` message)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is not None and (
        isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer))
    ):
        raise TypeError(
            f"random_state must be None, an int seed >= 0 or a numpy.random.Generator, "
            f"found {random_state!r}"
        )
    if random_state is not None and random_state < 0:
        raise ValueError(f"random_state must be an int seed >= 0, found {random_state!r}")
    return np.random.default_rng(random_state)


def _check_batch(name: str, settings: Any, defaults: dict[str, Any], n: int) -> None:
    """A ``batch_size`` setting (DP-SGD's) of at most n rows, else a ValueError that says
    whether it is the default and what to pass (the mechanism's own check only quotes it)."""
    batch = getattr(settings, "batch_size", None)
    if batch is None or isinstance(batch, bool) or not isinstance(batch, (int, np.integer)):
        return  # not a setting of this entry, or a wrong type its own check names
    if batch > n:
        which = " (the default)" if batch == defaults.get("batch_size") else ""
        raise ValueError(
            f"fit got {n} samples, fewer than {name}'s batch_size = {batch}{which}: a batch "
            f"is at most the training rows; pass batch_size <= {n}, e.g. "
            f"{name}(batch_size={n})"
        )


# --- the input checks without scikit-learn (its messages; check_array, check_X_y, ...) ---------

_RESHAPE = (
    "Reshape your data either using array.reshape(-1, 1) if your data has a single feature "
    "or array.reshape(1, -1) if it contains a single sample."
)


def _check_finite(a: np.ndarray, input_name: str) -> None:
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        if np.isnan(a).any():
            raise ValueError(f"Input {input_name} contains NaN.")
        raise ValueError(
            f"Input {input_name} contains infinity or a value too large for {a.dtype!r}."
        )


def _check_array(X: Any, estimator: str) -> np.ndarray:
    """scikit-learn's ``check_array(X, dtype="numeric", estimator=...)``, its messages."""
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):  # scipy.sparse
        raise TypeError(
            "Sparse data was passed for X, but dense data is required. Use '.toarray()' to "
            "convert to a dense numpy array."
        )
    X = np.asarray(X)
    if X.dtype.kind == "c":
        raise ValueError(f"Complex data not supported\n{X}\n")
    if X.dtype.kind in "USV":
        raise ValueError(
            "dtype='numeric' is not compatible with arrays of bytes/strings."
            "Convert your data to numeric values explicitly instead."
        )
    if X.dtype.kind == "O":
        X = X.astype(np.float64)
    if X.ndim < 2:
        kind = "scalar" if X.ndim == 0 else "1D"
        raise ValueError(f"Expected 2D array, got {kind} array instead:\narray={X}.\n{_RESHAPE}")
    if X.ndim > 2:
        raise ValueError(
            f"Found array with dim {X.ndim}, while dim <= 2 is required by {estimator}."
        )
    for k, what in ((0, "sample"), (1, "feature")):
        if X.shape[k] < 1:
            raise ValueError(
                f"Found array with {X.shape[k]} {what}(s) (shape={X.shape}) while a minimum "
                f"of 1 is required by {estimator}."
            )
    _check_finite(X, "X")
    return X


def _check_y(y: Any, n: int, estimator: str) -> np.ndarray:
    """scikit-learn's checks of a classifier's y (``check_X_y``'s, then the label type)."""
    if y is None:
        raise ValueError(
            f"This {estimator} estimator requires y to be passed, but the target y is None."
        )
    y = _column(y)
    _check_length(n, y)
    _check_finite(y, "y")
    if y.dtype.kind == "f" and (y != np.round(y)).any():
        raise ValueError(
            "Unknown label type: continuous. Maybe you are trying to fit a classifier, which "
            "expects discrete classes on a regression target with continuous values."
        )
    if len(np.unique(y)) > 2:
        raise ValueError(
            "Only binary classification is supported. The type of the target is multiclass."
        )
    return y


def _column(y: Any) -> np.ndarray:
    """scikit-learn's ``column_or_1d(y, warn=True)``."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the "
            "shape of y to (n_samples, ), for example using ravel().",
            UserWarning,
            stacklevel=4,
        )
        return y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got an array of shape {y.shape} instead.")
    return y


def _check_length(n: int, y: np.ndarray) -> None:
    if y.shape[0] != n:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: [{n}, {y.shape[0]}]"
        )


def _labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(classes_, y as -1/+1 int8, whether the classes were read off the data); a ValueError
    for y that is not binary (module docstring)."""
    if y.dtype.kind in "if" and np.isin(y, NATIVE_CLASSES).all():
        return np.array(NATIVE_CLASSES, dtype=y.dtype), y.astype(np.int8), False
    classes = np.unique(y)
    if len(classes) != 2:
        raise ValueError(
            f"y has {len(classes)} class{'es' if len(classes) != 1 else ''} "
            f"({classes[:5].tolist()}): fit needs the two classes of a binary problem (or "
            f"labels in {{-1, +1}}, the mechanisms' own, which may all be one class)"
        )
    return classes, np.where(y == classes[1], 1, -1).astype(np.int8), True


def _needs_delta(entry: Entry) -> bool:
    """Whether the entry's mechanism takes a delta that the caller sets (not RSPM Laplace's)."""
    fields = {f.name for f in dataclasses.fields(entry.params)}
    return "delta" in fields and "delta" not in entry.fixed


@dataclass(frozen=True)
class _Oracles:
    """An estimator's oracles (``mechanisms.entries.Oracles``): its ``oracle`` (an oracle
    object, the caller's own, or a name for the registry) and any route its entry asks for by
    name (OPSamp's logistic loss: ``convex``), with its ``time_limit`` and ``threads``."""

    estimator: Any

    def configured(self) -> Any:
        oracle = self.estimator.oracle
        if isinstance(oracle, str):
            return self.route(oracle)
        if isinstance(oracle, Configured):  # a route (make_oracle's): its own limits
            return oracle
        e = self.estimator
        # the caller's own strategy object on the estimator's limits: each solve's budget is
        # made from them when it starts
        return Limited(oracle, e.time_limit, e.threads)

    def route(self, name: str) -> Any:
        e = self.estimator
        return make_oracle(name, time_limit=e.time_limit, threads=e.threads)


class CatalogClassifier:
    """The estimator of one catalog entry (``_entry``); subclasses are made by ``classifier``."""

    _entry: Entry
    release_: Release
    #: What fit sets; a fit that fails leaves none of them.
    _FITTED = ("release_", "coef_", "classes_", "n_iter_", "n_features_in_", "feature_names_in_")

    def fit(self, X: Any, y: Any) -> CatalogClassifier:
        for name in self._FITTED:
            self.__dict__.pop(name, None)
        try:
            return self._fit(X, y)
        except BaseException:
            for name in self._FITTED:
                self.__dict__.pop(name, None)
            raise

    def _fit(self, X: Any, y: Any) -> CatalogClassifier:
        name = type(self).__name__
        sk = _sklearn()
        if sk is None:
            X = _check_array(X, name)
            y = _check_y(y, X.shape[0], name)
            self.n_features_in_ = X.shape[1]
        else:  # sets n_features_in_ (and feature_names_in_ for a table with column names)
            X, y = sk.validate_data(self, X, y, dtype="numeric")
            sk.check_classification_targets(y)
            target = sk.type_of_target(y, input_name="y")
            if target != "binary":  # check_classification_targets refused the rest
                raise ValueError(
                    f"Only binary classification is supported. The type of the target is {target}."
                )
        X = np.asarray(X, dtype=float)
        classes, signs, read_off = _labels(y)
        if read_off:
            warn_data_dependent(f"the label set classes_ = {classes.tolist()} (labels not -1/+1)")
        entry = self._entry
        n = X.shape[0]
        if self.delta is None and n < 2 and _needs_delta(entry):
            raise ValueError(
                f"fit got {n} sample: {name}'s default delta = 1/n^2 needs n >= 2 samples "
                f"(delta must be < 1); give more samples or pass delta explicitly"
            )
        delta = 1.0 / n**2 if self.delta is None else self.delta
        settings = entry.default_settings(
            **{s: getattr(self, s) for s, _, _ in entry.setting_fields()}
        )
        _check_batch(name, settings, {s: d for s, _, d in entry.setting_fields()}, n)
        rng = _generator(self.random_state)
        release = entry.release(
            Request(
                settings, self.epsilon, delta, self.margin, Labelled(X, signs), rng, _Oracles(self)
            )
        )
        self.release_ = release
        self.classes_ = classes
        self.coef_ = np.asarray(release.w)
        if "iterations" in release.params:  # a solver's (logistic regression), as scikit-learn's
            self.n_iter_ = int(release.params["iterations"])
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "coef_")

    def __sklearn_tags__(self) -> Any:
        """A binary classifier (scikit-learn's tags; scikit-learn must be installed)."""
        sk = _sklearn()
        if sk is None:
            raise AttributeError("__sklearn_tags__ needs scikit-learn >= 1.6")
        return sk.Tags(
            estimator_type="classifier",
            target_tags=sk.TargetTags(required=True),
            classifier_tags=sk.ClassifierTags(multi_class=False),
            input_tags=sk.InputTags(),
        )

    def _check_X(self, X: Any) -> np.ndarray:
        """X for predict: fitted first, then scikit-learn's checks and n_features_in_."""
        name = type(self).__name__
        sk = _sklearn()
        if sk is not None:
            sk.check_is_fitted(self)
            return np.asarray(sk.validate_data(self, X, reset=False, dtype="numeric"), float)
        if not self.__sklearn_is_fitted__():
            raise _LocalNotFittedError(
                f"This {name} instance is not fitted yet. Call 'fit' with appropriate "
                "arguments before using this estimator."
            )
        X = _check_array(X, name)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {name} is expecting {self.n_features_in_} "
                "features as input."
            )
        return np.asarray(X, dtype=float)

    def predict(self, X: Any) -> np.ndarray:
        """The labels, in ``classes_``: ``classes_[1]`` where <coef_, x> >= margin."""
        signs = predict(self._check_X(X), self.coef_, self.margin)
        return self.classes_[(signs > 0).astype(np.intp)]

    def score(self, X: Any, y: Any) -> float:
        """The accuracy of ``predict(X)`` against y (labels of ``classes_``)."""
        predicted = self.predict(X)
        sk = _sklearn()
        if sk is None:
            y = _column(y)
            _check_length(predicted.shape[0], y)
        else:
            y = sk.column_or_1d(y, warn=True)
            sk.check_consistent_length(predicted, y)
        unseen = ~np.isin(y, self.classes_)
        if unseen.any():
            raise ValueError(
                f"y has labels not seen in fit: {np.unique(y[unseen])[:5].tolist()}; fit's "
                f"classes_ are {self.classes_.tolist()}"
            )
        return float(np.mean(predicted == y))

    def __repr__(self) -> str:
        """``OPDiscClassifier(epsilon=2.0, random_state=0)``: the parameters not at their
        defaults, as scikit-learn shows an estimator."""
        defaults = {p.name: p.default for p in inspect.signature(type(self)).parameters.values()}
        changed = (
            f"{k}={v!r}" for k, v in self.get_params().items() if repr(v) != repr(defaults[k])
        )
        return f"{type(self).__name__}({', '.join(changed)})"

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in inspect.signature(type(self)).parameters}

    def set_params(self, **params: Any) -> CatalogClassifier:
        for key, value in params.items():
            if key not in self.get_params():
                raise ValueError(f"unknown parameter {key!r} for {type(self).__name__}")
            setattr(self, key, value)
        return self


def _signature(entry: Entry) -> inspect.Signature:
    """epsilon and delta (positional or keyword), then keywords: the oracle's options if the
    entry calls one, the margin, the seed, and the entry's settings with their defaults."""

    def keyword(name: str, default: Any) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)

    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [
        inspect.Parameter("epsilon", positional, default=1.0),
        inspect.Parameter("delta", positional, default=None),
    ]
    if not entry.runs_whole:
        parameters += [
            keyword("oracle", DEFAULT_ORACLE),
            keyword("time_limit", DEFAULT_TIME_LIMIT),
            keyword("threads", DEFAULT_THREADS),
        ]
    parameters += [keyword("margin", DEFAULT_MARGIN), keyword("random_state", None)]
    parameters += [keyword(name, default) for name, _, default in entry.setting_fields()]
    return inspect.Signature(parameters)


#: Class names that are not the entry's name in title case plus "Classifier".
CLASS_NAMES = {
    "opdisc": "OPDiscClassifier",
    "rspm_gaussian": "RSPMClassifier",
    "rspm_laplace": "RSPMLaplaceClassifier",
    "opsamp": "OPSampClassifier",
    "dpsgd_lr": "DPSGDClassifier",
    "expmech": "ExpMechClassifier",
    "erm_01": "ExactERMClassifier",
}


def classifier(name: str) -> type:
    """The estimator class of catalog entry ``name``, made a module attribute (so that it
    pickles by reference). Its ``__init__`` has the entry's signature (scikit-learn reads the
    parameters off it)."""
    entry = CATALOG[name]
    class_name = CLASS_NAMES.get(name) or "".join(p.title() for p in name.split("_")) + "Classifier"
    signature = _signature(entry)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(*args, **kwargs)  # a TypeError names an unknown parameter
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            setattr(self, name, value)

    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    __init__.__signature__ = signature.replace(
        parameters=[self_parameter, *signature.parameters.values()]
    )
    cls = type(
        class_name,
        (CatalogClassifier,),
        {
            "_entry": entry,
            "__module__": __name__,
            "__init__": __init__,
            "__signature__": signature,
            "__doc__": f"{entry.doc}\n\nThe estimator of catalog entry {name!r} "
            f"(mechanisms.estimators).",
        },
    )
    __init__.__qualname__ = f"{class_name}.__init__"
    globals()[class_name] = cls
    return cls


#: The estimator of every catalog entry, by entry name.
#: One estimator per classifier of the catalog (a synthetic-data entry releases a table, not a
#: classifier).
CLASSIFIERS = {name: classifier(name) for name in CATALOG if name in BY_KIND[ClassifierEntry]}

__all__ = [
    "CLASSIFIERS",
    "CatalogClassifier",
    "classifier",
    *(c.__name__ for c in CLASSIFIERS.values()),
]
