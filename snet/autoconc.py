"""Box concurrency ``auto``: a controller that sets each box's concurrency and the active workers.

With ``--box-concurrency auto`` (``box_concurrency="auto"``) the FRONT
engine starts every automatic box at one call at a time and runs one
worker under the GIL, as many as the machine has cores without it
(:func:`first_workers`); a :class:`Tuner` thread then watches the run and
changes both while it goes on.  docs/runtime.md ("Automatic box
concurrency") describes the design for users; this docstring keeps the
reasons.

What is measured
================

The tuner samples the runtime's counters (``Runtime.sample``) when the open
window may close, then every ``TICK_S`` until it does:
the invocations of all entities so far, and per automatic box its calls
and the seconds spent in them.  The network's *work rate* is the automatic
boxes' calls per second, added up: in a steady state every record costs
the same calls, so the rate is proportional to the throughput, whichever
box limits it (``_work_rates``).  Invocations a record are not fixed: one
worker admits runs of input straight into a fused chain, two hand each
record on; they are the work rate only where a window has too few box
calls (a network without boxes).  Samples make a :class:`Window` of at least ``WINDOW_S``
(longer until the box under trial made ``MIN_CALLS`` calls, at most
``MAX_WINDOW_S``); outside trials a window that decides nothing makes the
next twice as long, up to ``QUIET_WINDOW_S``, since every sample takes the
GIL from the workers.  Per box a window gives:

* the *arrival rate* and *service time*: calls per second and seconds
  per call;
* the *calls in flight* (occupancy): seconds in calls per second of the
  window, Little's law's mean number in service; divided by the box's level
  it is the box's *saturation*.  A box near saturation has records
  waiting for it (a worker only takes a record from a box below its level),
  so it is where the queue is;
* *waiting*: the share of the calls' wall time their thread did not
  spend on the CPU (the runtime reads the thread's CPU clock around the
  calls of automatic boxes); a call that mostly waits can overlap with
  many others, so its trials step by 4 rather than 2;
* *overlap*, after a trial raise: a box whose calls hold the GIL gains
  nothing, its service time grows with its level and its calls per second
  stay; a box that releases the GIL (``time.sleep``, I/O, NumPy) keeps its
  service time and its calls per second grow with the level.

How it decides
==============

:class:`Controller` is the decision function: windows in, decisions out,
no clock and no runtime, so tests feed it synthetic windows.  It is a
hill climber that keeps a change only on evidence:

* *Raise* (a trial): the busiest box whose saturation is at least
  ``RAISE_AT`` has its level doubled (4x for calls that wait); under the
  GIL, not a box whose calls take less than ``SHORT_CALL_S``.  A trial is
  judged A/B/A (:meth:`Controller._step`): the window before (A), one at the
  new level (B), one back at the old level (A again), each after a short
  discarded window; the raise is kept only if the work rate and the box's
  calls per second of B beat both A windows by ``RAISE_GAIN`` (the dead
  band), and B had more calls in flight by as much (the new slots were
  used), else the level goes back; a B twice as fast as A is kept at
  once, without the second A (``CLEAR_GAIN``).  A kept raise is followed by the next one at once,
  with the window that judged it as the baseline (1, 2, 4, 8, 16; or 1, 4,
  16 for calls that wait), so a GIL-releasing bottleneck settles within a
  second or two.
* *Check* (a trial): ``RECHECK_S`` after a raise was kept, half the
  level is tried; it stays when no slower (by ``TOLERANCE``): a raise that
  noise let through comes back down.
* *Lower* (no trial): a box whose saturation stayed below ``LOWER_AT`` for
  ``LOWER_WINDOWS`` windows has its level halved: its slots are unused, and
  each slot holds a worker.  The gap between ``LOWER_AT`` and
  ``RAISE_AT`` (hysteresis) means a lowered box is not a candidate for a
  raise at once: after halving, its saturation is at most twice
  ``LOWER_AT``, below ``RAISE_AT``.
* *Workers*: the active workers are the base count plus one per slot of
  every automatic box above level 1 (a box at level L may hold L workers
  in its calls; the base count runs the rest), at most the workers made.
  The base count starts at one under the GIL and at the cores without it
  (:func:`first_workers`).  A trial of one worker more (up to the cores;
  from one, not before ``MORE_FIRST_S``) needs a gain of ``GAIN``; a trial
  of one fewer is kept when the work rate does not fall by more than
  ``TOLERANCE`` (fewer threads contending for the GIL; a pipeline of cheap
  pure-Python boxes runs faster on one).

Stability: a trial that fails is not tried again before a back-off that
starts at ``BACKOFF_S`` and doubles with every failure of the same trial
(at most ``MAX_BACKOFF_S``); a raise whose calls took turns (each call's
wall time grew with the level, by ``TURNS`` of the ratio at least, and the
calls per second did not grow: the signature of a box that holds the GIL
or a lock of its own) starts its back-off at ``TURNS_BACKOFF_S`` instead,
since the load does not change that; and a change kept postpones the move back by
a wait that starts at ``RECHECK_S`` and doubles with every change kept, so
in a steady run the settled levels stay, the trials become rare, and even
a pair of moves that noise kept in turn slows down rather than oscillates; a kept change needs a margin larger than the
noise of a busy machine (the dead band), and raising and lowering have
thresholds apart (the hysteresis).  No two changes overlap: one trial at a
time, and each change is followed by a discarded window.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections import deque
from typing import Any, Mapping

import attrs

TICK_S = 0.05  # the tuner samples the counters this often
WINDOW_S = 0.2  # shortest observation window
FIRST_WINDOW_S = 0.1  # ... but the first of the run, which only decides whether a first trial starts
SETTLE_S = 0.05  # shortest window discarded after a change
RECHECK_S = 4.0  # a raise kept is tried lower again after this (then doubling, as a failed trial)
MAX_WINDOW_S = 1.0  # longest: a window closes then even with few calls
QUIET_WINDOW_S = 1.0  # a window that decides nothing makes the next twice as long as it, up to this
MIN_CALLS = 20  # calls of the box under trial a window waits for
GAIN = 0.10  # one worker more is kept when the work rate grows by this share
RAISE_GAIN = 0.25  # a raise is kept when the work rate and the box's calls per second grow by this share
CLEAR_GAIN = 1.0  # ... and kept without the second A window when they grow by this share (twice the rate)
TOLERANCE = 0.03  # one worker fewer is kept unless the work rate falls by more than this share
RAISE_AT = 0.7  # saturation (calls in flight / level) from which a box's level is tried higher
LOWER_AT = 0.25  # saturation below which, for LOWER_WINDOWS windows, a box's level is halved
LOWER_WINDOWS = 3
MAX_LEVEL = 16  # the highest level a box is given
WAITING = 0.75  # a box whose calls wait this share of their wall time (not computing) is raised 4x at a time, or more
BACKOFF_S = 1.0  # first wait before a failed trial is tried again; doubles with each failure
TURNS = 0.8  # a raise whose calls each took this share of (new level / old level) times as long: they take turns
TURNS_BACKOFF_S = 8.0  # ... and such a raise is first tried again after this (the box holds the GIL or a lock)
MAX_BACKOFF_S = 64.0
SHORT_CALL_S = 20e-6  # under the GIL, a box whose calls take less than this is not raised
MORE_FIRST_S = 1.0  # a run that starts on fewer workers than cores tries one more after this at the earliest

log = logging.getLogger("snet")


@attrs.frozen
class Window:
    """What the counters say over one observation window.

    ``boxes``: per box node, (calls, seconds in calls) during the window,
    and a third figure where measured: the CPU seconds of those calls.
    ``workers``: the workers active during the window (0: not known), which
    bound the calls in flight of all boxes together (``in_flight``).
    """

    seconds: float
    invocations: int
    boxes: Mapping[int, tuple]
    workers: int = 0

    @property
    def rate(self) -> float:
        """Invocations per second."""
        return self.invocations / self.seconds if self.seconds > 0 else 0.0

    @property
    def calls(self) -> int:
        """The calls of every automatic box in the window."""
        return sum(figures[0] for figures in self.boxes.values())

    def calls_per_second(self, node: int) -> float:
        return self.boxes.get(node, (0, 0.0))[0] / self.seconds if self.seconds > 0 else 0.0

    def in_flight(self, node: int) -> float:
        """Mean calls of the box in flight during the window (Little's law), scaled down where the boxes
        together had more in flight than ``workers``.

        Each call in flight holds a worker, so more than ``workers`` in all is the measurement's error,
        not the run: a short box's time is sampled (one call, or one walk of a fused chain, counts for
        16 or 128), and a sampled call that lost the GIL to another thread for its switch interval
        (5 ms) counts for that many times 5 ms.  Five cheap boxes fused, on one or two workers, read
        2.3 to 4.5 calls in flight in all, each box 0.4 to 2.1 (above the raise threshold)."""
        if self.seconds <= 0:
            return 0.0
        flight = self.boxes.get(node, (0, 0.0))[1] / self.seconds
        if self.workers > 0:
            total = sum(figures[1] for figures in self.boxes.values()) / self.seconds
            if total > self.workers:
                flight *= self.workers / total
        return flight

    def service_time(self, node: int) -> float:
        calls, seconds = self.boxes.get(node, (0, 0.0))[:2]
        return seconds / calls if calls else 0.0

    def waiting_share(self, node: int) -> float | None:
        """The share of the calls' wall time not spent computing (None: not measured)."""
        figures = self.boxes.get(node, ())
        if len(figures) < 3 or figures[1] <= 0:
            return None
        return max(0.0, 1.0 - figures[2] / figures[1])


@attrs.frozen
class Decision:
    """One step of the controller: a level (``node`` set) or the base worker count changes.

    ``old == new`` says only why a change stays (a trial kept).
    """

    node: int | None
    name: str
    old: int
    new: int
    reason: str
    kept: bool = True  # False: a trial, kept or undone at the next decision
    active: int | None = None  # the active workers right after this decision

    def describe(self) -> str:
        what = f"box {self.name}: level" if self.node is not None else "base workers"
        change = f"{self.old} -> {self.new}" if self.old != self.new else f"stays {self.new}"
        return f"box concurrency auto: {what} {change} ({self.reason})"


@attrs.define
class _Trial:
    node: int | None  # None: the base worker count
    old: int
    new: int
    before: Window  # the first A window
    phase: int = 0  # windows seen since the trial started
    b: Window | None = None  # the B window


class Controller:
    """The decision function: feed it windows (:meth:`decide`), apply what it returns.

    ``boxes``: node id -> box name, for the automatic boxes.  Levels start
    at 1; the base worker count goes from 1 to ``cores`` and starts at
    ``start_workers`` (the cores where not given); the active workers
    (:meth:`active`) are never more than ``max_workers``.
    """

    def __init__(self, boxes: Mapping[int, str], *, cores: int, max_workers: int, start_workers: int | None = None,
                 max_level: int = MAX_LEVEL, gil: bool | None = None):
        self.names = dict(boxes)
        self.gil = _gil_enabled() if gil is None else gil  # the interpreter runs one thread's Python at a time
        self.levels = {node: 1 for node in boxes}
        self.cores = max(1, min(cores, max_workers))
        self.base = self.cores if start_workers is None else max(1, min(start_workers, self.cores))
        self.max_workers = max_workers
        self.max_level = max(1, min(max_level, max_workers))
        self.trial: _Trial | None = None
        self.skip = 1  # windows to discard (the start, and after every change)
        self.judged = False  # a window has been judged (the first may be shorter: FIRST_WINDOW_S)
        self.quiet = WINDOW_S  # the length of a window outside trials: doubles while they decide nothing
        self.low: dict[int, int] = {node: 0 for node in boxes}  # windows in a row below LOWER_AT
        # A run that starts below the cores tries one worker more after MORE_FIRST_S at the earliest: a run
        # over by then gains little from it, and the trial's windows run at the other count
        self.retry_at: dict[Any, float] = {"more": MORE_FIRST_S} if self.base < self.cores else {}
        self.backoff: dict[Any, float] = {}
        self.changes = 0  # changes that stayed
        self.trials = 0
        self.settled_at = 0.0  # when the last change that stayed was made

    def active(self) -> int:
        """Workers to run: the base count, and a worker per slot of every box above level 1 (at most
        ``max_workers``): a box at level L may hold L workers in its calls, the base runs the rest."""
        return _workers(self.base, self.levels.values(), self.max_workers)

    def window_done(self, window: Window) -> bool:
        """True when ``window`` is long enough: ``SETTLE_S`` for one that is discarded, else ``WINDOW_S``
        and, in a trial of a box, ``MIN_CALLS`` of its calls (or ``MAX_WINDOW_S`` in any case).

        The run's first window judged closes after ``FIRST_WINDOW_S`` once it holds ``MIN_CALLS``
        invocations: it can only start a trial, which its own A/B/A windows judge, and every window
        at the start's levels is time a box that needs a higher level runs slowly."""
        if window.seconds >= MAX_WINDOW_S:
            return True
        trial = self.trial
        settling = self.skip > 0 if trial is None else trial.phase in (0, 2)
        if settling:
            return window.seconds >= SETTLE_S
        if not self.judged and trial is None:
            return window.seconds >= FIRST_WINDOW_S and window.invocations >= MIN_CALLS
        if window.seconds < (WINDOW_S if trial is not None else self.quiet):
            return False
        if trial is not None and trial.node is not None:
            return window.boxes.get(trial.node, (0,))[0] >= MIN_CALLS
        return True

    def window_length(self) -> float:
        """The seconds the window now open lasts at least (``window_done`` says when it is done)."""
        trial = self.trial
        if (self.skip > 0 if trial is None else trial.phase in (0, 2)):
            return SETTLE_S
        if trial is not None:
            return WINDOW_S
        return FIRST_WINDOW_S if not self.judged else self.quiet

    def decide(self, window: Window, now: float) -> list[Decision]:
        """The decisions after ``window`` (which ended at ``now``, in seconds since the start)."""
        if not window.workers:  # (the settings did not change during it: a change starts the next window)
            window = attrs.evolve(window, workers=self.active())
        trial = self.trial
        if trial is not None:
            return self._step(trial, window, now)
        if self.skip:
            self.skip -= 1
            return []
        if window.invocations < MIN_CALLS:  # an idle network (a session between inputs) says nothing
            return []
        self.judged = True
        decisions = (self._lower(window, now) or self._raise(window, now) or self._down(window, now)
                     or self._workers(window, now))
        # A window that decides nothing makes the next one longer, up to QUIET_WINDOW_S: a settled run is
        # looked at once a second, not five times (each look takes the GIL from the workers, see Tuner)
        self.quiet = WINDOW_S if decisions else min(QUIET_WINDOW_S, 2 * self.quiet)
        return decisions

    # -- the moves -------------------------------------------------------------

    def _raise(self, window: Window, now: float) -> list[Decision]:
        best, busiest = None, 0.0
        for node, level in self.levels.items():
            flight = window.in_flight(node)
            if (level < self.max_level and flight >= RAISE_AT * level and flight > busiest
                    and now >= self.retry_at.get(node, 0.0) and not self._too_short(window, node)):
                best, busiest = node, flight
        if best is None:
            return []
        old = self.levels[best]
        waiting = window.waiting_share(best)
        new = min(self.max_level, _raised(old, waiting))
        wait = f", {100 * waiting:.0f}% of it waiting" if waiting is not None else ""
        return [self._start(best, old, new, window, f"{busiest:.2g} calls in flight at level {old}, "
                            f"{_ms(window.service_time(best))} per call{wait}: trying {new}")]

    def _too_short(self, window: Window, node: int) -> bool:
        """Under the GIL, calls shorter than ``SHORT_CALL_S`` are not worth a raise trial.

        What such a call does without the GIL (if anything) is too short to overlap with another call
        for a gain beside handing the GIL between their threads, and a trial costs its windows at a
        higher level, with a worker more contending for the GIL: five cheap boxes fused (0.8 µs a call)
        read 0.7 calls in flight at level 1 and started trials of level 2 that their 0.15 s runs ended
        before judging.  Without the GIL (a free-threaded build), two such calls do run at once."""
        service = window.service_time(node)
        return self.gil and 0.0 < service < SHORT_CALL_S

    def _lower(self, window: Window, now: float) -> list[Decision]:
        out = []
        for node, level in self.levels.items():
            flight = window.in_flight(node)
            self.low[node] = self.low[node] + 1 if level > 1 and flight < LOWER_AT * level else 0
            if self.low[node] >= LOWER_WINDOWS:
                self.low[node] = 0
                new = max(1, level // 2)
                self.levels[node] = new
                out.append(Decision(node, self.names[node], level, new,
                                    f"{flight:.2g} calls in flight at level {level}: slots unused",
                                    active=self.active()))
        if out:
            self._stayed(now)
        return out

    def _down(self, window: Window, now: float) -> list[Decision]:
        """A trial of half the level of a box raised before: is the level still needed (or was it noise)?"""
        for node, level in self.levels.items():
            if level > 1 and now >= self.retry_at.get(("down", node), float("inf")):
                return [self._start(node, level, max(1, level // 2), window,
                                    f"{window.in_flight(node):.2g} calls in flight at level {level}: "
                                    f"trying {max(1, level // 2)}, to see that {level} is still needed")]
        return []

    def _workers(self, window: Window, now: float) -> list[Decision]:
        rate, _, unit = _work_rates(window, window)
        if self.base > 1 and now >= self.retry_at.get("fewer", 0.0):
            return [self._start(None, self.base, self.base - 1, window,
                                f"{rate:,.0f} {unit}: trying one worker fewer")]
        if self.base < self.cores and now >= self.retry_at.get("more", 0.0):
            return [self._start(None, self.base, self.base + 1, window,
                                f"{rate:,.0f} {unit}: trying one worker more")]
        return []

    def _start(self, node: int | None, old: int, new: int, before: Window, reason: str) -> Decision:
        self.trial = _Trial(node, old, new, before)
        self.trials += 1
        self._set(node, new)
        return Decision(node, self._name(node), old, new, reason, kept=False, active=self.active())

    def _step(self, trial: _Trial, window: Window, now: float) -> list[Decision]:
        """One window of a trial: A (``before``), then B (the new setting), then A again, then the verdict.

        The window after each change is discarded.  B must pass against
        both A windows: a machine whose speed drifts (other work starting or
        stopping) moves both A windows with it, and passes neither.  A B
        that fails against the first A ends the trial there.
        """
        trial.phase += 1
        if trial.phase in (1, 3):  # the window right after a change
            return []
        if trial.phase == 2:
            trial.b = window
            passed, figures = self._passes(trial, trial.before, window)
            if not passed:
                return self._undo(trial, figures, now, at_old=False, turns=_took_turns(trial, trial.before, window))
            if trial.node is not None and trial.new > trial.old and self._passes(trial, trial.before, window,
                                                                                  CLEAR_GAIN)[0]:
                # Twice the rate: no drift between two windows 0.05 s apart is that large (and the check
                # of the raise comes later); the next raise starts at once, B its baseline.
                self.trial = None
                return self._keep(trial, figures, now, at_once=True) + self._raise(window, now)
            self._set(trial.node, trial.old)
            return [Decision(trial.node, self._name(trial.node), trial.new, trial.old,
                             f"{figures}: measuring {trial.old} again to compare", kept=False, active=self.active())]
        self.trial = None
        assert trial.b is not None
        passed, figures = self._passes(trial, window, trial.b)
        if not passed:
            return self._undo(trial, figures, now, at_old=True, turns=_took_turns(trial, window, trial.b))
        return self._keep(trial, figures, now)

    def _passes(self, trial: _Trial, a: Window, b: Window, raise_gain: float = RAISE_GAIN) -> tuple[bool, str]:
        """Whether ``b`` (the new setting) beats ``a`` by the dead band, and the figures that say so."""
        node = trial.node
        if a.rate <= 0 or b.invocations < MIN_CALLS:  # nothing ran: no evidence either way, the old setting stays
            return False, "the network was idle"
        rate_a, rate_b, unit = _work_rates(a, b)
        if rate_a <= 0:
            return False, "the network was idle"
        gain = rate_b / rate_a - 1
        figures = f"work rate {rate_a:,.0f} -> {rate_b:,.0f} {unit} ({100 * gain:+.0f}%)"
        if node is None or trial.new < trial.old:  # fewer workers or a lower level: no slower will do
            return (gain >= -TOLERANCE if trial.new < trial.old else gain >= GAIN), figures
        calls_a, calls_b = a.calls_per_second(node), b.calls_per_second(node)
        calls_gain = calls_b / calls_a - 1 if calls_a > 0 else 0.0
        # The new slots must be in use: a gain with no more calls in flight is not the raise's doing
        flight_gain = b.in_flight(node) / a.in_flight(node) - 1 if a.in_flight(node) > 0 else 0.0
        figures += (f", calls {calls_a:,.0f} -> {calls_b:,.0f}/s, {_ms(a.service_time(node))} -> "
                    f"{_ms(b.service_time(node))} per call, {a.in_flight(node):.2g} -> {b.in_flight(node):.2g} "
                    f"in flight")
        return gain >= raise_gain and calls_gain >= raise_gain and flight_gain >= RAISE_GAIN, figures

    def _keep(self, trial: _Trial, figures: str, now: float, at_once: bool = False) -> list[Decision]:
        node, key = trial.node, self._key(trial)
        self.retry_at.pop(key, None)
        # The move back gets its chance later (the load may change), after a wait that doubles with
        # every change kept: a pair of moves that noise kept in turn slows down, it cannot oscillate.
        self._postpone(_opposite(key), now, RECHECK_S)
        if node is None:
            why = "no slower with fewer" if key == "fewer" else "faster with more"
        elif trial.new > trial.old:
            why = "calls overlap"
        else:
            why = f"{trial.old} was not needed"
        self._set(node, trial.new)
        self._stayed(now)
        self.skip = 1
        kept = "kept at once" if at_once else "kept"
        return [Decision(node, self._name(node), trial.old, trial.new, f"{kept}: {figures}: {why}",
                         active=self.active())]

    def _undo(self, trial: _Trial, figures: str, now: float, at_old: bool, turns: bool = False) -> list[Decision]:
        node, key = trial.node, self._key(trial)
        first = RECHECK_S if isinstance(key, tuple) else BACKOFF_S
        if node is None:
            why = "slower" if key == "fewer" else "no faster"
        elif turns:
            why = "calls take turns (each took as much longer as there were more: the box holds the GIL or a lock)"
            first = TURNS_BACKOFF_S
        elif trial.new > trial.old:
            why = "calls do not overlap (or the box is not the bottleneck)"
        else:
            why = f"slower: {trial.old} is needed"
        self._postpone(key, now, first)
        self._set(node, trial.old)
        self.trial = None
        self.skip = 1
        reason = f"undone: {figures}: {why}; not tried again for {self.backoff[key]:g} s"
        old = trial.old if at_old else trial.new
        return [Decision(node, self._name(node), old, trial.old, reason, active=self.active())]

    def _postpone(self, key: Any, now: float, first: float) -> None:
        """No trial of ``key`` before ``first`` seconds, twice as long as the last time (at most MAX_BACKOFF_S)."""
        self.backoff[key] = min(MAX_BACKOFF_S, self.backoff.get(key, first / 2) * 2)
        self.retry_at[key] = now + self.backoff[key]

    @staticmethod
    def _key(trial: _Trial) -> Any:
        if trial.node is not None:
            return trial.node if trial.new > trial.old else ("down", trial.node)
        return "fewer" if trial.new < trial.old else "more"

    def _name(self, node: int | None) -> str:
        return self.names.get(node, "") if node is not None else ""

    def _set(self, node: int | None, value: int) -> None:
        if node is None:
            self.base = value
        else:
            self.levels[node] = value

    def _stayed(self, now: float) -> None:
        self.changes += 1
        self.settled_at = now

    def summary(self) -> dict[str, Any]:
        """The settled state, for the run's statistics: levels per box name (the highest of its nodes)."""
        settled = dict(self.levels)
        base = self.base
        if self.trial is not None:  # a trial still open at the end did not settle anything
            if self.trial.node is None:
                base = self.trial.old
            else:
                settled[self.trial.node] = self.trial.old
        levels: dict[str, int] = {}
        for node, level in settled.items():
            name = self.names[node]
            levels[name] = max(level, levels.get(name, 1))
        workers = _workers(base, settled.values(), self.max_workers)
        return {"levels": levels, "workers": workers, "max_workers": self.max_workers,
                "changes": self.changes, "trials": self.trials, "settled_seconds": self.settled_at}


def first_workers(cores: int, *, held: bool, gil: bool | None = None) -> int:
    """The base workers a run under ``auto`` starts with: one under the GIL, else the cores.

    Under the GIL a second worker gains only while the first is in a call
    that released it (a sleep, I/O, a C library); otherwise the two take
    turns for it, and hand each record on where one would walk it straight
    through: five cheap pure-Python boxes run faster on one worker.  The
    boxes whose calls release the GIL are what the raise trials find, and
    each level above 1 adds its workers; the trial of one worker more
    finds the rest (several short boxes that release it), after
    ``MORE_FIRST_S``.  ``held``: workers are held apart from the automatic
    boxes' calls (a split executor's batch holds the worker that runs it,
    a box given a number its calls), and the run starts at the cores as
    without ``auto``.  Without the GIL, every worker runs Python at once.
    """
    if held or not (_gil_enabled() if gil is None else gil):
        return cores
    return 1


def _gil_enabled() -> bool:
    is_enabled = getattr(sys, "_is_gil_enabled", None)  # (Python 3.13 and later)
    return True if is_enabled is None else bool(is_enabled())


def _opposite(key: Any) -> Any:
    """The trial that would undo a change of ``key``: a raise of a box and the check at half its level,
    one worker fewer and one more."""
    if isinstance(key, tuple):
        return key[1]
    if key in ("fewer", "more"):
        return "more" if key == "fewer" else "fewer"
    return ("down", key)


def _took_turns(trial: _Trial, a: Window, b: Window) -> bool:
    """Whether a raise's calls took turns: in ``b`` each call's wall time grew with the level (by ``TURNS`` of
    the ratio at least) and the box's calls per second did not grow by the dead band."""
    node = trial.node
    if node is None or trial.new <= trial.old:
        return False
    time_a, calls_a = a.service_time(node), a.calls_per_second(node)
    if time_a <= 0 or calls_a <= 0:
        return False
    return (b.service_time(node) >= TURNS * trial.new / trial.old * time_a
            and b.calls_per_second(node) < (1 + RAISE_GAIN) * calls_a)


def _work_rates(a: Window, b: Window) -> tuple[float, float, str]:
    """The work rates of ``a`` and ``b``, and their unit: the automatic boxes' calls per second where both
    windows have ``MIN_CALLS`` of them, else invocations per second.

    Box calls first: a record costs the same calls in every setting, but not the same invocations (one
    worker admits runs of input records straight into a fused chain, two hand them on), so invocations
    would misjudge a change of the worker count (a trial of one worker fewer: -35% where it ran 1.2 times
    as fast)."""
    if a.calls >= MIN_CALLS and b.calls >= MIN_CALLS:
        return a.calls / a.seconds, b.calls / b.seconds, "box calls/s"
    return a.rate, b.rate, "invocations/s"


def _workers(base: int, levels: Any, most: int) -> int:
    return min(most, base + sum(level for level in levels if level > 1))


def _raised(level: int, waiting: float | None) -> int:
    """The level a raise tries for a box at ``level`` whose calls wait ``waiting`` of their time (None: unknown).

    Calls that compute take one doubling.  Calls that mostly wait (sleep,
    I/O, a call that released the GIL) can overlap far: at least four
    times as many, and as many as one core's worth of their computing
    parts, ``1 / (1 - waiting)`` rounded up to a power of two (a call that
    computes 1 % of its time: 128, which the highest level then caps), so
    that a box of such calls reaches its level in one trial, not two.
    """
    if waiting is None or waiting < WAITING:
        return 2 * level
    computing = max(1.0 - waiting, 1e-3)
    overlap = 1
    while overlap * computing < 1.0:
        overlap *= 2
    return max(4 * level, overlap)


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:.3g} ms"


class Tuner:
    """The controller's thread: samples a FRONT ``Runtime``, applies and logs the decisions."""

    def __init__(self, runtime: Any, controller: Controller):
        self.runtime = runtime
        self.controller = controller
        self.nodes = sorted(controller.names)
        self.decisions: deque[Decision] = deque(maxlen=1000)  # the latest, for a person who looks
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="snet-box-concurrency-auto", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(1.0)

    def _run(self) -> None:
        # The thread sleeps until the open window may close, then every TICK_S until it does, rather than
        # every TICK_S throughout: each wake-up waits for the GIL (up to the switch interval, 5 ms) and
        # takes it from the workers, which cost a pipeline of pure-Python boxes 3 % of its run at 20 a second.
        controller = self.controller
        try:
            first = last = self.runtime.sample(self.nodes)
            wait = controller.window_length()
            while not self._stop.wait(wait):
                now = self.runtime.sample(self.nodes)
                window = _window(last, now, self.nodes)
                if not controller.window_done(window):
                    wait = max(TICK_S, controller.window_length() - window.seconds)
                    continue
                last = now
                for decision in controller.decide(window, now[0] - first[0]):
                    self._apply(decision)
                wait = max(TICK_S, controller.window_length())
        except Exception as e:  # never the run's failure: the levels stay where they are
            log.warning("warning: box concurrency auto stopped: %s: %s", type(e).__name__, e)

    def _apply(self, decision: Decision) -> None:
        if decision.node is not None and decision.old != decision.new:
            self.runtime.set_level(decision.node, decision.new)
        self.runtime.set_active(self.controller.active())
        self.decisions.append(decision)
        active = decision.active if decision.active is not None else self.controller.active()
        log.info("info: %s; workers active: %d", decision.describe(), active)


def _window(last: tuple, now: tuple, nodes: list[int]) -> Window:
    """The window between two samples of ``Runtime.sample``."""
    boxes = {node: (c1 - c0, max(0.0, s1 - s0), max(0.0, u1 - u0))
             for node, (c0, s0, u0), (c1, s1, u1) in zip(nodes, last[2], now[2])}
    return Window(seconds=max(now[0] - last[0], 1e-9), invocations=now[1] - last[1], boxes=boxes)


__all__ = ["Controller", "Decision", "Tuner", "Window", "MAX_LEVEL", "first_workers"]
