"""acxoci.workflow: ACX workflows (CAL, `acx.cal/1`) — lint, conditions, sign/verify, lineage,
inspect and readiness (staffing a workflow from verified cartridges).

Public entry points: `model.load_document`, `model.Workflow`, `lint.lint`, `conditions.evaluate`,
`sign.workflow_digest`, `sign.sign_workflow`, `verify.verify_workflow`, `lineage.remix`,
`inspect.inspect_workflow`, `ready.assess` (+ `ready.load_roster`, `roster_oci.load_registry_roster`).
"""
