"""Evaluation harnesses: JSON Schema Test Suite conformance, JSONSchemaBench coverage,
seeded walks over artifacts, and the quality experiment with a real model."""
