"""The measuring half of bench/compile_zoo.py: runs in a fresh process, measures one thing, prints
one JSON line. The driver (compile_zoo.py) spawns it; the method is described there.

    python bench/compile_zoo_worker.py measure VARIANT MODEL --steps N
    python bench/compile_zoo_worker.py guard MODEL --repeats K --steps N
    python bench/compile_zoo_worker.py profile MODEL        (cProfile of one cold lite first call)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MODELS = ("mlp", "llama", "convnet", "moe")
VARIANTS = ("eager", "aot_eager", "upstream_lite", "lite", "inductor")
WARMUP_STEPS = 5


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _compiled(variant: str, model):
    import torch

    upstream = getattr(torch.compile, "__wrapped__", torch.compile)
    if variant == "eager":
        return model
    if variant == "aot_eager":
        return upstream(model, backend="aot_eager")
    if variant == "upstream_lite":
        return upstream(model, mode="lite")
    if variant in ("lite", "lite_noguard"):
        return torch.compile(model, backend="lite")
    if variant == "inductor":
        return upstream(model)
    raise SystemExit(f"unknown variant {variant!r}")


def _step_times(model, inputs, fn, steps: int) -> list[float]:
    from tests.compiler_models import run_step

    times = []
    for _ in range(steps):
        start = time.perf_counter()
        run_step(model, inputs, fn, train=True)
        times.append(time.perf_counter() - start)
    return times


def worker_measure(variant: str, model_name: str, steps: int) -> dict:
    """One variant, one model, this (fresh) process: first call, steady step, peak RSS."""
    import torch

    from tests.compiler_models import build, run_step

    # The package under test is imported inside the clock: for ours, "first call" is import plus
    # first step (aot_eager pays the same torch._dynamo imports inside its first step).
    import_start = time.perf_counter()
    if variant in ("lite", "lite_noguard"):
        import lite_compiler  # noqa: F401  (routes backend="lite" through the package as users do)
    if variant == "lite_noguard":
        _guard_off().__enter__()  # for the whole process: the backward compiles at first backward
    breakdown = _time_lite_parts() if variant == "lite" else {}
    # Inside the clock: these import our backend, and with it torch._dynamo (import lite_compiler
    # no longer does), which aot_eager's torch.compile imports inside its clock.
    package_import = time.perf_counter() - import_start
    torch.manual_seed(0)
    model, inputs = build(model_name)
    rss_before, modules_before = _maxrss_mib(), set(sys.modules)
    # torch.compile(...) itself imports torch._dynamo: inside the clock for every variant.
    start = time.perf_counter()
    fn = _compiled(variant, model)
    run_step(model, inputs, fn, train=True)
    first = time.perf_counter() - start + package_import
    inductor_modules = sum(1 for name in set(sys.modules) - modules_before
                           if name.startswith("torch._inductor"))
    rss_first = _maxrss_mib()
    _step_times(model, inputs, fn, WARMUP_STEPS)
    times = _step_times(model, inputs, fn, steps)
    ledger = (sys.modules["lite_compiler"].last_ledger()
              if variant.startswith("lite") and "lite_compiler" in sys.modules else None)
    return {
        "variant": variant, "model": model_name, "first_call_s": first,
        "package_import_s": package_import,
        "step_ms": statistics.median(times) * 1e3,
        "step_ms_min": min(times) * 1e3,
        "rss_compile_mib": rss_first - rss_before, "rss_peak_mib": _maxrss_mib(),
        "rss_steps_mib": _maxrss_mib() - rss_first,
        "ledger_entries": len(ledger) if ledger is not None else None,
        "breakdown_s": breakdown, "inductor_modules": inductor_modules,
    }


def _time_lite_parts() -> dict[str, float]:
    """Time three parts of our lite compile by wrapping them (bench process only; same behaviour):
    guard hook installation (with the Inductor modules it imports), registry load + config
    derivation, and building the selective decomposition table (imports Inductor's table)."""
    import lite_compiler.backend as backend
    import lite_compiler.hooks as hooks

    spent = {"guard_install": 0.0, "registry": 0.0, "decomposition_table": 0.0}

    def timing(key: str, fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start
        return wrapper

    # The timer stands in the guard's own hooks._install: the guard refuses that unless the
    # registry names it lite = "always" (instrumentation that only measures).
    from bench.timing_registry import register_timing_wrapper

    register_timing_wrapper(f"{__name__}:_time_lite_parts.<locals>.timing.<locals>.wrapper",
                            "bench/compile_zoo_worker.py times the guard's hook installation")
    hooks._install = timing("guard_install", hooks._install)
    backend.registry = timing("registry", backend.registry)
    backend.derive_configs = timing("registry", backend.derive_configs)
    backend.selective_decomposition_table = timing("decomposition_table",
                                                   backend.selective_decomposition_table)
    return spent


@contextlib.contextmanager
def _guard_off():
    """Our lite compile with no guard session: hooks never installed, no pass checked."""
    from lite_compiler.backend import LiteCompiler

    saved = LiteCompiler.active
    LiteCompiler.active = lambda self, graph: contextlib.nullcontext()  # type: ignore[method-assign]
    try:
        yield
    finally:
        LiteCompiler.active = saved  # type: ignore[method-assign]


def worker_guard(model_name: str, repeats: int, steps: int) -> dict:
    """In one process, after a warm-up compile of each (lazy imports paid): first-call time of
    aot_eager, ours with the guard and ours without it, alternated; registry cost; ledger time;
    then steady steps of ours vs aot_eager in alternating blocks."""
    import torch

    import lite_compiler
    from lite_compiler.config import derive_configs, registry
    from tests.compiler_models import build, run_step

    upstream = getattr(torch.compile, "__wrapped__", torch.compile)

    def first_call(kind: str) -> float:
        torch._dynamo.reset()
        model, inputs = build(model_name)
        with _guard_off() if kind == "lite_noguard" else contextlib.nullcontext():
            fn = upstream(model, backend="aot_eager") if kind == "aot_eager" else \
                torch.compile(model, backend="lite")
            start = time.perf_counter()
            run_step(model, inputs, fn, train=True)
            return time.perf_counter() - start

    import lite_compiler.guard as guard
    import lite_compiler.hooks as hooks

    own = [0.0]  # the guard's own work: patching hooks in and out, checking passes

    def timing(fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                own[0] += time.perf_counter() - start
        return wrapper

    # The guard's own work: patching its hooks in and out (hooks) and checking passes (guard).
    hooks._install, hooks._uninstall, guard.check = (
        timing(hooks._install), timing(hooks._uninstall), timing(guard.check))

    kinds = ("aot_eager", "lite", "lite_noguard")
    for kind in kinds:
        first_call(kind)
    times: dict[str, list[float]] = {k: [] for k in kinds}
    ledger_s, own_s, entries = [], [], 0
    for _ in range(repeats):
        for kind in kinds:
            lite_compiler.clear_ledgers()
            own[0] = 0.0
            times[kind].append(first_call(kind))
            if kind == "lite":
                own_s.append(own[0])
                ledgers = lite_compiler.all_ledgers("lite")
                ledger_s.append(sum(e.seconds for ledger in ledgers for e in ledger))
                entries = sum(len(ledger) for ledger in ledgers)
    reg = []
    for _ in range(repeats):
        start = time.perf_counter()
        derive_configs(registry(()))
        reg.append(time.perf_counter() - start)

    # Run time: ours and aot_eager compiled side by side, steps timed in alternating blocks.
    torch._dynamo.reset()
    model_a, inputs_a = build(model_name)
    model_l, inputs_l = build(model_name)
    fn_a = upstream(model_a, backend="aot_eager")
    fn_l = torch.compile(model_l, backend="lite")
    _step_times(model_a, inputs_a, fn_a, WARMUP_STEPS)
    _step_times(model_l, inputs_l, fn_l, WARMUP_STEPS)
    run_a, run_l, block = [], [], 10
    for _ in range(max(1, steps // block)):
        run_a += _step_times(model_a, inputs_a, fn_a, block)
        run_l += _step_times(model_l, inputs_l, fn_l, block)
    return {
        "model": model_name, **{f"{k}_s": min(v) for k, v in times.items()},
        "all_s": times, "ledger_pass_s": statistics.median(ledger_s),
        "ledger_entries": entries, "registry_s": statistics.median(reg),
        "guard_own_s": statistics.median(own_s),
        "step_aot_eager_ms": statistics.median(run_a) * 1e3, "step_lite_ms": statistics.median(run_l) * 1e3,
    }


def worker_profile(model_name: str, top: int) -> str:
    """cProfile of one cold lite first call (after torch import): where the time goes."""
    import cProfile
    import io
    import pstats

    import torch

    import lite_compiler  # noqa: F401
    from tests.compiler_models import build, run_step

    model, inputs = build(model_name)
    fn = torch.compile(model, backend="lite")
    profiler = cProfile.Profile()
    profiler.enable()
    run_step(model, inputs, fn, train=True)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("measure", "guard", "profile"))
    parser.add_argument("names", nargs="+", metavar="NAME", help="VARIANT MODEL, or MODEL")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.what == "measure":
        print(json.dumps(worker_measure(*args.names, args.steps)))
    elif args.what == "guard":
        print(json.dumps(worker_guard(args.names[0], args.repeats, args.steps)))
    else:
        print(worker_profile(args.names[0], 40))
    return 0


if __name__ == "__main__":
    sys.exit(main())
