"""attest: pure signing and canonicalisation primitives (JCS, DSSE, in-toto, keys, bundles, VCs).

Imports nothing from acxoci and does no I/O beyond what callers pass in.
"""
