"""acxoci.oci: OCI distribution. One `Target` seam (target.py) with two implementations:
`LayoutStore` (layout.py, on-disk OCI image layout) and `RegistryTarget` (registry.py, any
OCI 1.1 registry, over the one transport: settings → session → authorizer/retry → transport,
uploads in uploads.py); `copy()` (copy.py) moves a graph with its referrers between any pair;
`listing.py` is the one referrer rule every Target's `referrer_listing` applies (candidates from
every source, kept only when their manifest names the subject; the rest typed strays) and
`referrers.py` the tree walk over it; `fetch.py` fetches small https documents through
the same transport; `shapes` builds the ACX artifact manifests (pure)."""
