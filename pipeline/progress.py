"""The sweep's progress: runs done, elapsed, ETA, and what the running solves have found so far.

From the workers to the driver:

* ``ProgressBoard`` is a Ray actor (no CPU) that the driver creates once per sweep. A task that
  solves (``pipeline.sweep.solve_one``) or runs a run whole registers its start on the board
  and, through ``oracles.solve_progress.listening``, a listener that sends the solver's
  ``SolveProgress`` (incumbent, bound) there, fire-and-forget, at most every ``REPORT_EVERY``
  seconds; it clears its entry when it ends (``reporting``). Entries are tagged with the run key,
  ``#i`` appended for the i-th oracle call of a run that makes several (OPSamp).
* The driver reads the board (``read_board``) every ``PROGRESS_EVERY`` seconds and
  ``Progress.show_running`` prints one line per running task: its tag, how long it has run,
  and its backend's incumbent, bound and gap.

Progress is best effort: every call on the board is guarded, a failing board is logged and
then ignored, and nothing here changes what a run computes or records.

The ETA (``estimate_eta``) is a range, ``Eta(low, high)``: what is left of every run, in
run-seconds, over the runs that can execute at once (``slots``: the cluster's CPUs over the
CPUs a task holds), once as if every run took its typical duration (low) and once as if every
run already past twice its typical duration ran on to the oracle's time limit (high):

* a finished run's duration is from its task's start (board) or its driver thread's start to
  its result. The TYPICAL duration of a mechanism's runs is the mean of its finished runs and
  of its running runs already past that mean, counted at what they have run so far (a run
  known to take at least e seconds; the runs that finish first are the short ones, and a mean
  of the finished alone says 296 s of a sweep that takes 1,516). A running run is measured
  against the mean of its mechanism's finished runs alone. A mechanism without a finished
  run takes the mean of all finished runs (for a run still to come, by the same rule: the
  running runs past it lengthen it), else the sweep's throughput (elapsed x slots / done),
  else the oracle's time limit;
* a run not started yet will take its typical duration (low and high);
* a running run that has run e seconds has typical - e left while e <= typical (low and
  high). Past it, it may end at any moment (low: 0); up to twice its typical duration (the
  ordinary spread of run times) it may overrun as much again (high: e - typical), and past
  that, run on to the time limit (high: limit - e; without a limit, still e - typical). So a
  solve far slower than the others widens the range to its limit instead of being ignored;
* each end = max(its sum of what is left / slots, the longest that any running run has left).

The low end falls while a run is short of its typical duration and rises when a run past it
raises its mechanism's typical duration for the runs still to come; the high end falls by one
second a second while a run heads for its limit. So the ETA moves while time passes where the
old point estimate ("the overrun again", capped by the limit) stood still: one run short of
its typical duration and one past it summed to a constant, shown as ``eta 172s`` for 91 s
(``tests/pipeline/test_progress.py`` replays that case on a fake clock). ``Eta.text`` shows one
number when the two ends are close, else ``low-high``.

The board's snapshot is read every ``PROGRESS_EVERY`` seconds; a task's time on it counts up
from the read (``since_read``), and when the board does not answer the block says how old its
snapshot is instead of showing the old one's seconds again. Each running line says how far
its run is towards the time limit (``36s of 600s``); on a terminal the bar (elapsed, ETA) is
redrawn every ``REDRAW_EVERY`` seconds (``redraw``), not only when a run ends.
"""

from __future__ import annotations

import logging
import math
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Sequence

from oracles.solve_progress import SolveProgress, listening

log = logging.getLogger(__name__)

#: Seconds between two progress blocks of the driver (the issue asks for at most 30).
PROGRESS_EVERY = 30.0
#: Seconds between two redraws of the bar on a terminal (elapsed and ETA move between runs).
REDRAW_EVERY = 5.0
#: Seconds between two reports of one solve to the board.
REPORT_EVERY = 10.0
#: Seconds the driver waits for the board's snapshot before giving up on it this time.
BOARD_TIMEOUT = 10.0
#: Seconds between two "still ..." lines of a phase before the runs (``Phase``): loading and
#: encoding the data, planning the sweep, starting Ray (4 to 14 silent minutes were seen on a loaded machine).
PHASE_EVERY = 30.0


# --- before the runs: what the driver is doing -----------------------------------------------


class Phase:
    """While a phase of the driver (``what``: "loading and encoding the data") lasts, a line
    every ``every`` seconds on its logger: what it is doing (``now``: the current step) and for
    how long; nothing when it ends sooner. A context manager (``stop`` may end it earlier); the
    lines come from a daemon thread, so a phase blocked in a long call still says so."""

    def __init__(self, what: str, every: float | None = None, say=None) -> None:
        self.what, self.every = what, float(PHASE_EVERY if every is None else every)
        self.say = say if say is not None else log.info
        self.step = ""
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name=f"phase: {what}")

    def now(self, step: str) -> None:
        """What the phase is doing from now on (said in its next line)."""
        self.step = step

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            step = f": {self.step}" if self.step else ""
            self.say(f"still {self.what} ({time.monotonic() - self.start:.0f} s){step}")

    def __enter__(self) -> Phase:
        self.start = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> None:
        """The phase has ended: no more lines (twice is once)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def __exit__(self, *exc) -> None:
        self.stop()


# --- the board (Ray side) -------------------------------------------------------------------------


@dataclass(frozen=True)
class BoardEntry:
    """A running task: ``seconds`` since it started (the board's clock), and its solver's last
    report (None before the first)."""

    tag: str
    seconds: float
    progress: SolveProgress | None = None


class ProgressBoard:
    """The latest report of every running task, by tag (made a Ray actor by ``make_board``)."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.latest: dict[str, SolveProgress] = {}

    def start(self, tag: str) -> None:
        self.started[tag] = time.monotonic()
        self.latest.pop(tag, None)

    def report(self, tag: str, progress: SolveProgress) -> None:
        if tag in self.started:  # a report that arrives after its task ended is dropped
            self.latest[tag] = progress

    def done(self, tag: str) -> None:
        self.started.pop(tag, None)
        self.latest.pop(tag, None)

    def snapshot(self) -> list[BoardEntry]:
        now = time.monotonic()
        return [
            BoardEntry(tag, now - start, self.latest.get(tag))
            for tag, start in self.started.items()
        ]


def make_board() -> Any | None:
    """A ``ProgressBoard`` actor holding no CPU, or None (logged) if Ray cannot make one."""
    import ray

    try:
        return ray.remote(num_cpus=0, max_restarts=0)(ProgressBoard).remote()
    except Exception as err:  # noqa: BLE001 - progress is best effort
        log.warning("no progress board (the sweep runs without solver progress): %r", err)
        return None


def read_board(board: Any | None, timeout: float = BOARD_TIMEOUT) -> list[BoardEntry] | None:
    """The board's entries, or None when there is no board or it does not answer in time."""
    if board is None:
        return None
    import ray

    try:
        return list(ray.get(board.snapshot.remote(), timeout=timeout))
    except Exception as err:  # noqa: BLE001 - progress is best effort
        log.debug("progress board did not answer: %r", err)
        return None


def close_board(board: Any | None) -> None:
    if board is None:
        return
    import ray

    try:
        ray.kill(board)
    except Exception:  # noqa: BLE001 - progress is best effort
        pass


@dataclass(frozen=True)
class Channel:
    """What a task needs to report: the board, its tag, and the interval of its reports."""

    board: Any
    tag: str
    interval: float = REPORT_EVERY


def _quietly(call) -> None:
    try:
        call()
    except Exception as err:  # noqa: BLE001 - progress is best effort
        log.debug("progress board call failed: %r", err)


class reporting:
    """``with reporting(channel): ...`` on a worker: the task's start and end on the board, and
    its solvers' reports sent there. ``channel`` None: nothing at all. Never raises."""

    def __init__(self, channel: Channel | None) -> None:
        self.channel = channel
        self._listening = None

    def _send(self, progress: SolveProgress) -> None:
        self.channel.board.report.remote(self.channel.tag, progress)

    def __enter__(self) -> "reporting":
        if self.channel is not None:
            _quietly(lambda: self.channel.board.start.remote(self.channel.tag))
            self._listening = listening(self._send, self.channel.interval)
            self._listening.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.channel is not None:
            self._listening.__exit__(None, None, None)
            _quietly(lambda: self.channel.board.done.remote(self.channel.tag))


def run_of(tag: str) -> str:
    """The run key of a board tag (``key`` or ``key#i``)."""
    return tag.split("#", 1)[0]


# --- the ETA --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Eta:
    """Seconds until the sweep ends: ``low`` if every run takes its typical duration, ``high``
    if every run past twice it runs on to the time limit (module docstring)."""

    low: float
    high: float

    def text(self) -> str:
        """``   42s`` when the two ends are within 5 s or a quarter of the low one of each
        other, else ``12-560s`` (a run may go on to its time limit)."""
        if self.high - self.low <= max(5.0, 0.25 * self.low):
            return f"{self.low:5.0f}s"
        return f"{self.low:.0f}-{self.high:.0f}s".rjust(6)


def left_of_running(elapsed: float, typical: float, limit: float | None) -> tuple[float, float]:
    """(low, high) of what a run that has run ``elapsed`` seconds has left (module docstring)."""
    if elapsed <= typical:
        return typical - elapsed, typical - elapsed
    if elapsed <= 2 * typical or limit is None:
        return 0.0, elapsed - typical
    return 0.0, max(0.0, limit - elapsed)


def typical_durations(
    finished: Sequence[tuple[Hashable, float]],
    running: Sequence[tuple[Hashable, float]],
    fallback: float,
) -> tuple[dict[Hashable, float], dict[Hashable, float]]:
    """(finished, to come): mechanism -> the mean of its finished runs (``fallback`` without
    one: the mean of all finished runs, or the sweep's throughput, or the time limit), what a
    running run is measured against; and that mean with its running runs already past it
    counted at what they have run, what a run still to come is planned at (module
    docstring)."""
    by_group: dict[Hashable, list[float]] = {}
    for group, seconds in finished:
        by_group.setdefault(group, []).append(seconds)
    base: dict[Hashable, float] = {}
    to_come: dict[Hashable, float] = {}
    for group in {g for g, _ in finished} | {g for g, _ in running}:
        own = by_group.get(group, [])
        base[group] = sum(own) / len(own) if own else fallback
        to_come[group] = lengthened(own, [e for g, e in running if g == group], base[group])
    return base, to_come


def lengthened(durations: Sequence[float], elapsed: Sequence[float], mean: float) -> float:
    """``mean`` (of ``durations``, or a fallback without any) with the running runs that have
    already run longer (``elapsed``) counted at what they have run: a lower bound of their
    duration, and the runs that finish first are the short ones."""
    longer = [e for e in elapsed if e > mean]
    if not longer:
        return mean
    return (sum(durations) + sum(longer)) / (len(durations) + len(longer))


def estimate_eta(
    *,
    finished: Sequence[tuple[Hashable, float]],
    running: Sequence[tuple[Hashable, float]],
    pending: Sequence[Hashable],
    slots: int,
    throughput: float | None = None,
    limit: float | None = None,
    unlimited: Iterable[Hashable] = (),
) -> Eta | None:
    """Seconds until the sweep ends, low and high (module docstring), or None when nothing
    gives a typical duration. ``finished``: (mechanism, seconds); ``running``: (mechanism,
    elapsed); ``pending``: the mechanisms of the runs not started; ``throughput``: elapsed x
    slots / done when no finished run has a duration; ``unlimited``: the mechanisms that call
    no oracle (the time ``limit`` is not theirs)."""
    unlimited = frozenset(unlimited)
    everything = [s for _, s in finished]
    overall = (sum(everything) / len(everything)) if everything else throughput
    if overall is None:
        overall = limit
    if overall is None:
        return None if (running or pending) else Eta(0.0, 0.0)
    base, to_come = typical_durations(finished, running, overall)
    lefts = [left_of_running(e, base[g], None if g in unlimited else limit) for g, e in running]
    # a mechanism not seen yet: the mean of every run, the running ones past it lengthening it
    unseen = lengthened(everything, [e for _, e in running], overall) if everything else overall
    waiting = sum(to_come.get(g, unseen) for g in pending)
    ends = []
    for i in (0, 1):
        mine = [left[i] for left in lefts]
        ends.append(max((sum(mine) + waiting) / max(1, slots), max(mine, default=0.0)))
    return Eta(ends[0], max(ends))


# --- the console ----------------------------------------------------------------------------------


def _number(x: float) -> str:
    return f"{x:.6g}" if math.isfinite(x) else ("none" if x > 0 else "-inf")


def running_line(
    entry: BoardEntry,
    *,
    since_read: float = 0.0,
    limit: float | None = None,
    name: str | None = None,
    oracle: bool = True,
) -> str:
    """``  <name> <s>s of <limit>s: <backend> <s>s incumbent <v> bound <b> gap <g>[; note]``
    (the note: a window search's cost to certify, "about N nodes left, ...") for one
    running task: its seconds on the board counted on by ``since_read`` (the seconds since the
    board was read) and, with an oracle ``limit``, out of that limit; ``name``: what to call
    it (default: its tag); ``oracle`` False: a run that calls no oracle (no solver to hear
    from)."""
    seconds = entry.seconds + since_read
    of_limit = f" of {limit:.0f}s" if limit is not None else ""
    head = f"  {name or entry.tag} {seconds:.0f}s{of_limit}"
    p = entry.progress
    if p is None:
        return f"{head}: {'no solver report yet' if oracle else 'running (calls no oracle)'}"
    gap = f"{p.gap:.4g}" if math.isfinite(p.gap) else "-"
    note = f"; {p.note}" if p.note else ""
    return (
        f"{head}: {p.backend} {p.elapsed:.0f}s incumbent {_number(p.incumbent)} "
        f"bound {_number(p.bound)} gap {gap}{note}"
    )


def _group(key: Any) -> Hashable:
    return getattr(key, "mechanism", None)


def _label(key: Any) -> str:
    """What the console calls a run: its ``label`` (a RunKey's: a reference is not
    ``eps=inf``), else its text."""
    return str(getattr(key, "label", key))


class Progress:
    """A console progress line: done / total, elapsed, ETA (one line per update off a TTY),
    and every ``every`` seconds a block of the running tasks (``show_running``)."""

    def __init__(
        self,
        total: int,
        stream=None,
        *,
        keys: Iterable[Any] = (),
        slots: int = 1,
        limit: float | None = None,
        every: float = PROGRESS_EVERY,
        unlimited: Iterable[Hashable] = (),
    ) -> None:
        stream = sys.stderr if stream is None else stream  # the one in force now, not at import
        self.total, self.done, self.start, self.stream = total, 0, time.perf_counter(), stream
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.slots, self.limit, self.every = max(1, int(slots)), limit, float(every)
        self.unlimited = frozenset(unlimited)  # mechanisms without an oracle: no time limit
        self.groups = {str(k): _group(k) for k in keys}
        self.labels = {str(k): _label(k) for k in keys}
        self.threads_started: dict[str, float] = {}  # run -> when its driver thread took it
        self.finished: list[tuple[Hashable, float]] = []  # (mechanism, seconds) of each
        self.finished_keys: set[str] = set()
        self.board: list[BoardEntry] | None = None  # the last snapshot read, and when
        self.board_read_at = self.start
        self.last_block = self.start
        self.last_label = ""
        self.lock = threading.Lock()

    # -- what the sweep tells it --

    def started(self, key: Any) -> None:
        """A driver thread took ``key`` (it may still queue for a CPU on the cluster)."""
        with self.lock:
            self.groups.setdefault(str(key), _group(key))
            self.labels.setdefault(str(key), _label(key))
            self.threads_started[str(key)] = time.perf_counter()

    def running(self) -> dict[str, float]:
        """Run key -> seconds it has run: its longest task on the board; without a board, since
        its driver thread took it. A run whose tasks have not started is not running."""
        now = time.perf_counter()
        with self.lock:
            threads = dict(self.threads_started)
        if self.board is None:
            return {k: now - t for k, t in threads.items()}
        since_read = now - self.board_read_at
        out: dict[str, float] = {}
        for entry in self.board:
            run = run_of(entry.tag)
            if run in threads:
                out[run] = max(out.get(run, 0.0), entry.seconds + since_read)
        return out

    def name_of(self, tag: str) -> str:
        """A board tag (``key`` or ``key#i``) with its run's label."""
        run, sep, call = tag.partition("#")
        return self.labels.get(run, run) + sep + call

    def limit_of(self, tag: str) -> float | None:
        """The time limit of a board tag's run: the oracle's, None for a mechanism without."""
        return None if self.groups.get(run_of(tag)) in self.unlimited else self.limit

    def eta(self) -> Eta | None:
        running = self.running()
        elapsed = time.perf_counter() - self.start
        with self.lock:
            finished = list(self.finished)
            waiting = [k for k in self.groups if k not in running and k not in self.finished_keys]
        n_pending = max(0, self.total - self.done - len(running))
        pending = [self.groups[k] for k in waiting][:n_pending]
        pending += [None] * (n_pending - len(pending))
        throughput = elapsed * self.slots / self.done if self.done else None
        return estimate_eta(
            finished=finished,
            running=[(self.groups.get(k), e) for k, e in running.items()],
            pending=pending,
            slots=self.slots,
            throughput=throughput,
            limit=self.limit,
            unlimited=self.unlimited,
        )

    def update(self, label: str, key: Any = None) -> None:
        """A run ended (``key``: which, to learn its duration)."""
        run_seconds = None
        if key is not None:
            run_seconds = self.running().get(str(key))
            with self.lock:
                started = self.threads_started.pop(str(key), None)
                if run_seconds is None and started is not None:
                    run_seconds = time.perf_counter() - started
                if run_seconds is not None:
                    self.finished.append((self.groups.get(str(key)), run_seconds))
                self.finished_keys.add(str(key))
        self.done += 1
        self._write_line(label)

    def due(self) -> bool:
        """Whether the block of running tasks is due (``every`` seconds after the last)."""
        return time.perf_counter() - self.last_block >= self.every

    def show_running(self, board: list[BoardEntry] | None) -> None:
        """Print the running tasks (``board``: the snapshot just read, None when there is no
        board or it did not answer: the last snapshot, its seconds counted on, and its age)."""
        self.last_block = time.perf_counter()
        if board is not None:
            self.board, self.board_read_at = board, self.last_block
        since_read = self.last_block - self.board_read_at
        with self.lock:
            ours = set(self.threads_started)
        entries = [e for e in (self.board or []) if run_of(e.tag) in ours]
        entries.sort(key=lambda e: -e.seconds)
        lines = [
            running_line(
                e,
                since_read=since_read,
                limit=self.limit_of(e.tag),
                name=self.name_of(e.tag),
                oracle=self.groups.get(run_of(e.tag)) not in self.unlimited,
            )
            for e in entries
        ]
        queued = len(ours - {run_of(e.tag) for e in entries}) if self.board is not None else 0
        summary = f"running {len({run_of(e.tag) for e in entries})}"
        if queued:
            summary += f", {queued} waiting for a CPU or starting"
        if board is None and self.board is not None:
            summary += f" (the progress board did not answer: as read {since_read:.0f}s ago)"
        self._write_line(summary, below=lines)

    def redraw(self) -> None:
        """On a terminal, the bar again with the time now (elapsed and ETA move while no run
        ends); off a terminal nothing (a line per update and per block is enough in a log)."""
        if self.tty and self.done < self.total:
            self._write_line(self.last_label)

    # -- the console --

    def _line(self, label: str) -> str:
        elapsed = time.perf_counter() - self.start
        eta = self.eta()
        eta_text = eta.text() if eta is not None else "    ?s"
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"elapsed {elapsed:5.0f}s eta {eta_text}  {label}"
        )

    def _write_line(self, label: str, below: Sequence[str] = ()) -> None:
        self.last_label = label
        line = self._line(label)
        if self.tty:
            # one terminal line, whatever its width: a wrapped line is not overwritten by \r
            columns = max(20, shutil.get_terminal_size((150, 20)).columns - 1)
            if below:  # the block goes above, in lines of its own; the bar stays last
                self.stream.write("\r" + " " * columns + "\r")
                self.stream.write("".join(b[:columns] + "\n" for b in [line, *below]))
            self.stream.write("\r" + line[:columns].ljust(columns))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write("".join(b + "\n" for b in [line, *below]))
        self.stream.flush()

    def close(self) -> None:
        """End an unfinished terminal line (an interrupted or failed sweep), so that what is
        printed next starts on a line of its own."""
        if self.tty and self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()
