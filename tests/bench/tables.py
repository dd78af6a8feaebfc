"""The benches' printed tables: a title, a header row, a rule and the rows, each column as
wide as its widest cell."""


def print_table(title: str, header: tuple, rows: list[tuple]) -> None:
    """`rows` under `header`, columns left-aligned and joined by " | ", after `title`."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    print(f"\n\n{title}\n")
    print("\n".join(lines))
