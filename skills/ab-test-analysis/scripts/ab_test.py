"""A/B test arithmetic with the standard library only.

Usage:
    python ab_test.py analyse --control USERS CONVERSIONS --variant USERS CONVERSIONS [--expected-split 0.5]
    python ab_test.py sample-size --baseline RATE --mde RELATIVE_LIFT [--alpha 0.05] [--power 0.8]

analyse: sample ratio mismatch chi-square test, conversion rates, absolute and relative lift with a 95% Wald
confidence interval (unpooled standard error), and a two-sided pooled two-proportion z-test.
sample-size: users per arm for a two-sided two-proportion test (normal approximation).
"""
from __future__ import annotations

import argparse
import math
import sys
from statistics import NormalDist

Z = NormalDist()


def srm_p_value(n_control: int, n_variant: int, expected_split: float) -> float:
    """Chi-square goodness of fit with one degree of freedom for the assignment split."""
    total = n_control + n_variant
    expected = (total * expected_split, total * (1 - expected_split))
    chi2 = sum((obs - exp) ** 2 / exp for obs, exp in zip((n_control, n_variant), expected))
    # With one degree of freedom chi2 = z**2, so the tail probability is the two-sided normal tail.
    return 2 * (1 - Z.cdf(math.sqrt(chi2)))


def analyse(n_c: int, x_c: int, n_v: int, x_v: int, expected_split: float) -> None:
    if min(n_c, n_v) <= 0 or not (0 <= x_c <= n_c and 0 <= x_v <= n_v):
        raise SystemExit("users must be positive and conversions between 0 and users")
    p_c, p_v = x_c / n_c, x_v / n_v
    srm = srm_p_value(n_c, n_v, expected_split)
    pooled = (x_c + x_v) / (n_c + n_v)
    se_pooled = math.sqrt(pooled * (1 - pooled) * (1 / n_c + 1 / n_v))
    z = (p_v - p_c) / se_pooled if se_pooled else 0.0
    p_value = 2 * (1 - Z.cdf(abs(z)))
    se = math.sqrt(p_c * (1 - p_c) / n_c + p_v * (1 - p_v) / n_v)
    z95 = Z.inv_cdf(0.975)
    diff = p_v - p_c
    low, high = diff - z95 * se, diff + z95 * se

    print(f"sample ratio check:  control {n_c}, variant {n_v}, p = {srm:.4g}"
          + ("   WARNING sample ratio mismatch, do not trust the results" if srm < 0.001 else ""))
    print(f"control rate:        {p_c:.4%} ({x_c}/{n_c})")
    print(f"variant rate:        {p_v:.4%} ({x_v}/{n_v})")
    print(f"absolute lift:       {diff:+.4%}  (95% CI {low:+.4%} to {high:+.4%})")
    if p_c > 0:
        print(f"relative lift:       {diff / p_c:+.2%}  (95% CI {low / p_c:+.2%} to {high / p_c:+.2%})")
    print(f"z = {z:.3f}, two-sided p = {p_value:.4g}")


def sample_size(baseline: float, mde: float, alpha: float, power: float) -> int:
    p1 = baseline
    p2 = baseline * (1 + mde)
    if not (0 < p1 < 1 and 0 < p2 < 1):
        raise SystemExit(f"rates must lie in (0, 1): baseline {p1}, target {p2}")
    z_alpha = Z.inv_cdf(1 - alpha / 2)
    z_beta = Z.inv_cdf(power)
    p_bar = (p1 + p2) / 2
    numerator = (z_alpha * math.sqrt(2 * p_bar * (1 - p_bar))
                 + z_beta * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2
    return math.ceil(numerator / (p2 - p1) ** 2)


def main() -> int:
    parser = argparse.ArgumentParser(description="A/B test arithmetic")
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("analyse")
    a.add_argument("--control", nargs=2, type=int, required=True, metavar=("USERS", "CONVERSIONS"))
    a.add_argument("--variant", nargs=2, type=int, required=True, metavar=("USERS", "CONVERSIONS"))
    a.add_argument("--expected-split", type=float, default=0.5)
    s = sub.add_parser("sample-size")
    s.add_argument("--baseline", type=float, required=True)
    s.add_argument("--mde", type=float, required=True, help="relative lift, 0.10 for +10%%")
    s.add_argument("--alpha", type=float, default=0.05)
    s.add_argument("--power", type=float, default=0.8)
    args = parser.parse_args()
    if args.command == "analyse":
        analyse(*args.control, *args.variant, args.expected_split)
    else:
        n = sample_size(args.baseline, args.mde, args.alpha, args.power)
        print(f"users per arm: {n} (total {2 * n})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
