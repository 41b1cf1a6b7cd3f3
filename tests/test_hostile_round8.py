"""Hostile inputs of round 8: a registry of many thousand passes listed (rich took 2 minutes to
draw 100,000 rows), and a long chain of calls (``a()()()...``, ``a.b().b()...``) next to a
real pass. The index looked through every call of a chain at every call of it (quadratic time,
and recursion as deep as the chain); a chain deeper than the index's reader can follow was
reported as CPython's parser giving up, which it had not. Real files, the real CLI (helpers of
tests/test_hostile.py)."""

from __future__ import annotations

import ast
import re

import pytest

from test_hostile import REAL_FINDING, hostile_tree, lite_guard

from lint_rules import index

# What makes the index read a file whole (the prefilter passes over files without it).
TRIGGER = "from torch._inductor.pattern_matcher import PatternMatcherPass\ny = PatternMatcherPass\n"


def _chain(depth: int) -> ast.expr:
    """``f()()...()``, ``depth`` calls deep, built without the parser (no recursion)."""
    node: ast.expr = ast.Name(id="f", ctx=ast.Load())
    for _ in range(depth):
        node = ast.Call(func=node, args=[], keywords=[])
    return node


def test_the_callee_name_of_a_deep_call_chain_is_read_without_recursion():
    """``_last`` recursed once per call: 100,000 calls raised RecursionError, and every call of
    an n-call chain walking the rest of it made the index quadratic in n."""
    assert index._last(_chain(100_000)) == ""  # deeper than a decorator factory: no callee name
    assert index._last(_chain(1)) == "f"
    assert index._last(ast.parse('register("k")(p)', mode="eval").body) == "register"


def test_a_1500_call_chain_next_to_a_pass_is_read_and_the_pass_found(tmp_path):
    root = hostile_tree(tmp_path, {"chain.py": TRIGGER + "x = a" + "()" * 1500 + "\n"})
    result = lite_guard("check", "--no-project", "--no-cache", ".", cwd=root)
    assert result.returncode == 1, result.stderr
    assert REAL_FINDING.search(result.stdout), result.stdout
    assert " LG900 " not in result.stdout


def test_a_method_chain_too_deep_for_the_reader_is_one_lg900_naming_its_depth(tmp_path):
    """CPython parses 4000 chained ``.b()`` (8000 levels); the index's reader cannot follow
    them. The line says so, not that Python's parser gave up."""
    root = hostile_tree(tmp_path, {"chain.py": TRIGGER + "x = a" + ".b()" * 4000 + "\n"})
    result = lite_guard("check", "--no-project", "--no-cache", ".", cwd=root)
    assert result.returncode == 1, result.stderr
    assert REAL_FINDING.search(result.stdout), result.stdout
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("chain.py:")]
    assert line == ("chain.py:3:1 LG900 code nested 8004 levels deep is too deep for lite-guard's"
                    " reader; the file was not checked (split the expression)")
    assert not re.search("Python's parser", result.stdout)


def test_a_registry_of_thousands_of_passes_lists_as_one_plain_line_each(tmp_path):
    rows = "".join(f'[[pass]]\nname = "proj.m{i}:p"\nstage = "post_grad"\nlite = "never"\n'
                   f'kind = "function"\nwhy = "w{i}"\n\n' for i in range(2500))
    root = hostile_tree(tmp_path, {"reg.toml": rows + '[[pass]]\nname = "proj.esc:p"\n'
                                   'stage = "post_grad"\nlite = "never"\nwhy = "a\\u001b[2J\\tb"\n'})
    result = lite_guard("registry", "list", "--no-project", "--registry", "reg.toml", cwd=root)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    count = int(lines[0].split()[0])
    assert lines[0] == f"{count} passes (tab-separated: more than 2000 rows)"
    assert lines[1] == "name\tstage\tlite\tkind\tgated by\twhy"
    assert len(lines) == count + 2
    assert "proj.m2499:p\tpost_grad\tnever\tfunction\t\tw2499" in lines
    assert "proj.esc:p\tpost_grad\tnever\tfunction\t\ta\\x1b[2J\\tb" in lines  # escaped
    assert "\x1b" not in result.stdout


# Shapes a generated or hostile file takes (n repeats of one construct, beside a real pass):
# each must be read in bounded time with the pass found and nothing reported unreadable.
SHAPES = {
    "attribute chain": lambda n: "x = a" + ".b" * n,
    "subscript chain": lambda n: "x = a" + "[0]" * n,
    "elif chain": lambda n: "if x:\n    pass\n" + "".join(
        f"elif x == {i}:\n    y = {i}\n" for i in range(n)),
    "decorators": lambda n: "".join(f"@d{i}\n" for i in range(n)) + "def f(gm):\n    pass",
    "implicit string concatenation": lambda n: "x = " + " ".join(['"a"'] * n),
    "alias chain": lambda n: "c0 = PatternMatcherPass\n" + "".join(
        f"c{i} = c{i - 1}\n" for i in range(1, n)),
    "boolean chain": lambda n: "x = " + " and ".join(f"a{i}" for i in range(n)),
    "comparison chain": lambda n: "x = " + " < ".join(f"a{i}" for i in range(n)),
    "call arguments": lambda n: "f(" + ", ".join(f"a{i}" for i in range(n)) + ")",
    "f-string fields": lambda n: 'x = f"' + "{a}" * n + '"',
    "tuple unpacking": lambda n: (", ".join(f"a{i}" for i in range(n)) + " = "
                                  + ", ".join(f"b{i}" for i in range(n))),
    "dict display": lambda n: "d = {" + ", ".join(f'"k{i}": f{i}' for i in range(n)) + "}",
    "comprehension clauses": lambda n: "x = [1 " + " ".join(f"for a{i} in b" for i in range(n)) + "]",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_long_construct_next_to_a_pass_is_read_and_the_pass_found(tmp_path, shape):
    root = hostile_tree(tmp_path, {"long.py": TRIGGER + SHAPES[shape](900) + "\n"})
    result = lite_guard("check", "--no-project", "--no-cache", ".", cwd=root)
    assert result.returncode == 1, result.stderr
    assert REAL_FINDING.search(result.stdout), result.stdout
    assert " LG900 " not in result.stdout, result.stdout
