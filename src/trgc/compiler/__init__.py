"""The compile pipeline: a trg-1 grammar, a JSON Schema or a tool list to an `Artifact`
(front ends in `trgc.grammar`, byte automata in `trgc.automata`, the model in `trgc.artifact`)."""
