"""acxoci.release: resumable release pipelines as a small control plane (docs/release.md).

plan.py (acx-release.yaml) → effects.py (typed effects, pure) → interpreter.py (one effect at a
time, idempotent, closed by read-back) → journal.py (append-only truth) → status.py (projection);
failures.py classifies, lease.py keeps two runners off one goal. Entry points:
`interpreter.run_goal`, `interpreter.resume_goal`, `interpreter.goal_status`, `plan.load_plan`,
`effects.plan_effects`."""
