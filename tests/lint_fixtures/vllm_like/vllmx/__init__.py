"""A project shaped like vLLM's compilation package, written for the lint's tests."""
