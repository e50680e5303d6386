#!/usr/bin/env bash
# Thirteenth session, call 2 (nvidia-h200): the ring GEMM against the register GEMM in the forward
# (NOTES v67). Each variant in its own processes: the forward / draft_step rows (8B, 1B, M = 8) and
# profile_forward.py with PDL off (each kernel's own time in the forward). Variants: old = the
# register GEMM (ab_old_cuda/ and ab_old_py/: cuda/ and the two launch modules at 7c3d892, untracked
# copies swapped in), s3 = the ring of 3 (this commit), s2 = a ring of 2, s3w8 = a ring of 3 with
# plan() aiming at 8 warps an SM (WARPS_PER_SM), s4w8 = a ring of 4 at 8 warps an SM.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
cp -r cuda /tmp/c2.cuda && cp swiftspec_core/kernels/gemm.py swiftspec_core/kernels/gemm_epilogue.py /tmp/c2.cuda/
variant() {  # $1: label; the tree is set up for it
  timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 \
      --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1 > $O/kernels-$1.log 2>&1
  echo "$1 kernels exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (forward|draft_step)" $O/kernels-$1/kernels.md | cut -c1-90
  SWIFTSPEC_PDL=0 PYTHONPATH=. timeout -k 5 100 python3 paper_figures/profile_forward.py \
      --models llama-3.2-1b,llama-3-8b > $O/profile-$1-pdl0.md 2> $O/profile-$1-pdl0.log
  echo "$1 profile pdl 0 exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^(llama|\| (qkv|o|gate_up|down|lm_head) )" $O/profile-$1-pdl0.md | cut -c1-100
}
restore() { rm -rf cuda && cp -r /tmp/c2.cuda cuda && rm cuda/gemm.py cuda/gemm_epilogue.py \
            && cp /tmp/c2.cuda/gemm.py /tmp/c2.cuda/gemm_epilogue.py swiftspec_core/kernels/; }
variant s3
rm -rf cuda && cp -r ab_old_cuda cuda && cp ab_old_py/gemm.py ab_old_py/gemm_epilogue.py swiftspec_core/kernels/
variant old
restore && sed -i 's/^#define GEMM_STAGES 3 /#define GEMM_STAGES 2 /' cuda/gemm_tile.cuh \
  && sed -i 's/^STAGES = 3 /STAGES = 2 /' swiftspec_core/kernels/gemm.py
variant s2
restore && sed -i 's/^WARPS_PER_SM = 16 /WARPS_PER_SM = 8 /' swiftspec_core/kernels/gemm.py
variant s3w8
restore && sed -i 's/^#define GEMM_STAGES 3 /#define GEMM_STAGES 4 /' cuda/gemm_tile.cuh \
  && sed -i 's/^STAGES = 3 /STAGES = 4 /' swiftspec_core/kernels/gemm.py \
  && sed -i 's/^WARPS_PER_SM = 16 /WARPS_PER_SM = 8 /' swiftspec_core/kernels/gemm.py
variant s4w8
restore
cd $OUT && tar czf all.tgz c2
