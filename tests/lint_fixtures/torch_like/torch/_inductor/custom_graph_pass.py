from abc import ABC, abstractmethod


class CustomPassBase(ABC):
    @abstractmethod
    def uuid(self):
        """An id of the implementation, for caching."""


class CustomGraphPass(CustomPassBase):
    @abstractmethod
    def __call__(self, graph):
        """The pass."""
