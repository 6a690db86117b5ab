"""The sweep's progress: runs done, elapsed, ETA, and what the running solves have found so far.

From the workers to the driver:

* ``ProgressBoard`` is a Ray actor (no CPU) that the driver creates once per sweep. A task that
  solves (``pipeline.sweep.fan_out.solve_one``) or runs a run whole registers its start on the board
  and, through ``oracles.contract.progress.listening``, a listener that sends the solver's
  ``SolveProgress`` (incumbent, bound) there, fire-and-forget, at most every ``REPORT_EVERY``
  seconds; it clears its entry when it ends (``reporting``). Entries are tagged with the run key,
  ``#i`` appended for the i-th oracle call of a run that makes several (OPSamp).
* The driver reads the board (``read_board``) every ``PROGRESS_EVERY`` seconds and
  ``Progress.show_running`` prints one line per running task: its tag, how long it has run,
  and its backend's incumbent, bound and gap.

Progress is best effort: every call on the board is guarded, a failing board is logged and
then ignored, and nothing here changes what a run computes or records.

The ETA (``estimate_eta``, a pure function of the runs' times; ``eta_at`` of recorded start
and end times) is a range, ``Eta(low, high)``, or ``eta ?`` (as tqdm and Ray Tune say before
they know) while nothing measures what is left: until every kind (mechanism) with runs left
has a finished run, or ``MIN_FINISHED`` runs have finished. Each run left gets a likely and a
longest duration from its kind's measured runs:

* a finished run's duration is from its task's start (board) or its driver thread's start to
  its result. A kind's LIKELY duration is the median of its finished runs and of its running
  runs already past that median, counted at what they have run (a lower bound of their own
  duration: the runs that finish first are the short ones); its LONGEST, the longest of them;
* a run not started yet takes its kind's likely (low) and longest (high) duration; of a kind
  without a finished run, the median of all finished runs (low) and up to its time limit
  (high; a kind that calls no oracle has none: the longest run yet);
* a running run that has run e seconds, measured against its kind's finished runs alone, has
  likely - e left (low; 0 past it), so the ETA is never below what the running runs need by
  what their kinds have shown; and up to max(longest, 2 x likely) - e (high). Past that, or
  of a kind without a finished run, it may go on to its time limit (high: limit - e; without
  a limit, as long again as it has run): the smoke sweep's exact ERM, alone at the end, reads
  ``0-590s``, not ``eta 0s``;
* each end is the makespan (``makespan``) of those durations on the slots in use (the
  cluster's CPUs over the CPUs a task holds, or more if more runs are running): the running
  runs first, then each run to come, in the sweep's order, taken by the first slot free. So
  the last runs are not divided by slots they cannot fill.

Replayed on a recorded smoke sweep (``tests/pipeline/sweep/test_progress.py``), the true time left
lies inside the range at every 0.1 s after the first 2.5 s (``?``); the estimator before said
``7799s`` at 0.4 s of a 43 s sweep (every run at its time limit) and ``17s`` with 38 s left.
``Eta.text`` shows one number when the two ends are close, else ``low-high``.

The board's snapshot is read every ``PROGRESS_EVERY`` seconds (a run its driver thread took
since, while a slot is free, counts as running from then: read before it started, the last
run read ``eta 0s`` as one to come); a task's time on it counts up
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

from oracles.contract.progress import SolveProgress, listening

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

#: Finished runs (of any kinds) after which a kind with none of its own finished is estimated
#: from the others' (its likely duration) and its time limit (its longest); fewer: ``eta ?``.
MIN_FINISHED = 3


@dataclass(frozen=True)
class Eta:
    """Seconds until the sweep ends: ``low`` if every run takes its kind's likely (median)
    duration, ``high`` if every run takes the longest its kind has taken or may take (module
    docstring)."""

    low: float
    high: float

    def text(self) -> str:
        """``   42s`` when the two ends are within 5 s or a quarter of the low one of each
        other, else ``12-560s`` (a run may go on to its time limit)."""
        if self.high - self.low <= max(5.0, 0.25 * self.low):
            return f"{self.low:5.0f}s"
        return f"{self.low:.0f}-{self.high:.0f}s".rjust(6)


@dataclass(frozen=True)
class RunTimes:
    """A run as the ETA sees it: its ``kind`` (mechanism), when it ``start``-ed and ``end``-ed
    on the sweep's clock (None: not yet) and the longest it may take (``limit``: the oracle's
    time limit; None: a run that calls no oracle, which has none)."""

    kind: Hashable
    start: float | None = None
    end: float | None = None
    limit: float | None = None


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


@dataclass(frozen=True)
class KindTimes:
    """What a kind's runs take, measured: ``likely`` (the median of its finished runs and of
    its running runs already longer than that median, counted at what they have run: a lower
    bound of their own duration) and ``longest`` (the longest of those)."""

    likely: float
    longest: float


def kind_times(finished: Sequence[float], elapsed: Sequence[float]) -> KindTimes:
    """``KindTimes`` of a kind with ``finished`` durations (at least one) and running runs that
    have run ``elapsed`` seconds so far."""
    first = _median(finished)
    longer = [e for e in elapsed if e > first]
    return KindTimes(_median([*finished, *longer]), max([*finished, *longer]))


def left_of_running(
    elapsed: float, times: KindTimes | None, limit: float | None, guess: float = 0.0
) -> tuple[float, float]:
    """(likely, longest) seconds left of a run that has run ``elapsed`` seconds, of a kind
    measured as ``times`` (None: none of its runs has finished; ``guess``: the median of all
    finished runs). Likely: what its kind's likely duration (or ``guess``) leaves, 0 past it,
    so never less than what it needs by what its kind has shown. Longest: what the longer of
    its kind's longest and twice its likely duration leaves; past that, or for a kind not
    measured, up to the time ``limit``; without a limit, as long again as it has run."""
    likely = max(0.0, (times.likely if times is not None else guess) - elapsed)
    if times is not None and elapsed < max(times.longest, 2 * times.likely):
        return likely, max(times.longest, 2 * times.likely) - elapsed
    longest = max(0.0, limit - elapsed) if limit is not None else elapsed
    return likely, max(likely, longest)


def makespan(busy: Sequence[float], durations: Sequence[float], slots: int) -> float:
    """When the last run ends: the slots busy for ``busy`` seconds more (one per running run),
    the others free, and each run still to come, in order, taken by the first slot free."""
    free = sorted([*busy, *[0.0] * max(0, slots - len(busy))])
    for seconds in durations:
        free[0] += seconds
        free.sort()
    return max(free, default=0.0)


def estimate_eta(
    *,
    finished: Sequence[tuple[Hashable, float]],
    running: Sequence[tuple[Hashable, float]],
    pending: Sequence[Hashable],
    slots: int,
    limit: float | None = None,
    unlimited: Iterable[Hashable] = (),
) -> Eta | None:
    """Seconds until the sweep ends, likely (low) and longest (high), or None (``eta ?``) when
    nothing yet measures a kind that has runs left (module docstring). ``finished``: (kind,
    seconds); ``running``: (kind, elapsed); ``pending``: the kinds of the runs not started, in
    the order they will start; ``slots``: the runs that execute at once (more if more run
    now); ``unlimited``: the kinds that call no oracle (the time ``limit`` is not theirs)."""
    if not running and not pending:
        return Eta(0.0, 0.0)
    unlimited = frozenset(unlimited)
    own: dict[Hashable, list[float]] = {}
    for kind, seconds in finished:
        own.setdefault(kind, []).append(seconds)
    left = {k for k, _ in running} | set(pending)
    if any(k not in own for k in left) and len(finished) < MIN_FINISHED:
        return None
    times = {k: kind_times(own[k], [e for g, e in running if g == k]) for k in left if k in own}
    everyone = _median([s for _, s in finished])
    seen_longest = max(s for _, s in finished)

    def limit_of(kind: Hashable) -> float | None:
        return None if kind in unlimited else limit

    def pending_times(kind: Hashable) -> tuple[float, float]:
        if kind in times:
            return times[kind].likely, times[kind].longest
        bound = limit_of(kind)  # a kind not measured yet: the others' median, up to its limit
        return everyone, bound if bound is not None else max(everyone, seen_longest)

    # a running run is measured against its kind's finished runs alone, not its own time
    alone = {k: kind_times(own[k], []) for k in times}
    lefts = [left_of_running(e, alone.get(k), limit_of(k), everyone) for k, e in running]
    durations = [pending_times(k) for k in pending]
    width = max(1, slots, len(running))
    ends = [makespan([left[i] for left in lefts], [d[i] for d in durations], width) for i in (0, 1)]
    return Eta(ends[0], max(ends))


def eta_at(runs: Sequence[RunTimes], now: float, slots: int) -> Eta | None:
    """``estimate_eta`` at time ``now`` of a sweep whose runs are ``runs`` (those not started
    in the order they will start), on ``slots`` slots: what the progress line shows then. A
    run's times after ``now`` are not looked at."""
    finished, running, pending = [], [], []
    for run in runs:
        if run.end is not None and run.end <= now:
            finished.append((run.kind, run.end - run.start))
        elif run.start is not None and run.start <= now:
            running.append((run.kind, now - run.start))
        else:
            pending.append(run.kind)
    limits = [r.limit for r in runs if r.limit is not None]
    return estimate_eta(
        finished=finished,
        running=running,
        pending=pending,
        slots=slots,
        limit=max(limits) if limits else None,
        unlimited={r.kind for r in runs if r.limit is None},
    )


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
        self.executing: dict[str, float] = {}  # run -> when it took a slot (``started``)
        self.queued: list[str] = []  # runs taken, waiting for a slot, the longest first
        self.finished: list[tuple[Hashable, float]] = []  # (mechanism, seconds) of each
        self.finished_keys: set[str] = set()
        self.board: list[BoardEntry] | None = None  # the last snapshot read, and when
        self.board_read_at = self.start
        self.last_block = self.start
        self.last_label = ""
        self.lock = threading.Lock()

    # -- what the sweep tells it --

    def started(self, key: Any) -> None:
        """A driver thread took ``key``. It may still queue for a CPU on the cluster: while
        ``slots`` runs execute, it is counted as waiting, and as executing from the moment one
        of them ends (Ray hands the freed CPUs to the task that waited longest). Counted from
        the thread's start, a run's wait in the queue was counted as its own time: with 4 runs
        in flight on 2 slots the smoke sweep's short runs measured about twice their length,
        and the ETA's low end was above the true time left from 11/26 to 23/26 runs."""
        with self.lock:
            self.groups.setdefault(str(key), _group(key))
            self.labels.setdefault(str(key), _label(key))
            now = time.perf_counter()
            self.threads_started[str(key)] = now
            if len(self.executing) < self.slots:
                self.executing[str(key)] = now
            else:
                self.queued.append(str(key))

    def _ended(self, key: str) -> float | None:
        """``key`` ended now: when it began executing (None: it was still counted as waiting),
        and the run that waited longest takes its slot."""
        now = time.perf_counter()
        began = self.executing.pop(key, None)
        if began is None and key in self.queued:
            self.queued.remove(key)
        while self.queued and len(self.executing) < self.slots:
            self.executing[self.queued.pop(0)] = now
        return began

    def running(self) -> dict[str, float]:
        """Run key -> seconds it has executed: its longest task on the board, counted on since
        the board was read; a run the board does not show (it began executing since the board
        was read, or there is no board) from when it took a slot (``started``). Runs waiting
        for a slot have not started."""
        now = time.perf_counter()
        with self.lock:
            threads = set(self.threads_started)
            executing = dict(self.executing)
        if self.board is None:
            return {k: now - t for k, t in executing.items()}
        since_read = now - self.board_read_at
        out: dict[str, float] = {}
        for entry in self.board:
            run = run_of(entry.tag)
            if run in threads:
                out[run] = max(out.get(run, 0.0), entry.seconds + since_read)
        later = sorted((t, k) for k, t in executing.items() if t > self.board_read_at)
        for t, k in later[: max(0, self.slots - len(out))]:
            out.setdefault(k, now - t)
        return out

    def name_of(self, tag: str) -> str:
        """A board tag (``key`` or ``key#i``) with its run's label."""
        run, sep, call = tag.partition("#")
        return self.labels.get(run, run) + sep + call

    def limit_of(self, tag: str) -> float | None:
        """The time limit of a board tag's run: the oracle's, None for a mechanism without."""
        return None if self.groups.get(run_of(tag)) in self.unlimited else self.limit

    def eta(self) -> Eta | None:
        """``estimate_eta`` now: the finished runs' durations, the running runs' times so far
        (``running``), the runs not started in the sweep's order; runs ended without a known
        duration count at the sweep's throughput (elapsed x slots / done)."""
        running = self.running()
        elapsed = time.perf_counter() - self.start
        with self.lock:
            finished = list(self.finished)
            waiting = [k for k in self.groups if k not in running and k not in self.finished_keys]
        n_pending = max(0, self.total - self.done - len(running))
        pending = [self.groups[k] for k in waiting][:n_pending]
        pending += [None] * (n_pending - len(pending))
        unknown = self.done - len(finished)
        if unknown > 0:
            finished += [(None, elapsed * self.slots / self.done)] * unknown
        return estimate_eta(
            finished=finished,
            running=[(self.groups.get(k), e) for k, e in running.items()],
            pending=pending,
            slots=self.slots,
            limit=self.limit,
            unlimited=self.unlimited,
        )

    def update(self, label: str, key: Any = None) -> None:
        """A run ended (``key``: which, to learn its duration: what it executed, on the board or
        since it took a slot; not its wait for one)."""
        if key is not None:
            run_seconds = self.running().get(str(key))
            with self.lock:
                started = self.threads_started.pop(str(key), None)
                began = self._ended(str(key))
                if run_seconds is None:
                    began = began if began is not None else started
                    run_seconds = None if began is None else time.perf_counter() - began
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
        eta_text = eta.text() if eta is not None else "     ?"  # nothing to base it on yet
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
