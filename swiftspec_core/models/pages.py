"""Give back the resident pages of a tensor read from a memory-mapped weights file.

transformers loads a safetensors checkpoint by mapping the file: a tensor's pages join the
process's resident memory when first read and stay there until the whole mapping closes, which
is when the last tensor of that file is gone. So a tensor that was copied (the engine's fused
q/k/v and gate/up are new tensors) would keep its pages resident beside its copy for as long as
any other tensor of the file (the embedding, o_proj, down_proj) lives: the model twice over.
"""
from __future__ import annotations

import ctypes
import mmap
import sys

import torch

_MADV_DONTNEED = 4  # Linux: drop the range's pages; a later read maps them in again from the file


def release_file_pages(t: torch.Tensor) -> None:
    """Drop the resident pages that lie wholly inside `t` when `t` is mapped from a file that this
    process never wrote to (its contents then are the file's, so nothing is lost even if someone
    reads `t` again); anything else (heap or GPU memory, other systems) is left alone."""
    if sys.platform != "linux" or t.device.type != "cpu" or t.numel() == 0:
        return
    start = t.data_ptr()
    end = start + t.numel() * t.element_size()
    if not _in_unwritten_file_mapping(start, end):
        return
    lo = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
    hi = end // mmap.PAGESIZE * mmap.PAGESIZE
    if hi > lo:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise(ctypes.c_void_p(lo), ctypes.c_size_t(hi - lo), _MADV_DONTNEED)


def _in_unwritten_file_mapping(start: int, end: int) -> bool:
    """True when [start, end) lies in one mapping of a file (a path, not [heap] or anonymous memory)
    none of whose pages has been written (smaps: Anonymous 0 kB)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(maxsplit=5)
            if "-" in head[0] and not head[0].endswith(":"):  # a mapping's first line: range perms offset dev inode [path]
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                if inside:
                    return False  # the matching mapping ended without an Anonymous line
                inside = lo <= start and end <= hi and len(head) == 6 and head[5].startswith("/")
            elif inside and head[0] == "Anonymous:":
                return head[1] == "0"
    return False
