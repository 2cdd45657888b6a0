"""Integrations with real model runtimes (the `trgc[hf]` extra): a Hugging Face logits
processor, real-model logits sources for `trgc generate --model` and SmolLM2 loading (the
quality experiment that uses them is in `trgc.evaluation`).

Nothing here is imported by `import trgc` or `trgc --help`; torch, transformers and gguf are
imported inside the functions that need them (`require` turns a missing one into
`E_INTEGRATION_DEPENDENCY`).
"""
