"""LG001: a graph pass that no registry names."""

from __future__ import annotations

import libcst as cst

from fnmatch import fnmatchcase
from pathlib import PurePath

from lint_rules.inductor_names import (
    CUSTOM_PASS_HOOKS, NOT_SCHEDULER_PASSES, OBSERVER, PASS_BASES, PATTERN_PASS, SCHEDULER_NODE,
    SCHEDULER_REORDER_NAME,
)
from lint_rules.rule import Example, LintRule, last_name, one_line, string_value, toml_pass_hint


class UnregisteredPass(LintRule):
    CODE = "LG001"
    MESSAGE = "graph pass '{name}' ({form}) is not in any registry; register it: {hint}"

    VALID = [
        Example('GraphTransformObserver(gm, "remove_noop_ops").apply_graph_pass(remove_noop_ops)'),
        Example('with GraphTransformObserver(gm, f"registered_{i}"):\n    pass'),  # matches
        Example('registered_pass = PatternMatcherPass()'),
        Example('p = PatternMatcherPass(pass_name="registered_pass")'),
        Example('class RegisteredGraphPass(CustomGraphPass):\n    pass'),
        Example('class NotAPass(SomethingElse):\n    pass'),
        Example('config.post_grad_custom_pre_pass = None'),
        Example('config.post_grad_custom_pre_pass = registered_pass'),
        Example('self._pre_fusion_custom_pass = compute_detail(x)'),  # not an Inductor config
        Example('with config.patch(post_grad_custom_post_pass=registered_pass):\n    pass'),
        Example('config.post_grad_custom_post_pass = [registered_pass, registered_pass]'),
        Example('config.post_grad_custom_pre_pass = []'),
        Example('def reorder_tensors(xs: list[int]) -> list[int]:\n    return xs'),
        Example('x = PatternMatcherPass()  # lite-guard: ignore[LG001]'),
        Example('x = PatternMatcherPass()  # noqa: LG001'),
    ]
    INVALID = [
        Example('GraphTransformObserver(gm, "fuse_everything").apply_graph_pass(fuse)'),
        Example('with GraphTransformObserver(gm, passname="fuse_everything"):\n    pass'),
        Example('my_patterns = PatternMatcherPass()'),
        Example('with GraphTransformObserver(gm, f"my_pass_{i}"):\n    pass'),
        Example('@register_fusion("batch_everything", pre_grad=False)\nclass B(BatchFusion):\n'
                '    pass'),
        Example('p = PatternMatcherPass(pass_name="my_patterns", subsystem="x")'),
        Example('def fold(gm):\n    local_patterns = PatternMatcherPass()'),
        Example('class MyPass(CustomGraphPass):\n    pass'),
        Example('class MyPass(torch._inductor.custom_graph_pass.CustomGraphModulePass):\n    pass'),
        Example('config.joint_custom_post_pass = my_pass'),
        Example('torch._inductor.config.post_grad_custom_pre_pass = MyPass()'),
        Example('with config.patch(post_grad_custom_post_pass=my_pass):\n    pass'),
        Example('with config.patch({"joint_custom_pre_pass": my_pass}):\n    pass'),
        Example('config.patch("pre_grad_custom_pass", my_pass)'),
        Example('torch.compile(fn, options={"post_grad_custom_post_pass": my_pass})'),
        Example('config.post_grad_custom_post_pass = [registered_pass, my_pass]'),
        Example('with config.patch(joint_custom_pre_pass=(my_pass, registered_pass)):\n    pass'),
        Example('def reorder_my_way(snodes: list[BaseSchedulerNode]) -> list[BaseSchedulerNode]:\n'
                '    return snodes'),
        Example('class Scheduler:\n    def reorder_more(self, nodes) -> list["BaseSchedulerNode"]:\n'
                '        return nodes'),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._functions: list[str] = []
        self._named_calls: set[int] = set()  # PatternMatcherPass calls named by an assignment

    # ---- scope ----------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._check_scheduler_reorder(node)
        self._functions.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions.pop()

    # ---- forms ----------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for decorator in node.decorators:
            # @register_fusion("batch_linear"): a group-batch fusion pass, known by that name
            call = decorator.decorator
            if isinstance(call, cst.Call) and last_name(call.func) == "register_fusion":
                name_arg = _argument(call, 0, "name")
                name = string_value(name_arg.value) if name_arg else None
                if name is not None:
                    self._found(name_arg, name, "@register_fusion", "class")
        if node.name.value in PASS_BASES:
            return  # an interface Inductor defines, not a pass
        for base in node.bases:
            if last_name(base.value) in PASS_BASES and not base.keyword:
                self._found(node.name, node.name.value, f"subclass of {last_name(base.value)}",
                            "class")
                return

    def visit_Call(self, node: cst.Call) -> None:
        callee = last_name(node.func)
        if callee == OBSERVER:
            name_arg = _argument(node, 1, "passname") or _argument(node, 99, "pass_name")
            if name_arg is None:
                return
            name = string_value(name_arg.value)
            if name is not None:
                self._found(name_arg, name, OBSERVER, "observer")
            elif isinstance(name_arg.value, cst.FormattedString):
                # f"pass_pattern_{i}": the runtime part is '*', as the registry writes it; any
                # entry the pattern matches registers it.
                pattern = _glob(name_arg.value)
                self.context.facts.globs.append(pattern)
                if pattern.strip("*") and not self._glob_registered(pattern):
                    self._report(name_arg, pattern, OBSERVER, "observer")
        elif callee == PATTERN_PASS and id(node) not in self._named_calls:
            name_arg = _argument(node, 0, "pass_name")
            name = string_value(name_arg.value) if name_arg else None
            if name is not None:
                self._found(node, name, PATTERN_PASS, "pattern")
        elif callee == "patch":
            self._check_patch(node)
        elif callee == "append" and node.args and _is_pattern_pass(node.args[0].value):
            # passes.append(PatternMatcherPass()): known by the list it goes into
            var = last_name(node.func.value) if isinstance(node.func, cst.Attribute) else ""
            if var and _argument(node.args[0].value, 0, "pass_name") is None:
                self._named_calls.add(id(node.args[0].value))
                self._found_unnamed_pattern(node.args[0].value, var)
        for arg in node.args:  # torch.compile(fn, options={"post_grad_custom_pre_pass": f})
            if arg.keyword is not None and arg.keyword.value == "options":
                self._check_hook_dict(arg.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_assignment(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check_assignment(node.target, node.value)

    # ---- helpers --------------------------------------------------------------------------
    def _check_assignment(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(value, (cst.List, cst.Tuple)):  # passes = [PatternMatcherPass(), ...]
            for element in value.elements:
                self._check_assignment(target, element.value)
        if isinstance(value, cst.Call) and last_name(value.func) == PATTERN_PASS:
            if _argument(value, 0, "pass_name") is None:
                # Unnamed: the pass is known by its variable (a computed pass_name is unknowable)
                var = last_name(target)
                if var and isinstance(target, (cst.Name, cst.Attribute)):
                    self._named_calls.add(id(value))
                    self._found_unnamed_pattern(value, var)
        if isinstance(target, cst.Attribute) and target.attr.value in CUSTOM_PASS_HOOKS:
            if "config" in last_name(target.value).lower():
                self._check_hook_value(target.attr.value, value)

    def _check_patch(self, node: cst.Call) -> None:
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in CUSTOM_PASS_HOOKS:
                self._check_hook_value(arg.keyword.value, arg.value)
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if positional:
            self._check_hook_dict(positional[0].value)
        if len(positional) == 2 and string_value(positional[0].value) in CUSTOM_PASS_HOOKS:
            self._check_hook_value(string_value(positional[0].value), positional[1].value)

    def _check_hook_dict(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Dict):
            for element in node.elements:
                key = string_value(element.key) if isinstance(element, cst.DictElement) else None
                if key in CUSTOM_PASS_HOOKS:
                    self._check_hook_value(key, element.value)

    def _check_hook_value(self, hook: str, value: cst.BaseExpression) -> None:
        if isinstance(value, cst.Name) and value.value == "None":
            return
        if isinstance(value, (cst.List, cst.Tuple)):
            # torch accepts a list of passes under one hook: each pass is its own finding
            for element in value.elements:
                if isinstance(element, cst.StarredElement):
                    self._found(element, "<expression>", f"custom pass hook {hook}", "custom_hook")
                else:
                    self._check_hook_value(hook, element.value)
            return
        name = last_name(value)
        if isinstance(value, cst.Lambda) or not name:
            name = "<lambda>" if isinstance(value, cst.Lambda) else "<expression>"
        self._found(value, name, f"custom pass hook {hook}", "custom_hook")

    def _check_scheduler_reorder(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        if not SCHEDULER_REORDER_NAME.match(name) or name in NOT_SCHEDULER_PASSES:
            return
        if node.returns is None:
            return
        returns = cst.Module([]).code_for_node(node.returns.annotation)
        if SCHEDULER_NODE in returns:
            self._found(node.name, node.name.value, "scheduler reorder", "scheduler")

    def _glob_registered(self, pattern: str) -> bool:
        registry = self.context.registry
        return registry.get_pass(pattern) is not None or any(
            fnmatchcase(entry.name, pattern) for entry in registry.passes)

    def _found_unnamed_pattern(self, node: cst.CSTNode, var: str) -> None:
        # Unnamed, it is known by its variable; qualified by module (and function) when the
        # variable name alone is ambiguous. Any of these spellings registers it.
        stem = PurePath(self.context.path).stem
        spellings = [var, f"{stem}.{var}"]
        if self._functions:
            spellings.append(f"{stem}.{self._functions[-1]}.{var}")
        if spellings in self.context.facts.alternatives:
            return  # passes = [PatternMatcherPass(), PatternMatcherPass()] is one finding
        self.context.facts.alternatives.append(spellings)
        registry = self.context.registry
        if any(registry.get_pass(name) is not None for name in spellings):
            return
        name = spellings[-1] if self._functions else var
        self._report(node, name, PATTERN_PASS + " (unnamed, known by its variable)", "pattern")

    def _found(self, node: cst.CSTNode, name: str, form: str, kind: str) -> None:
        self.context.facts.passes.append(name)
        if self.context.registry.get_pass(name) is None:
            self._report(node, name, form, kind)

    def _report(self, node: cst.CSTNode, name: str, form: str, kind: str) -> None:
        stage = "scheduler" if kind == "scheduler" else self.context.stage_guess
        hint = toml_pass_hint(name, stage, kind)
        self.report(node, self.MESSAGE.format(name=name, form=form, hint=one_line(hint)),
                    name=name, hint=hint)


def _is_pattern_pass(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and last_name(node.func) == PATTERN_PASS


def _argument(call: cst.Call, position: int, keyword: str) -> cst.Arg | None:
    positional = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg
        elif not arg.star:
            if positional == position:
                return arg
            positional += 1
    return None


def _glob(node: cst.FormattedString) -> str:
    return "".join(part.value if isinstance(part, cst.FormattedStringText) else "*"
                   for part in node.parts)
