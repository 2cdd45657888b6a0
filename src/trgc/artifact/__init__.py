"""artifact layer."""
