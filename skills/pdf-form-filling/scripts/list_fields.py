"""List the fillable (AcroForm) fields of a PDF.

Usage: python list_fields.py FORM.pdf [--json]

For each field prints the fully qualified name, the type (text, checkbox, radio, choice, signature), the
current value, the tooltip and, for buttons and choices, the allowed values. Requires pypdf.
"""
from __future__ import annotations

import json
import sys

FIELD_TYPES = {"/Tx": "text", "/Btn": "button", "/Ch": "choice", "/Sig": "signature"}


def button_states(field: dict) -> list[str]:
    """Collect the appearance state names of a checkbox or radio group, without /Off."""
    states: set[str] = set()
    widgets = [field]
    for kid in field.get("/Kids", []) or []:
        widgets.append(kid.get_object())
    for widget in widgets:
        appearance = widget.get("/AP")
        if appearance and "/N" in appearance:
            states.update(str(name) for name in appearance["/N"].keys())
    states.discard("/Off")
    return sorted(states)


def describe(name: str, field: dict) -> dict:
    kind = FIELD_TYPES.get(str(field.get("/FT")), "unknown")
    flags = int(field.get("/Ff", 0) or 0)
    if kind == "button":
        kind = "radio" if flags & (1 << 15) else "pushbutton" if flags & (1 << 16) else "checkbox"
    info = {"name": name, "type": kind, "value": str(field.get("/V", "")), "tooltip": str(field.get("/TU", ""))}
    if kind in ("checkbox", "radio"):
        info["options"] = button_states(field)
    if kind == "choice":
        info["options"] = [str(o[1] if isinstance(o, list) else o) for o in field.get("/Opt", []) or []]
    if "/MaxLen" in field:
        info["max_length"] = int(field["/MaxLen"])
    return info


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        from pypdf import PdfReader
    except ImportError:
        print("pypdf is not installed: pip install pypdf", file=sys.stderr)
        return 2
    reader = PdfReader(argv[0])
    if reader.is_encrypted:
        reader.decrypt("")
    root = reader.trailer["/Root"]
    if "/AcroForm" in root and "/XFA" in root["/AcroForm"]:
        print("note: this PDF contains an XFA form; values may only show in Adobe Acrobat", file=sys.stderr)
    fields = reader.get_fields() or {}
    if not fields:
        print("no fillable fields: the PDF is flat or scanned; overlay text instead", file=sys.stderr)
        return 1
    rows = [describe(name, field) for name, field in fields.items()]
    if "--json" in argv[1:]:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        extra = f" options={row['options']}" if row.get("options") else ""
        tip = f"  ({row['tooltip']})" if row["tooltip"] else ""
        print(f"{row['type']:<10} {row['name']!r} = {row['value']!r}{extra}{tip}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
