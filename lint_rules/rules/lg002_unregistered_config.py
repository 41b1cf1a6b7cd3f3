"""LG002: a key of torch's Inductor or functorch config module that no registry classifies.

The registries hold the complete inventory of both config modules (``torch_configs.toml``):
every key, nested-class keys dotted, classified as a pass gate, reorder, optimization,
numerics, mode, custom hook, tuning, debug or neutral. Any key the inventory lacks is a finding,
whatever its name: no name pattern decides whether a key matters, so ``reorder_for_int8_overlap``,
``enable_softmax_rewrite`` and ``drop_dead_nodes`` are all reported until a person classifies
them. Which names are keys is ``lint_rules.config_keys`` (shared with the scanner): module-level
assignments (under ``if``/``try`` too), class attributes dotted, keys a class inherits from
another config class of the module, and ``TYPE_CHECKING``.

Config modules are ``torch/_inductor/config.py`` (module "inductor") and
``torch/_functorch/config.py`` (module "functorch"), in any checkout.
"""

from __future__ import annotations

from lint_rules.config_keys import ConfigKey, config_keys
from lint_rules.findings import config_module_of
from lint_rules.rule import Example, LintRule, cst, one_line
from lite_guard.hints import config_hint

_CONFIG = "torch/_inductor/config.py"
_REGISTRY = """
[[config]]
key = "reorder_for_peak_memory"
kind = "reorder"
type = "bool"
lite_value = false

[[config]]
key = "triton.cudagraphs"
kind = "optimization"
type = "bool"
lite_value = false

[[config]]
key = "debug"
kind = "debug"
type = "bool"

[[config]]
key = "TYPE_CHECKING"
kind = "neutral"
type = "bool"
"""
_HINT = ('[[config]] key = "{key}", module = "{module}", kind = "pass_gate", type = "{type}"'
         '{value}')


class UnregisteredConfig(LintRule):
    CODE = "LG002"
    NAME = "unregistered-config"
    DESCRIPTION = "config key that the registry's inventory does not classify"
    HELP = ("Classify the key in a registry: what it can do (kind) and, for a key that can run a"
            " pass, reorder or change numerics, the value lite mode forces.")
    MESSAGE = ("config '{key}' of torch's {module} config is in no registry's inventory; classify"
               " it (pass_gate, reorder, optimization, numerics, mode, custom_hook, tuning, debug"
               " or neutral): {hint}")

    @classmethod
    def wants(cls, path, data, pattern) -> bool:
        return bool(config_module_of(path))  # torch's config modules, wherever they are

    VALID = [
        Example("reorder_for_peak_memory = True\ndebug = False\n", path=_CONFIG, registry=_REGISTRY),
        Example("class triton:\n    cudagraphs: bool = False\n", path=_CONFIG, registry=_REGISTRY),
        Example("from typing import TYPE_CHECKING\n", path=_CONFIG, registry=_REGISTRY),
        Example("reorder_everything = True\n", path="not_a_config_module.py", registry=_REGISTRY),
        Example("def f():\n    reorder_locally = True\n", path=_CONFIG, registry=_REGISTRY),
        Example("drop_dead_nodes = True  # lite-guard: ignore[LG002]\n", path=_CONFIG,
                registry=_REGISTRY),
    ]
    INVALID = [
        Example("reorder_for_int8_overlap = True\n", path=_CONFIG, registry=_REGISTRY, line=1,
                message="config 'reorder_for_int8_overlap' of torch's inductor config is in no"
                " registry's inventory; classify it (pass_gate, reorder, optimization, numerics,"
                " mode, custom_hook, tuning, debug or neutral): [[config]] key ="
                ' "reorder_for_int8_overlap", module = "inductor", kind = "pass_gate", type ='
                ' "bool", lite_value = true'),
        Example("enable_softmax_rewrite: bool = os.environ.get('X') == '1'\n", path=_CONFIG,
                registry=_REGISTRY, line=1,
                message="config 'enable_softmax_rewrite' of torch's inductor config is in no"
                " registry's inventory; classify it (pass_gate, reorder, optimization, numerics,"
                " mode, custom_hook, tuning, debug or neutral): [[config]] key ="
                ' "enable_softmax_rewrite", module = "inductor", kind = "pass_gate", type ='
                ' "bool"'),
        Example("class triton:\n    cudagraphs = False\n    class inner:\n"
                "        drop_dead_nodes = True\n", path=_CONFIG, registry=_REGISTRY, line=4,
                message="config 'triton.inner.drop_dead_nodes' of torch's inductor config is in no"
                " registry's inventory; classify it (pass_gate, reorder, optimization, numerics,"
                " mode, custom_hook, tuning, debug or neutral): [[config]] key ="
                ' "triton.inner.drop_dead_nodes", module = "inductor", kind = "pass_gate", type ='
                ' "bool", lite_value = true'),
        Example("if sys.platform == 'linux':\n    fuse_rope_v3 = 3\n", path=_CONFIG,
                registry=_REGISTRY, line=2,
                message="config 'fuse_rope_v3' of torch's inductor config is in no registry's"
                " inventory; classify it (pass_gate, reorder, optimization, numerics, mode,"
                " custom_hook, tuning, debug or neutral): [[config]] key = \"fuse_rope_v3\","
                ' module = "inductor", kind = "pass_gate", type = "int", lite_value = 3'),
        Example("class base:\n    use_alt_order = True\n\nclass triton(base):\n    pass\n",
                path=_CONFIG, registry=_REGISTRY,
                expect=((2, "config 'base.use_alt_order' of torch's inductor config is in no"
                         " registry's inventory; classify it (pass_gate, reorder, optimization,"
                         " numerics, mode, custom_hook, tuning, debug or neutral): [[config]] key"
                         ' = "base.use_alt_order", module = "inductor", kind = "pass_gate", type'
                         ' = "bool", lite_value = true'),
                        (4, "config 'triton.use_alt_order' of torch's inductor config is in no"
                         " registry's inventory; classify it (pass_gate, reorder, optimization,"
                         " numerics, mode, custom_hook, tuning, debug or neutral): [[config]] key"
                         ' = "triton.use_alt_order", module = "inductor", kind = "pass_gate", type'
                         ' = "bool", lite_value = true'))),
        Example("use_extra_passes = True\n", path="torch/_functorch/config.py", registry=_REGISTRY,
                line=1, message="config 'use_extra_passes' of torch's functorch config is in no"
                " registry's inventory; classify it (pass_gate, reorder, optimization, numerics,"
                " mode, custom_hook, tuning, debug or neutral): [[config]] key ="
                ' "use_extra_passes", module = "functorch", kind = "pass_gate", type = "bool",'
                " lite_value = true"),
    ]

    def visit_Module(self, node) -> None:
        module = self.context.config_module or config_module_of(self.context.path)
        if not module:
            return
        try:
            keys = config_keys(self.context.source)
        except (SyntaxError, ValueError, RecursionError):
            return  # the engine reports a file it cannot parse (LG900)
        anchors = _anchors(node)
        registry = self.context.registry
        for key in keys:
            self.context.facts.configs.append(f"{module}:{key.key}")
            entry = registry.get_config(key.key, module)
            if entry is not None and entry.exists_in(self.context.torch_version):
                continue  # out of its torch range, an entry classifies nothing in this tree
            anchor = anchors.get(key.key) or anchors.get(key.key.rpartition(".")[0]) or node
            hint = _hint(key, module)
            self.report(anchor, self.MESSAGE.format(key=key.key, module=module,
                                                    hint=one_line(hint)), name=key.key, hint=hint)


def _hint(key: ConfigKey, module: str) -> str:
    """The entry to paste: fail closed as a pass gate forced at torch's literal default."""
    value = _literal(key.default)
    return config_hint(key.key, module, "pass_gate", key.type, value)


def _literal(text: str):
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, (bool, int, float, str)) else None


def _anchors(module) -> dict[str, object]:
    """Where each key is written: its assignment target, and for a class its name (an inherited
    key is reported at the class that inherits it)."""
    anchors: dict[str, object] = {}

    def walk(body, prefix: str) -> None:
        for statement in body:
            if isinstance(statement, cst.ClassDef):
                name = prefix + statement.name.value
                anchors.setdefault(name, statement.name)
                walk(statement.body.body, name + ".")
            elif isinstance(statement, cst.If):
                walk(statement.body.body, prefix)
                if isinstance(statement.orelse, cst.If):  # elif
                    walk([statement.orelse], prefix)
                elif statement.orelse is not None:
                    walk(statement.orelse.body.body, prefix)
            elif isinstance(statement, cst.Try):
                blocks = [statement.body, *(h.body for h in statement.handlers)]
                blocks += [b.body for b in (statement.orelse, statement.finalbody) if b is not None]
                for block in blocks:
                    walk(block.body, prefix)
            elif isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    targets = []
                    if isinstance(small, cst.Assign):
                        targets = [t.target for t in small.targets]
                    elif isinstance(small, cst.AnnAssign):
                        targets = [small.target]
                    elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                        targets = [a.name for a in small.names]
                    for target in targets:
                        if isinstance(target, cst.Name):
                            anchors.setdefault(prefix + target.value, target)

    walk(module.body, "")
    return anchors
