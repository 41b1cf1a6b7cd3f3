"""The project's own pass bases: abstract (no __call__), so not passes themselves."""

import hashlib

from .compat import TORCH_HAS_CUSTOM_GRAPH_PASS

if not TORCH_HAS_CUSTOM_GRAPH_PASS:  # the project's copy for old torch comes first here
    from .compat import CustomGraphPass
else:
    from torch._inductor.custom_graph_pass import CustomGraphPass


class VllmInductorPass(CustomGraphPass):
    """Subclasses implement __call__; this base only supplies the cache uuid."""

    def uuid(self):
        return hashlib.sha256(type(self).__qualname__.encode()).hexdigest()


class VllmPatternMatcherPass(VllmInductorPass):
    """Still abstract: a base for passes built on a pattern matcher."""

    def dump_patterns(self):
        return []
