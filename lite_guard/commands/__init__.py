"""One module per ``lite_guard`` subcommand: ``register(subparsers)`` adds it, ``run(args)`` runs it."""
