"""acxoci.cartridge."""
