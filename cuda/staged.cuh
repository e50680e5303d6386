// The staged block's columns (swiftspec_core/staged.py: one int64 row a token): its position, the
// cache row it writes, the prefix length it sees, then its visible cache rows. The kernels that
// read the block (attention.cu through attention_append.cuh, persistent.cu) take them from here;
// tests/test_cuda_compile.py checks them against staged.py.
#pragma once
#define COL_POSITION 1
#define COL_ROW 2
#define COL_PREFIX 3
#define COL_VISIBLE 4
