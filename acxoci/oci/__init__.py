"""acxoci.oci."""
