"""Errors the lite compiler raises; every message says what is wrong and what to do."""

from __future__ import annotations


try:  # Dynamo lets ShortenTraceback through unwrapped, so users catch our errors by type.
    from torch._dynamo.exc import ShortenTraceback as _Passthrough
except ImportError:  # pragma: no cover - older torch
    _Passthrough = RuntimeError  # type: ignore[misc,assignment]


class LiteCompilerError(_Passthrough):  # type: ignore[misc,valid-type]
    """Base class of every lite compiler error."""

    def __init__(self, *args: object) -> None:
        if _Passthrough is RuntimeError:
            super().__init__(*args)
        else:
            super().__init__(*args, first_useful_frame=None)


class LiteConfigError(LiteCompilerError):
    """The installed torch cannot run lite mode (version or config keys)."""


class LiteRegionConfigError(LiteCompilerError, ValueError):
    """A region's ``inductor_configs`` names a key Inductor does not have, or regions disagree."""


class LitePassViolation(LiteCompilerError):
    """A pass that the registry does not allow in lite mode tried to run."""

    def __init__(
        self,
        name: str,
        stage: str,
        graph: str,
        reason: str,
        kind: str = "function",
        suggestions: tuple[str, ...] = (),
    ):
        self.pass_name, self.stage, self.graph, self.reason = name, stage, graph, reason
        self.kind, self.suggestions = kind, tuple(suggestions)
        did_you_mean = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
        snippet = (
            "[[pass]]\n"
            f'name = "{name}"\n'
            f'stage = "{stage}"\n'
            'lite = "region"            # or "always" if it is numerics-neutral everywhere\n'
            f'kind = "{kind}"\n'
            'why = "<one line: why it keeps numerics bitwise identical>"'
        )
        super().__init__(
            f"lite mode refused pass '{name}' (stage {stage}, graph {graph}): {reason}.{did_you_mean}\n"
            "If the pass is safe in lite mode, register it in a registry file listed under"
            " [tool.lite_guard] registries in your pyproject.toml:\n" + snippet
        )


class LiteSettingOverridden(UserWarning):
    """A global Inductor setting the registry keeps off in lite mode was overridden."""
