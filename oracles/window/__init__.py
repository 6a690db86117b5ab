"""The window search: the exact argmin of a noisy 0/1 objective over an IntegerGrid, by branch and
bound on the noise (OPDisc and RSPM on generic tables: ``../shared/SPEC.md`` section 8).

One engine, in the order a solve meets it:

- ``oracle``: ``WindowOracle``, the strategy behind the ``window`` and ``portfolio`` routes;
- ``incumbent``: the grid search that gives the search its first best value;
- ``minorant``: the decomposition F = N + L and the Lagrangian minorant N_lam <= F;
- ``tree``: the search's tables and nodes (bounds, children, open nodes);
- ``kernel``: the compiled depth-first search a chunk of nodes at a time;
- ``checkpoint``: a stopped search's state, kept and carried on;
- ``tree_size``: the estimate of a tree's size (preflight, and the price of a certificate).
"""

from oracles.window.oracle import WindowOracle

__all__ = ["WindowOracle"]
