#!/usr/bin/env bash
# Session 50, call 7 (NOTES v282), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# partials-sectors.patch (the attention's partials written over whole 32-byte sectors) against the
# commit: the cold attention trace on both, the attention GPU tests on new, the 70B AWQ forward in
# alternating pairs, the persistent target's tests and an 8B pair as time allows.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-04-h200-session50
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c7; mkdir -p $O; START=$(date +%s); O=$(realpath $O)
elapsed() { echo $(( $(date +%s) - START )); }
B=$(mktemp -d)/base; mkdir -p $B/paper_figures
cp -r cuda swiftspec_core swiftspec_bench pyproject.toml $B/ && cp paper_figures/*.py $B/paper_figures/
patch -p1 -s < $HERE/partials-sectors.patch || { echo "error: the patch does not apply"; exit 2; }
{ echo "commit $SWIFTSPEC_COMMIT + partials-sectors.patch (base: the commit as is), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
tree() { [ "$1" = base ] && echo $B || echo .; }
for t in new base; do
  (cd $(tree $t) && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/attention_trace.py --models llama-3-70b,llama-3-8b --cold \
      > $O/trace-cold-$t.md 2> $O/trace-cold-$t.log)
  echo "trace cold $t: exit $? ($(elapsed) s): $(grep -E "^first start" $O/trace-cold-$t.md | tr '\n' ' ')"
  grep -E "^\| merge start -> merge summed" $O/trace-cold-$t.md
done
timeout -k 5 100 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py > $O/attention-tests.log 2>&1
echo "attention tests: exit $? $(tail -1 $O/attention-tests.log) ($(elapsed) s)"
profile() {  # profile SIDE RUN MODEL [--quant awq]
  (cd $(tree $1) && PYTHONPATH=. timeout -k 5 45 python3 paper_figures/profile_forward.py --models $3 ${4:-} \
      > $O/profile-$3-$1-$2.md 2> $O/profile-$3-$1-$2.log)
  echo "profile $3 $1-$2 exit $? ($(elapsed) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$3-$1-$2.md)" \
      "$(grep -E "^\| attention " $O/profile-$3-$1-$2.md | cut -d'|' -f2,5 | tr -s ' ')"
}
profile new a llama-3-70b "--quant awq"; profile base a llama-3-70b "--quant awq"
if [ $(elapsed) -lt 200 ]; then
  timeout -k 5 110 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_persistent_target.py > $O/persistent-tests.log 2>&1
  echo "persistent target tests: exit $? $(tail -1 $O/persistent-tests.log) ($(elapsed) s)"
fi
[ $(elapsed) -lt 280 ] && { profile new b llama-3-70b "--quant awq"; profile base b llama-3-70b "--quant awq"; }
[ $(elapsed) -lt 300 ] && { profile new a llama-3-8b; profile base a llama-3-8b; }
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
