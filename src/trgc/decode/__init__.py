"""decode layer."""
