"""acxoci.level: provable levels. A verifier re-runs a cartridge's verified ROM on the sealed held-out
slice of a benchmark (benchmark, solver, run), rates it with TrueSkill (trueskill), gates issuance
(gate), issues and verifies W3C level credentials bound to the ROM digest (credential, issuers),
revokes them through Bitstring Status Lists (status), and moves both through OCI (oci, policy)."""
