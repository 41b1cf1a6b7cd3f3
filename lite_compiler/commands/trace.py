"""``lite_guard trace SCRIPT [ARGS]``: run a script under the lite guard and print what passes ran.

Every ``torch.compile`` in the script compiles in lite mode with the guard enforcing the registry;
the ledger of each compile is printed as a table (``--json`` for machines). ``--html PAGE`` also
runs the script in default mode with an observe-only guard and writes a self-contained page with
the passes of both modes side by side.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

from lite_guard.commands._common import add_registry_args


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "trace", help="run a script with torch.compile in lite mode and show every pass the guard saw",
        description=__doc__.splitlines()[0])
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    parser.add_argument("--json", action="store_true", help="print the ledgers as JSON")
    parser.add_argument("--html", metavar="PAGE", help="write default vs lite side by side to PAGE")
    add_registry_args(parser, project_flag=False)  # the script's compiles use the project's registries
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lite_guard.registry import RegistryError

    if not Path(args.script).is_file():
        print(f"lite_guard trace: no such script: {args.script}", file=sys.stderr)
        return 2
    if args.registry:
        os.environ["LITE_GUARD_REGISTRIES"] = os.pathsep.join(
            [p for p in os.environ.get("LITE_GUARD_REGISTRIES", "").split(os.pathsep) if p]
            + [str(Path(p).resolve()) for p in args.registry])
    try:
        import lite_compiler
    except ImportError as exc:
        print(f"lite_guard trace: cannot import lite_compiler ({exc}); install torch 2.11-2.14",
              file=sys.stderr)
        return 2
    try:
        lite, violation, failure = _run_script(args, "lite")
        default, _, default_failure = _run_script(args, "default") if args.html and not failure \
            else ([], None, None)
    except RegistryError as exc:
        print(f"lite_guard trace: {exc}", file=sys.stderr)
        return 2
    except lite_compiler.LiteConfigError as exc:
        print(f"lite_guard trace: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"script": args.script, "lite": [ledger.to_dict() for ledger in lite],
                          "default": [ledger.to_dict() for ledger in default],
                          "violation": str(violation) if violation else None}, indent=2))
    else:
        _print_tables(lite, violation)
    if failure or default_failure:
        # The ledgers above are what ran before the script stopped.
        print(f"lite_guard trace: {failure or default_failure}", file=sys.stderr)
        return 2
    if args.html:
        from lite_guard.atomic import write_text_atomic

        try:
            write_text_atomic(args.html, render_html(args.script, default, lite, violation))
        except OSError as exc:
            print(f"lite_guard trace: cannot write {args.html}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        if not args.json:
            print(f"wrote {args.html}")
    return 1 if violation else 0


def _run_script(args: argparse.Namespace, mode: str) -> tuple[list[Any], BaseException | None, str | None]:
    """Run the script once; every torch.compile in it uses lite mode or (observed) default mode.

    Returns the ledgers, the LitePassViolation that stopped it (if any), and a one-line failure
    when the script itself broke (raised something else, or exited non-zero)."""
    import torch

    import lite_compiler
    from lite_compiler.backend import lite_backend

    torch._dynamo.reset()
    before = len(lite_compiler.all_ledgers())
    original_compile = torch.compile

    def compile_in_lite(model: Any = None, *a: Any, **kwargs: Any) -> Any:
        if kwargs.get("backend", "inductor") in ("inductor", "lite"):
            kwargs = {**kwargs, "backend": lite_backend, "mode": None, "options": None}
        return original_compile(model, *a, **kwargs)

    upstream_compile = getattr(original_compile, "__wrapped__", original_compile)

    def compile_in_default(model: Any = None, *a: Any, **kwargs: Any) -> Any:
        # The same script as plain Inductor: what would default mode have run?
        if kwargs.get("mode") == "lite":
            kwargs = {**kwargs, "mode": None}
        if kwargs.get("backend") in ("lite", lite_backend):
            kwargs = {**kwargs, "backend": "inductor"}
        return upstream_compile(model, *a, **kwargs)

    violation: BaseException | None = None
    failure: str | None = None
    saved_argv = sys.argv
    sys.argv = [args.script, *args.script_args]
    try:
        if mode == "lite":
            torch.compile = compile_in_lite
            runpy.run_path(args.script, run_name="__main__")
        else:
            torch.compile = compile_in_default
            with lite_compiler.observe("default"):
                runpy.run_path(args.script, run_name="__main__")
    except lite_compiler.LitePassViolation as exc:
        violation = exc
    except SystemExit as exc:
        if exc.code not in (0, None):
            failure = f"{args.script} exited with {exc.code!r} in {mode} mode"
    except Exception as exc:  # the user's script broke: say so in one line, keep the ledgers
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        failure = f"{args.script} raised {type(exc).__name__}: {first} (in {mode} mode)"
    finally:
        sys.argv = saved_argv
        torch.compile = original_compile
    return lite_compiler.all_ledgers()[before:], violation, failure


def _print_tables(ledgers: list[Any], violation: BaseException | None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for ledger in ledgers:
        table = Table(title=f"lite compile {ledger.graph_name}: {len(ledger)} passes")
        for column in ("pass", "stage", "graph", "lite", "verdict", "ms"):
            table.add_column(column, justify="right" if column == "ms" else "left", overflow="fold")
        for e in ledger:
            verdict = "[green]allowed[/]" if e.allowed else f"[bold red]refused[/] {e.reason}"
            table.add_row(e.name, e.stage, e.graph, e.lite, verdict, f"{e.seconds * 1e3:.2f}")
        console.print(table)
    if not ledgers:
        console.print("no torch.compile ran in the script")
    if violation is not None:
        console.print(f"[bold red]LitePassViolation[/]: {violation}", markup=False, highlight=False)


def _rows(ledgers: list[Any]) -> str:
    rows = []
    for ledger in ledgers:
        for e in ledger:
            css = "ok" if e.allowed else "bad"
            rows.append("<tr class='{}'>{}</tr>".format(css, "".join(
                f"<td>{html.escape(str(v))}</td>"
                for v in (e.name, e.stage, e.graph, e.lite, e.verdict, f"{e.seconds * 1e3:.2f}"))))
    return "\n".join(rows) or "<tr><td colspan='6'>no passes</td></tr>"


def render_html(script: str, default: list[Any], lite: list[Any], violation: BaseException | None) -> str:
    head = "<tr><th>pass</th><th>stage</th><th>graph</th><th>lite flag</th><th>verdict</th><th>ms</th></tr>"
    note = (f"<p class='bad'>LitePassViolation: {html.escape(str(violation))}</p>" if violation else "")
    default_names = {e.name for ledger in default for e in ledger}
    lite_names = {e.name for ledger in lite for e in ledger}
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>lite_guard trace {html.escape(script)}</title>
<style>
body {{ font-family: sans-serif; margin: 1em; }}
.cols {{ display: flex; gap: 2em; align-items: flex-start; }}
.cols > div {{ flex: 1; }}
table {{ border-collapse: collapse; font-size: 12px; width: 100%; }}
td, th {{ border: 1px solid #ccc; padding: 2px 6px; text-align: left; }}
tr.ok td:nth-child(5) {{ color: #070; }} tr.bad, p.bad {{ background: #fdd; }}
</style></head><body>
<h1>lite_guard trace: {html.escape(script)}</h1>
<p>{len(default_names)} distinct passes in default mode, {len(lite_names)} in lite mode;
{len(default_names - lite_names)} run only in default mode.</p>{note}
<div class="cols">
<div><h2>default mode (observed)</h2><table>{head}{_rows(default)}</table></div>
<div><h2>lite mode (enforced)</h2><table>{head}{_rows(lite)}</table></div>
</div></body></html>
"""
