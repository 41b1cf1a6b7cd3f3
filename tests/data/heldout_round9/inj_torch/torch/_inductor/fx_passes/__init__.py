from .reexported import canonicalize_slices as canonicalize  # re-exported alias
