"""``lite_guard check``: validate every registry in use, then lint source trees for graph passes
and reorder configs that no registry names (the lint_rules engine).

Exit codes: 0 clean, 1 findings, 2 usage or configuration error (a path that does not exist,
no torch to lint with ``--torch``, a bad registry).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import signal
import sys
import time
from pathlib import Path

from lite_guard.commands._common import add_registry_args, load_registry
from lite_guard.errors import escape_text
from lite_guard.registry import Registry

# Where torch keeps what the shipped registry describes (the same dirs its scanner walks).
TORCH_TREES = ("_inductor", "_functorch", "fx/passes")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "check", help="validate the registries and lint source trees for unregistered passes",
        description="Validate the registries in use, then lint PATHs (default: [tool.lite_guard]"
                    " paths) for graph passes and reorder configs that no registry names.")
    parser.add_argument("paths", nargs="*", type=_lint_path, metavar="PATH",
                        help="files or directories to lint (default: [tool.lite_guard] paths)")
    parser.add_argument("--torch", action="store_true",
                        help="lint the installed torch's Inductor tree (found without importing it)")
    parser.add_argument("--format", choices=("text", "json", "sarif", "lintrunner"), default="text",
                        help="output format (default: text, one 'path:line:col CODE message' a line;"
                             " lintrunner: one JSON lint message a line, exit 0 with findings)")
    parser.add_argument("--fix", action="store_true",
                        help="write the missing entries (lite = \"never\", placeholder why) into the"
                             " project's registry file, then check again")
    parser.add_argument("--jobs", "-j", type=_positive_int, default=None, metavar="N",
                        help="worker processes (default and maximum: the usable CPUs)")
    parser.add_argument("--max-file-size", type=_positive_int, default=None, metavar="BYTES",
                        help="larger files are LG900, not read (default 2 MiB)")
    parser.add_argument("--file-timeout", type=_positive_float, default=None, metavar="SECONDS",
                        help="time budget of one file; a file over it is LG900 (default 30)")
    parser.add_argument("--check-syntax", action="store_true",
                        help="also parse the files that hold nothing the rules look for, so a"
                             " syntax error anywhere is reported (LG900); slower cold")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the lint cache (LITE_GUARD_CACHE_DIR)")
    parser.add_argument("--torch-version", type=_torch_version, default=None, metavar="VERSION",
                        help="torch version of the linted tree when neither torch/version.py nor"
                             " a checkout's version.txt says it (unknown: ranged registry entries"
                             " are never reported stale)")
    add_registry_args(parser)
    parser.set_defaults(run=run)


def _lint_path(text: str) -> Path:
    # Path("") is Path("."): `lite_guard check "$CHANGED"` with nothing changed linted the whole
    # working directory (another tree, or a huge one) as if it had been named.
    if not text:
        raise argparse.ArgumentTypeError("an empty path; name a file or folder to lint ('.' for"
                                         " this folder)")
    # Path("a.py/") is Path("a.py"): the file was linted although the name asked for a folder
    # (the system says "Not a directory" to any open of it).
    if text.endswith(("/", os.sep)) and os.path.exists(text.rstrip("/" + os.sep)) \
            and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"'{escape_text(text)}' is not a folder (a file named with a"
                                         " trailing '/'); name the file without the '/'")
    return Path(text)


def _torch_version(text: str) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        Version(text)
    except (InvalidVersion, ValueError):  # ValueError: a number past CPython's 4300-digit limit
        raise argparse.ArgumentTypeError(f"not a version: '{text}' (write e.g. 2.13.0)") from None
    return text


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got '{text}'")
    return value


def _limits(args: argparse.Namespace):
    from dataclasses import replace

    from lint_rules.isolation import DEFAULT_LIMITS

    limits = DEFAULT_LIMITS
    if args.max_file_size:
        limits = replace(limits, max_bytes=args.max_file_size)
    if args.file_timeout:
        limits = replace(limits, seconds=args.file_timeout)
    return limits


def _config_ref(text: str) -> tuple[str, str]:
    """``gated_by`` / ``when`` text -> (config module, dotted key); no module means Inductor's."""
    module, _, key = text.rpartition(":")
    return module or "inductor", key


def registry_findings(registry: Registry) -> list[str]:
    """Cross-entry contradictions the per-file loader cannot see: a pass the registry says must
    always run in lite mode, gated by a config the registry switches off in lite mode."""
    forced_off = {(c.module, c.key) for c in registry.configs if c.lite_value is False}
    return [
        f"{entry.origin}:{entry.line}: pass '{entry.name}' is lite = \"always\" but its gate"
        f" '{key}' is forced off in lite mode; mark the pass lite = \"never\" or fix the config"
        for entry in registry.passes if entry.lite == "always"
        for key in entry.gated_by if _config_ref(key) in forced_off
    ]


def check_config_references(registry: Registry) -> None:
    """Every ``gated_by`` and ``when`` key names a config some registry classifies (any torch
    release): a key in no inventory gates nothing, so the entry says something false about when
    its pass runs. Raises ``RegistryError`` at the field (exit 2)."""
    from lite_guard.errors import RegistryError
    from lite_guard.registry import CONFIG_MODULES

    known = {(c.module, c.key) for c in registry.configs}
    inventoried = {module for module, _ in known}
    for entry in registry.passes:
        for field, keys in (("gated_by", entry.gated_by), ("when", (entry.when,) if entry.when else ())):
            for text in keys:
                module, key = _config_ref(text)
                parts = key.split(".")
                # "triton.cudagraphs" is a key; "post_grad_fusion_options.x" a dict option's entry
                if module in inventoried and any((module, ".".join(parts[:n])) in known
                                                 for n in range(len(parts), 0, -1)):
                    continue
                if module not in CONFIG_MODULES:
                    what = (f"its module '{module}' is not a config module (write"
                            f" {' or '.join(repr(m + ':key') for m in CONFIG_MODULES)})")
                elif module not in inventoried:
                    continue  # no registry in use classifies that module's keys: nothing to ask
                else:
                    what = f"no registry classifies the {module} config key '{key}'"
                    if module == "inductor" and any(k == key for _, k in known):
                        what += " (functorch's has it: write 'functorch:" + key + "')"
                raise RegistryError(entry.origin, _field_line(entry, field),
                                    f"pass '{entry.name}' {field} '{text}': {what}; name a key of"
                                    " torch's config the registry classifies, or remove it")


def _field_line(entry, field: str) -> int:
    """The line of ``field`` in the entry's table (the entry's own line if not found)."""
    import re

    from lite_guard.registry import read_regular_file

    try:
        lines = read_regular_file(Path(entry.origin)).decode("utf-8", "replace").splitlines()
    except Exception:  # noqa: BLE001  (only the line number is at stake)
        return entry.line
    pattern = re.compile(rf"\s*{field}\s*=")
    for number in range(entry.line, len(lines)):
        if lines[number].lstrip().startswith("[["):
            break
        if pattern.match(lines[number]):
            return number + 1
    return entry.line


def installed_torch_trees() -> list[Path]:
    """The installed torch's pass trees, located without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise LookupError("torch is not installed in this environment; install it or pass the"
                          " path of a torch checkout's torch/_inductor instead of --torch")
    root = Path(list(spec.submodule_search_locations)[0])
    return [root / sub for sub in TORCH_TREES if (root / sub).is_dir()]


def _terminated(signum: int, frame) -> None:
    # SIGTERM (a CI job's timeout, `timeout`): unwind like Ctrl-C, so the workers are stopped
    # and nothing half-written is left; exit 128 + 15 as a shell reports it.
    print("lite_guard check: terminated (SIGTERM); the run's findings were not reported",
          file=sys.stderr)
    raise SystemExit(128 + signum)


def _cache_in_linted_tree(paths: list[Path]) -> bool:
    """A cache inside a linted directory, or inside the checkout (git work tree) a linted path
    belongs to, is refused (one warning): the code under review could have committed it whole,
    its secret with it, and a record MAC'd by that secret vouches for whatever the pull request
    wants. Permissions prove nothing there: git checks files out 0600 under umask 077."""
    from lint_rules.cache import default_cache_dir
    from lite_guard.errors import escape_text

    cache = Path(os.path.realpath(default_cache_dir()))  # symlinks in either cannot dodge it
    controlled: dict[Path, str] = {}  # folder -> what it is
    seen: set[Path] = set()
    for path in paths:
        try:
            tree = Path(os.path.realpath(path))
            is_dir = tree.is_dir()
        except (ValueError, OSError):  # a NUL in a name, a name too long: discover says so
            continue
        if is_dir:
            controlled[tree] = "the linted tree"
        for above in (tree.parent, *tree.parent.parents):  # the checkout it belongs to
            if above in seen:
                break
            seen.add(above)
            if (above / ".git").exists():
                controlled.setdefault(above, "the checkout")
                break
    for folder, what in controlled.items():
        if cache.is_relative_to(folder):
            print(escape_text(f"lite_guard: warning: lint cache not used: {cache} is inside"
                              f" {what} {folder}, which the code under review controls; set"
                              " LITE_GUARD_CACHE_DIR outside it"), file=sys.stderr)
            return True
    return False


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    signal.signal(signal.SIGTERM, _terminated)
    for stream in (sys.stdout, sys.stderr):  # a path may hold any byte: never crash printing it
        stream.reconfigure(errors="backslashreplace")
    registry = load_registry(args)
    check_config_references(registry)
    from lint_rules.fix import placeholder_whys

    problems = registry_findings(registry) + placeholder_whys(registry)
    paths, exclude = list(args.paths), ()
    configured = False  # the paths are [tool.lite_guard]'s, not the command line's
    missing_configured: list[str] = []
    if args.torch:
        try:
            paths += installed_torch_trees()
        except LookupError as exc:
            print(f"lite_guard check: {exc}", file=sys.stderr)
            return 2
    elif not paths:
        from lite_guard.project_config import check_paths_inside, load_project_config, missing_paths

        project = load_project_config()
        check_paths_inside(project)  # RegistryError: one line, exit 2
        # A configured path that does not exist: an error on its pyproject line (exit 2); the
        # other paths are still linted and their findings reported.
        missing_configured = missing_paths(project)
        paths = [p for p in project.paths if os.path.lexists(p)]
        exclude = project.exclude
        configured = True
        if not project.paths:
            print("lite_guard check: no paths to lint (pass PATHs, --torch, or set [tool.lite_guard]"
                  " paths); registries validated only", file=sys.stderr)

    report = None
    paths = list(dict.fromkeys(paths))  # a path named twice (or 100,000 times) is one path
    if paths:
        from lint_rules.cache import Cache
        from lint_rules.engine import lint_paths

        cache = None if args.no_cache or _cache_in_linted_tree(paths) else Cache()
        # (an unsafe cache dir: one warning, no cache)
        report = lint_paths(paths, registry, jobs=args.jobs, exclude=exclude, cache=cache,
                            limits=_limits(args), torch_version=args.torch_version,
                            check_syntax=getattr(args, "check_syntax", False))
        if configured and report.files == 0 and not report.errors:
            # paths = ["docs"] (or an empty folder): a green lint that read nothing is no lint
            report.errors.append(f"[tool.lite_guard] paths {[str(p) for p in paths]} hold no Python"
                                 " file, so nothing was checked; point paths at your code")
        if cache and cache.rejected:
            print("lite_guard check: note: the lint cache's record of this run failed verification"
                  " and was ignored; the files were linted again", file=sys.stderr)
    findings = report.findings if report else []
    errors = missing_configured + (report.errors if report else [])
    # Only findings with a hint have an entry to write (an LG900 has none): else --fix has
    # nothing to do, and must not hide those findings behind "nowhere safe to write".
    if getattr(args, "fix", False) and any(f.hint for f in findings) and not errors:
        from lint_rules.fix import run_fix

        status = run_fix(args, findings)  # says on stderr what it wrote; 2: nowhere safe to write
        if status:
            return status
        args.fix = False
        return run(args)  # check again, against the registry with the new entries

    if errors:
        status = 2
    elif args.format == "lintrunner":
        status = 0  # lintrunner reads findings from the messages; non-zero means the linter failed
    else:
        status = 1 if problems or findings else 0
    # `lite_guard check | head -1`: the reader may leave; the findings are still there, so the
    # status says so (a shell's pipefail sees 1, never a clean 0), and the summary still goes out.
    for stream, write in ((sys.stdout, _print_findings), (sys.stderr, _print_summary)):
        try:
            write(args, registry, report, problems, findings, errors, started)
            stream.flush()
        except BrokenPipeError:
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    return status


def _print_findings(args, registry, report, problems, findings, errors, started) -> None:
    from lint_rules import formats

    if args.format == "text":
        for line in problems:
            print(formats.escape_text(line))
        for finding in findings:
            print(formats.to_text(finding))  # one line each, whatever a name holds
    else:
        from lint_rules.lintrunner import to_lintrunner

        render = {"json": formats.to_json, "sarif": formats.to_sarif,
                  "lintrunner": to_lintrunner}[args.format]
        output = render(findings, problems, errors)
        if output:
            print(output)


def _print_summary(args, registry, report, problems, findings, errors, started) -> None:
    from lint_rules import formats

    for error in errors:
        print(f"lite_guard check: {formats.escape_text(error)}", file=sys.stderr)
    files = ", ".join(str(p) for p in registry.files) or "none"
    print(formats.escape_text(f"registries: {len(registry.passes)} passes, {len(registry.configs)}"
                              f" configs from {len(registry.files)} file(s): {files}"), file=sys.stderr)
    if report:
        print(f"linted {report.files} file(s) ({report.parsed} parsed, {report.cached} cached)"
              f" in {time.perf_counter() - started:.2f}s", file=sys.stderr)
    print(f"{len(problems) + len(findings)} finding(s)", file=sys.stderr)
