"""Code torch generates with ``exec`` for its own classes is torch's, and an object whose
``__getattr__`` answers every name is judged without crashing.

torch._inductor.ops_handler.DefaultHandler installs its ops as methods compiled from a string
(file ``<string>``, globals without ``__name__``); the guard once named them ``<unknown>:abs``
and would have refused Inductor's own handler, and judging a handler instance read a function
as its ``__globals__`` (AttributeError). A subclass defined outside torch stays foreign.
"""

from __future__ import annotations

import warnings

from torch._inductor.ops_handler import DefaultHandler, NoopHandler

from lite_compiler.provenance import foreign_identity


class OutsideHandler(NoopHandler):
    def abs(self, x):
        return x


def test_torch_generated_handler_methods_are_torch_code():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DefaultHandler.__getattr__ warns on names it lacks
        assert DefaultHandler.abs.__code__.co_filename == "<string>"  # what makes the case
        assert foreign_identity(DefaultHandler) is None
        assert foreign_identity(NoopHandler().abs) is None
        assert foreign_identity(NoopHandler()) is None


def test_a_handler_defined_outside_torch_is_still_foreign():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert foreign_identity(OutsideHandler) == f"{__name__}:OutsideHandler"
        assert foreign_identity(OutsideHandler().abs) == f"{__name__}:OutsideHandler.abs"
