"""Auto backend: Gurobi when its licence takes the model, HiGHS otherwise (SPEC section 8).

``AutoOracle`` tries its backends in the order of ``prefer``. A backend that cannot run here
raises ``SolverUnavailableError`` (gurobipy missing, no licence, the pip licence's size limit of
2,000 variables and 2,000 constraints): the next backend then solves, and the certificate's
``fallback`` records why, e.g.

    gurobi: errno 10010 (licence limit: 2105 vars, 4202 constraints) -> highs

Only that error falls back, and only before the backend ran: Gurobi raises it on the size of
its first model (``oracles.gurobi``), so which backend solves depends on the data through the
model's size alone. A backend that ran and did not certify (time limit, numerical trouble) is
reported as it is: retrying elsewhere would make which answer is released depend on the data
through the failures (SPEC section 8).

``time_limit`` is for the whole solve: each backend gets what is left of it (building the model
a backend then refused takes time too).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from oracles.base import DEFAULT_THREADS, DEFAULT_TIME_LIMIT, Oracle, Problem, Solution
from oracles.checks import check_solver_options
from oracles.gurobi import GurobiOracle
from oracles.highs import HighsOracle
from oracles.mip import DEFAULT_STRICT_EPS, SolverUnavailableError

#: The time limit a backend gets when (almost) nothing is left of the solve's.
MIN_TIME_LEFT = 1e-3

#: The MIP backends AutoOracle can chain, by name.
BACKENDS = {"gurobi": GurobiOracle, "highs": HighsOracle}


@dataclass(frozen=True)
class AutoOracle:
    """The first backend of ``prefer`` that can run; the fallback chain goes in the certificate.

    Args:
        time_limit, threads, strict_eps: passed to every backend (``oracles.mip``).
        prefer: backend names from ``BACKENDS``, in the order to try them.
    """

    time_limit: float = DEFAULT_TIME_LIMIT
    threads: int = DEFAULT_THREADS
    prefer: tuple[str, ...] = ("gurobi", "highs")
    strict_eps: float = DEFAULT_STRICT_EPS
    name: str = "auto"

    def __post_init__(self) -> None:
        check_solver_options(self.time_limit, self.threads, self.strict_eps)
        prefer = tuple(self.prefer) if not isinstance(self.prefer, str) else (self.prefer,)
        unknown = [p for p in prefer if p not in BACKENDS]
        if not prefer or unknown or len(set(prefer)) != len(prefer):
            raise ValueError(
                f"prefer must be distinct names from {sorted(BACKENDS)}, found {self.prefer!r}"
            )
        object.__setattr__(self, "prefer", prefer)

    def backends(self) -> list[Oracle]:
        """The backends to try, in order, with this oracle's options."""
        return [self.backend(name, self.time_limit) for name in self.prefer]

    def backend(self, name: str, time_limit: float) -> Oracle:
        """The backend ``name`` with this oracle's options and ``time_limit``."""
        return BACKENDS[name](
            time_limit=time_limit, threads=self.threads, strict_eps=self.strict_eps
        )

    def solve(self, problem: Problem) -> Solution:
        start = time.perf_counter()
        reasons: list[str] = []
        last_error: SolverUnavailableError | None = None
        for name in self.prefer:
            left = self.time_limit - (time.perf_counter() - start)
            backend = self.backend(name, max(left, MIN_TIME_LEFT))
            try:
                solution = backend.solve(problem)
            except SolverUnavailableError as err:
                reasons.append(f"{backend.name}: {err}")
                last_error = err
                continue
            if not reasons:
                return solution
            fallback = " -> ".join([*reasons, backend.name])
            return Solution(solution.w, replace(solution.certificate, fallback=fallback))
        raise SolverUnavailableError(
            f"no backend of {self.prefer!r} could run: {'; '.join(reasons)}"
        ) from last_error


__all__ = ["AutoOracle", "BACKENDS"]
