"""A one-off check of persistent_attention.cuh's attention_item before any GPU ran it (twenty-fifth session,
on the CPU; NOTES v161): its address formulas, transcribed, run through numpy models of ldmatrix
(.trans too) and mma.m16n8k16 lane semantics (as cuda/mma.cuh documents them), against a direct
computation of one chunk's partials. Output at commit time: m err 0.0, l err 1.3e-16, o err 0.0.
A record, not a test: it does not read the .cuh, so it says nothing about later edits."""
import numpy as np
rng = np.random.default_rng(0)
HD, QROWS, CHUNK, GQ = 64, 32, 64, 4
ROW = HD + 8  # elements a row (144 bytes)

def bf16(x):  # round to bf16 (nearest even) via float32 bits
    x = np.asarray(x, np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32)

def ldmatrix(mem, addrs, trans=False):
    """mem: flat element array; addrs[lane] = element index of a row start (lanes 8i.. give matrix i).
    -> regs[lane][i] = (lo, hi) pair of elements."""
    regs = [[None] * 4 for _ in range(32)]
    for i in range(4):
        rows = [mem[addrs[8 * i + r]: addrs[8 * i + r] + 8] for r in range(8)]
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            if trans:
                regs[lane][i] = (rows[2 * t][g], rows[2 * t + 1][g])
            else:
                regs[lane][i] = (rows[g][2 * t], rows[g][2 * t + 1])
    return regs

def mma(d, a, b):  # per lane: a[4] pairs, b[2] pairs, d[4]: D(16x8) += A(16x16) B(16x8)
    A = np.zeros((16, 16)); B = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        A[g, 2*t:2*t+2] = a[lane][0]; A[g+8, 2*t:2*t+2] = a[lane][1]
        A[g, 2*t+8:2*t+10] = a[lane][2]; A[g+8, 2*t+8:2*t+10] = a[lane][3]
        B[2*t:2*t+2, g] = b[lane][0]; B[2*t+8:2*t+10, g] = b[lane][1]
    D = A @ B
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        d[lane][0] += D[g, 2*t]; d[lane][1] += D[g, 2*t+1]; d[lane][2] += D[g+8, 2*t]; d[lane][3] += D[g+8, 2*t+1]

P, c, M = 100, 1, 8   # chunk 1 covers positions 64..127; queries at 100..107
q = bf16(rng.standard_normal((QROWS, HD)))
k = bf16(rng.standard_normal((CHUNK, HD)))
v = bf16(rng.standard_normal((CHUNK, HD)))
qmem = np.zeros(QROWS * ROW, np.float32); kmem = np.zeros(2 * CHUNK * ROW, np.float32)
for r in range(QROWS): qmem[r*ROW:r*ROW+HD] = q[r]
for r in range(CHUNK): kmem[r*ROW:r*ROW+HD] = k[r]; kmem[(CHUNK + r)*ROW:(CHUNK + r)*ROW+HD] = v[r]
scale = HD ** -0.5 * np.log2(np.e)

mx_s = np.full((4, QROWS), -np.inf); sm_s = np.zeros((4, QROWS)); o_s = np.zeros((4, 2, 16, HD))
warp_state = {}
for warp in range(8):
    rt, pg = warp & 1, warp >> 1
    sc = [[[0.0] * 4 for _ in range(32)] for _ in range(2)]
    for ks in range(HD // 16):
        a = ldmatrix(qmem, [(16*rt + (l & 15)) * ROW + (16*ks + 8*(l >> 4)) for l in range(32)])
        b = ldmatrix(kmem, [(16*pg + 8*(l >> 4) + (l & 7)) * ROW + (16*ks + 8*((l >> 3) & 1)) for l in range(32)])
        mma(sc[0], a, [(b[l][0], b[l][1]) for l in range(32)])
        mma(sc[1], a, [(b[l][2], b[l][3]) for l in range(32)])
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for nt in range(2):
            for e in range(4):
                row = 16*rt + g + 8*(e >> 1); pos = CHUNK*c + 16*pg + 8*nt + 2*t + (e & 1)
                sc[nt][lane][e] = sc[nt][lane][e] * scale if pos <= P + row // GQ else -np.inf
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for h in range(2):
            vals = [sc[nt][l2][e] for l2 in range(32) if l2 >> 2 == g for nt in range(2) for e in (2*h, 2*h+1)]
            mx_s[pg][16*rt + g + 8*h] = max(vals)
    warp_state[warp] = sc
for warp in range(8):
    rt, pg = warp & 1, warp >> 1
    sc = warp_state[warp]
    pfrag = []
    lsum = np.zeros(QROWS)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        m = [mx_s[:, 16*rt + g + 8*h].max() for h in range(2)]
        w = [[0.0 if m[e >> 1] == -np.inf else float(np.exp2(sc[nt][lane][e] - m[e >> 1])) for e in range(4)] for nt in range(2)]
        for nt in range(2):
            for e in range(4):
                lsum[16*rt + g + 8*(e >> 1)] += w[nt][e]
        wb = [[float(bf16(x)) for x in w[nt]] for nt in range(2)]
        pfrag.append([(wb[0][0], wb[0][1]), (wb[0][2], wb[0][3]), (wb[1][0], wb[1][1]), (wb[1][2], wb[1][3])])
    for r in range(QROWS):
        if r // 16 == rt: sm_s[pg][r] = lsum[r]
    o = [[[0.0] * 4 for _ in range(32)] for _ in range(HD // 8)]
    for dp in range(HD // 16):
        b = ldmatrix(kmem, [(CHUNK + 16*pg + (l & 7) + 8*((l >> 3) & 1)) * ROW + 8*(2*dp + (l >> 4)) for l in range(32)], trans=True)
        mma(o[2*dp], pfrag, [(b[l][0], b[l][1]) for l in range(32)])
        mma(o[2*dp+1], pfrag, [(b[l][2], b[l][3]) for l in range(32)])
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for dt in range(HD // 8):
            o_s[pg, rt, g, 8*dt + 2*t] = o[dt][lane][0]; o_s[pg, rt, g, 8*dt + 2*t + 1] = o[dt][lane][1]
            o_s[pg, rt, g + 8, 8*dt + 2*t] = o[dt][lane][2]; o_s[pg, rt, g + 8, 8*dt + 2*t + 1] = o[dt][lane][3]
part_o = np.zeros((QROWS, HD)); part_m = np.zeros(QROWS); part_l = np.zeros(QROWS)
for row in range(QROWS):
    part_o[row] = o_s[:, row >> 4, row & 15].sum(0)
    part_m[row] = mx_s[:, row].max(); part_l[row] = sm_s[:, row].sum()
# direct
pos = CHUNK * c + np.arange(CHUNK)
s = (q.astype(np.float64) @ k.T.astype(np.float64)) * scale
mask = pos[None, :] <= P + np.arange(QROWS)[:, None] // GQ
s = np.where(mask, s, -np.inf)
m = s.max(1)
w = np.exp2(s - m[:, None])
want_o = bf16(w) @ v.astype(np.float64)
print("m err", np.abs(part_m - m).max(), "l err", np.abs(part_l - w.sum(1)).max() / w.sum(1).max(),
      "o err", np.abs(part_o - want_o).max() / np.abs(want_o).max())
