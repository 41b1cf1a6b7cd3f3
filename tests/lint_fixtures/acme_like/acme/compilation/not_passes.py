"""Callables that are not graph passes: none of these is reported."""
import abc

from torch import fx


class AcmeBackend:
    """A torch.compile backend, called with (gm, example_inputs): it compiles, it is no pass."""

    def __call__(self, gm: fx.GraphModule, example_inputs):
        return gm.forward


class Scaler:
    def __call__(self, x):
        return x * 2


class AbstractPass(abc.ABC):
    @abc.abstractmethod
    def __call__(self, graph: fx.Graph) -> None:
        ...
