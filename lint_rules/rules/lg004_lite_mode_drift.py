"""LG004: a ``lite_mode_options`` dict that disagrees with the lite config derived from the registry."""

from __future__ import annotations

from lint_rules.rule import Example, LintRule, cst, literal_value, string_value

LITE_MODE_OPTIONS = "lite_mode_options"  # upstream's hand-written dict (torch/_inductor/...)


class LiteModeDrift(LintRule):
    CODE = "LG004"
    NAME = "lite-mode-drift"
    DESCRIPTION = "lite_mode_options disagrees with the derived lite config"
    HELP = ("Upstream's hand-written lite_mode_options sets a key the registry does not force, or"
            " to another value. Fix the registry's [[config]] lite_value, or upstream's dict.")
    MESSAGE = "lite_mode_options['{key}'] {problem}"
    TRIGGERS = (LITE_MODE_OPTIONS.encode(),)

    VALID = [
        Example('lite_mode_options = {"reorder_for_peak_memory": False}'),
        Example('lite_mode_options = {\n    "reorder_for_peak_memory": False,\n'
                '    "triton.reorder_for_reducing_graph_partitions": False,\n}'),
        Example('other_options = {"max_autotune": True}'),
        Example('lite_mode_options = {"max_autotune": True}  # lite-guard: ignore[LG004]'),
    ]
    INVALID = [
        Example('lite_mode_options = {"reorder_for_peak_memory": True}', line=1,
                message="lite_mode_options['reorder_for_peak_memory'] = True but the registry forces"
                        " False; fix the registry's lite_value or upstream's dict"),
        Example('lite_mode_options = {"max_autotune": False}', line=1,
                message="lite_mode_options['max_autotune'] = False is not in the derived lite"
                        ' config; add a [[config]] entry: key = "max_autotune", lite_value = false'),
        Example('lite_mode_options: dict = {\n    "use_post_grad_passes": True,\n}', line=2,
                message="lite_mode_options['use_post_grad_passes'] = True but the registry forces"
                        " False; fix the registry's lite_value or upstream's dict"),
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
