#!/usr/bin/env bash
# Session 50, call 2 (NOTES v277), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# Three sides: base, new = epilogue-late.patch, new2 = epilogue-elements.patch (paper_figures/awq_ab.sh).
set -u
HERE=paper_figures/results/2026-12-04-h200-session50
bash paper_figures/awq_ab.sh $OUT/c2 $HERE/epilogue-late.patch $HERE/epilogue-elements.patch
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
