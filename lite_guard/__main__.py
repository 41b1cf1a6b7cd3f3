import sys

from lite_guard.cli import main

sys.exit(main())
