"""Installs the lint reads by what the code *is*, not by how it is spelled (round 6, LINT4):
setattr reached through an alias, ``functools.partial`` or starred arguments; a pass class built
by ``type(...)``; code of torch's compile pipeline replaced at run time (DeepSpeed / torch-spyre
style monkeypatching, ``exec`` into a torch module's namespace). What cannot be resolved is a
finding with a clear message, never skipped.

Each case writes a real file, runs the real ``lite_guard check`` CLI on it, with the prefilter
on and off, and asserts the exact path, line, column, code and message of every finding."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
PASS = "def my_pass(graph):\n    graph.eliminate_dead_code()\n"


def _check(tmp_path: Path, files: dict[str, str], prefilter: bool,
           target: str = ".") -> subprocess.CompletedProcess:
    root = tmp_path / "tree"
    root.mkdir(exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    env = {**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("LITE_GUARD_NO_PREFILTER", None)
    if not prefilter:
        env["LITE_GUARD_NO_PREFILTER"] = "1"
    result = subprocess.run([str(BIN / "lite_guard"), "check", "--no-project", "--no-cache",
                             target], cwd=root, capture_output=True, text=True, timeout=120, env=env)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _lg001(where: str, name: str, form: str, stage: str, kind: str = "function") -> str:
    return (f"{where} LG001 graph pass '{name}' ({form}) is not in any registry; register it:"
            f' [[pass]] name = "{name}", stage = "{stage}", lite = "never", kind = "{kind}"')


def _lg006(where: str, module: str, key: str, form: str) -> str:
    return (f"{where} LG006 store into {module} under a key that cannot be resolved statically"
            f" ('{key}', {form}); a custom-pass hook installed so is not checked: write the key"
            " as a literal or a constant, or review the store and add"
            " '# lite-guard: ignore[LG006]' to its line")


IMPORT = "import functools\nimport torch._inductor.config as config\n\n\n"
PATCH = "replaces {} at run time, a monkeypatch of torch's compile pipeline that no hook sees"

CASES = {
    # setattr(*ARGS), ARGS a tuple display: the store it spells
    "starred_tuple": (
        IMPORT + PASS + '\n\nARGS = (config, "post_grad_custom_post_pass", my_pass)\nsetattr(*ARGS)\n',
        [_lg001("m.py:9:47", "m:my_pass", "installed in post_grad_custom_post_pass", "post_grad")]),
    # s = setattr; s(config, key, p)
    "alias": (
        IMPORT + PASS + '\n\ns = setattr\ns(config, "post_grad_custom_pre_pass", my_pass)\n',
        [_lg001("m.py:10:40", "m:my_pass", "installed in post_grad_custom_pre_pass", "post_grad")]),
    # partial(setattr, config) bound below the function that calls it
    "partial": (
        IMPORT + PASS + '\n\ndef install(p):\n    put("joint_custom_pre_pass", p)\n\n\n'
        'put = functools.partial(setattr, config)\ninstall(my_pass)\n',
        [_lg001("m.py:10:34", "m:install.p", "installed in joint_custom_pre_pass; the value 'p'"
                " cannot be resolved statically, register what flows in", "joint_graph")]),
    # the key cannot be read: LG006 names the alias it went through
    "partial_unresolved_key": (
        IMPORT + 'put = functools.partial(setattr, config)\n\n\ndef apply(key, value):\n'
        '    put(key, value)\n',
        [_lg006("m.py:9:9", "torch._inductor.config", "key", "setattr(...) through put")]),
    # m.__setattr__ kept in a name
    "bound_dunder": (
        IMPORT + PASS + '\n\nput = config.__setattr__\nput("post_grad_custom_post_pass", my_pass)\n',
        [_lg001("m.py:10:35", "m:my_pass", "installed in post_grad_custom_post_pass", "post_grad")]),
    # setattr(*args) whose arguments cannot be read, in a file importing a config module
    "starred_unknown": (
        IMPORT + 'def apply(args):\n    setattr(*args)\n',
        [_lg006("m.py:6:5", "torch._inductor.config", "<*args>", "setattr(...)")]),
    # a pass class built by type(...)
    "type_class": (
        "from torch._inductor.custom_graph_pass import CustomGraphPass\n\n\n"
        "def _call(self, graph):\n    graph.eliminate_dead_code()\n\n\n"
        'Strip = type("Strip", (CustomGraphPass,), {"__call__": _call, "uuid": lambda s: "x"})\n',
        [_lg001("m.py:8:9", "m:Strip", "class deriving from CustomGraphPass, built by type(...)",
                "post_grad", "class")]),
    # DeepSpeed style: a pipeline function replaced
    "module_function": (
        "import torch._inductor.fx_passes.post_grad as post_grad\n\n\n"
        "def my_post_grad_passes(gm, is_inference):\n    gm.graph.eliminate_dead_code()\n\n\n"
        "post_grad.post_grad_passes = my_post_grad_passes\n",
        [_lg001("m.py:8:1", "m:my_post_grad_passes",
                PATCH.format("torch._inductor.fx_passes.post_grad.post_grad_passes"), "post_grad")]),
    # a method of a torch class, a lambda through the dotted path, setattr with a literal name
    "class_method_lambda_setattr": (
        "import torch\nfrom torch._inductor.scheduler import Scheduler\n"
        "from torch._functorch import partitioners\n\n\n"
        "def solve(*args):\n    return None\n\n\n"
        "def install():\n    Scheduler.dead_node_elimination = lambda _: None\n"
        '    setattr(partitioners, "solve_min_cut", solve)\n'
        "    torch._inductor.fx_passes.joint_graph.joint_graph_passes = solve\n",
        [_lg001("m.py:11:5", "m:install.<locals>.<lambda>",
                PATCH.format("torch._inductor.scheduler.Scheduler.dead_node_elimination"),
                "post_grad"),
         _lg001("m.py:12:5", "m:solve", PATCH.format("torch._functorch.partitioners.solve_min_cut"),
                "aot"),
         _lg001("m.py:13:5", "m:solve",
                PATCH.format("torch._inductor.fx_passes.joint_graph.joint_graph_passes"),
                "joint_graph")]),
    # an entry of a table of torch's pipeline replaced: Inductor's lowerings, decompositions
    "table_entries": (
        "import torch\nfrom torch._inductor.lowering import lowerings\n"
        "from torch._inductor import decomposition\n\naten = torch.ops.aten\n\n\n"
        "def _gelu_fast(x):\n    return x\n\n\n"
        "lowerings[aten.gelu.default] = _gelu_fast\n"
        "decomposition.decompositions[aten.silu.default] = _gelu_fast\n",
        [_lg001("m.py:12:1", "m:_gelu_fast",
                PATCH.format("torch._inductor.lowering.lowerings[aten.gelu.default]"), "post_grad"),
         _lg001("m.py:13:1", "m:_gelu_fast",
                PATCH.format("torch._inductor.decomposition.decompositions[aten.silu.default]"),
                "post_grad")]),
    # exec(source, module.__dict__): named by the function that runs it
    "exec_into_module": (
        "import inspect\n\nimport torch._functorch.partitioners as parts\n\n\n"
        "def splice():\n    src = inspect.getsource(parts.solve_min_cut)\n"
        "    exec(src, parts.__dict__)\n",
        [_lg001("m.py:8:5", "m:splice", "executes code into the namespace of"
                " torch._functorch.partitioners at run time (exec), redefining torch's compile"
                " pipeline where no hook sees it", "aot")]),
    # round 7 (third-party red team): unittest.mock's patchers are stores too (ipex patches
    # Scheduler.get_backend with patch.object); so are writes through a module's __dict__ / vars()
    "mock_patch_object": (
        "from unittest import mock\n\nimport torch._inductor.fx_passes.post_grad as pg\n\n\n"
        + PASS.replace("my_pass", "mine") + "\n\ndef run(f):\n"
        "    with mock.patch.object(pg, \"post_grad_passes\", mine):\n        return f()\n",
        [_lg001("m.py:11:10", "m:mine", PATCH.format(
            "torch._inductor.fx_passes.post_grad.post_grad_passes"), "post_grad")]),
    "mock_patch_string_decorator": (
        "from unittest.mock import patch\n\n\n" + PASS.replace("my_pass", "mine")
        + "\n\n@patch(\"torch._inductor.fx_passes.post_grad.post_grad_passes\", mine)\n"
        "def run(f):\n    return f()\n",
        [_lg001("m.py:8:2", "m:mine", PATCH.format(
            "torch._inductor.fx_passes.post_grad.post_grad_passes"), "post_grad")]),
    "mock_patch_multiple_class": (
        "import unittest.mock\n\nfrom torch._inductor.scheduler import Scheduler\n\n\n"
        "def get_backend(self, device):\n    return None\n\n\n"
        "def run(f):\n    with unittest.mock.patch.multiple(Scheduler, get_backend=get_backend):\n"
        "        return f()\n",
        [_lg001("m.py:11:10", "m:get_backend", PATCH.format(
            "torch._inductor.scheduler.Scheduler.get_backend"), "post_grad")]),
    "module_dict_writes": (
        "import torch._inductor.fx_passes.post_grad as pg\n\n\n" + PASS.replace("my_pass", "mine")
        + "\n\npg.__dict__[\"post_grad_passes\"] = mine\nvars(pg)[\"post_grad_passes\"] = mine\n",
        [_lg001(f"m.py:{line}:1", "m:mine", PATCH.format(
            "torch._inductor.fx_passes.post_grad.post_grad_passes"), "post_grad") for line in (8, 9)]),
    # data is not code: a string built by arithmetic stored on the graph being lowered (torch_npu);
    # a progress bar torch's module imported from torch.hub is not the pipeline (unsloth);
    # a patcher without a replacement puts a MagicMock there, no code of the user's
    "data_and_foreign_names": (
        "import torch._inductor.async_compile\nfrom unittest import mock\n"
        "from torch._inductor.virtualized import V\nfrom torch.hub import tqdm\n\n\n"
        "def note(reason: str):\n    msg = \"index put. \"\n    msg = f\"{msg} {reason}\"\n"
        "    msg = msg + reason\n    V.graph.disable_cudagraphs_reason = msg\n\n\n"
        "def relabel():\n    def replaced_tqdm(*args, **kwargs):\n        return tqdm(*args, **kwargs)\n\n"
        "    torch._inductor.async_compile.tqdm = replaced_tqdm\n\n\n"
        "@mock.patch(\"torch._inductor.fx_passes.post_grad.post_grad_passes\")\n"
        "def test_it(patched):\n    return patched\n",
        []),
    # data is not code; config keys (nested classes too) are not monkeypatches; torch.backends
    # is not the compile pipeline; a setattr on an object of one's own is not a store into config
    "controls": (
        "import torch\nfrom torch._functorch import partitioners\n\n\n"
        "def setup(obj, name, value):\n    partitioners.DEBUG = 3\n"
        "    torch._inductor.config.aten_distributed_optimizations.enable_overlap_scheduling = (\n"
        "        torch.cuda.is_available())\n"
        "    torch.backends.cudnn.benchmark = torch.cuda.is_available()\n"
        "    s = setattr\n    s(obj, name, value)\n",
        []),
}


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_dynamic_install_is_one_exact_finding(tmp_path, case, prefilter):
    source, expected = CASES[case]
    result = _check(tmp_path, {"m.py": source}, prefilter)
    assert result.stdout.splitlines() == expected, result.stdout + result.stderr
    assert result.returncode == (1 if expected else 0), result.stderr


def test_a_registered_monkeypatch_is_accepted(tmp_path):
    source, _ = CASES["module_function"]
    root = tmp_path / "tree"
    root.mkdir()
    (root / "m.py").write_text(source, encoding="utf-8")
    (tmp_path / "r.toml").write_text('[[pass]]\nname = "m:my_post_grad_passes"\nstage = "post_grad"'
                                     '\nlite = "never"\nwhy = "reviewed"\n', encoding="utf-8")
    result = subprocess.run([str(BIN / "lite_guard"), "check", "--no-project", "--no-cache",
                             "--registry", str(tmp_path / "r.toml"), "."], cwd=root,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")})
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr


FOREIGN = '''import onnx_ir
import torch
from onnx_ir import Graph


def _fix_topk(graph_like: onnx_ir.Graph) -> None:
    pass


def _fix_gather(graph_like: Graph) -> None:
    pass


def _fix_fx(gm: torch.fx.GraphModule) -> None:
    gm.recompile()


FIXES = [_fix_topk, _fix_gather, _fix_fx]
'''


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
def test_a_graph_annotation_imported_from_another_package_is_not_an_fx_graph(tmp_path, prefilter):
    """transformers' ONNX IR fixes take ``onnx_ir.Graph``: named like torch's Graph, resolved
    through the file's imports to another package, so not passes; the FX one still is."""
    result = _check(tmp_path, {"m.py": FOREIGN}, prefilter)
    assert result.stdout.splitlines() == [_lg001(
        "m.py:14:5", "m:_fix_fx", "function taking an FX graph (annotated GraphModule), handed on"
        " as '_fix_fx' in m", "post_grad")], result.stdout + result.stderr


@pytest.mark.parametrize("case", ["alias", "type_class", "module_function", "exec_into_module",
                                  "table_entries"])
def test_flake8_and_lintrunner_report_the_same_lines(tmp_path, case):
    """The adapters are the same engine: flake8 (``LG`` codes) and the lintrunner format name
    the same line, column and message as ``check``."""
    import json

    source, expected = CASES[case]
    root = tmp_path / "tree"
    root.mkdir()
    (root / "m.py").write_text(source, encoding="utf-8")
    env = {**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")}
    flake8 = subprocess.run([str(BIN / "flake8"), "--select", "LG", "--isolated", "m.py"],
                            cwd=root, capture_output=True, text=True, timeout=120, env=env)
    assert "Traceback" not in flake8.stderr, flake8.stderr
    assert flake8.stdout.splitlines() == [line.replace(" LG", ": LG", 1) for line in expected]
    lint = subprocess.run([str(BIN / "lite_guard"), "check", "--no-project", "--no-cache",
                           "--format", "lintrunner", "."], cwd=root, capture_output=True, text=True,
                          timeout=120, env=env)
    messages = [json.loads(line) for line in lint.stdout.splitlines() if line.strip()]
    assert [(m["line"], m["char"], m["name"], m["description"].split("\n", 1)[0])
            for m in messages] == [(int(e.split(":")[1]), int(e.split(":")[2].split()[0]), "LG001",
                                   e.split(" LG001 ", 1)[1]) for e in expected]
