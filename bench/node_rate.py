"""Nodes per CPU second of the window search, this checkout's beside another commit's, on the
same trees: the compiled kernel alone, and the whole engine around it.

    python -m bench.node_rate --family breast_cancer:rspm:10 --family midwest:opdisc:10 \
        --seeds 0 1 2 --nodes 20000000 --base d4c94b5 --engine-base a9f9241

For each instance (``bench.generic_instances``: a table, a mechanism, an epsilon, a noise seed)
the window search's tables are built once (``oracles.window.plan.plan``: the grid search's
incumbent, the Lagrangian minorant), and two comparisons are run on them:

1. KERNEL (``--compare kernel``): the depth-first search (``oracles.window.kernel``) is run from
   the root below the incumbent's threshold for its first ``--nodes`` nodes, by each kernel in
   turn: this checkout's and the one of commit ``--base`` (``git show BASE:PATH``, at each of
   ``KERNEL_PATHS``, imported from a temporary directory). Both make the same tree: the row
   reports their nodes, leaves and the least bound left on their stacks, and the run fails if
   these differ. The threshold is held at the incumbent's (leaves are counted, not scored), so
   the two searches cannot drift apart through the best value; in the hard solves this bench is
   about, the incumbent is the answer (the grid search finds it).
2. ENGINE (``--compare engine``): the whole search a solve runs, lowering its best as it goes,
   on a node limit of ``--nodes``: this checkout's engine on one worker
   (``oracles.window.engine.InProcess(1)``: the ``Worker`` loop, what ``WindowOracle`` runs on
   one CPU) against the one-shot search of commit ``--engine-base`` (``descend``, from
   ``oracles/branch.py`` or ``oracles/window/tree.py``), run in a child process from that
   commit's files (``git archive`` into a temporary directory) on the same tables, sent
   pickled. The row reports both searches' nodes, leaves and least value found (the same tree
   unless a better point lowers the threshold at another node: the old search returned to
   Python every 100,000 nodes, the engine every 50,000), and the ratio of their rates.

Each search runs ``--repeats`` times in alternation, and the row keeps each one's least CPU
time (``time.process_time``: the process's own CPU, the child's for the other commit's engine,
so a loaded machine slows both alike; the load average is printed beside the figures all the
same).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import io
import json
import math
import pickle
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from bench.generic_instances import make_instance, table_rows
from bench.machine import describe_machine, load_loadavg
from bench.tree_size import family
from oracles.contract.budget import Budget
from oracles.window import kernel as branch_kernel
from oracles.window.engine import InProcess
from oracles.window.plan import plan
from oracles.window.tree import Nodes, Tables

#: The kernel this bench compares against by default: the one before it was vectorized.
DEFAULT_BASE = "d4c94b5"
#: The engine this bench compares against by default: main before the one engine (issue 44),
#: whose solves ran ``descend``.
DEFAULT_ENGINE_BASE = "a9f9241"
#: Nodes the kernel makes between two returns to Python (the old ``descend``'s chunk).
CHUNK = 100_000
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Searched:
    """The first nodes of one search by one kernel or engine (``value``: the least exact value
    an engine found below its start, +inf when none; a kernel's is not scored: nan)."""

    nodes: int
    leaves: int
    least_left: float
    cpu: float
    value: float = math.nan

    @property
    def rate(self) -> float:
        return self.nodes / self.cpu if self.cpu > 0 else float("inf")


#: Where the kernel's file was, newest first (it moved into the window package).
KERNEL_PATHS = ("oracles/window/kernel.py", "oracles/branch_kernel.py")

#: The child process that runs another commit's one-shot search (``descend``) from that commit's
#: files (its working directory): it reads the path of a pickled request a line, and writes one
#: JSON line a request (the first line: where its ``oracles`` package was imported from).
OLD_ENGINE = """
import json, math, pickle, sys, time
try:
    from oracles.window.tree import Nodes, Tables, descend
except ImportError:
    from oracles.branch import Nodes, Tables, descend
from oracles.contract.budget import Budget
import oracles
print(json.dumps({"oracles": oracles.__file__}), flush=True)
for line in sys.stdin:
    with open(line.strip(), "rb") as f:
        request = pickle.load(f)
    t = Tables(**request["tables"])
    descend(t, Nodes.root(t), request["best"], Budget.unlimited().with_nodes(1000))  # compiled
    cpu = time.process_time()
    out = descend(t, Nodes.root(t), request["best"], Budget.unlimited().with_nodes(request["nodes"]))
    cpu = time.process_time() - cpu
    print(json.dumps([out.nodes, out.leaves, cpu, out.value]), flush=True)
"""


def kernel_source(commit: str) -> str:
    """The text of the kernel's file as of ``commit`` (``git show``, at each of
    ``KERNEL_PATHS`` in turn)."""
    err: Exception | None = None
    for path in KERNEL_PATHS:
        try:
            return subprocess.run(
                ["git", "show", f"{commit}:{path}"],
                cwd=ROOT,
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


def engine_search(t: Tables, units, best: float, nodes: int) -> Searched:
    """This checkout's engine on one worker (``InProcess(1)``, what ``WindowOracle`` runs on one
    CPU) from ``units`` below ``best``, on a node limit of ``nodes``."""
    budget = Budget.unlimited().with_nodes(nodes)
    cpu = time.process_time()
    out = InProcess(1).run(t, units, best, budget)
    cpu = time.process_time() - cpu
    return Searched(out.nodes, out.leaves, out.least_left, cpu, out.value)


class OldEngine:
    """Commit ``commit``'s one-shot search, in a child process run from that commit's files
    (``OLD_ENGINE``); ``close`` ends the child and removes its folder."""

    def __init__(self, commit: str) -> None:
        self.commit = commit
        self._folder = tempfile.TemporaryDirectory(prefix="node-rate-engine-")
        self.folder = Path(self._folder.name)
        try:
            archive = subprocess.run(
                ["git", "archive", commit, "oracles", "core"],
                cwd=ROOT,
                check=True,
                capture_output=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError) as err:
            self._folder.cleanup()
            raise SystemExit(f"error: cannot read the files of commit {commit!r}: {err}") from None
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(self.folder, filter="data")
        self.child = subprocess.Popen(
            [sys.executable, "-c", OLD_ENGINE],
            cwd=self.folder,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.imported_from = self._answer()["oracles"]
        if not self.imported_from.startswith(str(self.folder)):
            self.close()
            raise SystemExit(f"error: the child imported oracles from {self.imported_from}")

    def _answer(self):
        line = self.child.stdout.readline()
        if not line:
            raise SystemExit(f"error: commit {self.commit!r}'s search ended (no descend there?)")
        return json.loads(line)

    def search(self, t: Tables, best: float, nodes: int) -> Searched:
        """Its search from the root below ``best`` on a node limit of ``nodes`` (the child's
        CPU seconds)."""
        path = self.folder / "request.pickle"
        fields = {f.name: getattr(t, f.name) for f in dataclasses.fields(t)}
        with path.open("wb") as f:
            pickle.dump({"tables": fields, "best": float(best), "nodes": int(nodes)}, f)
        self.child.stdin.write(f"{path}\n")
        self.child.stdin.flush()
        made, leaves, cpu, value = self._answer()
        return Searched(made, leaves, math.nan, cpu, value)

    def close(self) -> None:
        if self.child.poll() is None:
            self.child.stdin.close()
            self.child.wait(timeout=60)
        self._folder.cleanup()


def compare_engines(t: Tables, start, old: OldEngine, nodes: int, repeats: int):
    """This checkout's engine and ``old``'s on the same tables from the plan ``start``, the
    least CPU of ``repeats`` runs each, in alternation."""
    engine_search(t, start.units, start.incumbent, 1000)  # compiled before timing
    best: dict[str, Searched] = {}
    for _ in range(repeats):
        for name in ("base", "this"):
            if name == "base":
                s = old.search(t, start.incumbent, nodes)
            else:
                s = engine_search(t, start.units, start.incumbent, nodes)
            if name not in best or s.cpu < best[name].cpu:
                best[name] = s
    return best


def same_tree(a: Searched, b: Searched) -> bool:
    """Two kernels: the same nodes, leaves and least bound left."""
    return (a.nodes, a.leaves, a.least_left) == (b.nodes, b.leaves, b.least_left)


def same_search(a: Searched, b: Searched) -> bool:
    """Two engines: the same nodes, leaves and least value found (their bounds are written
    differently)."""
    return (a.nodes, a.leaves, a.value) == (b.nodes, b.leaves, b.value)


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
    parser.add_argument("--base", default=DEFAULT_BASE, help="the kernel's commit to compare")
    parser.add_argument(
        "--engine-base", default=DEFAULT_ENGINE_BASE, help="the engine's commit to compare"
    )
    parser.add_argument(
        "--compare",
        nargs="+",
        choices=("kernel", "engine"),
        default=["kernel", "engine"],
        help="what to compare (default both)",
    )
    parser.add_argument("--grid-seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.repeats < 1:
        parser.error("--nodes and --repeats must be >= 1")
    families = args.family or [
        (table, mech, 10.0) for table in ("breast_cancer", "midwest") for mech in ("opdisc", "rspm")
    ]
    load_before = load_loadavg()
    print(f"machine: {describe_machine()}; {load_before} at start")
    print(
        f"the first {args.nodes:,} nodes of each search from the root below the incumbent, one "
        f"thread; least CPU of {args.repeats} runs each; kernel base {args.base}, engine base "
        f"{args.engine_base}"
    )
    kernel_rows, engine_rows, failed = [], [], False
    ratios: dict[str, list[float]] = {"kernel": [], "engine": []}
    with tempfile.TemporaryDirectory(prefix="node-rate-") as folder:
        kernels, old = {}, None
        if "kernel" in args.compare:
            name = f"branch_kernel_{args.base}"
            kernels = {
                "base": load_kernel(kernel_source(args.base), name, Path(folder)),
                "this": branch_kernel,
            }
        if "engine" in args.compare:
            old = OldEngine(args.engine_base)
        try:
            for table, mech, eps in families:
                for seed in args.seeds:
                    inst = make_instance(mech, eps, seed, table_rows(table))
                    start = plan(inst.problem, Budget.unlimited(), search_seconds=args.grid_seconds)
                    t = start.tables
                    cells = f"| {table} | {inst.name} | {t.d} | {len(t.sign)} |"
                    if kernels:
                        T = t.threshold(start.incumbent)
                        best = compare(t, T, kernels, args.nodes, args.repeats)
                        base, this = best["base"], best["this"]
                        same = same_tree(base, this)
                        failed |= not same
                        ratios["kernel"].append(this.rate / base.rate)
                        kernel_rows.append(
                            f"{cells} {this.nodes:,} | {this.leaves:,} | "
                            f"{'yes' if same else 'NO'} | {base.rate:,.0f} | {this.rate:,.0f} | "
                            f"{this.rate / base.rate:.2f} |"
                        )
                        print("kernel", kernel_rows[-1], flush=True)
                    if old is not None:
                        best = compare_engines(t, start, old, args.nodes, args.repeats)
                        base, this = best["base"], best["this"]
                        ratios["engine"].append(this.rate / base.rate)
                        engine_rows.append(
                            f"{cells} {base.nodes:,} | {this.nodes:,} | {base.leaves:,} | "
                            f"{this.leaves:,} | {'yes' if same_search(base, this) else 'no'} | "
                            f"{base.cpu:.2f} | {this.cpu:.2f} | {base.rate:,.0f} | "
                            f"{this.rate:,.0f} | {this.rate / base.rate:.3f} |"
                        )
                        print("engine", engine_rows[-1], flush=True)
        finally:
            if old is not None:
                old.close()
    if kernel_rows:
        print(f"\nkernel: {args.base} against this checkout's, at the incumbent's threshold")
        print(
            "| table | instance | d | rows | nodes | leaves | same tree | "
            f"{args.base} nodes/CPU s | this nodes/CPU s | ratio |"
        )
        print("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
        print("\n".join(kernel_rows))
    if engine_rows:
        b = args.engine_base
        print(f"\nengine: {b}'s descend against this checkout's InProcess(1), best lowered")
        print(
            f"| table | instance | d | rows | {b} nodes | this nodes | {b} leaves | this leaves "
            f"| same tree | {b} CPU s | this CPU s | {b} nodes/CPU s | this nodes/CPU s | ratio |"
        )
        print("| --- | --- | ---: | ---: |" + " ---: |" * 4 + " --- |" + " ---: |" * 5)
        print("\n".join(engine_rows))
    print()
    for what, values in ratios.items():
        if values:
            mean = math.exp(sum(math.log(r) for r in values) / len(values))
            print(
                f"{what} ratio (this / base): least {min(values):.3f}, greatest "
                f"{max(values):.3f}, geometric mean {mean:.3f} over {len(values)} searches"
            )
    print(f"machine: {describe_machine()}; {load_before} at start, {load_loadavg()} at end")
    if failed:
        print("error: a search made another tree with this kernel", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
