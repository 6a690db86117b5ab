"""Oracle-efficient private synthetic data (Neel, Roth and Wu, Section 4; docs/synthetic.md).

* ``domain``: the public domain of a table (attributes with finite levels) and a workload of
  k-way marginals (conjunctions of k literals);
* ``accounting``: the guarantee of T adaptive rounds, and the per-round epsilon calibrated to a
  target (epsilon, delta);
* ``fem``: the game, a private query player against a data player that follows the perturbed
  leader with the oracles of ``oracles.synthetic.data_player``.
"""
