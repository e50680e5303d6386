"""The block every fixed-width forward is staged as (graphs.PaddedForward), read by the kernels too.

One int64 row per token: [TOKEN, POSITION, ROW, PREFIX, VISIBLE...]: the token id, its position,
the cache row it writes, the prefix length it sees (cache rows [0, PREFIX)), then the cache rows of
its ancestors and itself in position order (unused slots repeat its own row).
"""
TOKEN, POSITION, ROW, PREFIX, VISIBLE = range(5)
