# Re-exports the hook keys the way a project's package does (the keys live in keys.py).
from acme.hooks.keys import POST_PASS_KEY, PRE_PASS_KEY

__all__ = ["POST_PASS_KEY", "PRE_PASS_KEY"]
