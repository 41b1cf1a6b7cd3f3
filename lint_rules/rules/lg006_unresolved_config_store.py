"""LG006: a store into Inductor's or functorch's config module under a key the lint cannot resolve.

``setattr(inductor_config, key, value)``, ``config.__dict__[name] = fn``, ``vars(config)[k] = v``,
``config.patch(k, v)``, ``config.patch(overrides)`` / ``config.patch(**overrides)`` with a dict
built elsewhere, an entry of ``torch.compile(..., options={key: v})``: any of them can install a custom-pass hook (``post_grad_custom_post_pass``), and
LG001 checks a hook install only when it knows the key. The index resolves what it can: keys
split into literals (``"post_grad_" + "custom_post_pass"``, f-strings, ``"_".join([...])``), loop
variables over constant tuples (torch's own ``for name in _CACHE_CONFIG_EN: setattr(config, name,
False)``), constants of other modules, dict variables bound to a literal. What is left (a
parameter, a dict computed at run time, a constant of a module outside the linted paths, which
the message names) is reported here, never skipped: a person either writes
the key so it can be read, or reviews the store and suppresses this finding on its line.

Inside torch, ``config.patch(d)`` with a dict computed at run time is torch applying options
handed to it (the user's ``options=``, an operation's ``get_config_patches()``): those dicts'
keys are checked where they are written (a dict literal, ``d[key] = v``, ``dict(key=v)``), and
the runtime guard checks every hook installed at compile time. A single key computed inside torch
is still reported.
"""

from __future__ import annotations

from typing import Any

from lint_rules.examples import Example
from lint_rules.findings import Finding
from lint_rules.index import Index, Unresolved, real_module, text_of
from lint_rules.rule import IndexRule
from lite_guard.identity import is_torch_module

_IMPORTS = "import torch._inductor.config as inductor_config\nfrom torch._inductor import config\n"
_M = ("store into {module} under a key that cannot be resolved statically ('{key}', {form}); a"
      " custom-pass hook installed so is not checked: write the key as a literal or a constant,"
      " or review the store and add '# lite-guard: ignore[LG006]' to its line")


class UnresolvedConfigStore(IndexRule):
    CODE = "LG006"
    NAME = "unresolved-config-store"
    DESCRIPTION = "store into an Inductor or functorch config module under a key that cannot be resolved"
    HELP = ("setattr / __dict__ / patch on torch._inductor.config or torch._functorch.config with a"
            " key the lint cannot resolve could install a custom-pass hook that no rule checks."
            " Write the key as a literal or a module constant, or review it and suppress the"
            " finding on its line.")
    MESSAGE = _M

    VALID = [
        Example(_IMPORTS + 'setattr(inductor_config, "fx_graph_cache", False)'),
        Example(_IMPORTS + 'KEYS = ("fx_graph_cache", "autotune_local_cache")\n'
                'def off():\n    for name in KEYS:\n        setattr(config, name, False)'),
        Example(_IMPORTS + 'def f(obj, key, value):\n    setattr(obj, key, value)'),
        Example(_IMPORTS + 'PATCHES = {"max_autotune": False}\n'
                'def run(fn):\n    with config.patch(**PATCHES):\n        return fn()'),
        Example(_IMPORTS + 'def f(key, value):\n'
                '    setattr(inductor_config, key, value)  # lite-guard: ignore[LG006]'),
    ]
    INVALID = [
        Example(_IMPORTS + 'def apply(overrides):\n    for key, value in overrides.items():\n'
                '        setattr(inductor_config, key, value)',
                line=5, message=_M.format(module="torch._inductor.config", key="key",
                                          form="setattr(...)")),
        Example(_IMPORTS + 'def run(options, fn):\n    with config.patch(**options):\n'
                '        return fn()',
                line=4, message=_M.format(module="torch._inductor.config", key="**options",
                                          form="patch(**...)")),
        Example('import torch\ndef put(name, fn):\n    torch._functorch.config.__dict__[name] = fn',
                line=3, message=_M.format(module="torch._functorch.config", key="name",
                                          form="item assignment into its namespace")),
        Example(_IMPORTS + 'def put(stage, fn):\n    setattr(config, f"{stage}_custom_post_pass", fn)',
                line=4, message=_M.format(module="torch._inductor.config",
                                          key="stage + '_custom_post_pass'", form="setattr(...)")),
    ]

    @classmethod
    def triggers(cls, registry: Any) -> tuple[bytes, ...]:
        # No word of its own: the index reads a file whole when it may store under a computed
        # key (Vocabulary.may_store_dynamically), and the prefilter parses it (prefilter.Prefilter).
        return ()

    @classmethod
    def check(cls, index: Index, registry: Any) -> tuple[list[Finding], set[str]]:
        findings = []
        for module, summary in index.modules.items():
            for site in summary["sites"]:
                if site["t"] != "dyn":
                    continue
                if site["key"][0] == "dict" and is_torch_module(real_module(module)):
                    continue  # torch applying a dict handed to it (see the module docstring)
                config = site.get("sink") or index.config_module(module, site["scope"],
                                                                 site["recv"], site["class"])
                if config is None:
                    continue
                keys = index.key_strings(module, site["scope"], site["key"], site["class"])
                if not any(isinstance(key, Unresolved) for key in keys):
                    continue
                name = f"{config}:{text_of(site['key'])}"
                findings.append(Finding(
                    index.paths[module], site["line"], site["col"], cls.CODE,
                    _M.format(module=config, key=text_of(site["key"]), form=site["form"])
                    + _outside(index, module, site), name))
        return findings, set()


def _outside(index: Index, module: str, site: dict) -> str:
    """Why a key named by a constant is unresolved when the constant's module is not linted."""
    key = site["key"]
    if key[0] != "n":
        return ""
    ref = index.resolve_name(module, site["scope"], key[1], site["class"])
    if ref[0] == "ext" and len(ref) > 1 and isinstance(ref[1], str) and not index.in_tree(ref[1]):
        return (f" ('{key[1]}' is defined in {ref[1]}, outside the linted paths: lint it too and"
                " the key is read)")
    return ""


__all__ = ["UnresolvedConfigStore"]
