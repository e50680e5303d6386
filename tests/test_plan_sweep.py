"""paper_figures/plan_sweep.py (CPU): an op its kernel does not run is one `error:` line, exit 2,
before any device work."""
import plan_sweep
from script_checks import assert_main_fails


def test_an_unknown_op_is_one_error_line(monkeypatch, capsys):
    line = assert_main_fails(plan_sweep.main, ["plan_sweep.py", "--kernel", "awq", "--ops", "o,lm_head"], monkeypatch,
                             capsys)
    assert line.startswith("error: unknown ops ['lm_head'] for --kernel awq; known: ")
