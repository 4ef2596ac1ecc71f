"""acxoci.workflow."""
