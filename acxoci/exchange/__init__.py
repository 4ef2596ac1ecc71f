"""The git-based Cartridge Exchange (a `registry/` folder of signed artifacts at immutable
coordinates, a generated `index.json` and a `status.json` lifecycle ledger): verify it, re-derive
its index the way the reference does, mirror it into OCI registries with its lifecycle intact, and
honour that lifecycle at install (docs/exchange.md)."""
