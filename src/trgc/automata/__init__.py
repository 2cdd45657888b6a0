"""automata layer."""
