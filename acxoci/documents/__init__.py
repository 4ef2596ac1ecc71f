"""Typed models of acxoci's document kinds, generated from `schemas/` by scripts/gen_models.py
(decision 0029): decode a parsed document with `attest.typed.decode_as(value, Model, document=...)`."""
