"""Nodes per CPU second of the compiled window search, this checkout's kernel beside another
commit's, on the same trees.

    python -m bench.node_rate --family breast_cancer:rspm:10 --family midwest:opdisc:10 \
        --seeds 0 1 2 --nodes 20000000 --base d4c94b5

For each instance (``bench.generic_instances``: a table, a mechanism, an epsilon, a noise seed)
the window search's tables are built once (``oracles.window.split.plan_split``: the grid search's
incumbent, the Lagrangian minorant), and the depth-first search (``oracles.window.kernel``) is
run from the root below the incumbent's threshold for its first ``--nodes`` nodes, by each
kernel in turn: this checkout's (``oracles.window.kernel``) and the one of commit ``--base``
(``git show BASE:oracles/branch_kernel.py``, imported from a temporary directory). Both make
the same tree: the row reports their nodes, leaves and the least bound left on their stacks,
and the run fails if these differ. The threshold is held at the incumbent's (leaves are
counted, not scored), so the two searches cannot drift apart through the best value; in the
hard solves this bench is about, the incumbent is the answer (the grid search finds it).

Each kernel runs ``--repeats`` times in alternation, and the row keeps each one's least CPU
time (``time.process_time``: the process's own CPU, so a loaded machine slows both alike;
the load average is printed beside the figures all the same).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from bench.generic_instances import make_instance, table_rows
from bench.machine import describe_machine, load_loadavg
from bench.tree_size import family
from oracles.window import kernel as branch_kernel
from oracles.window.tree import Nodes, Tables
from oracles.budget import Budget
from oracles.window.split import plan_split

#: The kernel this bench compares against by default: the one before it was vectorized.
DEFAULT_BASE = "d4c94b5"
#: Nodes the kernel makes between two returns to Python (``oracles.window.tree.CHUNK``).
CHUNK = 100_000


@dataclass(frozen=True)
class Searched:
    """The first nodes of one search by one kernel."""

    nodes: int
    leaves: int
    least_left: float
    cpu: float

    @property
    def rate(self) -> float:
        return self.nodes / self.cpu if self.cpu > 0 else float("inf")


#: Where the kernel's file was, newest first (it moved into the window package).
KERNEL_PATHS = ("oracles/window/kernel.py", "oracles/branch_kernel.py")


def kernel_source(commit: str) -> str:
    """The text of the kernel's file as of ``commit`` (``git show``, at each of
    ``KERNEL_PATHS`` in turn)."""
    root = Path(__file__).resolve().parent.parent
    err: Exception | None = None
    for path in KERNEL_PATHS:
        try:
            return subprocess.run(
                ["git", "show", f"{commit}:{path}"],
                cwd=root,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError) as failed:
            err = failed
    raise SystemExit(f"error: cannot read the kernel of commit {commit!r}: {err}") from None


def load_kernel(source: str, name: str, folder: Path) -> ModuleType:
    """A kernel's ``source`` imported as the module ``name`` (its file in ``folder``, where
    numba keeps its cache)."""
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def search(kernel: ModuleType, t: Tables, T: float, nodes: int) -> Searched:
    """The first ``nodes`` nodes below the root at threshold T by ``kernel``."""
    root = Nodes.root(t)
    state = kernel.State.empty(t.d, t.bound, len(t.sign))
    cpu = time.process_time()
    made = kernel.open_node(t, state, 0, root.states[0], root.C[0], root.P[0], root.Y[0], T)
    leaves = 0
    while made < nodes:
        why, n = kernel.run(t, state, T, min(CHUNK, nodes - made))
        made += n
        leaves += state.n_leaves
        state.n_leaves = 0
        if why == kernel.DONE:
            break
    cpu = time.process_time() - cpu
    return Searched(made, leaves, state.least_bound_left(), cpu)


def compare(t: Tables, T: float, kernels: dict[str, ModuleType], nodes: int, repeats: int):
    """Each kernel's search of the same first nodes, the least CPU of ``repeats`` runs each."""
    for kernel in kernels.values():  # compiled (or read from numba's cache) before timing
        search(kernel, t, T, 1000)
    best: dict[str, Searched] = {}
    for _ in range(repeats):
        for name, kernel in kernels.items():
            s = search(kernel, t, T, nodes)
            if name not in best or s.cpu < best[name].cpu:
                best[name] = s
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.node_rate", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--family",
        action="append",
        type=family,
        default=None,
        help="TABLE:MECHANISM:EPSILON (repeatable; default breast cancer and midwest, "
        "OPDisc and RSPM, epsilon 10)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--nodes", type=int, default=20_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--base", default=DEFAULT_BASE, help="the commit to compare against")
    parser.add_argument("--grid-seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    families = args.family or [
        (table, mech, 10.0) for table in ("breast_cancer", "midwest") for mech in ("opdisc", "rspm")
    ]
    load_before = load_loadavg()
    print(f"machine: {describe_machine()}; {load_before} at start")
    print(
        f"the first {args.nodes:,} nodes of each search from the root, at the incumbent's "
        f"threshold, one thread; least CPU of {args.repeats} runs each; base {args.base}"
    )
    print(
        "| table | instance | d | rows | nodes | leaves | same tree | "
        f"{args.base} nodes/CPU s | this nodes/CPU s | ratio |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    ratios, failed = [], False
    with tempfile.TemporaryDirectory(prefix="node-rate-") as folder:
        base = load_kernel(kernel_source(args.base), f"branch_kernel_{args.base}", Path(folder))
        kernels = {"base": base, "this": branch_kernel}
        for table, mech, eps in families:
            for seed in args.seeds:
                inst = make_instance(mech, eps, seed, table_rows(table))
                plan = plan_split(
                    inst.problem, Budget.unlimited(), search_seconds=args.grid_seconds
                )
                t = plan.tables
                best = compare(t, t.threshold(plan.incumbent), kernels, args.nodes, args.repeats)
                base, this = best["base"], best["this"]
                same = (base.nodes, base.leaves, base.least_left) == (
                    this.nodes,
                    this.leaves,
                    this.least_left,
                )
                failed |= not same
                ratio = this.rate / base.rate
                ratios.append(ratio)
                print(
                    f"| {table} | {inst.name} | {t.d} | {len(t.sign)} | {this.nodes:,} | "
                    f"{this.leaves:,} | {'yes' if same else 'NO'} | {base.rate:,.0f} | "
                    f"{this.rate:,.0f} | {ratio:.2f} |",
                    flush=True,
                )
    print()
    print(f"ratio: least {min(ratios):.2f}, greatest {max(ratios):.2f} over {len(ratios)} searches")
    print(f"machine: {describe_machine()}; {load_before} at start, {load_loadavg()} at end")
    if failed:
        print("error: a search made another tree with this kernel", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
