"""A Ray of a test module's own: never a cluster someone else runs on the same machine."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

from pipeline.sweep.fan_out import workers_at_driver_niceness


@contextlib.contextmanager
def own_ray(num_cpus: int) -> Iterator[object]:
    """A local Ray with ``num_cpus`` CPUs and no dashboard, its workers at this process's
    niceness as the pipeline's own Ray (``pipeline.sweep.fan_out.workers_at_driver_niceness``), shut down
    afterwards.

    ``ray.init`` writes RAY_AUTH_MODE=token (and more) into os.environ; every later test that
    starts a subprocess would inherit it, so the environment is restored afterwards.
    """
    import ray  # a dependency: its absence is a failure, not a skip

    saved = dict(os.environ)
    workers_at_driver_niceness()
    ray.init(address="local", num_cpus=num_cpus, log_to_driver=False, include_dashboard=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        os.environ.clear()
        os.environ.update(saved)
