"""Install a partitioner by patching AotAutograd.__init__ (written after DeepSpeed's DeepCompile)."""
import functools

from functorch.compile import min_cut_rematerialization_partition


def make_partitioner(fallback):
    def partition_and_tag(joint_module, joint_inputs, **kwargs):
        fw, bw = (fallback or min_cut_rematerialization_partition)(joint_module, joint_inputs,
                                                                    **kwargs)
        for node in list(fw.graph.nodes):
            node.meta["tagged"] = True
        return fw, bw
    return partition_and_tag


def _rewrite_kwargs(kwargs: dict) -> None:
    kwargs["partition_fn"] = make_partitioner(kwargs.get("partition_fn"))


def patch_aot():
    from torch._dynamo.backends.common import AotAutograd

    original = AotAutograd.__init__

    @functools.wraps(original)
    def patched(self, **kwargs):
        _rewrite_kwargs(kwargs)
        original(self, **kwargs)

    AotAutograd.__init__ = patched
