# Sourced by the scripts that run on the lent GPU machines (paper_figures/*.sh and the calls in
# results/): NVLink multicast off in every library that would use it (the lent machines keep it off;
# comm/nccl.py's SAFE_ENV holds the same variables, tests/test_prepared_scripts.py checks they agree),
# and Python unbuffered, so a call cut by its time limit keeps its last lines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
