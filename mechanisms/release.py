"""What every mechanism returns: a frozen release record with its privacy claim.

A release says, in one place, what was published (the weights), how it was made (the noise
parameters and the mechanism's parameters), every oracle certificate it rests on, how long it
took, and whether its privacy guarantee holds. OPDisc and RSPM are private only when every oracle
call was certified optimal (SPEC section 8); DP-SGD's guarantee is the accountant's epsilon.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Sequence

import numpy as np

from core.objective import DEFAULT_MARGIN, predict
from oracles.contract.certificate import Certificate


@dataclass(frozen=True, eq=False, repr=False)
class Secret:
    """A secret noise draw: OPDisc's and RSPM's eta, OPSamp's sigma^k and output Laplace noise.

    A release that carried a draw beside w would leak the data through the argmin, so every
    ``draw_noise`` keeps its draws as Secret fields of its ``Noise`` record, apart from the
    public ``Calibration`` (all a ``Release`` and MLflow ever see), and the repr shows the
    shape, never the values. The array is read explicitly, ``secret.value``, where the draw is
    used (``problems``, ``finish``, the audit's samplers).
    """

    value: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", np.asarray(self.value))

    def __repr__(self) -> str:
        return f"Secret(shape={self.value.shape}, dtype={self.value.dtype})"

    __str__ = __repr__


@dataclass(frozen=True)
class Calibration:
    """The public side of a mechanism's noise: how its scale was set and what that proves.

    ``rule`` is the config's ``calibration`` (``proven``, ``paper`` or ``paper_code``);
    ``proven_epsilon`` and ``proven_delta`` are the (epsilon, delta) SPEC section 10 proves for
    the scale actually used. Each mechanism's record adds its scales (sigma, m, ...) as fields:
    scalars only, so a draw can never enter one (the draws are the ``Noise`` record's Secrets).
    """

    rule: str
    proven_epsilon: float
    proven_delta: float

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, str) and np.ndim(value) != 0:
                raise TypeError(
                    f"{type(self).__name__}.{f.name} must be a scalar, found shape "
                    f"{np.shape(value)}: a noise draw belongs in the Noise record, as a Secret"
                )

    def scales(self) -> dict[str, Any]:
        """The noise parameters a release records (``Release.noise``, MLflow's ``noise.*``).

        Every field but the rule and the proven (epsilon, delta), which the release's privacy
        claim records; a trailing underscore (``lambda_``, a Python keyword) is dropped.
        """
        own = {"rule", "proven_epsilon", "proven_delta"}
        return {
            f.name.rstrip("_"): getattr(self, f.name) for f in fields(self) if f.name not in own
        }


@dataclass(frozen=True)
class Noise:
    """A mechanism's noise: its ``calibration`` and, as the subclass's other fields, its draws.

    Every field but ``calibration`` must be a ``Secret`` (checked here), so the draws stay apart
    from the public record and never reach a release.
    """

    calibration: Calibration

    def __post_init__(self) -> None:
        if not isinstance(self.calibration, Calibration):
            raise TypeError(f"calibration must be a Calibration, found {type(self.calibration)}")
        for f in fields(self):
            if f.name != "calibration" and not isinstance(getattr(self, f.name), Secret):
                raise TypeError(
                    f"{type(self).__name__}.{f.name} must be a Secret (a noise draw), found "
                    f"{type(getattr(self, f.name)).__name__}"
                )


def check_scalars(noise: Mapping[str, Any]) -> dict[str, Any]:
    """``noise`` (a release's noise parameters) as a dict, every value a scalar: a non-scalar
    is a TypeError naming the key, so a draw is an error, never a leak into the run record."""
    out = {}
    for key, value in noise.items():
        if isinstance(value, Secret) or np.ndim(value) != 0:
            raise TypeError(
                f"noise[{key!r}] must be a scalar noise parameter, found {type(value).__name__} "
                f"of shape {np.shape(getattr(value, 'value', value))}"
            )
        out[key] = value
    return out


# --- validation (numbers: core.validation) -------------------------------------------------------


def check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (explicit, never global), found {type(rng)}"
        )
    return rng


# --- the privacy claim and the release ---------------------------------------------------------


@dataclass(frozen=True)
class PrivacyClaim:
    """The (epsilon, delta) proven for this release, and whether the guarantee actually holds.

    ``epsilon`` and ``delta`` are what SPEC section 10's arguments prove for the noise actually
    drawn, never merely what was asked for: a release calibrated with a paper's constant records
    the larger epsilon that its noise proves, and ``requested_epsilon`` / ``requested_delta``
    what the user asked for (the sweep's grid point). ``calibration`` names the rule used.
    ``holds`` is False when an oracle call the proof needs was not certified; ``reason`` says why
    either way. ``accounted_epsilon`` is an accountant's epsilon where there is one (DP-SGD).
    """

    epsilon: float
    delta: float
    holds: bool
    reason: str
    accounted_epsilon: float | None = None
    requested_epsilon: float | None = None
    requested_delta: float | None = None
    calibration: str | None = None

    @classmethod
    def from_certificates(
        cls,
        epsilon: float,
        delta: float,
        certificates: Sequence[Certificate],
        *,
        needs: str,
        **provenance: Any,
    ) -> "PrivacyClaim":
        """Holds iff every certificate proves what the mechanism's proof ``needs``.

        ``provenance``: requested_epsilon, requested_delta, calibration (recorded as given).
        """
        failed = [c for c in certificates if not c.certified]
        if not certificates:
            return cls(epsilon, delta, False, "no oracle certificate", **provenance)
        if failed:
            first = failed[0]
            return cls(
                epsilon,
                delta,
                False,
                f"{len(failed)} of {len(certificates)} oracle calls not certified ({needs}); "
                f"first: {first.backend} {first.status.value}, gap {first.gap:.6g}",
                **provenance,
            )
        return cls(
            epsilon,
            delta,
            True,
            f"all {len(certificates)} oracle calls certified ({needs})",
            **provenance,
        )

    def to_params(self) -> dict[str, Any]:
        return {
            "privacy_epsilon": self.epsilon,
            "privacy_delta": self.delta,
            "privacy_holds": self.holds,
            "privacy_reason": self.reason,
            "accounted_epsilon": self.accounted_epsilon,
            "requested_epsilon": self.requested_epsilon,
            "requested_delta": self.requested_delta,
            "calibration": self.calibration,
        }


#: The prefix of a release's step timings as metrics (``step_wall_seconds.solve``): wall-clock
#: seconds of each step where the mechanism ran, beside ``oracle_wall_seconds`` and
#: ``oracle_cpu_seconds`` (the oracle calls' own clocks).
STEP_WALL = "step_wall_seconds"


class ReleaseRecord:
    """What every release records, whatever it publishes (a classifier here, a synthetic table
    in mechanisms.synthetic.fem): the mechanism, its parameters, the privacy claim, the oracle
    calls it rests on (``certificates``) and its timings (wall-clock seconds by step), flat for
    MLflow."""

    mechanism: str
    privacy: PrivacyClaim
    params: Mapping[str, Any]
    certificates: tuple[Certificate, ...]
    timings: Mapping[str, float]

    @property
    def oracle_answers(self) -> tuple[Certificate, ...]:
        """Every oracle answer the release was made with (a subclass may have more than
        ``certificates``)."""
        return self.certificates

    @property
    def oracle_seconds(self) -> float:
        """The wall-clock seconds of the oracle calls (``Certificate.seconds``), summed: the
        metric ``oracle_wall_seconds``."""
        return float(sum(c.seconds for c in self.oracle_answers))

    @property
    def oracle_cpu_seconds(self) -> float:
        """The CPU seconds the oracle calls got (``Certificate.cpu_seconds``; nan when a call's
        was not measured)."""
        return float(sum(c.cpu_seconds for c in self.oracle_answers))

    @property
    def max_gap(self) -> float:
        return max((c.gap for c in self.oracle_answers), default=0.0)

    def published_params(self) -> dict[str, Any]:
        """Scalars of what the release publishes, for ``to_params`` (a subclass's own)."""
        return {}

    def to_params(self) -> dict[str, Any]:
        """Flat, MLflow-friendly parameters: mechanism params, what it publishes, the claim.

        The requested target appears once, as ``requested_epsilon`` / ``requested_delta`` (the
        claim's, else the params' epsilon and delta), beside the proven ``privacy_epsilon`` /
        ``privacy_delta``: never also as ``param.epsilon`` / ``param.delta``.
        """
        out: dict[str, Any] = {"mechanism": self.mechanism, **self.published_params()}
        params = dict(self.params)
        requested = {
            "requested_epsilon": params.pop("epsilon", None),
            "requested_delta": params.pop("delta", None),
        }
        out.update({f"param.{k}": v for k, v in params.items()})
        claim = self.privacy.to_params()
        out.update(claim | {k: v for k, v in requested.items() if claim[k] is None})
        answers = self.oracle_answers
        out["oracle_backends"] = ",".join(sorted({c.backend for c in answers}))
        out["oracle_calls"] = len(answers)
        out["oracle_fallbacks"] = ";".join(sorted({c.fallback for c in answers if c.fallback}))
        return out

    def to_metrics(self) -> dict[str, float]:
        out = {f"{STEP_WALL}.{k}": float(v) for k, v in self.timings.items()}
        out["oracle_wall_seconds"] = self.oracle_seconds
        out["oracle_cpu_seconds"] = self.oracle_cpu_seconds
        out["oracle_max_gap"] = self.max_gap
        out["oracle_certified_fraction"] = (
            float(np.mean([c.certified for c in self.oracle_answers]))
            if self.oracle_answers
            else 0.0
        )
        out["privacy_holds"] = float(self.privacy.holds)
        return out


@dataclass(frozen=True, eq=False)
class Release(ReleaseRecord):
    """One run of a mechanism: what is published and everything needed to judge it."""

    mechanism: str
    w: np.ndarray
    privacy: PrivacyClaim
    noise: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    certificates: tuple[Certificate, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    margin: float = DEFAULT_MARGIN

    def __post_init__(self) -> None:
        w = np.array(self.w, dtype=float, copy=True)
        w.setflags(write=False)
        object.__setattr__(self, "w", w)
        object.__setattr__(self, "noise", check_scalars(self.noise))  # never a draw
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "certificates", tuple(self.certificates))
        object.__setattr__(self, "timings", dict(self.timings))

    def predict(self, X: np.ndarray) -> np.ndarray:
        return predict(X, self.w, self.margin)

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def published_params(self) -> dict[str, Any]:
        """The margin of the threshold rule and the noise's scalar parameters (``noise.*``)."""
        return {"margin": self.margin, **{f"noise.{k}": v for k, v in self.noise.items()}}
