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
    """A pass that the registry does not allow in lite mode tried to run, or (``kind ==
    "effect"``) a graph or schedule changed at a stage with no registered pass to explain it."""

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
        if kind == "effect":
            # No pass name to register: say what changed and how to find the cause.
            super().__init__(
                f"lite mode refused an unregistered change (stage {stage}, graph {graph}): {reason}."
                " No pass the registry allows explains it: something patched into torch (or a torch"
                " pass the guard does not know) transformed it. Find the pass that made the change,"
                " register it with its lite flag, or remove it; lite_guard trace lists every pass"
                " the guard saw.")
            return
        did_you_mean = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
        snippet = _pass_snippet(name, stage, kind)
        super().__init__(
            f"lite mode refused pass '{name}' (stage {stage}, graph {graph}): {reason}.{did_you_mean}\n"
            "To classify it, add this entry to a registry file listed under [tool.lite_guard]"
            " registries in your pyproject.toml, with lite = \"region\" or \"always\" only once"
            " you know it keeps numerics bitwise identical:\n" + snippet
        )


def _pass_snippet(name: str, stage: str, kind: str) -> str:
    """The [[pass]] entry to add, written by the one TOML writer (names are escaped)."""
    try:
        from lite_guard.hints import pass_hint

        return pass_hint(name, stage, kind).strip()
    except ImportError:  # an older lite_guard: the same entry, written out
        return ("[[pass]]\n"
                f"name = {_toml_str(name)}\n"
                f"stage = \"{stage}\"\n"
                'lite = "never"             # or "region" / "always" once a person checked it\n'
                f"kind = \"{kind}\"\n"
                'why = "<one line: why it keeps numerics bitwise identical>"')


def _toml_str(text: str) -> str:
    import json

    return json.dumps(text)  # a JSON string is a valid TOML basic string


class LiteSettingOverridden(UserWarning):
    """A global Inductor setting the registry keeps off in lite mode was overridden."""


class LiteGuardReport(UserWarning):
    """Something ran in a lite compile that the guard can see but not refuse (the reference
    aot_eager runs it too): reported here and as a ledger row, never silently allowed."""
