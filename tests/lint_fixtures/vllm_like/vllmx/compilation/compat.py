"""A copy of torch's CustomGraphPass for torch versions that lack it (as vLLM keeps one)."""

from abc import ABC, abstractmethod

TORCH_HAS_CUSTOM_GRAPH_PASS = True


class CustomGraphPass(ABC):
    @abstractmethod
    def __call__(self, graph):
        """The pass."""

    @abstractmethod
    def uuid(self):
        """An id of the implementation."""
