"""Is a worker process still there? Each worker's daemon thread stamps a shared clock every BEAT_S;
the parent reads the stamps in its poll loop and calls a rank stalled once its stamp is older than
the worker timeout.

The thread beats whatever the worker's main thread is doing (loading weights, compiling, waiting
in a collective), so a slow step never looks like a stall; what stops the beat is a process that
no longer runs: stopped (SIGSTOP, a debugger), frozen by the system, or wedged with the GIL held.
"""
from __future__ import annotations

import threading
import time

DEFAULT_TIMEOUT_S = 30.0  # `swiftspec-bench run --worker-timeout`'s default
BEAT_S = 0.5
START_S = 120.0  # before a worker's first beat (interpreter start, imports): at least this long
PAUSE_S = 1.0  # a gap this long in the parent's own polling: it was paused itself (Ctrl-Z)


def start_beating(stamps, rank: int) -> None:
    """In a worker: stamp stamps[rank] with the monotonic clock (system-wide on Linux) every BEAT_S."""

    def beat():
        while True:
            stamps[rank] = time.monotonic()
            time.sleep(BEAT_S)

    stamps[rank] = time.monotonic()
    threading.Thread(target=beat, name="swiftspec-heartbeat", daemon=True).start()


class Watch:
    """In the parent: which ranks have been silent longer than `timeout` seconds.

    A rank is measured from its last stamp, or from the start with START_S of allowance before its
    first one. After the parent itself was paused (its polls more than PAUSE_S apart, as after
    Ctrl-Z and fg, which stop the workers too), every rank gets a fresh `timeout` to beat again.
    """

    def __init__(self, stamps, timeout: float):
        self.stamps, self.timeout = stamps, timeout
        self.started = self.last_poll = self.resumed = time.monotonic()

    def silent(self, ranks) -> list[tuple[int, float]]:
        """(rank, seconds silent) of every rank among `ranks` past its allowance."""
        now = time.monotonic()
        if now - self.last_poll > PAUSE_S:
            self.resumed = now
        self.last_poll = now
        out = []
        for r in ranks:
            since, allowed = self._window(r)
            if now - max(since, self.resumed) > allowed:
                out.append((r, now - since))
        return out

    def limit(self, rank: int) -> str:
        """The allowance a silent rank went past, in words: its error must name the limit that
        applied, not the timeout where the start-up's longer one did."""
        _, allowed = self._window(rank)
        if self.stamps[rank]:
            return f"worker timeout {allowed:g} s"
        return f"limit before a worker's first heartbeat, as it starts: {allowed:g} s"

    def _window(self, rank: int) -> tuple[float, float]:
        """(silent since, seconds allowed): from its last stamp, the timeout; before its first
        stamp, from the start, START_S at least."""
        stamp = self.stamps[rank]
        return (stamp, self.timeout) if stamp else (self.started, max(self.timeout, START_S))
