"""swiftspec-bench: run single-request decoders on the paper's datasets, record one row per query,
and redraw the paper's tables and figures (`swiftspec-bench run | compare | plot`)."""
