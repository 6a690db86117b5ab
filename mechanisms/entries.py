"""The two kinds of catalog entry, and the one request every run is made of.

A catalog entry (``mechanisms.catalog``) is one mechanism: its settings (the fields and defaults
of its parameter dataclass), how they are checked, whether it is private, which oracle it asks
for, and how one run of it is made, scored and recorded. What differs between the two kinds of
mechanism is owned by the kind, never asked of it by the caller:

* ``ClassifierEntry``: a linear classifier trained on (X, y) (``mechanisms.release.Release``); its
  data a ``Labelled`` (features, labels in {-1, +1}, feature names); scored by its accuracy on
  the training and test sets (``ClassifierScores``); it records its noise parameters
  (``noise.*``) and its weights.
* ``TableEntry``: a synthetic table of records over a public domain, answering a workload of
  marginals (``mechanisms.synthetic.fem.SyntheticRelease``, docs/synthetic.md); its data a
  ``Table`` (level codes, the domain, the workload, the label attribute); scored by the
  workload's error and the accuracy of logistic regression trained on it
  (``mechanisms.synthetic.evaluate.TableScores``); it records its game's parameters
  (``param.*``) and its private transcript (the query selected each round).

A run is one ``Request``: the settings, the privacy target and margin, the kind's data, the
explicit generator, and the caller's ``Oracles`` (the caller's configured oracle, or the oracle
of a named route: an entry asks for the one it needs, ``Entry.oracle``).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, ClassVar, Generic, Mapping, Protocol, Sequence, TypeVar

import numpy as np

from core.validation import check_choice
from mechanisms.release import Release
from mechanisms.runner import Prepared, SolveMany, prepare, run, solve_sequentially
from mechanisms.synthetic.domain import ConjunctionClass, Domain, Workload
from mechanisms.synthetic.evaluate import TableScores, score_table
from mechanisms.synthetic.fem import SyntheticRelease

#: What a run supplies to a mechanism's parameters; never a setting.
RUN_FIELDS = ("epsilon", "delta", "margin")
#: The target at which settings are checked before anything runs (``Entry.check``): any valid
#: (epsilon, delta) serves, every check of a setting is independent of them.
CHECK_TARGET = (1.0, 1e-6)
#: What each kind of data is (``Entry.DATA``, and a dataset config's ``DATA``).
DATA_TEXT = {"features": "features and a label", "records": "records over a public domain"}


class Oracles(Protocol):
    """The oracles a caller offers a run; the entry asks for the one it needs (``Entry.oracle``)."""

    def configured(self) -> Any:
        """The caller's own choice: a sweep's ``oracle`` config, an estimator's ``oracle=``."""

    def route(self, name: str) -> Any:
        """The oracle of the route ``name`` (``oracles.routing.routes``: ``conjunctions_highs``,
        ``conjunctions_search``, ...), whatever the caller configured."""


class TrainingData(Protocol):
    """What an entry reads of a dataset to make its run's data (``pipeline.data.Dataset``)."""

    features: np.ndarray
    labels: np.ndarray
    feature_names: tuple[str, ...]

    def records(self) -> Any:
        """The dataset as records over a public domain (codes, domain, label, positive)."""


@dataclass(frozen=True, eq=False)
class Labelled:
    """A classifier's data: features X, labels y in {-1, +1}, and the columns' names (they name
    a column in a refusal of data beyond a bound; else indices)."""

    X: np.ndarray
    y: np.ndarray
    feature_names: Sequence[str] | None = None


@dataclass(frozen=True, eq=False)
class Table:
    """A synthetic-data mechanism's data: records as level codes over the public ``domain``,
    the public ``workload`` to answer (marginals, or every conjunction of up to k literals, never
    listed), and the label attribute (its index and the code of its positive level) that a
    classifier trained on the table predicts."""

    codes: np.ndarray
    domain: Domain
    workload: Workload | ConjunctionClass
    label: int
    positive: int


D = TypeVar("D", Labelled, Table)


@dataclass(frozen=True, eq=False)
class Request(Generic[D]):
    """One run asked of a catalog entry: its ``settings`` (a config node or
    ``Entry.default_settings()``), the privacy target (``epsilon``, ``delta``) and the threshold
    rule's ``margin``, the entry kind's ``data``, the explicit generator ``rng``, the caller's
    ``oracles`` (None for a mechanism that calls none) and how the oracle calls are run
    (``solve_many``: a loop, or Ray tasks; ``mechanisms.runner``)."""

    settings: Any
    epsilon: float
    delta: float
    margin: float
    data: D
    rng: np.random.Generator
    oracles: Oracles | None = None
    solve_many: SolveMany = solve_sequentially


@dataclass(frozen=True)
class ClassifierScores:
    """A classifier's accuracy on the training set and on the test set (nan without one)."""

    train_accuracy: float
    test_accuracy: float


#: The scores of a run, by kind of entry (the payload of ``pipeline.tracking.run_record.RunResult``).
Scores = ClassifierScores | TableScores


@dataclass(frozen=True)
class Entry:
    """What every kind of entry has (see the module docstring); a kind adds how it runs."""

    name: str
    doc: str
    #: The mechanism's parameter dataclass: its fields and defaults are the settings.
    params: type
    private: bool = True
    #: Parameter fields the entry sets itself (left out of the settings).
    fixed: Mapping[str, Any] = field(default_factory=dict)
    #: Settings that are not fields of ``params``: (name, type, default).
    extra: tuple[tuple[str, Any, Any], ...] = ()
    #: The oracle it needs, from its settings, asked of the caller's oracles (None: it calls
    #: none).
    oracle: Callable[[Any, Oracles], Any] | None = None

    #: What data it takes, as a dataset config says what it holds (``pipeline.data.schema``):
    #: ``features`` (X, y) or ``records`` over a public domain.
    DATA: ClassVar[str]
    #: Its scores' record (``ClassifierScores``, ``TableScores``).
    SCORES: ClassVar[type]

    def setting_fields(self) -> list[tuple[str, Any, Any]]:
        """(name, type, default) of every setting, the parameter dataclass's first."""
        out = []
        hints = typing.get_type_hints(self.params)
        for f in dataclasses.fields(self.params):
            if f.name in RUN_FIELDS or f.name in self.fixed:
                continue
            if f.default is dataclasses.MISSING:
                raise TypeError(
                    f"{self.params.__name__}.{f.name} has no default: a setting needs one"
                )
            out.append((f.name, hints[f.name], f.default))
        return out + list(self.extra)

    def parameters(self, settings: Any, epsilon: float, delta: float, margin: float) -> Any:
        """The mechanism's parameters for one run (its ``__post_init__`` checks them)."""
        names = {f.name for f in dataclasses.fields(self.params)}
        run = {"epsilon": epsilon, "delta": delta, "margin": margin}
        kwargs = {k: v for k, v in run.items() if k in names}
        kwargs.update({n: getattr(settings, n) for n, _, _ in self.setting_fields() if n in names})
        kwargs.update(self.fixed)
        return self.params(**kwargs)

    def request_parameters(self, request: Request) -> Any:
        """The parameters of ``request``'s run."""
        return self.parameters(request.settings, request.epsilon, request.delta, request.margin)

    def check(self, settings: Any, margin: float) -> None:
        """ValueError or TypeError, naming the setting, for a setting the mechanism refuses."""
        self.parameters(settings, *CHECK_TARGET, margin)
        for name, hint, _ in self.extra:  # the extra settings' choices (the others: params)
            if typing.get_origin(hint) is typing.Literal:
                check_choice(name, getattr(settings, name), typing.get_args(hint))

    def check_rows(self, settings: Any, margin: float, n: int) -> None:
        """InvalidValue, naming the setting, for a setting that a training set of ``n`` rows
        cannot take (the parameters' ``check_rows``, where they have one: DP-SGD's batch)."""
        check_rows = getattr(self.parameters(settings, *CHECK_TARGET, margin), "check_rows", None)
        if check_rows is not None:
            check_rows(n)

    def default_settings(self, **changes: Any) -> SimpleNamespace:
        """The settings with their defaults, ``changes`` applied (a TypeError names an unknown
        one)."""
        settings = {name: default for name, _, default in self.setting_fields()}
        unknown = sorted(set(changes) - set(settings))
        if unknown:
            raise TypeError(f"{self.name}: unknown settings {unknown}; known: {sorted(settings)}")
        return SimpleNamespace(**(settings | changes))

    def oracle_of(self, settings: Any, oracles: Oracles | None) -> Any:
        """The oracle a run with ``settings`` calls, from the caller's ``oracles``; a ValueError
        for an entry that calls none, or without ``oracles``."""
        if self.oracle is None:
            raise ValueError(f"{self.name!r} calls no oracle")
        if oracles is None:
            raise ValueError(f"{self.name} needs an oracle: pass Request(oracles=...)")
        return self.oracle(settings, oracles)

    def scores_from(self, number: Callable[[str], float]) -> Any:
        """Its scores' record read back field by field (``number(name)``: a logged metric)."""
        return self.SCORES(*(number(f.name) for f in dataclasses.fields(self.SCORES)))


@dataclass(frozen=True)
class ClassifierEntry(Entry):
    """A mechanism that trains a linear classifier on (X, y): either oracle-based (``build``,
    run by ``mechanisms.runner.run`` with the oracle it asks for) or run whole (``run``)."""

    #: Builds the mechanism object (``mechanisms.runner`` protocol) from its parameters.
    build: Callable[[Any], Any] | None = None
    #: Runs it whole: (params, settings, X, y, rng) -> Release.
    run: Callable[[Any, Any, np.ndarray, np.ndarray, np.random.Generator], Release] | None = None

    DATA: ClassVar[str] = "features"
    SCORES: ClassVar[type] = ClassifierScores

    def __post_init__(self) -> None:
        if (self.build is None) == (self.run is None):
            raise ValueError(
                f"{self.name}: a classifier entry either builds (build=) or runs whole (run=)"
            )

    @property
    def runs_whole(self) -> bool:
        """Whether it runs whole, not through ``mechanisms.runner.run``."""
        return self.run is not None

    def data(self, dataset: TrainingData, workload: Callable[[Domain], Workload]) -> Labelled:
        """Its data from a dataset: the features and labels (``workload`` is a table's)."""
        return Labelled(dataset.features, dataset.labels, dataset.feature_names)

    def release(self, request: Request[Labelled]) -> Release:
        """One run: its parameters from the request (checked as they are built), then the
        mechanism on (X, y) with the request's generator, oracle and ``solve_many``."""
        params = self.request_parameters(request)
        data = request.data
        if self.run is not None:
            return self.run(params, request.settings, data.X, data.y, request.rng)
        return run(
            self.build(params),
            data.X,
            data.y,
            self.oracle_of(request.settings, request.oracles),
            request.rng,
            solve_many=request.solve_many,
            feature_names=data.feature_names,
        )

    def prepare(self, request: Request[Labelled]) -> Prepared:
        """What ``release`` has before its oracle calls (``mechanisms.runner.prepare``): the
        noise drawn from the request's generator and the problems built, exactly as the run
        makes them; a ValueError for an entry that runs whole."""
        if self.build is None:
            raise ValueError(f"{self.name!r} runs whole: it builds no problem for an oracle")
        data = request.data
        mechanism = self.build(self.request_parameters(request))
        return prepare(mechanism, data.X, data.y, request.rng, feature_names=data.feature_names)

    def score(self, release: Release, train: Labelled, test: Labelled | None) -> ClassifierScores:
        """Its accuracy on the training set and on the test set (nan without one)."""
        return ClassifierScores(
            release.accuracy(train.X, train.y),
            release.accuracy(test.X, test.y) if test is not None else math.nan,
        )

    def headline(self, scores: ClassifierScores) -> str:
        """What a finished run's progress line says of it."""
        return f"acc {scores.train_accuracy:.3f}"

    def release_params(self, release: Release) -> dict[str, Any]:
        """The params of its run that come from the release: its scalar noise parameters."""
        return {f"noise.{k}": v for k, v in release.noise.items()}

    def transcript(self, release: Release) -> dict[str, Any]:
        """What release.json holds beside its record: the weights."""
        return {"w": release.w.tolist()}


@dataclass(frozen=True)
class TableEntry(Entry):
    """A mechanism that makes a synthetic table from records over a public domain; it runs
    whole (``run``), calling the oracle it asks for, if any."""

    #: Runs it whole: (params, settings, table, rng, oracle or None) -> SyntheticRelease.
    run: Callable[[Any, Any, Table, np.random.Generator, Any], SyntheticRelease] | None = None
    #: Whether it scores every query of its workload (the exponential mechanism): then a
    #: workload that is never listed (``ConjunctionClass``) is refused before any run.
    lists_workload: bool = False

    DATA: ClassVar[str] = "records"
    SCORES: ClassVar[type] = TableScores

    def __post_init__(self) -> None:
        if self.run is None:
            raise ValueError(f"{self.name}: a synthetic-data mechanism runs whole (run=)")

    @property
    def runs_whole(self) -> bool:
        return True

    def data(self, dataset: TrainingData, workload: Callable[[Domain], Workload]) -> Table:
        """Its data from a dataset of records: their codes over the public domain, the workload
        ``workload(domain)``, the label attribute."""
        records = dataset.records()
        return Table(
            records.codes, records.domain, workload(records.domain), records.label, records.positive
        )

    def release(self, request: Request[Table]) -> SyntheticRelease:
        """One run: its parameters from the request, then the mechanism on the records with the
        request's generator and, for a mechanism that calls one, its oracle."""
        params = self.request_parameters(request)
        oracle = None if self.oracle is None else self.oracle_of(request.settings, request.oracles)
        return self.run(params, request.settings, request.data, request.rng, oracle)

    def score(self, release: SyntheticRelease, train: Table, test: Table | None) -> TableScores:
        """The table against the private records (``score_table``): the workload's error,
        logistic regression trained on it, on the training and test records."""
        return score_table(
            release.records,
            train.codes,
            test.codes if test is not None else None,
            train.workload,
            train.label,
            train.positive,
        )

    def headline(self, scores: TableScores) -> str:
        return f"max marginal error {scores.max_marginal_error:.3f}"

    def release_params(self, release: SyntheticRelease) -> dict[str, Any]:
        """The game's parameters (T, the per-round epsilon, ...; the target is the run's)."""
        return {f"param.{k}": v for k, v in release.params.items() if k not in ("epsilon", "delta")}

    def transcript(self, release: SyntheticRelease) -> dict[str, Any]:
        """The private transcript: the query and sign each round selected."""
        return {"selections": [list(s) for s in release.selections]}


__all__ = [
    "CHECK_TARGET",
    "DATA_TEXT",
    "ClassifierEntry",
    "ClassifierScores",
    "Entry",
    "Labelled",
    "Oracles",
    "RUN_FIELDS",
    "Request",
    "Scores",
    "Table",
    "TableEntry",
    "TrainingData",
]
