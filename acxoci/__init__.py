"""acxoci: move ACX agent cartridges, workflows and agent graphs through the software supply chain.

The public Python API is `acxoci.api` (docs/api.md); every other module is internal."""

__version__ = "0.1.0"
