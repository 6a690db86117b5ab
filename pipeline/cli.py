"""The Hydra entry point: a thin shell that validates the config and hands it to pipeline.run.

The exit code says whether the command did what was asked (README, "Exit codes and partial
sweeps"); whenever it is not 0, the last line on stderr is ``error: <one-line reason>``.
"""

from __future__ import annotations

import difflib
import enum
import errno
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
from dataclasses import asdict, fields, is_dataclass, replace
from pathlib import Path
from typing import Sequence

import hydra
from hydra import compose, initialize_config_dir
from hydra._internal.utils import get_args_parser
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig, open_dict
from omegaconf.errors import (
    ConfigAttributeError,
    ConfigKeyError,
    OmegaConfBaseException,
    ValidationError,
)

from pipeline.config import ConfigError, register, sweep_id, unknown_key, validate, with_content
from pipeline.data import DataError
from pipeline.sweep.faults import (
    INTERRUPTED_EXIT,
    RESERVE_BYTES,
    TERMINATED_EXIT,
    StorageError,
    one_line,
    stop_on_sigterm,
    stopped_before_start,
)
from pipeline.sweep.dir_lock import SweepBusyError, another_sweep, sweep_in
from pipeline.sweep.preflight import ServiceError
from pipeline.read_only import freeze
from pipeline.run import run
from pipeline.settings_schemas import SCHEMAS

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
    INTERRUPTED = INTERRUPTED_EXIT
    #: Stopped by SIGTERM (``timeout``, ``kill``, a scheduler, ``ray job stop``): as Ctrl-C.
    TERMINATED = TERMINATED_EXIT


SWEEP_STATUS_CODES = {
    "complete": ExitCode.OK,
    "incomplete": ExitCode.RUNS_FAILED,
    "privacy_not_holding": ExitCode.PRIVACY_NOT_HOLDING,
    "interrupted": ExitCode.INTERRUPTED,  # ExitCode.TERMINATED when by SIGTERM
}

#: Set once Hydra hands over a composed config: an exit code 1 before that is Hydra rejecting
#: the command line (pipeline.__main__ reports it as USAGE).
composed = False


def exit_code(summary: dict) -> tuple[ExitCode, str]:
    """The exit code and one-line reason of a finished ``pipeline.run.run``."""
    sweep = summary.get("sweep")
    if sweep is None:
        return ExitCode.OK, ""
    if sweep.get("terminated"):
        return ExitCode.TERMINATED, sweep["reason"]
    return SWEEP_STATUS_CODES[sweep["status"]], sweep["reason"]


def _stopped_before_the_sweep(stop: KeyboardInterrupt, output_dir: str | None = None) -> None:
    """Ctrl-C or SIGTERM before a sweep's parent run existed: one line, and no empty folder."""
    if output_dir is not None:
        _discard_if_empty(output_dir)
    code, line = stopped_before_start(stop)
    _fail(ExitCode(code), line)


#: What Hydra itself puts in a run's output directory before ``main`` runs.
HYDRA_FILES = {"cli.log", ".hydra"}


def _discard_if_empty(output_dir: str) -> None:
    """Remove the output directory of a command refused before it ran anything (bad data, a
    check in the driver) when it holds only Hydra's own files, and the folders above it that
    are left empty, up to the working directory (the default ``outputs/DATE/TIME``'s
    ``outputs/DATE``): no empty folder is left."""
    path = Path(output_dir).absolute()
    if not (path.is_dir() and {p.name for p in path.iterdir()} <= HYDRA_FILES):
        return
    shutil.rmtree(path, ignore_errors=True)
    cwd = Path.cwd().absolute()
    for parent in path.parents:
        if parent == cwd or cwd not in parent.parents:
            break
        try:
            parent.rmdir()  # only an empty one
        except OSError:
            break


def _fail(code: ExitCode, message: str) -> None:
    """``error: <message>`` as the last line on stderr, and exit ``code``. The message is made
    one line whatever it holds (pandas' parser errors end with a newline); a Ray this process
    runs is shut down first with its C++ log lines kept off stderr, and nothing written to
    stderr after the line is shown (Ray's ``Failed to connect to GCS`` at exit under load)."""
    quiet = _shut_ray_down_quietly()
    print(f"error: {one_line(message)}", file=sys.stderr)
    sys.stderr.flush()
    if quiet:
        _stderr_to_devnull()
    sys.exit(int(code))


def _shut_ray_down_quietly() -> bool:
    """``ray.shutdown()`` with file descriptor 2 on /dev/null meanwhile, if this process runs a
    Ray (its C++ core logs to the descriptor, not to sys.stderr); True when it did."""
    ray = sys.modules.get("ray")
    try:
        if ray is None or not ray.is_initialized():
            return False
    except Exception:  # noqa: BLE001 - a half-imported ray: nothing to shut down
        return False
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        _stderr_to_devnull()
        try:
            ray.shutdown()
        except Exception:  # noqa: BLE001 - the driver is ending on its own error already
            pass
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return True


def _stderr_to_devnull() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


#: Hydra's words for a group override without ``+`` (``sweep=smoke``) and for a group given twice.
_NOT_IN_DEFAULTS = re.compile(r"Could not override '([\w./]+)'\. No match in the defaults list")
_GIVEN_TWICE = re.compile(r"Multiple values for ([\w./]+)\.")
_AMBIGUOUS = re.compile(r"Ambiguous value for argument '(.+)'")

#: Where the docs show how to name a column the command line cannot spell.
COLUMN_NAMES_DOC = "docs/data.md, 'Column names the command line cannot spell'"


def _unknown_mechanism(overrides: Sequence[str]) -> ConfigError | None:
    """The unknown-key error of the first override under ``mechanisms.NAME`` whose NAME is not
    a mechanism of the catalog, if any."""
    for override in overrides:
        parts = override.lstrip("+~").partition("=")[0].split(".")
        if len(parts) > 1 and parts[0] == "mechanisms" and parts[1] not in SCHEMAS:
            return unknown_key("mechanisms.", parts[1], list(SCHEMAS))
    return None


def _override_of(key: str, overrides: Sequence[str]) -> tuple[str, ...]:
    """The overrides of ``key`` (``key=...``, ``+key=...``, ``++key=...``), in order."""
    return tuple(o for o in overrides if o.lstrip("+~").partition("=")[0] == key)


def _unspellable(override: str) -> str:
    """The hint for an override Hydra's grammar cannot read because of a column name: a key
    (or an unquoted word) of non-ASCII letters, or an ``=`` inside a mapping's key."""
    value = override.partition("=")[2]
    if not (any(ord(c) > 127 for c in override) or "=" in value):
        return ""
    return (
        "; a name with non-ASCII letters or '=' cannot stand unquoted on the command line: quote "
        "a value (dataset.label='größe'), and give a mapping whose keys have such names as one "
        "quoted string, e.g. 'dataset.numeric=\"{größe: [0, 250], a=b: [0, 1]}\"' (the shell's "
        f"quotes outside, Hydra's inside; {COLUMN_NAMES_DOC})"
    )


def _hydra_reason(error: HydraException, overrides: Sequence[str] = ()) -> str:
    """One line for an error of Hydra's composing the command line ``overrides`` (its own
    message spans several lines and ends with a hint about HYDRA_FULL_ERROR), in the project's
    words where Hydra's do not say what to type."""
    cause = error.__cause__
    text = str(error)
    if isinstance(error, MissingConfigException) and error.missing_cfg_file:
        group, _, option = error.missing_cfg_file.rpartition("/")
        options = list(error.options or [])
        close = difflib.get_close_matches(option, options, n=1)
        hint = f" (did you mean {group}={close[0]}?)" if close else ""
        known = f"; the options of {group} are {', '.join(options)}" if options else ""
        return f"{group}={option}: no such option{hint}{known}"
    if isinstance(error, OverrideParseException):
        override = str(error.override)
        first = text.splitlines()[0]
        if first.endswith(f": {override}"):  # the lexer's own line repeats the override
            first = "a character the override grammar does not take"
        return f"cannot parse {override!r}: {first}{_unspellable(override)}"
    missing = _NOT_IN_DEFAULTS.search(text)
    if missing:  # `sweep=smoke`: a group the defaults list does not choose is added with +
        group = missing.group(1)
        given = _override_of(group, overrides)
        option = given[0].partition("=")[2] if given else "NAME"
        return (
            f"{group}={option}: {group} has no default to override; add it with a plus: "
            f"+{group}={option}"
        )
    twice = _GIVEN_TWICE.search(text)
    if twice:  # `+sweep=smoke +sweep=adult`: Hydra's advice is for a defaults list, not here
        group = twice.group(1)
        given = _override_of(group, overrides)
        return (
            f"{group}: given {len(given) or 'more than'} times ({', '.join(given) or group}); a "
            f"command runs one {group}: keep one +{group}=NAME and run the other as a second "
            "command"
        )
    if isinstance(cause, ConfigAttributeError) and is_dataclass(cause.object_type):
        prefix, _, key = (cause.full_key or "").rpartition(".")
        known = [f.name for f in fields(cause.object_type)]
        return str(unknown_key(f"{prefix}." if prefix else "", key, known))
    if isinstance(cause, ConfigKeyError) and "not in struct" in str(cause):
        # a mapping of the schema (``mechanisms.opdisk``): its keys are the known ones
        prefix, _, key = (cause.full_key or "").rpartition(".")
        known = [str(k) for k in (cause.parent_node or {})]
        return str(unknown_key(f"{prefix}." if prefix else "", key, known))
    ambiguous = _AMBIGUOUS.search(text)
    if ambiguous:  # `sweep.epsilons=0.5,1.0`: a comma list is a multirun's sweep, not a list
        key, _, value = ambiguous.group(1).lstrip("+").partition("=")
        return (
            f"{key}: {value!r} is a comma list, which Hydra reads as values to sweep over with "
            f"-m, not as a list; write '{key}=[{value}]' (the quotes keep the shell off the "
            "brackets)"
        )
    unknown = _unknown_mechanism(overrides)
    if isinstance(cause, ValidationError) and unknown is not None:
        # `+mechanisms.opdisk.tau=2`: Hydra adds an empty mechanism and finds it is not one
        return str(unknown)
    if isinstance(cause, ValidationError) and "is not a ListConfig" in str(cause):
        # `sweep.epsilons=0.5`: a list wanted, one value given
        given = _override_of(cause.full_key, overrides)
        value = given[-1].partition("=")[2] if given else "VALUE"
        return (
            f"{cause.full_key}: takes a list, found {value!r}; write "
            f"'{cause.full_key}=[{value}]' (a list of one; the quotes keep the shell off "
            "the brackets)"
        )
    if isinstance(cause, OmegaConfBaseException):
        reason = str(cause).splitlines()[0]
        return f"{cause.full_key}: {reason}" if getattr(cause, "full_key", None) else reason
    return text.splitlines()[0]


def check_command_line(overrides: Sequence[str]) -> None:
    """Compose and validate ``overrides`` as Hydra will, before Hydra creates the output
    directory: a command line Hydra cannot compose, or a config that does not validate, is a
    ConfigError with a one-line reason, and leaves nothing on disk."""
    try:
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
            cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
            run_dir = str(cfg.hydra.run.dir)  # resolved while Hydra's resolvers are set up
    except HydraException as e:
        raise ConfigError(_hydra_reason(e, overrides)) from None
    if not run_dir.strip():  # Path("") is the working directory: the sweep would land in it
        raise ConfigError(
            "hydra.run.dir: must name the output directory (e.g. hydra.run.dir=/abs/path, or "
            f"leave it out for outputs/...), found {run_dir!r}"
        )
    with open_dict(cfg):
        del cfg["hydra"]
    config = validate(cfg)
    run_dir_path = Path(run_dir).expanduser().absolute()
    _check_not_another_sweeps(run_dir_path, config)
    existing = _check_writable(run_dir_path)
    if config.sweep is not None:
        _check_reserve_fits(run_dir_path, existing)


def _check_not_another_sweeps(run_dir: Path, config) -> None:
    """Refuse an output directory that holds another sweep's report before Hydra writes its
    .hydra/ and cli.log there and the driver its .driver.lock: the same sweep (a rerun, a carry
    on) goes on in it, anything else would overwrite it."""
    if not run_dir.is_dir():
        return
    other = sweep_in(run_dir)
    if other is None:
        return
    sid = sweep_id(with_content(asdict(config))) if config.sweep is not None else None
    if sid != other:
        raise ConfigError(another_sweep(run_dir, other, sid))


def _check_writable(run_dir: Path) -> Path:
    """Hydra's output directory, or its nearest existing parent (returned), takes new files: a
    read-only or full disk is named here, not in Hydra's traceback about its log file."""
    existing = run_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():  # hydra.run.dir=/etc/passwd/x
        raise ConfigError(
            f"hydra.run.dir: {run_dir} cannot be a directory: {existing} is a file; give a "
            f"directory as hydra.run.dir, found {str(run_dir)!r}"
        )
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as e:
        # /proc, /sys: the directory is there and takes no files (they say ENOENT)
        why = (
            f"{existing} exists but takes no files"
            if e.errno == errno.ENOENT
            else f"{existing}: {e.strerror or e}"
        )
        raise ConfigError(
            f"hydra.run.dir: {run_dir} cannot be written ({why}); give "
            f"a writable hydra.run.dir, found {str(run_dir)!r}"
        ) from None
    return existing


def _check_reserve_fits(run_dir: Path, existing: Path) -> None:
    """A sweep keeps ``RESERVE_BYTES`` back on its disk for its last words when the disk fills
    (pipeline.sweep.faults.SpaceReserve): a disk without that much free is refused now, before
    anything is written, with what to do."""
    try:
        stat = os.statvfs(existing)
    except OSError:
        return
    free = stat.f_bavail * stat.f_frsize
    if free < RESERVE_BYTES:
        raise ConfigError(
            f"hydra.run.dir: {run_dir} is on a disk with {free / 2**20:.1f} MiB free, and a "
            f"sweep keeps {RESERVE_BYTES >> 20} MiB back there to report a full disk; free "
            f"space and rerun the same command, or give a hydra.run.dir on a roomier disk"
        )


def check_flags(args: Sequence[str]) -> None:
    """Parse ``args`` with Hydra's own parser, as ``main`` will: an unknown flag or a bad value
    of one (``--cfg jb``) is a ConfigError with argparse's reason, instead of Hydra's usage text
    with no ``error:`` line; the flags Hydra takes go on to it unchanged."""
    parser = get_args_parser()

    def refuse(message: str) -> None:
        unknown = message.removeprefix("unrecognized arguments: ").split()
        flags = [o for a in parser._actions for o in a.option_strings]
        close = [c for f in unknown for c in difflib.get_close_matches(f, flags, n=1)]
        hint = (
            f" (did you mean {', '.join(close)}?)" if message.startswith("unrec") and close else ""
        )
        raise ConfigError(f"{message}{hint}; the flags: python -m pipeline --hydra-help")

    parser.error = refuse  # argparse's own would print the usage and exit 2 without `error:`
    parser.parse_args(list(args))


def entry(args: Sequence[str]) -> None:
    """``python -m pipeline ARGS``: the command line checked first (``check_command_line``, or
    ``check_flags`` when it has a flag: ``--help``, ``--cfg``, ``-m``, ... go to Hydra as they
    are), then Hydra's ``main``. SIGTERM ends the driver as Ctrl-C does, wherever it comes
    (pipeline.sweep.faults.Terminated)."""
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        if any(a.startswith("-") for a in args):
            check_flags(args)
        else:
            check_command_line(args)
    except (ConfigError, DataError) as e:
        _fail(ExitCode.USAGE, str(e))
    except KeyboardInterrupt as e:
        _stopped_before_the_sweep(e)
    try:
        main()
    except SystemExit as e:
        # Hydra prints its own error and exits 1 when it cannot compose the command line (an
        # unknown key, a wrong type, an unknown option): that is a usage error, like a bad value
        if e.code == 1 and not composed:
            sys.exit(int(ExitCode.USAGE))
        raise
    except KeyboardInterrupt as e:  # while Hydra set up, before main's body
        _stopped_before_the_sweep(e)


@hydra.main(version_base=None, config_path=CONFIG_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    global composed
    composed = True
    # a log line that cannot be written (a full disk under cli.log) is not worth a traceback on
    # stderr per line: the sweep reports the fault itself, in one line (pipeline.sweep.faults)
    logging.raiseExceptions = False
    # MLflow logs a database error with its traceback before raising it; the driver reports
    # every error it raises itself, in one line or with the traceback of a bug
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
    # the driver starts or joins Ray itself (pipeline.sweep.fan_out.init_ray): a run thread still
    # waiting on Ray when a stopped driver exits must not start a Ray connection of its own
    os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")
    try:
        config = validate(cfg)
        if config.output_dir is None:  # a validated config is read-only: a changed copy
            output_dir = HydraConfig.get().runtime.output_dir
            config = freeze(replace(config, output_dir=output_dir))
        summary = run(config)
    except (ConfigError, DataError) as e:  # a user's mistake: say what and how to fix it
        _discard_if_empty(HydraConfig.get().runtime.output_dir)
        _fail(ExitCode.USAGE, str(e))
    except ServiceError as e:
        _fail(ExitCode.SERVICE_UNAVAILABLE, str(e))
    except StorageError as e:  # a full or read-only disk: a partial sweep, resumable
        _fail(ExitCode.RUNS_FAILED, str(e))
    except SweepBusyError as e:
        _fail(ExitCode.BUSY, str(e))
    except KeyboardInterrupt as e:  # a sweep stopped once its parent exists is a partial sweep
        _stopped_before_the_sweep(e, HydraConfig.get().runtime.output_dir)
    code, reason = exit_code(summary)
    if code != ExitCode.OK:
        _fail(code, reason)
