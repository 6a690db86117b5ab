"""Privacy targets and warnings (``mechanisms.privacy``): a target is checked once, when it is
built (epsilon finite and > 0, delta in [0, 1) or (0, 1), types before values), and nowhere
else: every mechanism's record holds one, and no module checks epsilon or delta by hand (a
guard over the package's source); the warning for a choice read off the private data."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

from mechanisms.catalog import CATALOG
from mechanisms.privacy import (
    ApproximateTarget,
    PrivacyError,
    PrivacyLeakWarning,
    PrivacyTarget,
    TargetRecord,
    warn_data_dependent,
)

TINY = 5e-324
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("epsilon", [TINY, 1e-12, 1, 1.0, 1e300, np.float64(0.5), np.int64(2)])
def test_a_target_takes_finite_positive_epsilons_as_floats(epsilon):
    target = PrivacyTarget(epsilon)
    assert target.epsilon == epsilon and type(target.epsilon) is float
    assert target.delta == 0.0 and type(target.delta) is float and target.pure


@pytest.mark.parametrize("epsilon", [0, 0.0, -0.0, -1.0, -TINY, math.inf, -math.inf, math.nan])
def test_a_target_refuses_zero_negative_infinite_and_nan_epsilon(epsilon):
    with pytest.raises(ValueError, match=rf"^epsilon must be finite and > 0, found {epsilon!r}$"):
        PrivacyTarget(epsilon)


@pytest.mark.parametrize("epsilon", [True, False, np.bool_(True), "1", None, 1j, [1.0]])
def test_a_target_refuses_a_non_number_epsilon_with_a_type_error(epsilon):
    # True is not epsilon = 1: a bool where a number is expected is a mistake
    with pytest.raises(TypeError, match=r"^epsilon must be a real number, found "):
        PrivacyTarget(epsilon)


@pytest.mark.parametrize("delta", [0, 0.0, -0.0, TINY, 0.5, 1 - 2**-53, np.float64(1e-10)])
def test_a_target_takes_delta_from_zero_up_to_below_one(delta):
    target = PrivacyTarget(1.0, delta)
    assert target.delta == delta and type(target.delta) is float
    assert target.pure == (delta == 0)


@pytest.mark.parametrize("delta", [1, 1.0, 1.5, -TINY, -1.0, math.inf, -math.inf, math.nan])
def test_a_target_refuses_delta_one_and_beyond_negative_and_nan(delta):
    with pytest.raises(ValueError, match=rf"^delta must be in \[0, 1\), found {delta!r}$"):
        PrivacyTarget(1.0, delta)


def test_an_approximate_target_needs_delta_above_zero():
    assert ApproximateTarget(1.0, TINY).delta == TINY
    assert ApproximateTarget(1.0, 1 - 2**-53).delta == 1 - 2**-53
    for delta in (0, 0.0, -0.0, 1.0, math.nan):
        with pytest.raises(ValueError, match=r"^delta must be in \(0, 1\), found "):
            ApproximateTarget(1.0, delta)
    with pytest.raises(TypeError):  # no default delta: a Gaussian target states its delta
        ApproximateTarget(1.0)
    assert isinstance(ApproximateTarget(1.0, 1e-6), PrivacyTarget)


@pytest.mark.parametrize("delta", [True, False, "0", None])
def test_a_target_refuses_a_non_number_delta_with_a_type_error(delta):
    # False is not delta = 0
    with pytest.raises(TypeError, match=r"^delta must be a real number, found "):
        PrivacyTarget(1.0, delta)


def test_a_target_checks_both_types_before_either_value():
    # epsilon's value is wrong, delta's type is wrong: the type error comes first
    with pytest.raises(TypeError, match=r"^delta must be a real number, found '1e-5'$"):
        PrivacyTarget(-1.0, "1e-5")
    with pytest.raises(TypeError, match=r"^epsilon must be a real number, found None$"):
        ApproximateTarget(None, 2.0)
    # both values wrong: epsilon's error first
    with pytest.raises(ValueError, match=r"^epsilon must be finite and > 0, found 0\.0$"):
        PrivacyTarget(0.0, 2.0)
    with pytest.raises(ValueError, match=r"^delta must be in \[0, 1\), found 2\.0$"):
        PrivacyTarget(1.0, 2.0)


def test_a_target_is_a_frozen_hashable_record():
    """Checked once, it cannot change after (so code that takes one may trust it), and it keys
    the calibrations' caches."""
    target = ApproximateTarget(0.5, 1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        target.epsilon = -1.0  # type: ignore[misc]
    assert target == ApproximateTarget(np.float64(0.5), 1e-6)
    assert hash(target) == hash(ApproximateTarget(0.5, 1e-6))
    assert pickle.loads(pickle.dumps(target)) == target
    with pytest.raises(ValueError, match="^epsilon must be finite and > 0"):
        dataclasses.replace(target, epsilon=0.0)  # a changed copy is checked as it is built


# --- every mechanism's record holds its target ------------------------------------------------


def _private_records():
    return sorted(
        {entry.params for entry in CATALOG.values() if entry.private}, key=lambda c: c.__name__
    )


@pytest.mark.parametrize("record", _private_records(), ids=lambda c: c.__name__)
def test_every_private_mechanism_s_record_holds_its_checked_target(record):
    """A user calling a mechanism directly (README) meets the type's own message: each private
    catalog entry's parameter record is a ``TargetRecord`` whose ``target`` is built once with
    the record, outside its fields (its settings, equality and recorded params unchanged)."""
    assert issubclass(record, TargetRecord)
    fields = {f.name for f in dataclasses.fields(record)}
    assert "target" not in fields
    args = {"epsilon": 0.5} | ({"delta": 1e-6} if "delta" in fields else {})
    params = record(**args)
    assert isinstance(params.target, PrivacyTarget)
    assert (params.target.epsilon, params.target.delta) == (0.5, args.get("delta", 0.0))
    assert "target" not in dataclasses.asdict(params)
    assert pickle.loads(pickle.dumps(params)).target == params.target
    for bad, error, message in (
        (-1.0, ValueError, r"^epsilon must be finite and > 0, found -1\.0$"),
        (math.nan, ValueError, r"^epsilon must be finite and > 0, found nan$"),
        ("1", TypeError, r"^epsilon must be a real number, found '1'$"),
    ):
        with pytest.raises(error, match=message):
            record(**(args | {"epsilon": bad}))


def test_a_record_needs_delta_where_its_guarantee_does():
    """Gaussian noise has no pure epsilon: OPDisc's, Gaussian RSPM's, OPSamp's, DP-SGD's and
    MST's / AIM's records hold an ``ApproximateTarget``; Laplace RSPM, the exponential mechanism,
    FEM and MWEM take delta = 0."""
    by_name = {name: entry.params for name, entry in CATALOG.items()}
    for name in ("opdisc", "rspm_gaussian", "opsamp", "dpsgd_lr", "mst", "aim"):
        if name not in by_name:
            continue
        with pytest.raises(ValueError, match=r"^delta must be in \(0, 1\), found 0\.0$"):
            by_name[name](epsilon=1.0, delta=0.0)
    assert by_name["rspm_laplace"](epsilon=1.0, delta=0.0, noise="laplace").target.pure
    for name in ("fem", "mwem"):
        assert by_name[name](epsilon=1.0, delta=0.0).target.pure


# --- the fact is checked in one place -----------------------------------------------------------

#: The packages whose code may take a privacy target.
PACKAGES = ("core", "mechanisms", "oracles", "pipeline")
#: The names a privacy parameter goes by in the code.
PRIVACY_NAMES = {"epsilon", "delta", "eps", "eps0", "round_epsilon", "privacy_delta", "rho"}
#: The checks left outside the type, each of another fact, by (module, function): where
#: delta(epsilon) is evaluated (epsilon >= 0 is a point of the curve, not a target), where an
#: epsilon is read off at a delta without a target (an accountant's query), and the estimator's
#: default delta 1/n^2 (n >= 2, naming the samples).
POINT = "epsilon >= 0: a point of delta(epsilon)"
QUERY = "the delta an epsilon is proven at"
ALLOWED = {
    ("mechanisms/opdisc_calibration.py", "opdisc_log_delta"): POINT,
    ("mechanisms/rspm_calibration.py", "rspm_gaussian_log_delta"): POINT,
    ("mechanisms/opdisc_calibration.py", "opdisc_epsilon"): QUERY,
    ("mechanisms/rspm_calibration.py", "rspm_gaussian_epsilon"): QUERY,
    ("mechanisms/dpsgd/sgd_accounting.py", "accounted_epsilon"): QUERY,
    ("mechanisms/estimators.py", "_fit"): "n >= 2 samples for the default delta 1/n^2",
}
#: The one place the target is checked.
THE_TYPE = "mechanisms/privacy.py"


def _names_in(node: ast.AST) -> set[str]:
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


#: Calls that check a privacy parameter whatever they are given (the functions the type
#: replaced), and number checks that do when they name one (``check_real("epsilon", ...)``).
PRIVACY_CHECKS = {"check_epsilon", "check_delta", "check_epsilon_delta"}
NUMBER_CHECKS = {"check_real", "require", "_require"}


def _through_the_type(node: ast.AST) -> bool:
    """Whether ``node`` builds a target to check one (``require(_is_target(e, d,
    ApproximateTarget), ...)``): a check through the type, naming the config's key."""
    return any(name.endswith("Target") for name in _names_in(node))


def _is_check_call(node: ast.Call) -> bool:
    callee = _names_in(node.func)
    named = {a.value for a in node.args if isinstance(a, ast.Constant)}
    by_hand = callee & NUMBER_CHECKS and named & PRIVACY_NAMES and not _through_the_type(node)
    return bool(callee & PRIVACY_CHECKS or by_hand)


def _refuses_input(stmt: ast.stmt) -> bool:
    """A ``raise`` of a bad input (TypeError, ValueError, ...), not ``PrivacyError``: a release
    whose accounted epsilon exceeds its target is a broken guarantee, not a bad argument."""
    raises = [sub for sub in ast.walk(stmt) if isinstance(sub, ast.Raise)]
    return any("PrivacyError" not in _names_in(r) for r in raises)


def _is_check_if(node: ast.If) -> bool:
    """``if <a test on a privacy parameter>: ... raise ...``."""
    raises = any(_refuses_input(stmt) for stmt in node.body)
    tests = any(isinstance(sub, ast.Compare) for sub in ast.walk(node.test))
    tests = tests or "isfinite" in _names_in(node.test)
    return raises and tests and bool(_names_in(node.test) & PRIVACY_NAMES)


def hand_written_checks(source: str) -> list[tuple[int, str, str]]:
    """(line, function, text) of each check of a privacy parameter by hand in ``source``: a
    call of a number check naming one (``check_real("epsilon", ...)``, ``check_epsilon...``,
    ``require``), or an ``if`` on one whose body raises (``if not epsilon > 0: raise``)."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = child.name
            if isinstance(child, ast.Call) and _is_check_call(child):
                found.append((child.lineno, name, ast.unparse(child)))
            if isinstance(child, ast.If) and _is_check_if(child):
                found.append((child.lineno, name, ast.unparse(child.test)))
            visit(child, name)

    visit(ast.parse(source), "<module>")
    return found


def test_the_guard_finds_each_kind_of_hand_written_check():
    """The guard below is only as good as what it sees: each way a duplicate was written."""
    source = """
def a(epsilon, delta):
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
def b(epsilon):
    check_real("epsilon", epsilon)
def c(epsilon):
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(epsilon)
def d(self):
    _require(0 < self.privacy_delta < 1, "privacy_delta", "must be in (0, 1)", self.privacy_delta)
def e(delta):
    if delta == 0:
        return 1.0  # a branch on a checked value, not a check
"""
    assert [function for _, function, _ in hand_written_checks(source)] == ["a", "b", "c", "d"]


def test_epsilon_and_delta_are_checked_by_the_type_alone():
    """No module of the package checks epsilon, delta or their kin by hand: a new duplicate of
    ``PrivacyTarget``'s check fails here. Take a ``PrivacyTarget`` (or a record's ``target``)
    instead; ``ALLOWED`` lists the checks of other facts, by function."""
    duplicates, allowed_seen = [], set()
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            module = path.relative_to(REPO).as_posix()
            if module == THE_TYPE:
                continue
            for line, function, text in hand_written_checks(path.read_text()):
                if (module, function) in ALLOWED:
                    allowed_seen.add((module, function))
                else:
                    duplicates.append(f"{module}:{line} in {function}: {text}")
    assert duplicates == []
    assert allowed_seen == set(ALLOWED)  # an allowance no longer needed is dropped


def test_the_warning_and_the_error_are_their_builtin_kinds():
    # a PrivacyLeakWarning is a RuntimeWarning: filters on RuntimeWarning catch it
    assert issubclass(PrivacyLeakWarning, RuntimeWarning)
    assert issubclass(PrivacyError, RuntimeError)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(PrivacyLeakWarning):
            warn_data_dependent("x")


def _loader():
    """Stands for a function of the project that reads something off the data."""
    warn_data_dependent("the column maxima")


def test_warn_data_dependent_says_what_and_points_at_the_callers_caller():
    with pytest.warns(PrivacyLeakWarning) as record:
        line = inspect.currentframe().f_lineno + 1
        _loader()
    (warning,) = record
    assert str(warning.message) == (
        "the column maxima is read off the private data and not accounted for"
    )
    # stacklevel 3: the warning names the line that called the function that read the data
    assert warning.filename == __file__ and warning.lineno == line
