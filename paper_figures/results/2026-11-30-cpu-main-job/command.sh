#!/usr/bin/env bash
# Issue 8 item 8: the main job on this project's CPU machine (2 cores, 24 GiB), commit ac92386
# (the memory change merged), from a fresh cache (~/.cache/swiftspec-bench removed first, so the
# one-time GGUF conversion ran too), with the README's defaults: the real Qwen2.5-Coder 1.5B / 0.5B
# pair in fp32, one prompt of each dataset, 16 new tokens, all six systems.
# Maximum resident set size: 9,746,044 kB (time.log). The wall time (10:00) is not a speed result:
# other test runs shared the two cores during it.
rm -rf ~/.cache/swiftspec-bench
/usr/bin/time -v swiftspec-bench run --out "$OUT" 2> time.log
swiftspec-bench compare "$OUT" --format markdown > compare.md
