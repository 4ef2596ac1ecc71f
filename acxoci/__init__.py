"""acxoci: move ACX agent cartridges and workflows through the software supply chain."""

__version__ = "0.1.0"
