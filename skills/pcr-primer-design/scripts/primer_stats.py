"""Quick screening statistics for PCR primers (standard library only).

Usage: python primer_stats.py PRIMER [PRIMER2]

For each primer: length, GC content, Tm estimate, GC clamp, longest single-base run and longest
self-complementary stretch. With two primers, also the longest cross-complementary stretch and Tm difference.

Tm formulas (basic, for screening only):
  below 14 nt: Wallace rule, Tm = 2(A+T) + 4(G+C)
  otherwise:   Tm = 64.9 + 41 (G+C - 16.4) / N
"""
from __future__ import annotations

import re
import sys

COMPLEMENT = str.maketrans("ACGT", "TGCA")


def clean(seq: str) -> str:
    seq = seq.strip().upper().replace(" ", "")
    if not seq or re.search(r"[^ACGT]", seq):
        raise SystemExit(f"primer {seq!r} must contain only A, C, G and T")
    return seq


def reverse_complement(seq: str) -> str:
    return seq.translate(COMPLEMENT)[::-1]


def gc_content(seq: str) -> float:
    return 100 * sum(seq.count(b) for b in "GC") / len(seq)


def tm_basic(seq: str) -> float:
    gc = sum(seq.count(b) for b in "GC")
    at = len(seq) - gc
    if len(seq) < 14:
        return float(2 * at + 4 * gc)
    return 64.9 + 41 * (gc - 16.4) / len(seq)


def longest_run(seq: str) -> int:
    return max(len(m.group(0)) for m in re.finditer(r"(.)\1*", seq))


def longest_complement(a: str, b: str) -> tuple[int, bool]:
    """Longest stretch of a that can pair with b antiparallel, and whether it includes a's 3' end."""
    target = reverse_complement(b)
    best, at_3prime = 0, False
    for i in range(len(a)):
        for j in range(i + 1, len(a) + 1):
            if j - i <= best:
                continue
            if a[i:j] in target:
                best, at_3prime = j - i, j == len(a)
    return best, at_3prime


def report(seq: str) -> float:
    tm = tm_basic(seq)
    clamp = sum(seq[-5:].count(b) for b in "GC")
    self_len, self_3 = longest_complement(seq, seq)
    print(f"primer:   5'-{seq}-3'")
    print(f"length:   {len(seq)} nt" + ("   (outside 18-25)" if not 18 <= len(seq) <= 25 else ""))
    gc = gc_content(seq)
    print(f"GC:       {gc:.1f}%" + ("   (outside 40-60%)" if not 40 <= gc <= 60 else ""))
    print(f"Tm:       {tm:.1f} °C (basic formula)")
    print(f"GC clamp: {clamp} G/C in last 5 bases" + ("   (aim for 1-3)" if not 1 <= clamp <= 3 else ""))
    run = longest_run(seq)
    print(f"max run:  {run}" + ("   (more than 4 identical bases)" if run > 4 else ""))
    print(f"self-complementary stretch: {self_len} bp" + (" at the 3' end" if self_3 else ""))
    print()
    return tm


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    primers = [clean(p) for p in argv]
    tms = [report(p) for p in primers]
    if len(primers) == 2:
        cross, cross_3 = longest_complement(primers[0], primers[1])
        print(f"pair Tm difference: {abs(tms[0] - tms[1]):.1f} °C"
              + ("   (aim for 2 °C or less)" if abs(tms[0] - tms[1]) > 2 else ""))
        print(f"cross-complementary stretch: {cross} bp" + (" at the 3' end of primer 1" if cross_3 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
