"""The compiler's ``lite_guard`` subcommands (``trace``, ``fuzz``), found by the CLI through the
``lite_guard.commands`` entry-point group: each module has ``register(subparsers)``."""
