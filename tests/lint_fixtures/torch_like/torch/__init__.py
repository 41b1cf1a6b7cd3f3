"""A miniature torch tree: the lint names passes inside torch by their torch names."""
