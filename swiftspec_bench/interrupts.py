"""Ctrl-C and SIGTERM in a run: each ends it the way cli.user_errors ends a user error (one
`error:` line, exit 2, finished rows kept, the lock released), wherever it lands, imports included."""
from __future__ import annotations

import contextlib
import signal
import sys
import threading


class Interrupts:
    """Whether Ctrl-C came (main's handler notes it, then raises KeyboardInterrupt as Python's own
    does). Ctrl-C in a run's first ~2.5 s lands in the imports of torch, numpy and transformers:
    there it ended without the error line, by a bare exit 130 or by SIGINT itself (9 of 12 tries
    at 0.8-3.5 s), or in a traceback where an import turned it into another error (ImportError
    "cannot load module more than once per process", RecursionError, ModuleNotFoundError); so any
    error after it is taken for the interruption it is."""
    seen = False

    @classmethod
    def install(cls) -> None:
        """main's: the handler (where the shell has not set Ctrl-C ignored), and Python's report of
        an "exception ignored" left out where the exception is the Ctrl-C (raised inside an import
        lock's callback, it would print a traceback; the run ends by raise_if_seen instead)."""
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, cls.handler)
        report = sys.unraisablehook
        sys.unraisablehook = lambda u: None if isinstance(u.exc_value, KeyboardInterrupt) else report(u)

    @classmethod
    def handler(cls, signum, frame):
        cls.seen = True
        raise KeyboardInterrupt

    @classmethod
    def raise_if_seen(cls):
        """Where a Ctrl-C went into an import that swallowed it (1 of 21 tries at 0.4-0.55 s): the
        run must not go on as if it had not come."""
        if cls.seen:
            raise KeyboardInterrupt


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be: it takes the same way out."""


@contextlib.contextmanager
def sigterm_interrupts():
    """SIGTERM (what `timeout`, `kill` and job schedulers send) ends the block as Ctrl-C does: the
    workers stopped, the finished rows kept, the lock released, `error: ...` and exit code 2,
    where by default it would kill this process on the spot and leave the run folder locked.
    Only the main thread may set a handler: elsewhere (a caller's thread) the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum, frame):
        # Once: a second SIGTERM (a scheduler's repeat) must not cut the clean-up short; the
        # clean-up is bounded (launch.STOP_S), and SIGKILL still ends it.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
