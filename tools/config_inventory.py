"""The config inventory: every key of torch's Inductor and functorch config modules, across the
torch versions scanned, with its type and a PROPOSED classification for a person to review.

The keys and their types come from ``lint_rules.config_keys`` (the same reading LG002 uses). The
classification here is only a proposal: it reads the key's name, type and comment and guesses.
The shipped inventory (``lite_guard/registries/torch_configs.toml``) holds the reviewed kinds;
this module never writes it. A key this proposal cannot place is proposed ``optimization`` (forced
at torch's default): unknown keys fail closed until someone reads what they do.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from lint_rules.config_keys import CONFIG_MODULES, ConfigKey, config_keys, union
from lint_rules.versions import range_of

# Kinds whose entries must carry a lite_value (lite mode forces it); the others are classified only.
FORCED_KINDS = ("pass_gate", "reorder", "optimization", "numerics", "mode")
KINDS = FORCED_KINDS + ("custom_hook", "tuning", "debug", "neutral")


@dataclass
class InventoryKey:
    module: str
    key: str
    type: str
    default: str
    comment: str
    versions: list[str] = field(default_factory=list)  # the scanned versions that have it
    source: str = ""
    line: int = 0
    proposal: str = ""
    reason: str = ""

    @property
    def literal_default(self):
        """torch's default as a TOML-able value (with no TORCHINDUCTOR_* variable set, outside
        fbcode, not ROCm), or None when it cannot be read from the source."""
        try:
            value = unset_env_value(ast.parse(self.default, mode="eval").body)
        except (ValueError, SyntaxError, TypeError, KeyError):
            return None
        return value if isinstance(value, (bool, int, float, str, list, dict)) else None


def scan_versions(roots: dict[str, Path]) -> list[InventoryKey]:
    """Every key of every root (``{version: torch_dir}``), merged: versions, union of types."""
    merged: dict[tuple[str, str], InventoryKey] = {}
    for version, root in roots.items():
        for module, (package, name) in CONFIG_MODULES.items():
            path = root / package / name
            if not path.exists():
                continue
            for key in config_keys(path.read_text(encoding="utf-8")):
                entry = merged.get((module, key.key))
                if entry is None:
                    entry = merged[(module, key.key)] = InventoryKey(
                        module, key.key, key.type, key.default, key.comment,
                        source=f"torch/{package}/{name}", line=key.line)
                else:
                    entry.type = union(entry.type, key.type)
                    entry.default, entry.comment, entry.line = key.default, key.comment, key.line
                entry.versions.append(version)
    for entry in merged.values():
        entry.proposal, entry.reason = propose(entry)
    return sorted(merged.values(), key=lambda e: (e.module, e.key))


def torch_range(entry: InventoryKey, scanned: list[str]) -> str:
    """The ``torch = "..."`` range of a key present in ``entry.versions`` of ``scanned``."""
    return range_of(entry.versions, scanned)


_UNKNOWN = object()


def unset_env_value(node: ast.expr):
    """The value of a default expression when no environment variable is set, in an OSS build
    (``is_fbcode()`` false) without ROCm (``torch.version.hip`` None). Raises ValueError for
    anything else (a call it does not know)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [unset_env_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {unset_env_value(k): unset_env_value(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp):
        value = unset_env_value(node.operand)
        if isinstance(node.op, ast.Not):
            return not value
        if isinstance(node.op, ast.USub):
            return -value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add)):
        left, right = unset_env_value(node.left), unset_env_value(node.right)
        return left * right if isinstance(node.op, ast.Mult) else left + right
    if isinstance(node, ast.BoolOp):
        values = [unset_env_value(v) for v in node.values]
        result = values[0]
        for value in values[1:]:
            result = (result and value) if isinstance(node.op, ast.And) else (result or value)
        return result
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = unset_env_value(node.left), unset_env_value(node.comparators[0])
        op = node.ops[0]
        if isinstance(op, ast.Eq):
            return left == right
        if isinstance(op, ast.NotEq):
            return left != right
        if isinstance(op, ast.In):
            return left in right
        if isinstance(op, ast.NotIn):
            return left not in right
    if isinstance(node, ast.IfExp):
        return unset_env_value(node.body if unset_env_value(node.test) else node.orelse)
    if isinstance(node, ast.Attribute) and ast.unparse(node) == "torch.version.hip":
        return None
    if isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        if name in ("os.environ.get", "os.getenv"):
            return unset_env_value(node.args[1]) if len(node.args) > 1 else None
        if name == "is_fbcode":
            return False
        if name in ("int", "float", "str", "bool") and node.args:
            return {"int": int, "float": float, "str": str, "bool": bool}[name](
                unset_env_value(node.args[0]))
        if name == "Config":
            for keyword in node.keywords:
                if keyword.arg == "default":
                    return unset_env_value(keyword.value)
        if name == "cast" and len(node.args) == 2:
            return unset_env_value(node.args[1])
    raise ValueError(f"cannot evaluate {ast.unparse(node)}")


# ---- the proposal -------------------------------------------------------------------------------
# Ordered rules: (kind, pattern on the dotted key, why). First match wins. PROPOSALS ONLY.
_RULES: list[tuple[str, re.Pattern[str], str]] = [(kind, re.compile(pattern), why) for kind, pattern, why in (
    ("custom_hook", r"(^|\.)_?\w*custom\w*_pass$|custom_partitioner_fn$",
     "installs a user callable as a pass"),
    ("debug", r"^test_configs\.|TESTING|(^|\.)trace\.|debug|verbose|(^|_)log(_|$)|logging|print"
     r"|dump|profil|provenance|diagram|annotate|_viz|graph_vis|bisect|benchmark_harness",
     "logging, tracing or test switches"),
    ("reorder", r"reorder|sink_waits|raise_comms|schedul", "reorders the graph or schedule"),
    ("pass_gate", r"(^|\.)use_\w*passes$|_passes?$|(^|\.)dce$|pattern_matcher|freezing|decompos"
     r"|constant_folding|bucket", "switches a pass on or off"),
    ("numerics", r"fast_math|precision|determin|random|numerics|rounding|ftz|tf32|fp8|fp16|bf16"
     r"|emulate|float32|accum|upcast|downcast", "changes floating-point numerics"),
    ("optimization", r"fusion|fuse|reuse|inplace|padding|pad_|layout|autotune|split_reduction"
     r"|persistent|cooperative|multi_kernel|combo|unroll|vectoriz|simd|tiling|benchmark_kernel"
     r"|epilogue|prologue|template", "changes the code Inductor generates"),
    ("neutral", r"cache|(^|_)dir$|path|remote|worker|compile_threads|(^|_)env|_cmd$|cxx|include"
     r"|_home$|version|arch$", "build/cache/environment plumbing"),
    ("tuning", r"threshold|(^|[._])max_|(^|[._])min_|_size$|limit|(^|[._])num_|budget|factor"
     r"|timeout|_count$|_level$", "a threshold of something that has its own gate"),
)]


def propose(entry: InventoryKey) -> tuple[str, str]:
    for kind, pattern, why in _RULES:
        if pattern.search(entry.key):
            return kind, f"PROPOSED {kind}: {why} (name matched /{pattern.pattern}/)"
    return "optimization", "PROPOSED optimization: unplaced, fails closed (forced at torch's default)"


def to_json(entries: list[InventoryKey]) -> str:
    return json.dumps([entry.__dict__ for entry in entries], indent=1)


def config_key_of(key: ConfigKey) -> str:
    return key.key
