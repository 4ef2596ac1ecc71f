"""Typed models of the documents `attest` reads (trust registries, status lists), generated from
`schemas/` by scripts/gen_models.py (decision 0029)."""
