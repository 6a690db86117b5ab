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
has a finished run, or ``MIN_FINISHED`` runs have finished. It counts in a driver thread's
time: a run's time is from when its thread took it to its result (its wait for a CPU, the
driver's part and its tasks), the one clock the driver reads exactly. The sweep keeps its
``threads`` runs in flight until the runs run out, so the work left is done ``threads``
thread-seconds a second, whatever the CPUs, their load and the driver's share (Little's law):

* a run to come costs its kind's mean duration, of all its finished runs or of its latest
  half (``recent``), the fewer for the low end, the more for the high end (a sweep's pace
  changes: its first runs wait for Ray's workers, a shared machine's load moves); the sum's
  variance is the runs' own and the error of a mean of few runs (``work_of_pending``);
* a running run that has run e seconds has what its kind's runs longer than e took beyond it
  left (a run already long is one of the long ones), up to the longer of its kind's longest
  and twice its mean; past that, or of a kind without a finished run, up to its time limit
  (without a limit, as long again as it has run): the smoke sweep's exact ERM, alone at the
  end, reads ``0-590s``, not ``eta 0s`` (``work_of_running``); a run whose solve reports a
  price (the window search's cost to certify, ``oracles.contract.progress.Price``) has at most
  what that price leaves it, with a margin (``price_left``): a run priced at a minute is not
  planned to its 600 s limit;
* a carry-on's runs are planned by their own prices (``work_of_priced``): it runs the
  cheapest first, so the runs that finished are no guide to the dearer ones to come (live,
  ``eta 31-698s`` with 9 runs left, 3 of them bound for their 600 s limit);
* low = (likely work - SPREAD sd) / threads; high = (likely work + SPREAD sd) / threads plus
  the longest any one run left may take (it may start last: Graham's bound). A run's time
  ends when the driver has logged it, by when its thread has taken the next, so the threads
  are between the mean in flight and the most at once: the low end divides by the most, the
  high end by the mean (``Progress.mean_in_flight``).

Replayed as each sweep ran live (``tests/pipeline/sweep/test_progress.py``: recorded smoke,
table and Adult sweeps, the estimator fed at each progress line exactly what it had), the true
time left lies in the range at 23/24, 57/57, 261/273 and 276/276 of the lines after the first
10 % of runs; the estimator before (which timed a run from when it "took a slot", a fiction
with 4 runs in flight on 2 CPUs, and planned every run to come at its kind's longest)
held 20/24, 35/57, 166/273 and 216/276, and live on the Adult sweep 86/273, with high ends
of 1000 s on a 67 s sweep.
``Eta.text`` shows one number when the two ends are close, else ``low-high``.

The board's snapshot is read every ``PROGRESS_EVERY`` seconds for the block of running solves
(the ETA does not use it); a task's time on it counts up from the read (``since_read``), and when the board does not answer the block says how old its
snapshot is instead of showing the old one's seconds again. Each running line says how far
its run is towards the time limit (``36s of 600s``); on a terminal the bar (elapsed, ETA) is
redrawn every ``REDRAW_EVERY`` seconds (``redraw``), not only when a run ends.
"""

from __future__ import annotations

import dataclasses
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
    age: float = 0.0  # seconds since that report reached the board


class ProgressBoard:
    """The latest report of every running task, by tag (made a Ray actor by ``make_board``)."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.latest: dict[str, SolveProgress] = {}
        self.arrived: dict[str, float] = {}  # when each latest report came

    def start(self, tag: str) -> None:
        self.started[tag] = time.monotonic()
        self.latest.pop(tag, None)

    def report(self, tag: str, progress: SolveProgress) -> None:
        if tag in self.started:  # a report that arrives after its task ended is dropped
            self.latest[tag] = progress
            self.arrived[tag] = time.monotonic()

    def done(self, tag: str) -> None:
        self.started.pop(tag, None)
        self.latest.pop(tag, None)

    def snapshot(self) -> list[BoardEntry]:
        now = time.monotonic()
        return [
            BoardEntry(tag, now - start, self.latest.get(tag), now - self.arrived.get(tag, now))
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
#: Standard deviations of the work left between its likely sum and each end of the range:
#: 3, not 2, as a sweep's pace changes in ways no finished run shows yet (its start: the live
#: Adult sweep's first 14 s ran at half the pace of the rest; with 2 its low end was above the
#: truth at 19 of 273 lines, with 3 at 12).
SPREAD = 3.0


@dataclass(frozen=True)
class Eta:
    """Seconds until the sweep ends: ``low`` if the work left is at the low end of what its
    kinds' finished runs make likely, ``high`` at the high end, plus the longest one run may
    take, which may be the last (module docstring)."""

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
    """A run as the ETA sees it: its ``kind`` (mechanism), when a driver thread took it
    (``start``) and when its result came (``end``) on the sweep's clock (None: not yet), and
    the longest its oracle may take (``limit``: the oracle's time limit; None: a run that calls
    no oracle, which has none)."""

    kind: Hashable
    start: float | None = None
    end: float | None = None
    limit: float | None = None


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


@dataclass(frozen=True)
class Work:
    """Seconds of driver-thread time still to spend on some runs: its likely sum as the fewest
    (``least``) and the most (``most``) of the estimates of it, ``var`` the variance of that
    sum (the runs' own spread and the error of a mean measured on few runs), ``longest`` the
    longest one of these runs may take."""

    least: float = 0.0
    most: float = 0.0
    var: float = 0.0
    longest: float = 0.0

    def capped(self, seconds: float) -> Work:
        """The same work, none of it beyond ``seconds`` (what a solve's price leaves a run)."""
        return Work(
            min(self.least, seconds), min(self.most, seconds), self.var, min(self.longest, seconds)
        )

    def __add__(self, other: Work) -> Work:
        return Work(
            self.least + other.least,
            self.most + other.most,
            self.var + other.var,
            max(self.longest, other.longest),
        )


def _mean(seconds: Sequence[float]) -> float:
    return sum(seconds) / len(seconds)


def _spread(seconds: Sequence[float]) -> float:
    """The standard deviation of a kind's durations; of one run, the run's own duration (one
    run says nothing of the spread: as uncertain as the value itself)."""
    if len(seconds) < 2:
        return seconds[0] if seconds else 0.0
    mean = _mean(seconds)
    return math.sqrt(sum((s - mean) ** 2 for s in seconds) / (len(seconds) - 1))


#: Finished runs of a kind below which its latest runs are all of them; above, its latest half.
RECENT = 3


def recent(seconds: Sequence[float]) -> list[float]:
    """The latest of a kind's finished runs' ``seconds`` (in the order they ended): its latest
    half, at least RECENT. A sweep speeds up after its first runs (Ray starts its workers, the
    first tasks load the data: the Adult sweep's first three rounds took 1 to 5 s a run, the
    same kinds' later runs 0.1 to 0.8 s), and a shared machine's load changes both ways."""
    keep = max(min(len(seconds), RECENT), (len(seconds) + 1) // 2)
    return list(seconds[len(seconds) - keep :])


def work_of_pending(count: int, seconds: Sequence[float]) -> Work:
    """``count`` runs not started of a kind whose finished runs took ``seconds`` (at least
    one, in the order they ended): each its kind's mean, of all its runs or of its latest
    (``recent``), whichever is less (``least``) or more (``most``): a sweep's pace changes (its
    start, the machine's load). The sum's variance: its runs' own (count x sd^2) and the error
    of a mean of n runs carried on every one of them (count^2 x sd^2 / n); the longest: the
    longest of its kind yet."""
    n, sd = len(seconds), _spread(seconds)
    means = (_mean(seconds), _mean(recent(seconds)))
    return Work(
        count * min(means),
        count * max(means),
        count * sd**2 + count**2 * sd**2 / n,
        max(seconds),
    )


def work_of_running(
    elapsed: float,
    seconds: Sequence[float],
    limit: float | None,
    guess: float,
    at_most: float | None = None,
) -> Work:
    """A run that has run ``elapsed`` seconds, of a kind whose finished runs took ``seconds``
    (none: not measured; ``guess``: the median of all finished runs). Likely left: the mean of
    what its kind's runs longer than ``elapsed`` took beyond it (a run already long is one of
    the long ones), else what ``guess`` leaves, 0 past it. Longest: up to the longer of its
    kind's longest and twice its mean; past that, or not measured, up to the time ``limit``;
    without a limit, as long again as it has run. ``at_most``: the most its solve's price
    leaves it (``price_left``), which caps both."""
    work = _work_of_running(elapsed, seconds, limit, guess)
    if at_most is None:
        return work
    return work.capped(at_most)


def _work_of_running(
    elapsed: float, seconds: Sequence[float], limit: float | None, guess: float
) -> Work:
    if seconds:
        beyond = [s - elapsed for s in seconds if s > elapsed]
        reach = max(max(seconds), 2 * _mean(seconds))
        if elapsed < reach:
            likely = _mean(beyond) if beyond else 0.0
            return Work(likely, likely, _spread(beyond) ** 2 if beyond else 0.0, reach - elapsed)
    longest = max(0.0, limit - elapsed) if limit is not None else elapsed
    likely = max(0.0, guess - elapsed) if not seconds else 0.0
    return Work(likely, likely, 0.0, longest)


#: A running solve's price (``oracles.contract.progress.Price``) is an estimate, not a bound:
#: the ETA plans its run to end within PRICE_MARGIN times the wall time of the price's high end.
#: On breast cancer at epsilon 10 (docs/results/carry_order.md, launch order), the 8 runs priced
#: after 60 s that certified when carried on to 300 s took 0.67 to 1.07 times their price.
PRICE_MARGIN = 2.0
#: The least CPU share a wall second a price is converted at (a solve measured on a starved
#: instant is not planned at no CPU at all: at a share below it the run's limit caps anyway).
LEAST_SHARE = 0.05
#: Driver-thread seconds a run takes after its solve ends (its evaluation and its MLflow
#: record), added to a price's wall time.
AFTER_SOLVE = 30.0


def work_of_priced(price: float, elapsed: float, limit: float | None, share: float = 1.0) -> Work:
    """A carried-on run's driver-thread seconds left, from its ``price`` (the CPU seconds its
    certificate would cost when this attempt began, ``pipeline.run.carried_prices``; NaN: not
    known), ``elapsed`` seconds into it, up to the oracle's time ``limit``, its solve having
    ``share`` CPU seconds a wall second. A carry-on runs its cheapest first, so the runs that
    finished first are no guide to those that follow (a kind's mean would plan a run priced at
    an hour like one priced at 15 s): each is planned by its own price, between 1/PRICE_MARGIN
    and PRICE_MARGIN times it (plus AFTER_SOLVE), at most its limit; past that high end (the
    price was wrong), or without a price, up to its limit (without a limit, as long again as it
    has run)."""
    bound = math.inf if limit is None else limit
    least, most = 0.0, bound
    if math.isfinite(price):
        least = min(price / PRICE_MARGIN, bound)
        most = min(PRICE_MARGIN * price / max(share, LEAST_SHARE) + AFTER_SOLVE, bound)
        if elapsed >= most:
            most = bound
    left = max(0.0, most - elapsed) if math.isfinite(most) else elapsed
    low = min(max(0.0, least - elapsed), left)
    return Work(low, left, 0.0, left)


def price_left(progress: SolveProgress | None) -> float | None:
    """The most driver-thread seconds a run whose one solve last reported ``progress`` may
    still take, from its price (None: no price): PRICE_MARGIN x the price's high end in wall
    seconds at the solve's CPU share, plus AFTER_SOLVE. The report's age is not taken off
    (the run can only be nearer its end)."""
    if progress is None or progress.price is None:
        return None
    return PRICE_MARGIN * progress.price.wall_seconds_high(LEAST_SHARE) + AFTER_SOLVE


def estimate_eta(
    *,
    finished: Sequence[tuple[Hashable, float]],
    running: Sequence[tuple[Hashable, float]],
    pending: Sequence[Hashable],
    threads: float | tuple[float, float],
    limit: float | None = None,
    unlimited: Iterable[Hashable] = (),
    priced: Sequence[Work] = (),
) -> Eta | None:
    """Seconds until the sweep ends, low and high, or None (``eta ?``) when nothing yet
    measures a kind that has runs left (module docstring). ``priced``: the work left of the
    runs planned by their own prices (a carry-on's, ``work_of_priced``), running or not, which
    are in neither ``running`` nor ``pending``. Every time is a driver thread's:
    from when it took a run to the run's result. ``finished``: (kind, seconds) in the order
    they ended; ``running``: (kind, seconds so far) or (kind, seconds so far, at most left:
    ``price_left``, or None); ``pending``: the kinds of the runs not
    started; ``threads``: the runs in flight at once, or (fewest, most) of them: a run's time
    ends when the driver has logged it, and its thread has by then taken the next run, so
    between the mean number in flight and the most at once (``Progress.mean_in_flight``; a
    carry-on of one run a slot has 2 in flight and briefly 3); the low end takes the most,
    the high end the fewest; ``unlimited``: the kinds that call no oracle (the time ``limit``
    is not theirs).

    The ``threads`` threads are busy until the runs run out, so the work left (``Work``) is
    done ``threads`` thread-seconds a second: a thread's time holds the run's wait for a CPU
    and the driver's share, so this holds however many CPUs there are and however loaded they
    are. low: (least - SPREAD sd) / threads; high: (most + SPREAD sd) / threads plus the
    longest one run may take (it may be the last to start: Graham's bound on a list
    schedule)."""
    if not running and not pending and not priced:
        return Eta(0.0, 0.0)
    unlimited = frozenset(unlimited)
    own: dict[Hashable, list[float]] = {}
    for kind, seconds in finished:
        own.setdefault(kind, []).append(seconds)
    left = {run[0] for run in running} | set(pending)
    if any(k not in own for k in left) and len(finished) < MIN_FINISHED:
        return None
    everyone = [s for _, s in finished]
    guess = _median(everyone) if everyone else 0.0  # read only for a kind not measured

    def limit_of(kind: Hashable) -> float | None:
        return None if kind in unlimited else limit

    work = Work()
    for one in priced:
        work += one
    for kind, elapsed, *at_most in running:
        work += work_of_running(
            elapsed, own.get(kind, []), limit_of(kind), guess, at_most[0] if at_most else None
        )
    counts: dict[Hashable, int] = {}
    for kind in pending:
        counts[kind] = counts.get(kind, 0) + 1
    for kind, count in counts.items():
        if kind in own:
            work += work_of_pending(count, own[kind])
        else:  # not measured: the others' runs, up to its limit (no limit: the longest seen)
            bound = limit_of(kind)
            longest = bound if bound is not None else max(everyone)
            work += dataclasses.replace(work_of_pending(count, everyone), longest=longest)
    fewest, most = threads if isinstance(threads, tuple) else (threads, threads)
    narrow = max(1, fewest, len(running))
    width = max(1, most, len(running))
    sd = math.sqrt(work.var)
    low = max(0.0, work.least - SPREAD * sd) / width
    return Eta(low, max(low, (work.most + SPREAD * sd) / narrow + work.longest))


def eta_at(runs: Sequence[RunTimes], now: float, threads: int) -> Eta | None:
    """``estimate_eta`` at time ``now`` of a sweep whose runs are ``runs`` (those not started
    in the order they will start), ``threads`` in flight: what the progress line shows then. A
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
        threads=threads,
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
    # the report's own time was shown again while no new one came (``window 232s`` at 236, 266
    # and 296 s): the solver's time counts on, and an old report says how old it is
    age = entry.age + since_read
    stale = f" (last report {age:.0f}s ago)" if age > 2 * REPORT_EVERY else ""
    return (
        f"{head}: {p.backend} {p.elapsed + age:.0f}s{stale} incumbent {_number(p.incumbent)} "
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
        prices: dict[str, float] | None = None,
    ) -> None:
        stream = sys.stderr if stream is None else stream  # the one in force now, not at import
        self.total, self.done, self.start, self.stream = total, 0, time.perf_counter(), stream
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.slots, self.limit, self.every = max(1, int(slots)), limit, float(every)
        self.unlimited = frozenset(unlimited)  # mechanisms without an oracle: no time limit
        # a carry-on's runs, each with its price in CPU seconds (NaN: not known): planned by it
        self.prices = {str(k): float(v) for k, v in (prices or {}).items()}
        self.groups = {str(k): _group(k) for k in keys}
        self.labels = {str(k): _label(k) for k in keys}
        self.threads_started: dict[str, float] = {}  # run -> when its driver thread took it
        self.threads = self.slots  # the most runs in flight at once yet (``started``)
        self.finished: list[tuple[Hashable, float]] = []  # (mechanism, seconds) of each
        self.finished_keys: set[str] = set()
        self.board: list[BoardEntry] | None = None  # the last snapshot read, and when
        self.board_read_at = self.start
        self.last_block = self.start
        self.last_label = ""
        self.lock = threading.Lock()
        self.in_flight_seconds = 0.0  # the runs in flight, integrated over time
        self.counted_at: float | None = None  # until when (None: before the first run)
        self.first_started: float | None = None

    # -- what the sweep tells it --

    def _count_in_flight(self) -> None:
        """Add the runs in flight since the last count to ``in_flight_seconds`` (under the
        lock, before the runs in flight change)."""
        now = time.perf_counter()
        if self.counted_at is not None:
            self.in_flight_seconds += len(self.threads_started) * (now - self.counted_at)
        self.counted_at = now

    def mean_in_flight(self) -> float:
        """The runs in flight on average since the first began (Little's L: the thread-seconds
        of run time the sweep does a second); the most at once before any time has passed."""
        with self.lock:
            if self.counted_at is None or self.first_started is None:
                return float(self.threads)
            now = time.perf_counter()
            area = self.in_flight_seconds + len(self.threads_started) * (now - self.counted_at)
            span = now - self.first_started
        return area / span if span > 0 else float(self.threads)

    def started(self, key: Any) -> None:
        """A driver thread took ``key``: the run counts from now (its wait for a CPU, its
        driver's part and its tasks alike: the ETA measures and plans in a thread's time,
        ``estimate_eta``). The most runs ever in flight at once are the sweep's ``threads``."""
        with self.lock:
            self.groups.setdefault(str(key), _group(key))
            self.labels.setdefault(str(key), _label(key))
            self._count_in_flight()
            if self.first_started is None:
                self.first_started = self.counted_at
            self.threads_started[str(key)] = time.perf_counter()
            self.threads = max(self.threads, len(self.threads_started))

    def running(self) -> dict[str, float]:
        """Run key -> seconds since its driver thread took it."""
        now = time.perf_counter()
        with self.lock:
            return {k: now - t for k, t in self.threads_started.items()}

    def name_of(self, tag: str) -> str:
        """A board tag (``key`` or ``key#i``) with its run's label."""
        run, sep, call = tag.partition("#")
        return self.labels.get(run, run) + sep + call

    def limit_of(self, tag: str) -> float | None:
        """The time limit of a board tag's run: the oracle's, None for a mechanism without."""
        return None if self.groups.get(run_of(tag)) in self.unlimited else self.limit

    def priced(self) -> dict[str, float]:
        """Run key -> the most it may still take by its solve's price (``price_left``), of the
        runs of one solve whose last report on the board read has a price."""
        with self.lock:
            board = list(self.board or [])
        return {
            e.tag: left
            for e in board
            if "#" not in e.tag and (left := price_left(e.progress)) is not None
        }

    def share(self) -> float:
        """The CPU seconds a wall second the running solves have had, the least of the prices
        on the board read (1 without one, at most 1: a carried run holds one slot)."""
        with self.lock:
            board = list(self.board or [])
        shares = [e.progress.price.cpu_share for e in board if e.progress and e.progress.price]
        return min([1.0, *shares])

    def eta(self) -> Eta | None:
        """``estimate_eta`` now: the finished runs' thread times, the running runs' times so
        far (``running``) and what their solves' prices leave them (``priced``), the runs not
        started in the sweep's order; runs ended without a known duration count at the sweep's
        pace (elapsed x threads / done)."""
        running = self.running()
        at_most = self.priced()
        elapsed = time.perf_counter() - self.start
        with self.lock:
            finished = list(self.finished)
            waiting = [k for k in self.groups if k not in running and k not in self.finished_keys]
            threads = self.threads
        # the work left is done at between the mean and the most runs in flight a second
        widths = (min(self.mean_in_flight(), threads), threads)
        n_pending = max(0, self.total - self.done - len(running))
        waiting = waiting[:n_pending]
        share = self.share()
        priced = []  # a carry-on's runs, by their prices
        for key in [k for k in running if k in self.prices] + [
            k for k in waiting if k in self.prices
        ]:
            work = work_of_priced(
                self.prices[key], running.get(key, 0.0), self.limit_of(key), share
            )
            if key in at_most:  # its solve's price now, fresher than the attempt's
                work = work.capped(at_most[key])
            priced.append(work)
        running = {k: e for k, e in running.items() if k not in self.prices}
        pending = [self.groups[k] for k in waiting if k not in self.prices]
        pending += [None] * (n_pending - len(waiting))
        unknown = self.done - len(finished)
        if unknown > 0:
            finished += [(None, elapsed * threads / self.done)] * unknown
        return estimate_eta(
            finished=finished,
            running=[(self.groups.get(k), e, at_most.get(k)) for k, e in running.items()],
            pending=pending,
            threads=widths,
            limit=self.limit,
            unlimited=self.unlimited,
            priced=priced,
        )

    def update(self, label: str, key: Any = None) -> None:
        """A run ended (``key``: which, to learn its duration: since its driver thread took it)."""
        if key is not None:
            with self.lock:
                self._count_in_flight()
                started = self.threads_started.pop(str(key), None)
                if started is not None:
                    seconds = time.perf_counter() - started
                    self.finished.append((self.groups.get(str(key)), seconds))
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
