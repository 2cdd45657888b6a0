"""The compiled constraint: data model, canonical codec and identity, and what reads an
artifact (the reference stepper, `check`, `inspect`, `diff`). Nothing here compiles."""
