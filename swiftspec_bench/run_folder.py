"""A run folder (--out) before any model loads: it must be a folder we can write, its results file
readable; and one run at a time writes it (a lock file holding the writer's pid)."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from swiftspec_core.errors import UserError

from .results import read_rows, results_file

LOCK = ".lock"


def named_folder(text: str | Path, flag: str = "--out") -> Path:
    """A folder option as given; an empty one is a user error (Path("") is the current folder, which
    would take a run's rows or a plot's figures unasked)."""
    if isinstance(text, str) and not text.strip():
        raise UserError(f"{flag} is empty: name a folder (. for the current one)")
    return Path(text)


def check_out_dir(text: str | Path) -> Path:
    """`--out` as a Path; a user error unless it is (or can be made) a folder we can write whose
    results file, if any, is readable. Writes nothing that stays: writability is tried with a
    temporary file in `out` or in its nearest existing parent (os.access says yes to root on
    read-only mounts)."""
    out = named_folder(text)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is an existing file, not a folder")
    parent = out
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"--out {out}: {parent} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise UserError(f"--out {out}: cannot write in {parent} ({exc.strerror or type(exc).__name__})") from None
    if results_file(out) is not None:
        read_rows(out)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, and belongs to someone else
        pass
    return True


@contextlib.contextmanager
def locked(out: Path):
    """Hold `out`'s lock for the block: a second run into `out` meanwhile is a user error. A lock
    left by a process that no longer exists (killed) is taken over. On the way out, by any exit
    (an error, Ctrl-C), the lock goes, and so does `out` if this run made it and left it empty."""
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    lock = out / LOCK
    # The lock appears with its pid already in it (written beside it, then hard-linked into place,
    # which fails if a lock exists): no other run ever reads an empty lock and takes it for stale.
    mine = out / f"{LOCK}.{os.getpid()}"
    mine.write_text(f"{os.getpid()}\n")
    try:
        for _ in range(2):
            try:
                os.link(mine, lock)
                break
            except FileExistsError:
                try:
                    holder = int(lock.read_text().strip() or 0)
                except (OSError, ValueError):
                    holder = 0
                if holder and _alive(holder):
                    raise UserError(f"--out {out} is in use by another run (pid {holder}); wait for it or use "
                                    f"another --out (if no run is using it, delete {lock})") from None
                lock.unlink(missing_ok=True)  # stale: its process is gone
        else:
            raise UserError(f"--out {out}: cannot take its lock {lock}")
    finally:
        mine.unlink()
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)
        if made and not any(out.iterdir()):
            out.rmdir()
