import os
import sys

# `python -m lite_guard` puts the working directory first on sys.path: run in a checkout under
# review, its lint_rules/, libcst/ or torch/ were what got imported (linting ran the linted code,
# and `--torch` linted the checkout's torch). Keep it only when lite_guard itself came from there
# (a source checkout of lite-guard); `python -P` and PYTHONSAFEPATH never add it.
if __spec__ is not None and not sys.flags.safe_path and sys.path and os.path.realpath(
        sys.path[0] or os.curdir) != os.path.dirname(os.path.dirname(os.path.realpath(__file__))):
    del sys.path[0]

from lite_guard.cli import main  # noqa: E402  (after sys.path is safe)

sys.exit(main())
