"""LG002: a reorder or pass-gating config that no registry names.

Config modules are the ones a registry ``[[config]]`` can name: ``torch/_inductor/config.py``
(module "inductor") and ``torch/_functorch/config.py`` (module "functorch"), in any checkout.
"""

from __future__ import annotations

from lint_rules.rule import cst  # imported on first use (a cached run never needs it)

from lint_rules.inductor_names import CUSTOM_HOOK_KEY, is_gating_key
from lint_rules.rule import Example, LintRule, one_line, toml_config_hint, toml_pass_hint

_CONFIG = "torch/_inductor/config.py"


class UnregisteredConfig(LintRule):
    CODE = "LG002"
    NAME = "unregistered-config"
    DESCRIPTION = "reorder or pass-gating config that no registry names"

    @classmethod
    def wants(cls, path, data, pattern) -> bool:
        from lint_rules.findings import config_module_of

        return bool(config_module_of(path))  # torch's config modules, wherever they are

    MESSAGE = "config '{key}' gates a pass or reorders, and no registry names it; register it: {hint}"

    VALID = [
        Example("reorder_for_peak_memory = True", path=_CONFIG),
        Example("class triton:\n    reorder_for_reducing_graph_partitions: bool = True",
                path=_CONFIG),
        Example("use_post_grad_passes: bool = True", path=_CONFIG),
        Example("max_autotune = False", path=_CONFIG),  # not pass-gating by its name
        Example("reorder_prefetch_limit = None", path=_CONFIG),  # reviewed: a tuning knob
        Example("reorder_everything = True", path="not_a_config_module.py"),
        Example("def f():\n    reorder_locally = True", path=_CONFIG),
        Example("reorder_for_speed = True  # lite-guard: ignore[LG002]", path=_CONFIG),
    ]
    INVALID = [
        Example("reorder_for_speed = True", path=_CONFIG),
        Example("reorder_for_speed: bool = True", path=_CONFIG),
        Example("class triton:\n    reorder_for_speed = True", path=_CONFIG),
        Example("class triton:\n    class inner:\n        reorder_deeper = True", path=_CONFIG),
        Example("if sys.platform == 'linux':\n    reorder_on_linux = True", path=_CONFIG),
        Example("fancy_fusion_passes: list[str] = []", path=_CONFIG),
        Example("my_custom_post_pass = None", path=_CONFIG),  # a new custom-pass hook
        Example("use_extra_passes = True", path="torch/_functorch/config.py"),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._classes: list[str] = []
        self._functions = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._check(node.target)

    def _check(self, target: cst.BaseExpression) -> None:
        module = self.context.config_module
        if not module or self._functions or not isinstance(target, cst.Name):
            return
        if not self._classes and target.value.startswith("__"):
            return
        key = ".".join([*self._classes, target.value])
        self.context.facts.configs.append(f"{module}:{key}")
        if not is_gating_key(key, module):
            return
        registry = self.context.registry
        # A custom-pass hook key is registered as a pass (kind custom_hook) rather than a config.
        if registry.get_config(key, module) is not None or registry.get_pass(key) is not None:
            return
        if CUSTOM_HOOK_KEY.search(target.value):
            hint = toml_pass_hint(key, "post_grad", "custom_hook")
        else:
            hint = toml_config_hint(key, module, "reorder" if "reorder" in key else "pass_gate")
        self.report(target, self.MESSAGE.format(key=key, hint=one_line(hint)), name=key, hint=hint)
