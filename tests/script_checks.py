"""Checks shared by the tests of paper_figures' scripts."""
from __future__ import annotations

import sys

import pytest


def assert_main_fails(main, argv: list[str], monkeypatch, capsys) -> str:
    """main() with sys.argv = argv ends as the project's scripts end on bad input: one `error:` line
    on stderr, exit status 2. -> that line."""
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    return err[0]
