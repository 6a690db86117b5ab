"""Baselines of private synthetic data from a library: MST, AIM and MWEM of smartnoise-synth.

The same public domain, workload and privacy target as the game (docs/synthetic.md), run by
smartnoise-synth (``snsynth``; MST and AIM fit Private-PGM's models, ``mbi`` 1.x). Nothing the
library does well is written again here; this module only fits it to the project's terms:

* **The domain is public.** Each column goes through a ``LabelTransformer`` fitted on a table
  that lists every level (nothing read off the data, ``preprocessor_eps=0``), so the library
  codes level v of an attribute as v.
* **Neighbours replace one record, and n is public** (docs/synthetic.md, section 2). The library
  proves its guarantee for adding or removing one record: each marginal's Gaussian measurement at
  L2 sensitivity 1, each selection's exponential mechanism at sensitivity 1 (the largest weight).
  Replacing a record moves at most one count of each marginal down and another up, so the
  Gaussian's sensitivity is sqrt(2) (twice the zCDP rho) and the selection score's is 2 (twice the
  bounded range, four times the rho). The library uses the true n (MST's ``known_total``,
  MWEM's histogram total), which only the replace-one notion makes public. So each run hands
  the library a smaller epsilon, chosen so that the replace-one guarantee is the target:

  - MST spends rho/3 on one-way Gaussian measurements, rho/3 on selecting a tree's edges by the
    exponential mechanism, rho/3 on measuring them: replace-one rho' = 8/3 rho.
  - AIM spends 90% of every round's rho on its Gaussian measurement and 10% on its selection
    (its one-way start is Gaussian only): rho' <= 2 (0.9 rho) + 4 (0.1 rho) = 2.2 rho.
  - MST's and AIM's rho' gives (zcdp_epsilon(rho', delta), delta)-DP (Canonne, Kamath and
    Steinke 2020, Proposition 12; docs/synthetic.md 2.2), the conversion the game uses, at the
    requested delta. The library's own
    epsilon is opendp's tight conversion of its rho, so the epsilon handed to it is opendp's
    conversion of the rho wanted, and its rho is read back from ``snsynth.utils.cdp_rho``.
  - MWEM is pure DP; delta is unused and recorded as 0. Each iteration's selection is
    eps_t-DP in either notion (its score, a cuboid's mean error, moves by at most 2 / cells <= 1),
    and its Laplace measurement of a cuboid's cells (sensitivity 1 when adding a record, 2 when
    replacing one) costs 2 eps_t instead of eps_t: the library's ledger times 1.5.

Two of snsynth's MWEM steps use the private data beyond its ledger; both are changed here:

* it sizes each histogram by the min and max of the private columns: here by the public levels;
* when its draw hits a query it already measured it draws again, up to
  ``max_retries_exp_mechanism`` times, each draw one more exponential mechanism than its ledger
  counts; with 0 retries a hit is replaced by a uniform unmeasured query, which is
  post-processing of one draw.

**Seeding.** The Gaussian and Laplace noise is opendp's, drawn from the operating system's
secure generator: it cannot be seeded, so the same ``rng`` does not give the same records. The
rest of the library's randomness (its selections, MWEM's query pool, mbi's sampling of records)
uses numpy's and Python's global generators: each run seeds them from ``rng`` and restores their
states afterwards.
"""

from __future__ import annotations

import contextlib
import io
import math
import random
import time
import warnings
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from core.validation import check_int, check_real
from mechanisms.privacy import ApproximateTarget, PrivacyTarget, TargetRecord
from mechanisms.release import PrivacyClaim, check_rng
from mechanisms.synthetic.accounting import zcdp_epsilon, zcdp_target
from mechanisms.synthetic.domain import Domain, Workload, check_codes
from mechanisms.synthetic.fem import SyntheticRelease

#: How to install the optional baselines (pyproject's extra, then the library without its pins).
INSTALL = 'pip install -e ".[baselines]" && bash scripts/install_baselines.sh'

#: Replace-one rho over the library's add/remove rho (module docstring).
MST_REPLACE_FACTOR = 8.0 / 3.0
AIM_REPLACE_FACTOR = 2.2
#: Replace-one epsilon over snsynth MWEM's ledger (module docstring).
MWEM_REPLACE_FACTOR = 1.5
#: The library sums its ledger in floats: a sum of N parts of epsilon can round up by N ulps
#: (1.5 x the ledger was 0.30000000000000004 at epsilon 0.3 on Adult). Handing it epsilon
#: short by this fraction keeps 1.5 x the ledger within the target for up to ~10^6 parts.
MWEM_LEDGER_SLACK = 1e-10


@dataclass(frozen=True)
class MSTParams(TargetRecord):
    """MST (McKenna, Miklau and Sheldon 2021): one-way marginals, a maximum spanning tree of
    two-way marginals chosen privately, a graphical model fitted to their measurements. The
    target (epsilon, delta) of the whole release; snsynth's MST has no other setting."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        self.hold_target()


@dataclass(frozen=True)
class AIMParams(TargetRecord):
    """AIM (McKenna et al. 2022): rounds that select a marginal of the workload's downward
    closure the model answers worst, measure it, refit the model."""

    epsilon: float
    delta: float
    #: Rounds planned, at least the attributes: the one-way start takes 0.9 x attributes /
    #: rounds of the budget, each round 1 / rounds (a round whose marginal was already well
    #: answered halves its noise at 4 times the cost, so the budget may run out sooner). None:
    #: the library's 16 x attributes. Each round projects the model on every candidate
    #: marginal (JAX compiles each new shape): on Adult's 3-way workload, ~30 s a round.
    rounds: int | None = None
    #: Largest graphical model (MB) a selection may grow to.
    max_model_size: float = 80.0

    def __post_init__(self) -> None:
        self.hold_target()
        if self.rounds is not None:
            check_int("rounds", self.rounds)
        check_real("max_model_size", self.max_model_size)


@dataclass(frozen=True)
class MWEMParams(TargetRecord):
    """MWEM (Hardt, Ligett and McSherry 2012) over histograms of attribute groups: its domain
    is the product of the levels, so the attributes are grouped, in column order, into
    histograms of at most ``max_cells`` cells (an attribute with more levels stands alone).
    The groups are public (the levels alone fix them) and sampled independently: a marginal
    across two groups is the product of theirs. MWEM is pure DP; ``delta`` is unused."""

    epsilon: float
    delta: float
    max_cells: int = 1000
    #: Iterations per histogram. None: the library's 10 ceil(log10 n).
    iterations: int | None = None
    #: Widest marginal (cuboid) measured. None: the library's 3 if n > 10,000, else 2.
    marginal_width: int | None = None
    #: Multiplicative-weights passes over the measurements after each iteration.
    mult_weights_iterations: int = 20

    def __post_init__(self) -> None:
        self.hold_target(PrivacyTarget)  # MWEM is pure DP: delta unused
        check_int("max_cells", self.max_cells, 2)
        if self.iterations is not None:
            check_int("iterations", self.iterations)
        if self.marginal_width is not None:
            check_int("marginal_width", self.marginal_width)
        check_int("mult_weights_iterations", self.mult_weights_iterations)


# --- the library -------------------------------------------------------------------------------


def _snsynth() -> dict[str, Any]:
    """snsynth's pieces, imported on first use (the baselines are optional)."""
    try:
        from snsynth.aim import AIMSynthesizer
        from snsynth.mst import MSTSynthesizer
        from snsynth.mwem import Histogram, MWEMSynthesizer
        from snsynth.transform.label import LabelTransformer
        from snsynth.transform.table import TableTransformer
        from snsynth.utils import cdp_rho
    except ImportError as err:
        raise ImportError(
            f"the synthetic-data baselines need smartnoise-synth 1.0.8 and mbi 1.x ({err}); "
            f"install them with: {INSTALL}"
        ) from err
    return {
        "AIMSynthesizer": AIMSynthesizer,
        "MSTSynthesizer": MSTSynthesizer,
        "MWEMSynthesizer": MWEMSynthesizer,
        "Histogram": Histogram,
        "LabelTransformer": LabelTransformer,
        "TableTransformer": TableTransformer,
        "cdp_rho": cdp_rho,
    }


def library_versions() -> str:
    """The installed versions of the library and what it rests on, for the release's claim."""
    out = []
    for dist in ("smartnoise-synth", "mbi", "opendp"):
        try:
            out.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join(out)


def public_transformer(sizes: Sequence[int]) -> Any:
    """snsynth's table transformer for level codes, fitted on a table listing every level of
    every attribute (never on the data): level v of an attribute is coded v."""
    lib = _snsynth()
    transformer = lib["TableTransformer"]([lib["LabelTransformer"](nullable=False) for _ in sizes])
    transformer.fit([tuple(i % k for k in sizes) for i in range(max(sizes))], epsilon=0.0)
    assert transformer.fit_complete and transformer.cardinality == list(sizes)
    return transformer


@contextlib.contextmanager
def _library_randomness(rng: np.random.Generator) -> Iterator[None]:
    """numpy's and Python's global generators seeded from ``rng``, their states restored on
    exit; the library's printing silenced, and two warnings: mbi's deprecation of data frames,
    and MWEM's "privacy risk" of a histogram with at most half as many cells as iterations (an
    accuracy heuristic: every measurement is noisy and in the ledger, so the guarantee holds)."""
    numpy_state, python_state = np.random.get_state(), random.getstate()
    seed = int(rng.integers(2**32))
    np.random.seed(seed)
    random.seed(seed)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Pandas dataframe inputs are deprecated")
            warnings.filterwarnings("ignore", message="Flattened dimensionality")
            yield
    finally:
        np.random.set_state(numpy_state)
        random.setstate(python_state)


# --- calibration (module docstring) -----------------------------------------------------------


def library_budget(target: ApproximateTarget, factor: float) -> tuple[float, float]:
    """(library epsilon, library rho): the epsilon to hand snsynth's MST or AIM, and the rho its
    ``cdp_rho`` makes of it, with ``factor`` x rho <= ``zcdp_target(target)``: the replace-one
    guarantee at the ``target``'s delta is at most its epsilon."""
    import opendp.prelude as dp

    cdp_rho = _snsynth()["cdp_rho"]
    dp.enable_features("floating-point", "contrib")
    epsilon, delta = target.epsilon, target.delta
    goal = zcdp_target(target) / factor
    gaussian = dp.m.make_gaussian(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), (2.0 * goal) ** -0.5
    )
    approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(gaussian), delta=delta)
    library_epsilon = float(approx.map(1.0)[0])
    rho = float(cdp_rho(library_epsilon, delta))
    while zcdp_epsilon(factor * rho, delta) > epsilon:  # its search may land an ulp above
        library_epsilon *= 1.0 - 1e-9
        rho = float(cdp_rho(library_epsilon, delta))
    return library_epsilon, rho


def mwem_library_epsilon(epsilon: float) -> float:
    """The epsilon to hand snsynth's MWEM: its ledger times 1.5 is at most ``epsilon``, with
    room for the ledger's own rounding (``MWEM_LEDGER_SLACK``)."""
    library_epsilon = epsilon / MWEM_REPLACE_FACTOR * (1.0 - MWEM_LEDGER_SLACK)
    while library_epsilon * MWEM_REPLACE_FACTOR > epsilon:
        library_epsilon = math.nextafter(library_epsilon, 0.0)
    return library_epsilon


def mwem_groups(sizes: Sequence[int], max_cells: int) -> tuple[tuple[int, ...], ...]:
    """The attributes in column order, grouped greedily into products of at most ``max_cells``
    levels (an attribute with more stands alone): the public splits of ``MWEMParams``."""
    groups: list[list[int]] = []
    cells = 0
    for a, k in enumerate(sizes):
        if groups and cells * k <= max_cells:
            groups[-1].append(a)
            cells *= k
        else:
            groups.append([a])
            cells = k
    return tuple(tuple(g) for g in groups)


# --- running ----------------------------------------------------------------------------------


def _check_inputs(codes: Any, domain: Domain, workload: Workload) -> np.ndarray:
    codes = check_codes(codes, domain.sizes)
    if tuple(workload.sizes) != tuple(domain.sizes):
        raise ValueError(
            f"the workload's sizes {workload.sizes} are not the domain's {domain.sizes}"
        )
    return codes


def _fit_sample(
    synthesizer: Any, codes: np.ndarray, sizes: Sequence[int], rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, float]]:
    """Fit ``synthesizer`` on ``codes`` through the public transformer and sample n records."""
    transformer = public_transformer(sizes)
    with _library_randomness(rng):
        start = time.perf_counter()
        synthesizer.fit(codes, transformer=transformer, preprocessor_eps=0.0)
        fitted = time.perf_counter()
        records = np.asarray(synthesizer.sample(len(codes)), dtype=np.int64)
        sampled = time.perf_counter()
    if records.shape != codes.shape or (records < 0).any() or (records >= np.array(sizes)).any():
        raise RuntimeError(
            f"{type(synthesizer).__name__} returned records outside the domain "
            f"(shape {records.shape}, expected {codes.shape})"
        )
    return records, {"fit": fitted - start, "sample": sampled - fitted}


def _zcdp_release(
    name: str,
    factor: float,
    params: MSTParams | AIMParams,
    codes: np.ndarray,
    workload: Workload,
    rng: np.random.Generator,
    make: Callable[[float], Any],
    how: str,
    extra: dict[str, Any],
) -> SyntheticRelease:
    start = time.perf_counter()
    library_epsilon, library_rho = library_budget(params.target, factor)
    records, timings = _fit_sample(make(library_epsilon), codes, workload.sizes, rng)
    rho = factor * library_rho
    claim = PrivacyClaim(
        zcdp_epsilon(rho, params.delta),
        params.delta,
        True,
        f"{library_versions()}: {name} is {library_rho:.6g}-zCDP for adding or removing one "
        f"record (opendp's cdp_rho of its epsilon {library_epsilon:.6g} at delta); replacing "
        f"one, {how}: {rho:.6g}-zCDP, hence (epsilon, delta)-DP by Canonne, Kamath and "
        "Steinke's conversion (docs/synthetic.md 2.2); the domain and n are public",
        requested_epsilon=params.epsilon,
        requested_delta=params.delta,
        calibration="library",
    )
    return SyntheticRelease(
        mechanism=name.lower(),
        records=records,
        privacy=claim,
        params=asdict(params)
        | extra
        | {
            "library_epsilon": library_epsilon,
            "library_rho": library_rho,
            "rho": rho,
            "queries": workload.queries,
        },
        selections=(),
        certificates=(),
        timings=timings | {"total": time.perf_counter() - start},
    )


def run_mst(
    codes: np.ndarray,
    domain: Domain,
    params: MSTParams,
    rng: np.random.Generator,
    workload: Workload,
) -> SyntheticRelease:
    """snsynth's MST on the private records ``codes`` (level codes of ``domain``): n records
    over the same columns. MST picks its own two-way marginals; ``workload`` is only checked
    against the domain and counted (the release's ``queries``)."""
    rng = check_rng(rng)
    codes = _check_inputs(codes, domain, workload)
    mst = _snsynth()["MSTSynthesizer"]
    return _zcdp_release(
        "MST",
        MST_REPLACE_FACTOR,
        params,
        codes,
        workload,
        rng,
        lambda eps: mst(epsilon=eps, delta=params.delta),
        "its Gaussian measurements' 2/3 of rho count twice and its tree selection's 1/3 four times",
        {},
    )


def run_aim(
    codes: np.ndarray,
    domain: Domain,
    params: AIMParams,
    rng: np.random.Generator,
    workload: Workload,
) -> SyntheticRelease:
    """snsynth's AIM on the private records ``codes`` (level codes of ``domain``), its workload
    ``workload``'s marginals (in place of the library's all ``degree``-way ones): n records."""
    rng = check_rng(rng)
    codes = _check_inputs(codes, domain, workload)
    attributes = len(domain.sizes)
    rounds = params.rounds if params.rounds is not None else 16 * attributes
    if rounds < attributes:
        raise ValueError(
            f"rounds must be >= the {attributes} attributes (AIM's one-way start takes "
            f"0.9 x attributes / rounds of its budget), found {rounds}"
        )
    marginals = [tuple(f"col{a}" for a in m) for m in workload.marginals]
    aim_class = _snsynth()["AIMSynthesizer"]

    def make(eps: float) -> Any:
        aim = aim_class(
            epsilon=eps, delta=params.delta, rounds=rounds, max_model_size=params.max_model_size
        )
        aim.get_workload = lambda data, **_: list(marginals)  # the workload, not the library's
        return aim

    return _zcdp_release(
        "AIM",
        AIM_REPLACE_FACTOR,
        params,
        codes,
        workload,
        rng,
        make,
        "its Gaussian measurements' at least 90% of rho count twice and its selections' at "
        "most 10% four times, at most 2.2 rho",
        {"rounds_planned": rounds},
    )


def _public_domain_mwem(sizes: Sequence[int]) -> type:
    """snsynth's MWEM with each histogram shaped by the public levels, not by the private
    columns' min and max (the library's ``_histogram_from_data_attributes``)."""
    lib = _snsynth()
    histogram = lib["Histogram"]

    class PublicDomainMWEM(lib["MWEMSynthesizer"]):
        def _histogram_from_data_attributes(self, data, splits=()):
            out = []
            for split in splits:
                split = [int(a) for a in split]
                dims = [int(sizes[a]) for a in split]
                for a in split:
                    self.mins_maxes[str(a)] = (0, int(sizes[a]) - 1)
                    self.scale[str(a)] = 1
                counts = histogram.histogramdd_indexes(np.asarray(data)[:, split], dims)
                bins = [np.arange(k + 1) for k in dims]
                out.append(histogram(counts.astype(float), dims, bins, split))
            return out

    return PublicDomainMWEM


def run_mwem(
    codes: np.ndarray,
    domain: Domain,
    params: MWEMParams,
    rng: np.random.Generator,
    workload: Workload,
) -> SyntheticRelease:
    """snsynth's MWEM (module docstring: public histogram shapes, no re-draws) on the private
    records ``codes`` (level codes of ``domain``), over the attribute groups of ``mwem_groups``:
    n records. Its queries are the cuboids of each group; ``workload`` is only checked against
    the domain and counted (the release's ``queries``)."""
    rng = check_rng(rng)
    codes = _check_inputs(codes, domain, workload)
    start = time.perf_counter()
    sizes = domain.sizes
    groups = mwem_groups(sizes, params.max_cells)
    library_epsilon = mwem_library_epsilon(params.epsilon)
    mwem = _public_domain_mwem(sizes)(
        epsilon=library_epsilon,
        iterations=params.iterations,
        splits=[list(g) for g in groups],
        marginal_width=params.marginal_width,
        max_retries_exp_mechanism=0,
        mult_weights_iterations=params.mult_weights_iterations,
    )
    records, timings = _fit_sample(mwem, codes, sizes, rng)
    spent = math.fsum(mwem.accountant)
    epsilon = MWEM_REPLACE_FACTOR * spent
    claim = PrivacyClaim(
        epsilon,
        0.0,
        True,
        f"{library_versions()}: MWEM's ledger is {spent:.6g}-DP for adding or removing one "
        "record; replacing one, its Laplace measurements (half the ledger) count twice: 1.5 x "
        "the ledger, pure DP (mechanisms/synthetic/baselines.py); histograms shaped by the "
        "public levels, no re-draw of a selection; the domain and n are public",
        requested_epsilon=params.epsilon,
        requested_delta=params.delta,
        calibration="library",
    )
    return SyntheticRelease(
        mechanism="mwem",
        records=records,
        privacy=claim,
        params=asdict(params)
        | {
            "splits": "|".join(",".join(str(a) for a in g) for g in groups),
            "iterations_used": int(max(h.iterations for h in mwem.histograms)),
            "library_epsilon": library_epsilon,
            "queries": workload.queries,
        },
        selections=(),
        certificates=(),
        timings=timings | {"total": time.perf_counter() - start},
    )


__all__ = [
    "INSTALL",
    "AIMParams",
    "MSTParams",
    "MWEMParams",
    "library_budget",
    "mwem_groups",
    "mwem_library_epsilon",
    "public_transformer",
    "run_aim",
    "run_mst",
    "run_mwem",
]
