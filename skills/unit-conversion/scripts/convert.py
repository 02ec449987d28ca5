"""Convert a value between units with exact factors.

Usage:
    python convert.py VALUE FROM_UNIT TO_UNIT
    python convert.py --list

Each unit belongs to one dimension and is defined by its factor to the SI unit of that dimension.
Temperatures are converted through kelvin with their offsets, since they are affine scales.
"""
from __future__ import annotations

import sys
from fractions import Fraction as F

UNITS: dict[str, tuple[str, F]] = {
    # length, SI unit metre
    "m": ("length", F(1)), "km": ("length", F(1000)), "cm": ("length", F(1, 100)), "mm": ("length", F(1, 1000)),
    "in": ("length", F(254, 10000)), "ft": ("length", F(3048, 10000)), "yd": ("length", F(9144, 10000)),
    "mi": ("length", F(1609344, 1000)), "nmi": ("length", F(1852)),
    # mass, SI unit kilogram
    "kg": ("mass", F(1)), "g": ("mass", F(1, 1000)), "mg": ("mass", F(1, 10**6)), "t": ("mass", F(1000)),
    "lb": ("mass", F(45359237, 10**8)), "oz": ("mass", F(45359237, 16 * 10**8)),
    "st": ("mass", F(45359237 * 14, 10**8)),
    # volume, SI unit cubic metre
    "m3": ("volume", F(1)), "L": ("volume", F(1, 1000)), "mL": ("volume", F(1, 10**6)),
    "gal_us": ("volume", F(3785411784, 10**12)), "gal_imp": ("volume", F(454609, 10**8)),
    "floz_us": ("volume", F(3785411784, 128 * 10**12)), "cup_us": ("volume", F(3785411784, 16 * 10**12)),
    "tbsp_us": ("volume", F(3785411784, 256 * 10**12)), "tsp_us": ("volume", F(3785411784, 768 * 10**12)),
    "pint_imp": ("volume", F(454609, 8 * 10**8)), "cup_metric": ("volume", F(250, 10**6)),
    # speed, SI unit metre per second
    "m/s": ("speed", F(1)), "km/h": ("speed", F(1000, 3600)), "mph": ("speed", F(1609344, 3600 * 1000)),
    "kn": ("speed", F(1852, 3600)),
    # pressure, SI unit pascal
    "Pa": ("pressure", F(1)), "kPa": ("pressure", F(1000)), "bar": ("pressure", F(10**5)),
    "atm": ("pressure", F(101325)), "psi": ("pressure", F(45359237 * 980665, 10**8 * 10**5) / F(254, 10000) ** 2),
    "mmHg": ("pressure", F(101325, 760)),
    # energy, SI unit joule
    "J": ("energy", F(1)), "kJ": ("energy", F(1000)), "cal": ("energy", F(4184, 1000)), "kcal": ("energy", F(4184)),
    "Wh": ("energy", F(3600)), "kWh": ("energy", F(3_600_000)), "BTU": ("energy", F(105505585262, 10**8)),
    # data, SI unit byte
    "B": ("data", F(1)), "kB": ("data", F(10**3)), "MB": ("data", F(10**6)), "GB": ("data", F(10**9)),
    "TB": ("data", F(10**12)), "KiB": ("data", F(2**10)), "MiB": ("data", F(2**20)), "GiB": ("data", F(2**30)),
    "TiB": ("data", F(2**40)),
}
# Temperatures: kelvin = (value + offset) * factor
TEMPERATURES: dict[str, tuple[F, F]] = {
    "K": (F(0), F(1)),
    "degC": (F(27315, 100), F(1)),
    "degF": (F(45967, 100), F(5, 9)),
}


def convert(value: F, source: str, target: str) -> F:
    if source in TEMPERATURES and target in TEMPERATURES:
        offset, factor = TEMPERATURES[source]
        kelvin = (value + offset) * factor
        offset, factor = TEMPERATURES[target]
        return kelvin / factor - offset
    for unit in (source, target):
        if unit not in UNITS and unit not in TEMPERATURES:
            raise SystemExit(f"unknown unit {unit!r}; run with --list to see the supported units")
    if source in TEMPERATURES or target in TEMPERATURES:
        raise SystemExit(f"cannot convert between {source!r} and {target!r}: different dimensions")
    (dim_a, factor_a), (dim_b, factor_b) = UNITS[source], UNITS[target]
    if dim_a != dim_b:
        raise SystemExit(f"cannot convert {dim_a} ({source}) to {dim_b} ({target})")
    return value * factor_a / factor_b


def main(argv: list[str]) -> int:
    if argv == ["--list"]:
        dims: dict[str, list[str]] = {}
        for name, (dim, _) in UNITS.items():
            dims.setdefault(dim, []).append(name)
        dims["temperature"] = list(TEMPERATURES)
        for dim, names in dims.items():
            print(f"{dim:<12} {' '.join(names)}")
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        value = F(argv[0])
    except ValueError:
        raise SystemExit(f"value {argv[0]!r} is not a number") from None
    result = convert(value, argv[1], argv[2])
    print(f"{argv[0]} {argv[1]} = {float(result):.10g} {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
