"""``lite_guard registry``: list, show and derive from the pass registry."""

from __future__ import annotations

import argparse
import json
import sys

from lite_guard.commands._common import add_registry_args, load_registry
from lite_guard.errors import escape_text
from lite_guard.registry import LITE_FLAGS, STAGES, PassEntry


COLUMNS = ("name", "stage", "lite", "kind", "gated by", "why")
RICH_TABLE_ROWS = 2000  # above this, ``registry list`` prints plain lines (_print_plain)
# ... and above this much text: rich lays out about 100,000 characters a second (the shipped
# registry is 100,000), so one 5 MB ``why`` ran for minutes.
RICH_TABLE_CHARS = 250_000


def register(subparsers) -> None:
    parser = subparsers.add_parser("registry", help="list, show and derive from the pass registry")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True,
                                    parser_class=type(parser))

    listing = actions.add_parser("list", help="every registered pass, filtered")
    listing.add_argument("--stage", choices=STAGES)
    listing.add_argument("--lite", choices=LITE_FLAGS, help="only passes with this lite flag")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    add_registry_args(listing)
    listing.set_defaults(run=run_list)

    show = actions.add_parser("show", help="one pass or config entry")
    show.add_argument("name")
    add_registry_args(show)
    show.set_defaults(run=run_show)

    lite_config = actions.add_parser("lite-config", help="the derived lite config patch as JSON")
    lite_config.add_argument("--module", choices=("inductor", "functorch"), default="inductor")
    add_registry_args(lite_config)
    lite_config.set_defaults(run=run_lite_config)


def run_list(args: argparse.Namespace) -> int:
    registry = load_registry(args)
    entries = registry.filter(stage=args.stage, lite=args.lite)
    if args.json:
        print(json.dumps([_public(e.as_dict()) for e in entries], indent=2))
        return 0
    if len(entries) > RICH_TABLE_ROWS or sum(map(_text_size, entries)) > RICH_TABLE_CHARS:
        _print_plain(entries)
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"{len(entries)} passes", title_justify="left")
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for e in entries:
        # Registry text is data: Text cells are never read as rich markup ("[red]" stays "[red]").
        # Nor can an ESC in it clear the reader's screen or retitle the terminal (escape_text).
        table.add_row(*(Text(escape_text(cell)) for cell in (e.name, e.stage)), _flag(e.lite),
                      *(Text(escape_text(cell)) for cell in (e.kind, ", ".join(e.gated_by), e.why)))
    Console(soft_wrap=False).print(table)
    return 0


def _text_size(e: PassEntry) -> int:
    return len(e.name) + len(e.stage) + len(e.lite) + len(e.kind) + sum(map(len, e.gated_by)) \
        + len(e.why)


def _print_plain(entries: list[PassEntry]) -> None:
    """One tab-separated line per pass: rich took 2 minutes to lay out a table of 100,000 rows,
    and nobody reads that many in boxes; grep and cut can."""
    many = (f"more than {RICH_TABLE_ROWS} rows" if len(entries) > RICH_TABLE_ROWS
            else f"more than {RICH_TABLE_CHARS} characters")
    print(f"{len(entries)} passes (tab-separated: {many})")
    print("\t".join(COLUMNS))
    for e in entries:
        cells = (e.name, e.stage, e.lite, e.kind, ", ".join(e.gated_by), e.why)
        print("\t".join(escape_text(cell) for cell in cells))  # a tab in a cell prints as \t


def run_show(args: argparse.Namespace) -> int:
    if not args.name.strip():
        print("lite_guard registry show: give the name of a pass or config"
              " (list them with 'lite_guard registry list')", file=sys.stderr)
        return 2
    registry = load_registry(args)
    entry = registry.get_pass(args.name)
    if entry is None:
        entry = registry.get_config(args.name) or registry.get_config(args.name, "functorch")
    if entry is None:
        hints = registry.suggest(args.name)
        hint = f" did you mean: {', '.join(hints)}?" if hints else ""
        print(escape_text(f"lite_guard registry show: no pass or config named {args.name!r} in the"
                          f" registry;{hint} (list them with 'lite_guard registry list')"),
              file=sys.stderr)
        return 2
    for key, value in _public(entry.as_dict()).items():
        if isinstance(value, (list, tuple)):  # gated_by's names, or a region's allowed values
            value = ", ".join(v if isinstance(v, str) else json.dumps(v) for v in value)
        print(f"{key:>10}: {escape_text(str(value))}")  # one line each, whatever the TOML held
    if isinstance(entry, PassEntry):
        print(f"{'lite-safe':>10}: {'yes' if entry.lite_safe else 'no'}")
    return 0


def run_lite_config(args: argparse.Namespace) -> int:
    registry = load_registry(args)
    print(json.dumps(registry.derive_lite_config(module=args.module), indent=2, sort_keys=True))
    return 0


def _public(fields: dict) -> dict:
    return {k: v for k, v in fields.items() if v not in ("", (), [])}


def _flag(lite: str):
    from rich.text import Text

    return Text(lite, style={"never": "red", "always": "green", "region": "cyan"}.get(lite, ""))
