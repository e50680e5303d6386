"""paper_figures/profile_decode.py's tables of a profiled decode (fake profiler events, no GPU)."""
from types import SimpleNamespace

from torch.autograd import DeviceType

from paper_figures.profile_decode import idle_tables, kernel_table


def event(name, start, end, device=DeviceType.CUDA, parent=None):
    span = SimpleNamespace(start=start, end=end, elapsed_us=lambda: end - start)
    return SimpleNamespace(name=name, time_range=span, device_type=device, cpu_parent=parent)


# GPU: a 0-100, b 100-150 (no gap), a 180-200 (30 after b), b 260-300 (60 after a), c 290-295
# (inside b: no gap), a 302-310 (2 after b: under 5 us, not counted)
EVENTS = [event("a", 0, 100), event("b", 100, 150), event("a", 180, 200), event("b", 260, 300),
          event("c", 290, 295), event("a", 302, 310),
          # the host: a sync over the first gap's first 20 us, a launch across the second's end,
          # and a child event (not top-level) that must not count
          event("cudaStreamSynchronize", 140, 170, DeviceType.CPU),
          event("cudaGraphLaunch", 250, 270, DeviceType.CPU),
          event("inner", 150, 180, DeviceType.CPU, parent="x")]


def test_idle_tables_sum_gaps_by_neighbours_and_the_host_calls_in_them():
    lines = idle_tables(EVENTS)
    assert "| b | a | 1 | 30.0 | 30 |" in lines and "| a | b | 1 | 60.0 | 60 |" in lines
    assert lines.index("| a | b | 1 | 60.0 | 60 |") < lines.index("| b | a | 1 | 30.0 | 30 |")  # the most first
    assert any(line.startswith("gaps of 5 us or more: 2, 0.1 ms") for line in lines)
    assert "| cudaStreamSynchronize | 20 | 22.2% |" in lines  # 150-170 of the 90 us of gaps
    assert "| cudaGraphLaunch | 10 | 11.1% |" in lines  # 250-260
    assert not any(line.startswith("| inner") for line in lines)


def test_a_decodes_kernels_are_tabled_by_name_the_most_time_first():
    events = [event("persistent_layers", 0, 900), event("gemm_nt4", 0, 100), event("gemm_nt4", 0, 140),
              event("persistent_layers", 0, 1000), event("aten::mm", 0, 50, DeviceType.CPU)]
    lines = kernel_table(events, wall_us=4000)
    assert lines[2] == "| persistent_layers | 2 | 950.00 | 1900 | 47.5% |"
    assert lines[3] == "| gemm_nt4 | 2 | 120.00 | 240 | 6.0% |" and len(lines) == 6  # no CPU event
    assert lines[-1] == "decode wall 4.0 ms; kernels' sum 2.1 ms; the rest 1.9 ms (PDL's overlaps count twice in the sum: idle below)"
