"""Deterministic local tools: tinycalc-1, tinyrust-tool-1 envelopes, evidence validation.

`tinycalc` (parser, evaluator, result records) over `decimal128` (checked fixed-point
arithmetic); `registry` (the compiled tool enum), `calculator` and `text` (the tool
implementations, returning an `outcome.Outcome`), `identity` (their implementation hashes),
`deadline` (the wall-clock limit) and `envelope` (request validation, execution, reinsertion
records); `evidence` (extraction results checked against source bytes); `strictjson` (strict
reading, canonical writing).
This layer imports only trgc.errors and trgc.limits.
"""
