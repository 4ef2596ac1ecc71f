"""Verify before install (docs/install.md), and keep a host in line with its policy over time.

- `judge`: the one acceptance decision's entry points (`judge_reference`, `judge_file`,
  `judge_installed`, `judge_descriptor`) over the pure `checks.run_checks`;
- `vpolicy.load_policy(path, now=)`: the verification policy;
- `install.install(ref, policy=, store=, now=, ...)` → `InstallOutcome`;
- `store.Store(root)`: the atomic local store;
- `reverify.verify_item(item, policy, now)`: an installed item judged now;
- `activate`: skills into a host's folder, from judged bytes only; `sync`: deactivate what no
  longer passes.
"""
