"""acxoci.release."""
