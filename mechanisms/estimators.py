"""Scikit-learn style estimators over the mechanisms (fit / predict / score / ``coef_``).

    clf = OPDiscClassifier(epsilon=1.0, random_state=0).fit(X, y)   # oracle="structured"
    clf.score(X_test, y_test); clf.coef_; clf.release_.privacy.holds

``delta`` defaults to 1/n^2 (SPEC section 9; n is public under replace-one neighbouring).
``oracle`` is an oracle object or a name for ``oracles.registry.make_oracle``. ``random_state``
is an int seed or a ``numpy.random.Generator``. Labels must be in {-1, +1}.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mechanisms.base import Release
from mechanisms.dpsgd import DPSGDParams, run_dpsgd
from mechanisms.expmech import ExpMechParams, run_expmech
from mechanisms.logistic import fit_logistic
from mechanisms.opdisc import ExactERM, OPDisc, OPDiscParams
from mechanisms.opsamp import OPSamp, OPSampParams
from mechanisms.rspm import RSPM, RSPMParams
from mechanisms.runner import run
from oracles.base import DEFAULT_THREADS, DEFAULT_TIME_LIMIT
from oracles.objective import DEFAULT_MARGIN, check_data, predict
from oracles.registry import make_oracle


def _generator(random_state: Any) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def _oracle(oracle: Any, **options: Any) -> Any:
    if isinstance(oracle, str):
        return make_oracle(oracle, **options)
    return oracle


class _PrivateLinearClassifier:
    """Base: subclasses implement ``_release(X, y, delta, rng) -> Release``."""

    release_: Release

    def __init__(self, epsilon: float = 1.0, delta: float | None = None, *,
                 margin: float = DEFAULT_MARGIN, random_state: Any = None) -> None:  # fmt: skip
        self.epsilon = epsilon
        self.delta = delta
        self.margin = margin
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> "_PrivateLinearClassifier":
        X, y = check_data(X, y)
        delta = 1.0 / X.shape[0] ** 2 if self.delta is None else self.delta
        self.release_ = self._release(X, y, delta, _generator(self.random_state))
        self.coef_ = np.asarray(self.release_.w)
        self.classes_ = np.array([-1, 1])
        return self

    def _release(self, X, y, delta, rng) -> Release:
        raise NotImplementedError

    def predict(self, X: Any) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit first")
        return predict(np.asarray(X, dtype=float), self.coef_, self.margin)

    def score(self, X: Any, y: Any) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if not k.endswith("_")}

    def set_params(self, **params: Any) -> "_PrivateLinearClassifier":
        for key, value in params.items():
            if key not in self.get_params():
                raise ValueError(f"unknown parameter {key!r} for {type(self).__name__}")
            setattr(self, key, value)
        return self


class _OracleClassifier(_PrivateLinearClassifier):
    def __init__(self, epsilon: float = 1.0, delta: float | None = None, *,
                 oracle: Any = "structured", time_limit: float = DEFAULT_TIME_LIMIT,
                 threads: int = DEFAULT_THREADS,
                 margin: float = DEFAULT_MARGIN, random_state: Any = None) -> None:  # fmt: skip
        super().__init__(epsilon, delta, margin=margin, random_state=random_state)
        self.oracle = oracle
        self.time_limit = time_limit
        self.threads = threads

    def _mechanism(self, delta: float):
        raise NotImplementedError

    def _release(self, X, y, delta, rng) -> Release:
        oracle = self.oracle
        if isinstance(oracle, str) and oracle != "enumerate":
            oracle = _oracle(oracle, time_limit=self.time_limit, threads=self.threads)
        else:
            oracle = _oracle(oracle)
        return run(self._mechanism(delta), X, y, oracle, rng)


class OPDiscClassifier(_OracleClassifier):
    """OPDisc (SPEC section 3) over the paper's W_tau; ``calibration`` as in OPDiscParams."""

    def __init__(self, epsilon: float = 1.0, delta: float | None = None, *,
                 calibration: str = "proven", **kwargs: Any) -> None:  # fmt: skip
        super().__init__(epsilon, delta, **kwargs)
        self.calibration = calibration

    def _mechanism(self, delta):
        return OPDisc(OPDiscParams(self.epsilon, delta, margin=self.margin,
                                   calibration=self.calibration))  # fmt: skip


class RSPMClassifier(_OracleClassifier):
    """RSPM over {-1, 0, 1}^d (SPEC section 4); ``noise`` is 'gaussian' or 'laplace'."""

    def __init__(self, epsilon: float = 1.0, delta: float | None = None, *,
                 noise: str = "gaussian", calibration: str = "proven",
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(epsilon, delta, **kwargs)
        self.noise = noise
        self.calibration = calibration

    def _mechanism(self, delta):
        return RSPM(RSPMParams(self.epsilon, delta if self.noise == "gaussian" else 0.0,
                               noise=self.noise, margin=self.margin,
                               calibration=self.calibration))  # fmt: skip


class OPSampClassifier(_OracleClassifier):
    """OPSamp (SPEC section 5); ``loss`` 'logistic' (convex oracle) or 'zero_one' (MIP).

    ``x_max`` is the public bound |x_ij| <= x_max that the logistic loss's proof assumes: data
    beyond it are refused, or clipped with ``out_of_bounds='clip'`` (mechanisms.bounds).
    """

    def __init__(self, epsilon: float = 1.0, delta: float | None = None, *,
                 loss: str = "logistic", alpha: float = 1e-4, calibration: str = "proven",
                 gamma: float | None = None, m: int | None = None, x_max: float = 1.0,
                 out_of_bounds: str = "error", **kwargs: Any) -> None:  # fmt: skip
        kwargs.setdefault("oracle", "convex" if loss == "logistic" else "auto")
        super().__init__(epsilon, delta, **kwargs)
        self.loss = loss
        self.alpha = alpha
        self.calibration = calibration
        self.gamma = gamma
        self.m = m
        self.x_max = x_max
        self.out_of_bounds = out_of_bounds

    def _mechanism(self, delta):
        return OPSamp(OPSampParams(self.epsilon, delta, loss=self.loss, alpha=self.alpha,
                                   margin=self.margin, calibration=self.calibration,
                                   gamma=self.gamma, m=self.m, x_max=self.x_max,
                                   out_of_bounds=self.out_of_bounds))  # fmt: skip


class ExactERMClassifier(_OracleClassifier):
    """Non-private exact 0/1 ERM over W_tau (SPEC section 7); epsilon is ignored."""

    def _mechanism(self, delta):
        return ExactERM(margin=self.margin)


class ExpMechClassifier(_PrivateLinearClassifier):
    """The exponential mechanism over W_tau (pure epsilon-DP; small d only)."""

    def _release(self, X, y, delta, rng) -> Release:
        return run_expmech(X, y, ExpMechParams(self.epsilon, margin=self.margin), rng)


class DPSGDClassifier(_PrivateLinearClassifier):
    """DP-SGD logistic regression (SPEC section 6); noise calibrated with dp-accounting."""

    def __init__(self, epsilon: float = 1.0, delta: float | None = None, *,
                 clip_norm: float = 2.0, batch_size: int = 64, learning_rate: float = 2.0,
                 epochs: int = 5, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(epsilon, delta, **kwargs)
        self.clip_norm, self.batch_size = clip_norm, batch_size
        self.learning_rate, self.epochs = learning_rate, epochs

    def _release(self, X, y, delta, rng) -> Release:
        params = DPSGDParams(self.epsilon, delta, clip_norm=self.clip_norm,
                             batch_size=self.batch_size, learning_rate=self.learning_rate,
                             epochs=self.epochs)  # fmt: skip
        return run_dpsgd(X, y, params, rng)


class LogisticRegressionClassifier(_PrivateLinearClassifier):
    """Non-private logistic regression without intercept (SPEC section 7)."""

    def _release(self, X, y, delta, rng) -> Release:
        return fit_logistic(X, y, margin=self.margin)
