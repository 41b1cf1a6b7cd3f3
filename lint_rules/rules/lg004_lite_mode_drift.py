"""LG004: a ``lite_mode_options`` dict that disagrees with the lite config derived from the registry."""

from __future__ import annotations

import libcst as cst

from lint_rules.inductor_names import LITE_MODE_OPTIONS
from lint_rules.rule import Example, LintRule, literal_value, string_value


class LiteModeDrift(LintRule):
    CODE = "LG004"
    MESSAGE = "lite_mode_options['{key}'] {problem}"

    VALID = [
        Example('lite_mode_options = {"reorder_for_peak_memory": False}'),
        Example('lite_mode_options = {\n    "reorder_for_peak_memory": False,\n'
                '    "triton.reorder_for_reducing_graph_partitions": False,\n}'),
        Example('other_options = {"max_autotune": True}'),
        Example('lite_mode_options = {"max_autotune": True}  # lite-guard: ignore[LG004]'),
    ]
    INVALID = [
        Example('lite_mode_options = {"reorder_for_peak_memory": True}'),
        Example('lite_mode_options = {"max_autotune": False}'),
        Example('lite_mode_options: dict = {"use_post_grad_passes": True}'),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check(node.target, node.value)

    def _check(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not (isinstance(target, cst.Name) and target.value == LITE_MODE_OPTIONS):
            return
        if not isinstance(value, cst.Dict):
            return
        derived = self.context.registry.derive_lite_config(torch_version=self.context.torch_version)
        for element in value.elements:
            if not isinstance(element, cst.DictElement):
                continue
            key = string_value(element.key)
            if key is None:
                continue
            known, upstream = literal_value(element.value)
            if key not in derived:
                problem = (f"= {upstream!r} is not in the derived lite config; add a [[config]]"
                           f' entry: key = "{key}", lite_value = {_toml(upstream)}')
            elif known and derived[key] != upstream:
                problem = (f"= {upstream!r} but the registry forces {derived[key]!r}; fix the"
                           " registry's lite_value or upstream's dict")
            else:
                continue
            self.report(element.key, self.MESSAGE.format(key=key, problem=problem), name=key)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)
