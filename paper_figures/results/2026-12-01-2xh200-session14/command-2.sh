#!/usr/bin/env bash
# Fourteenth session, call 2 (nvidia-h200-x2; NOTES v74): the AWQ gate_up with SwiGLU in its epilogue.
# 1) GPU 1: the AWQ GEMM's GPU tests (awq_swiglu bitwise swiglu(awq_gemm) on every target's
#    gate_up, every launch shape, the fused AWQ engine) and the gemm_swiglu / fused-forward tests.
#    GPU 0 meanwhile: the 70B AWQ forward profiled (M = 8, context 1000) with the fused epilogue
#    (new), with the two kernels (base: a copy of the tree with forward._awq_swiglu as before),
#    new again; PDL on, then new with PDL off.
# 2) Both GPUs: issue 11's pair (70B AWQ target / 3B bf16 draft, fused, bs 8, grafting, replayed
#    from the grafted Qwen recordings, 256 tokens): swiftspec@1+1 and tree@tp2 on 6 x 10 prompts,
#    ar on 6 x 2; from the base copy if the tests failed.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
BASE=/tmp/base; rm -rf $BASE; mkdir -p $BASE; cp -r swiftspec_core swiftspec_bench paper_figures cuda $BASE/
sed -i 's/^    return awq_swiglu(x, weight_of(p))$/    return swiglu(awq_gemm(x, weight_of(p)))/; s/^from .norm import add_rmsnorm, rmsnorm$/from .norm import add_rmsnorm, rmsnorm, swiglu/' \
    $BASE/swiftspec_core/kernels/forward.py
grep -n "swiglu" $BASE/swiftspec_core/kernels/forward.py > $O/base-forward.log
( export CUDA_VISIBLE_DEVICES=1
  timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_kernel_gemm_swiglu.py \
      tests/test_gpu_fused.py > $O/gpu-tests.log 2>&1
  echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
  grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5 ) > $O/gpu1.log 2>&1 &
profile() {  # profile DIR NAME PDL
  (cd $1 && CUDA_VISIBLE_DEVICES=0 SWIFTSPEC_PDL=$3 PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2-pdl$3.csv > $O/profile-$2-pdl$3.md 2> $O/profile-$2-pdl$3.log)
  echo "profile $2 PDL $3 exit $? ($(( $(date +%s) - START )) s)"; grep -E "replay|^\| (gate_up|down) " $O/profile-$2-pdl$3.md
}
profile $ROOT new 1; profile $BASE base 1; profile $ROOT new 1; profile $ROOT new 0
wait; cat $O/gpu1.log
RUNFROM=$ROOT; grep -qE "^FAILED|^ERROR|[0-9]+ failed" $O/gpu-tests.log && RUNFROM=$BASE && echo "tests failed: the pair runs from base"
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay $G paper_figures/results/cpu-qwen-pair > $O/replay.log
(cd $RUNFROM && PYTHONPATH=. TARGET=llama-3-70b DRAFT=llama-3.2-3b EXTRA="--quant awq --kernels fused" REPLAY=$O/replay TREE_BS=8 \
    DATA_DIR=$ROOT/.data/eagle bash $ROOT/paper_figures/run_2xh200.sh $O/pair $(( 575 - ($(date +%s) - START) )) \
    "10 --systems swiftspec --split 1+1" "10 --systems tree --tp 2" "2 --systems ar") > $O/pair.log 2>&1
grep -hE "^==|skipped|tok/s" $O/pair.log | tail -9
python3 -m swiftspec_bench.cli compare $O/pair --format markdown > $O/pair/compare.md 2>&1
grep -E "overall" $O/pair/compare.md | cut -d'|' -f5-17
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/pair > $O/pair-checks.md 2>&1; tail -4 $O/pair-checks.md
rm -rf $O/replay
cd $OUT && tar czf all.tgz c2
