"""The window search on a Ray cluster: the same search as in one process
(``oracles.window.engine``), its pool a Ray actor and its workers Ray tasks.

- ``ray_pool``: the transport: the pool as an actor, a worker's non-blocking client of it, the
  worker's Ray task, and what a task knows of itself (its CPUs, its node);
- ``ray_search``: ``RaySearch``, the executor a sweep gives the window search: worker 0 in the
  solve's own task, extra workers as Ray tasks (``oracle.parts``), grown onto the cluster's idle
  CPUs while no run of the sweep waits and recalled when runs wait (``Demand``).
"""
