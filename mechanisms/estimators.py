"""Scikit-learn style estimators over the catalog's mechanisms (fit / predict / score / ``coef_``).

    clf = OPDiscClassifier(epsilon=1.0, random_state=0).fit(X, y)   # oracle="structured"
    clf.score(X_test, y_test); clf.coef_; clf.release_.privacy.holds

One class per catalog entry (``mechanisms.catalog``), made from it: its keywords are the entry's
settings with their defaults, beside ``epsilon``, ``delta``, ``margin``, ``random_state`` and,
for a mechanism that calls an oracle, ``oracle``, ``time_limit`` and ``threads``; ``fit`` takes
the entry's one path (``Entry.release``). A mechanism added to the catalog has its estimator.

``delta`` defaults to 1/n^2 (SPEC section 9; n is public under replace-one neighbouring).
``oracle`` is an oracle object or a name for ``oracles.registry.make_oracle`` (used where the
entry lets the caller choose; OPSamp's logistic loss always takes the convex oracle).
``random_state`` is an int seed or a ``numpy.random.Generator``. Labels must be in {-1, +1}.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from mechanisms.base import Release
from mechanisms.catalog import CATALOG, Entry
from oracles.base import DEFAULT_THREADS, DEFAULT_TIME_LIMIT
from oracles.objective import DEFAULT_MARGIN, check_data, predict
from oracles.registry import make_oracle

#: The oracle an estimator uses where its entry lets the caller choose.
DEFAULT_ORACLE = "structured"


def _generator(random_state: Any) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


class CatalogClassifier:
    """The estimator of one catalog entry (``_entry``); subclasses are made by ``classifier``."""

    _entry: Entry
    release_: Release

    def _oracle(self, needed: str) -> Any:
        oracle = self.oracle if needed == "configured" else needed
        if not isinstance(oracle, str):
            return oracle
        return make_oracle(oracle, time_limit=self.time_limit, threads=self.threads)

    def fit(self, X: Any, y: Any) -> CatalogClassifier:
        X, y = check_data(X, y)
        entry = self._entry
        delta = 1.0 / X.shape[0] ** 2 if self.delta is None else self.delta
        settings = entry.default_settings(
            **{n: getattr(self, n) for n, _, _ in entry.setting_fields()}
        )
        self.release_ = entry.release(
            settings,
            self.epsilon,
            delta,
            self.margin,
            X,
            y,
            _generator(self.random_state),
            oracle=self._oracle,
        )
        self.coef_ = np.asarray(self.release_.w)
        self.classes_ = np.array([-1, 1])
        return self

    def predict(self, X: Any) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit first")
        return predict(np.asarray(X, dtype=float), self.coef_, self.margin)

    def score(self, X: Any, y: Any) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))

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
    if entry.build is not None:
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
CLASSIFIERS = {name: classifier(name) for name in CATALOG}

__all__ = [
    "CLASSIFIERS",
    "CatalogClassifier",
    "classifier",
    *(c.__name__ for c in CLASSIFIERS.values()),
]
