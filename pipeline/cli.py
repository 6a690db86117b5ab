"""The Hydra entry point: a thin shell that validates the config and hands it to pipeline.run.

The exit code says whether the command did what was asked (README, "Exit codes and partial
sweeps"); whenever it is not 0, the last line on stderr is ``error: <one-line reason>``.
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pipeline.config import ConfigError, register, validate
from pipeline.data import DataError
from pipeline.lease import SweepBusyError
from pipeline.preflight import ServiceError
from pipeline.run import run

register()

#: conf/ beside the packages (absolute: Hydra resolves a relative path as a Python module when the
#: entry point runs with -m).
CONFIG_DIR = str(Path(__file__).resolve().parent.parent / "conf")


class ExitCode(enum.IntEnum):
    """``python -m pipeline``'s exit codes."""

    #: Every requested run finished and every private run's guarantee holds.
    OK = 0
    #: An unexpected error (a bug): Python's traceback is printed.
    INTERNAL = 1
    #: The command line or data were rejected before anything ran (unknown key, bad value, bad
    #: data, an output directory that would be lost or would overwrite another sweep's).
    USAGE = 2
    #: Some requested runs failed or did not run: a partial sweep (summary.md says which).
    RUNS_FAILED = 3
    #: Every run finished, but the guarantee of some private run does not hold.
    PRIVACY_NOT_HOLDING = 4
    #: The tracking store or the Ray cluster cannot be reached; nothing was started.
    SERVICE_UNAVAILABLE = 5
    #: Another driver is running in the same output directory, or the same sweep on the same
    #: tracking server (a fresh lease on its parent run); nothing was started.
    BUSY = 6
    #: Interrupted (Ctrl-C): a partial sweep, resumable by rerunning the same command.
    INTERRUPTED = 130


SWEEP_STATUS_CODES = {
    "complete": ExitCode.OK,
    "incomplete": ExitCode.RUNS_FAILED,
    "privacy_not_holding": ExitCode.PRIVACY_NOT_HOLDING,
    "interrupted": ExitCode.INTERRUPTED,
}

#: Set once Hydra hands over a composed config: an exit code 1 before that is Hydra rejecting
#: the command line (pipeline.__main__ reports it as USAGE).
composed = False


def exit_code(summary: dict) -> tuple[ExitCode, str]:
    """The exit code and one-line reason of a finished ``pipeline.run.run``."""
    sweep = summary.get("sweep")
    if sweep is None:
        return ExitCode.OK, ""
    return SWEEP_STATUS_CODES[sweep["status"]], sweep["reason"]


def _fail(code: ExitCode, message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(int(code))


@hydra.main(version_base=None, config_path=CONFIG_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    global composed
    composed = True
    try:
        config = validate(cfg)
        if config.output_dir is None:
            config.output_dir = HydraConfig.get().runtime.output_dir
        summary = run(config)
    except (ConfigError, DataError) as e:  # a user's mistake: say what and how to fix it
        _fail(ExitCode.USAGE, str(e))
    except ServiceError as e:
        _fail(ExitCode.SERVICE_UNAVAILABLE, str(e))
    except SweepBusyError as e:
        _fail(ExitCode.BUSY, str(e))
    except KeyboardInterrupt:
        _fail(ExitCode.INTERRUPTED, "interrupted before the sweep started; nothing was run")
    code, reason = exit_code(summary)
    if code != ExitCode.OK:
        _fail(code, reason)
