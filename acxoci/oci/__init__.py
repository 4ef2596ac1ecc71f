"""acxoci.oci: OCI distribution. One `Target` seam (target.py) with two implementations:
`LayoutStore` (layout.py, on-disk OCI image layout) and `RegistryTarget` (registry.py, any
OCI 1.1 registry); `copy()` (copy.py) moves a graph with its referrers between any pair;
`shapes` builds the ACX artifact manifests (pure)."""
