"""The static catalog of an Exchange folder or a mirrored OCI layout (`acx exchange site`):
sources find the artifacts, an injected judge gives acx's verdict for each, cards read the
verified ones, render writes the pages (docs/studio.md)."""
