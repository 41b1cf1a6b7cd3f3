"""Generated hostile files through the real ``lite_guard check`` CLI (round 6, LINT4).

A hypothesis strategy draws weird files by kind, with sizes as parameters: deep nesting
(parentheses, ``not`` chains, ``+`` chains, attribute chains, lambdas, indentation), huge literals
(integers past Python's 4,300-digit limit, long strings, long lists), long lines, BOMs and coding
cookies, UTF-16, Latin-1 without a cookie, NUL bytes, undecodable bytes named ``.py``, and valid
pass code written with CRLF / CR line ends, a BOM, tabs, form feeds and Unicode line and
paragraph separators (which Python does not count as line ends). Each example is a fresh tree
(the generated files beside ``real_pass.py``) linted by a subprocess, bounded in time, asserting:

* the documented exit code (1: the sibling's pass is always a finding), no traceback, stderr only
  the summary lines;
* every stdout line is one finding, ``path:line:col CODE message``, and a generated file gets at
  most one LG900 line (where, what, what to do), never anything else when it holds no pass;
* nothing is lost: the sibling's finding is reported, and a valid pass inside a weird file is
  reported at the exact line Python gives it.

Heavy sizes (files of megabytes, chains of 100,000) are ``@pytest.mark.slow``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BIN = Path(sys.executable).parent
BOUND = 120  # seconds for one CLI run over a generated tree
SEED = "from torch._inductor.custom_graph_pass import CustomGraphPass\n"  # makes a file parsed
REAL_PASS = SEED + '''

class MyPass(CustomGraphPass):
    def __call__(self, graph):
        return graph

    def uuid(self):
        return "my-pass"
'''
REAL = ("real_pass.py:4:7 LG001 graph pass 'real_pass:MyPass' (class deriving from CustomGraphPass)"
        ' is not in any registry; register it: [[pass]] name = "real_pass:MyPass", stage ='
        ' "post_grad", lite = "never", kind = "class"')
FINDING = re.compile(r"^(?P<path>[^:\n]+\.py):(?P<line>\d+):(?P<col>\d+) (?P<code>LG\d{3}) (?P<msg>\S.*)$")
SUMMARY = re.compile(r"^(registries: .*|linted \d+ file\(s\) .*|\d+ finding\(s\))$")


# ---- what a generated file is ------------------------------------------------------------------

def _weird(kind: str, n: int) -> bytes:
    """A file Python may refuse (or parse only with effort) and that holds no pass."""
    body = {
        "parens": "x = " + "(" * n + "1" + ")" * n,
        "not_chain": "x = " + "not " * n + "1",
        "plus_chain": "x = " + "+".join(["1"] * n),
        "attr_chain": "x = a" + ".b" * n,
        "lambdas": "f = " + "lambda: " * n + "1",
        "subscripts": "x = a" + "[0]" * n,
        # quadratic in n: capped (Python stops at 100 levels anyway)
        "indent": "".join("    " * i + f"if x{i}:\n" for i in range(min(n, 300)))
        + "    " * min(n, 300) + "pass",
        "big_int": "x = " + "9" * n,
        "long_string": "x = '" + "a" * n + "'",
        "long_list": "x = [" + "1, " * n + "]",
        "long_comment": "#" * n,
    }[kind]
    return (SEED + body + "\n").encode()


def _raw(kind: str, n: int) -> bytes:
    """Bytes that are not UTF-8 Python, or Python no parser accepts."""
    return {
        "nul": SEED.encode() + b"x = 1\n" + b"\0" * max(1, n % 7) + b"\ny = 2\n",
        "utf16": (SEED + "x = 1\n").encode("utf-16"),
        "latin1": SEED.encode() + b"x = '\xe9" * max(1, n % 5) + b"'\n",
        "binary": bytes((i * 131 + n) % 256 for i in range(n)) + b"\xff\xfe\x00CustomGraphPass",
        "bom_cookie": b"\xef\xbb\xbf# coding: latin-1\n" + SEED.encode() + b"x = 1\n",
        "bogus_cookie": b"# -*- coding: no-such-codec -*-\n" + SEED.encode(),
        "lone_surrogate": SEED.encode() + b"x = '\xed\xa0\x80'\n",
    }[kind]


@st.composite
def valid_pass_file(draw) -> tuple[bytes, str, int]:
    """Valid pass code with odd but legal bytes; returns (data, class name, line of the name)."""
    name = draw(st.sampled_from(["Fold", "Strip", "Ｆold2"]))  # NFKC: Ｆ reads as F
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    bom = draw(st.booleans())
    # separators Python does not count as line ends, inside a comment and a string
    odd = draw(st.lists(st.sampled_from(["\u2028", "\u2029", "\x0c", "\x1c", "\x85", "\t", "é"]),
                        max_size=6))
    blank = draw(st.integers(0, 3))
    lines = [SEED.rstrip("\n"), "# " + "".join(odd) + " comment", f"S = '{''.join(odd)}'"]
    lines += [""] * blank
    lines += [f"class {name}(CustomGraphPass):", "\tdef __call__(self, graph):",
              "\t\treturn graph", "", "\tdef uuid(self):", "\t\treturn 'x'"]
    text = end.join(lines) + end
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
    return data, name, 4 + blank


KINDS = ["parens", "not_chain", "plus_chain", "attr_chain", "lambdas", "subscripts", "indent",
         "big_int", "long_string", "long_list", "long_comment"]
RAW = ["nul", "utf16", "latin1", "binary", "bom_cookie", "bogus_cookie", "lone_surrogate"]


@st.composite
def hostile_tree(draw, big: bool) -> dict[str, tuple[bytes, str | None, int]]:
    """Up to four generated files: name -> (bytes, pass class expected or None, its line)."""
    files: dict[str, tuple[bytes, str | None, int]] = {}
    sizes = st.integers(1_000, 200_000) if big else st.integers(1, 400)
    for i in range(draw(st.integers(1, 4))):
        choice = draw(st.sampled_from(["weird", "raw", "valid"]))
        if choice == "weird":
            files[f"w{i}.py"] = (_weird(draw(st.sampled_from(KINDS)), draw(sizes)), None, 0)
        elif choice == "raw":
            files[f"r{i}.py"] = (_raw(draw(st.sampled_from(RAW)), draw(sizes)), None, 0)
        else:
            data, name, line = draw(valid_pass_file())
            files[f"v{i}.py"] = (data, name, line)
    return files


# ---- the check -----------------------------------------------------------------------------------

def _lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "LITE_GUARD_CACHE_DIR": str(root.parent / "cache")}
    env.pop("LITE_GUARD_NO_PREFILTER", None)
    return subprocess.run([str(BIN / "lite_guard"), "check", "--no-project", "--no-cache", "."],
                          cwd=root, capture_output=True, text=True, timeout=BOUND, env=env,
                          errors="replace")


def _assert_contained(tmp: Path, files: dict[str, tuple[bytes, str | None, int]]) -> None:
    root = tmp / "tree"
    root.mkdir()
    (root / "real_pass.py").write_text(REAL_PASS)
    for name, (data, _, _) in files.items():
        (root / name).write_bytes(data)
    result = _lint(root)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert all(SUMMARY.match(line) for line in result.stderr.splitlines()), result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert REAL in lines  # nothing lost: the sibling's finding survives
    by_file: dict[str, list[re.Match]] = {}
    for line in lines:
        match = FINDING.match(line)
        assert match is not None, f"not one finding per line: {line[:300]!r}"
        by_file.setdefault(match["path"], []).append(match)
    for name, (data, pass_name, pass_line) in files.items():
        found = by_file.get(name, [])
        if pass_name is None:
            # no pass in it: silent, or one LG900 saying where, what and what to do
            assert len(found) <= 1, [m.group(0)[:200] for m in found]
            for match in found:
                assert match["code"] == "LG900" and "not checked" in match["msg"], match.group(0)
        else:
            module = name[:-3]
            shown = pass_name.replace("Ｆ", "F")  # ast gives the NFKC form of an identifier
            assert [(int(m["line"]), m["code"]) for m in found] == [(pass_line, "LG001")], \
                [m.group(0)[:200] for m in found]
            assert f"graph pass '{module}:{shown}' (class deriving from CustomGraphPass)" \
                in found[0]["msg"]


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(files=hostile_tree(big=False))
def test_generated_hostile_files_are_one_line_each_and_lose_nothing(tmp_path_factory, files):
    _assert_contained(tmp_path_factory.mktemp("hostile"), files)


@pytest.mark.slow
@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(files=hostile_tree(big=True))
def test_generated_heavy_hostile_files_are_bounded_and_lose_nothing(tmp_path_factory, files):
    _assert_contained(tmp_path_factory.mktemp("hostile-big"), files)


@pytest.mark.parametrize("kind,n,expected", [
    ("nul", 1, "r.py:1:1 LG900 cannot parse: source code string cannot contain null bytes; the"
               " file was not checked"),
    ("utf16", 1, "r.py:1:1 LG900 cannot decode file: 'utf-8' codec can't decode byte 0xff in"
                 " position 0: invalid start byte; the file was not checked (save it as UTF-8, or"
                 " fix its coding cookie)"),
])
def test_each_unreadable_kind_is_its_exact_line(tmp_path, kind, n, expected):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "real_pass.py").write_text(REAL_PASS)
    (root / "r.py").write_bytes(_raw(kind, n))
    result = _lint(root)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stdout.splitlines() == [expected, REAL]


@pytest.mark.parametrize("kind,n,expected", [
    ("parens", 300, "w.py:2:205 LG900 cannot parse: too many nested parentheses; the file was not"
                    " checked (parsed as Python {v}; if it is written for a newer Python, run"
                    " lite_guard with that one)"),
    ("big_int", 5000, None),  # the message is CPython's own: checked by prefix below
    ("indent", 120, "w.py:102:1 LG900 cannot parse: too many levels of indentation; the file was"
                    " not checked (parsed as Python {v}; if it is written for a newer Python, run"
                    " lite_guard with that one)"),
])
def test_each_parser_limit_is_its_exact_line(tmp_path, kind, n, expected):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "real_pass.py").write_text(REAL_PASS)
    (root / "w.py").write_bytes(_weird(kind, n))
    result = _lint(root)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stdout.splitlines()  # sorted by path: real_pass.py first
    assert lines[:1] == [REAL] and len(lines) == 2, result.stdout
    if expected is None:
        assert lines[1].startswith("w.py:2:1 LG900 cannot parse: Exceeds the limit (4300 digits)")
    else:
        assert lines[1] == expected.format(v=f"{sys.version_info[0]}.{sys.version_info[1]}")
