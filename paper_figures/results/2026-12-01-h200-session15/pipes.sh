# pipes DIR KIND: the nibble shifts on other pipes (awq_common.cuh's nibbles_plus_128): prmt2 (j = 2
# by a byte permute, ALU pipe), prmt2shf1 (and j = 1 by a funnel shift, ALU pipe); shf3 (on the
# landed split, which is prmt2shf1: j = 3 by a shift too)
pipes() {
  rm -rf $1; mkdir -p $1; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests $1/
  local h=$1/cuda/awq_common.cuh
  local old='  if (j > 0) asm("mul.hi.u32 %0, %1, %2;\\n" : "=r"(shifted) : "r"(pair), "r"(1u << (32 - 4 * j)));'
  case $2 in
    prmt2) python3 - "$h" <<'PY'
import sys; p=sys.argv[1]; s=open(p).read()
old='  if (j > 0) asm("mul.hi.u32 %0, %1, %2;\\n" : "=r"(shifted) : "r"(pair), "r"(1u << (32 - 4 * j)));'
new='''  if (j == 2) asm("prmt.b32 %0, %1, 0, 0x4321;\\n" : "=r"(shifted) : "r"(pair));  // pair >> 8
  else if (j > 0) asm("mul.hi.u32 %0, %1, %2;\\n" : "=r"(shifted) : "r"(pair), "r"(1u << (32 - 4 * j)));'''
assert s.count(old)==1; open(p,'w').write(s.replace(old,new))
PY
    ;;
    prmt2shf1) python3 - "$h" <<'PY'
import sys; p=sys.argv[1]; s=open(p).read()
old='  if (j > 0) asm("mul.hi.u32 %0, %1, %2;\\n" : "=r"(shifted) : "r"(pair), "r"(1u << (32 - 4 * j)));'
new='''  if (j == 2) asm("prmt.b32 %0, %1, 0, 0x4321;\\n" : "=r"(shifted) : "r"(pair));  // pair >> 8
  else if (j == 1) asm("shr.b32 %0, %1, 4;\\n" : "=r"(shifted) : "r"(pair));
  else if (j > 0) asm("mul.hi.u32 %0, %1, %2;\\n" : "=r"(shifted) : "r"(pair), "r"(1u << (32 - 4 * j)));'''
assert s.count(old)==1; open(p,'w').write(s.replace(old,new))
PY
    ;;
    shf3) python3 - "$h" <<'PY'
import sys; p=sys.argv[1]; s=open(p).read()
old='  if (j == 3) asm("mul.hi.u32 %0, %1, %2;\\n" : "=r"(shifted) : "r"(pair), "r"(1u << 20));'
new='  if (j == 3) asm("shr.b32 %0, %1, 12;\\n" : "=r"(shifted) : "r"(pair));'
assert s.count(old)==1; open(p,'w').write(s.replace(old,new))
PY
    ;;
  esac
  grep -n "prmt.b32 %0, %1, 0\|shr.b32" $h
}
