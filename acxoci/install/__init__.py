"""Verify before install (docs/install.md): pull, prove and install atomically, or refuse and
install nothing.

Public API:
- `vpolicy.load_policy(path, now=)` / `default_policy()` / `starter_template()`: the verification policy;
- `install.install(ref, policy=, store=, now=, host=, remote=, name=)` → `InstallOutcome`;
- `store.Store(root)`: `list()`, `get(name)`, `require(name)`, `transaction()` (→ `uninstall(name)`);
- `reverify.verify_item(item, policy, now)`: files against the record + revocation now;
- `checks`: the pure checks in `CHECK_ORDER` and `run_checks(gathered, policy, now)`.
"""
