from .a import *  # noqa: F401,F403

B = A  # noqa: F405
