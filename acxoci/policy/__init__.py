"""acxoci.policy."""
