#!/usr/bin/env bash
# Part 1 of next-h200.sh (written in the twenty-first; not run: the device was withdrawn;
# NOTES v131): the norm GEMMs' weights through a shared-memory ring (ring.patch = branch ring; the
# switch SWIFTSPEC_GEMM_RING=1 picks gemm_norm_ring_nt*), in a patched copy: ring against plain
# bitwise, the GPU tests with the ring on, forward rows ring off / on / on / off, the 1B timeline
# with the ring (and its blocks); then attention_trace.py (fixed for two mergers) at M = 9. ~5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session21
O=$OUT/ring; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + ring.patch, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
rm -rf /tmp/ring; mkdir -p /tmp/ring; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml /tmp/ring/
(cd /tmp/ring && patch -s -p1 < $HERE/ring.patch) && echo "ring: $(grep -c GEMM_RING_KERNEL /tmp/ring/cuda/gemm.cu) lines"
cd /tmp/ring
timeout -k 5 60 python3 - > $O/bitwise.log 2>&1 <<'PY'
import torch
from swiftspec_core.kernels import gemm as G
torch.manual_seed(0)
sms, bad = torch.cuda.get_device_properties(0).multi_processor_count, 0
for n, k in [(3072, 2048), (16384, 2048), (5120, 3072), (2048, 8192), (1000, 1000), (96, 3072)]:
    for m in (1, 8, 9, 16):
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(n, k, device="cuda") / k ** 0.5).to(torch.bfloat16)
        g = (1 + 0.1 * torch.randn(k, device="cuda")).to(torch.bfloat16)
        G.RING = False
        plain = G.gemm(x, w, norm=(g, 1e-5))
        G.RING = True
        ring = torch.full_like(plain, float("nan"))
        G.gemm(x, w, norm=(g, 1e-5), out=ring)
        same = torch.equal(plain.view(torch.int16), ring.view(torch.int16))
        bad += not same
        print(n, k, m, "plan", G.plan(n, k, sms), "bitwise" if same else "DIFFERENT")
print("ring vs plain:", "all bitwise" if bad == 0 else f"{bad} differ")
PY
echo "bitwise: $(tail -1 $O/bitwise.log) ($(( $(date +%s) - START )) s)"
SWIFTSPEC_GEMM_RING=1 timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm_norm.py \
    tests/test_gpu_fused.py > $O/gpu-tests-ring.log 2>&1
echo "ring tests: exit $? $(tail -1 $O/gpu-tests-ring.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-ring.log | head -5
run() {  # run RING RUN
  SWIFTSPEC_GEMM_RING=$1 PYTHONPATH=. timeout -k 5 75 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours --out $O/kernels-ring$1-$2 > $O/kernels-ring$1-$2.log 2>&1
  echo "ring=$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-ring$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run 0 a; run 1 a; run 1 b; run 0 b
SWIFTSPEC_GEMM_RING=1 PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models llama-3.2-1b --width 9 \
    --csv $O/timeline-ring.csv --blocks $O/blocks-ring.csv > $O/timeline-ring.md 2> $O/timeline-ring.log
echo "timeline ring exit $? ($(( $(date +%s) - START )) s)"
grep -E "^\| (qkv|attention|o|gate_up|down) \|" $O/timeline-ring.md | cut -d'|' -f2-8 | head -5
grep -E "^\| (qkv|o|gate_up|down) \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \|$" $O/timeline-ring.md
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/attention_trace.py --models llama-3-8b,llama-3.2-1b --m 9 > $O/trace-m9.md 2> $O/trace-m9.log
echo "attention trace M = 9: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^(first start|\| merge)" $O/trace-m9.md
cd $OUT && tar czf ring.tgz ring
