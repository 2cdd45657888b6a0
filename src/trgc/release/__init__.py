"""Release engineering: lock files that pin artifact identities, and `verify`, which
recompiles every locked source and proves it reproduces its pinned hash."""
