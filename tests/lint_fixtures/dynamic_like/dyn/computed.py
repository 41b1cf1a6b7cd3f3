import torch
import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_config

_CACHE_KEYS = (
    "fx_graph_cache",
    "autotune_local_cache",
)


def apply_overrides(overrides):
    for key, value in overrides.items():
        setattr(inductor_config, key, value)


def compile_with(options, fn):
    with torch._inductor.config.patch(**options):
        return fn()


def set_partitioner(name, fn):
    functorch_config.__dict__[name] = fn


def disable_caches(saved):
    for name in _CACHE_KEYS:
        saved[name] = getattr(inductor_config, name)
        setattr(inductor_config, name, False)
    for name in _CACHE_KEYS:
        setattr(inductor_config, name, saved[name])


def not_a_config(obj, key, value):
    setattr(obj, key, value)
