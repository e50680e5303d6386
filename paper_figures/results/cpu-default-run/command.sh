#!/usr/bin/env bash
# `swiftspec-bench run` with no arguments, timed, on the 2-core CPU machine (commit in the rows).
rm -rf runs/latest && /usr/bin/time -v swiftspec-bench run && swiftspec-bench compare runs/latest --format markdown
