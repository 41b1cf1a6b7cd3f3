"""Re-exports the pass base, as vLLM's compilation package does."""

from .inductor_pass import VllmInductorPass

__all__ = ["VllmInductorPass"]
