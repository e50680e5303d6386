"""The SASS instructions with the most warp stall samples in an `ncu --page source --csv
--print-source sass` export (one kernel): python3 paper_figures/top_stalls.py FILE.csv [N]. Prints
the header's columns once, then the top N instructions by the all-samples column, with their
share. (Sessions 9 and 11 ran it from copies in their results folders; one copy now.)"""
import csv
import sys

rows = list(csv.reader(open(sys.argv[1], newline="")))
top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
start = next((i for i, r in enumerate(rows) if any("Source" == c.strip() for c in r)), None)
if start is None:
    print("no header with a Source column; first lines:", rows[:3])
    sys.exit(0)
header, body = rows[start], [r for r in rows[start + 1:] if len(r) == len(rows[start])]
print("columns:", " | ".join(header))
samples = next((i for i, c in enumerate(header) if "Stall Sampling (All" in c), None)
if samples is None:
    print("no stall-sampling column")
    sys.exit(0)


def number(v: str) -> float:
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return 0.0


total = sum(number(r[samples]) for r in body) or 1.0
source = header.index(next(c for c in header if c.strip() == "Source"))
address = next((i for i, c in enumerate(header) if "Address" in c), 0)
print(f"{len(body)} instructions, {total:.0f} samples")
for r in sorted(body, key=lambda r: -number(r[samples]))[:top]:
    reasons = {c: number(r[i]) for i, c in enumerate(header) if "stall" in c.lower() and i != samples}
    biggest = sorted(((v, c) for c, v in reasons.items() if v > 0), reverse=True)[:3]
    print(f"{100 * number(r[samples]) / total:5.1f}%  {r[address]:>8}  {r[source].strip()[:70]:70}  "
          + ", ".join(f"{c}={v:g}" for v, c in biggest))
