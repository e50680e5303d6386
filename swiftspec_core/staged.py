"""The block every fixed-width forward is staged as (graphs.PaddedForward), read by the kernels too.

One int64 row per token: [TOKEN, POSITION, ROW, PREFIX, VISIBLE...]: the token id, its position,
the cache row it writes, the prefix length it sees (cache rows [0, PREFIX)), then the cache rows of
its ancestors and itself in position order (unused slots repeat its own row).
"""
TOKEN, POSITION, ROW, PREFIX, VISIBLE = range(5)


def write(block, tokens: list[int], positions: list[int], rows: list[int], prefix_len: int,
          visible: list[list[int]], scratch_row: int) -> None:
    """Stage T = len(tokens) tokens into block ([width, VISIBLE + V] int64 numpy, e.g. a CPU
    tensor's .numpy()); rows past T become padding tokens: they write `scratch_row`, see row 0."""
    block[:] = 0
    block[:, ROW] = scratch_row
    block[:, PREFIX] = 1
    T = len(tokens)
    block[:T, TOKEN], block[:T, POSITION], block[:T, ROW], block[:T, PREFIX] = tokens, positions, rows, prefix_len
    for i, cols in enumerate(visible):
        block[i, VISIBLE:] = rows[i]  # its own row, seen anyway, fills the unused slots
        block[i, VISIBLE:VISIBLE + len(cols)] = cols
