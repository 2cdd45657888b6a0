"""tokenizer layer."""
