"""paper_figures/attention_trace.py (CPU): every phase it reports is stamped exactly once in its
instrumented copy of cuda/attention.cu (an anchor line that changed fails here, not on the device),
and that copy compiles."""
import shutil

import pytest

import attention_trace
from nvcc_compile import compile_text
from script_checks import assert_main_fails


def test_every_phase_is_stamped_once():
    text = attention_trace.instrumented_source()
    for p, name in enumerate(attention_trace.PHASES):
        assert text.count(f"attn_trace[b_ * {attention_trace.SLOTS} + {2 * p}] = g_;") == 1, name
    assert text.count('"=l"(g_) : : "memory")') == 1  # the one fenced timer read: the merge's max


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_instrumented_copy_compiles(tmp_path):
    compile_text(attention_trace.instrumented_source(), tmp_path, "attention")


def test_code_warm_without_cold_is_refused_before_any_device_work(monkeypatch, capsys):
    line = assert_main_fails(attention_trace.main, ["attention_trace.py", "--code-warm"], monkeypatch, capsys)
    assert line == "error: --code-warm goes with --cold (the L2 is warm without it)"
