"""Terminal tables that fit the width they are printed at, without ever cutting the column that names things.

``rich`` shrinks every column of a table too wide for the terminal and cuts cells with an ellipsis
(``weather-forec…``): the skill name, the one cell a reader needs whole, is the first to go. :func:`fitted_table`
instead leaves out optional columns (least useful first) until the table fits, keeps the name column at the width
of its longest name, and only when even the kept columns do not fit lets the name wrap (fold) onto a second line,
never cut. The caption says which columns were left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Sequence


@dataclass(frozen=True)
class Column:
    """One column: its header, how its cells are aligned, and how readily it is left out (0: never; higher values
    go first)."""

    header: str
    justify: Literal["left", "right"] = "right"
    drop: int = 0
    name: bool = False  # the column that names things: never cut, wrapped only as a last resort
    style: str | None = None


@dataclass(frozen=True)
class Fitted:
    table: Any
    left_out: tuple[str, ...] = field(default=())


def _cell_width(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.split("\n")), default=0)


def fitted_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, *, title: str | None = None,
                 caption: str | None = None, box: Any = None, left_out_note: str = "left out to fit: {}") -> Fitted:
    """A ``rich.table.Table`` of ``rows`` no wider than ``width`` columns of text (see the module docstring).

    ``rows`` hold rich markup already escaped. The width of a table is its cells' widths plus two spaces of
    padding each and one character per border (``rich``'s own layout).
    """
    from rich import box as boxes
    from rich.table import Table

    box = boxes.HEAVY_HEAD if box is None else box
    natural = [max([_cell_width(c.header)] + [_cell_width(_plain(r[i])) for r in rows]) for i, c in enumerate(columns)]
    kept = list(range(len(columns)))

    def total(indexes: Sequence[int]) -> int:
        edges = 2 if box is not None else 0
        return sum(natural[i] + 2 for i in indexes) + max(len(indexes) - 1, 0) + edges

    # Leave out the most droppable column (the rightmost among equals) until the table fits.
    while total(kept) > width:
        candidates = [i for i in kept if columns[i].drop > 0]
        if not candidates:
            break
        kept.remove(max(candidates, key=lambda i: (columns[i].drop, i)))
    left_out = tuple(columns[i].header for i in range(len(columns)) if i not in kept)
    notes = [caption] if caption else []
    if left_out:
        notes.append(left_out_note.format(", ".join(left_out)))
    table = Table(title=title, caption="; ".join(notes) or None, box=box)
    fits = total(kept) <= width
    for i in kept:
        column = columns[i]
        if column.name:
            # Whole when it fits; folded (wrapped, every character kept) when nothing else could give way.
            table.add_column(column.header, justify=column.justify, style=column.style, no_wrap=fits,
                             min_width=natural[i] if fits else None, overflow="fold")
        else:
            table.add_column(column.header, justify=column.justify, style=column.style, no_wrap=True,
                             overflow="fold")
    for row in rows:
        table.add_row(*[row[i] for i in kept])
    return Fitted(table, left_out)


def _plain(markup: str) -> str:
    from rich.text import Text

    return Text.from_markup(markup).plain
