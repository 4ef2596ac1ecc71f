"""acxoci.level."""
