"""`python -m acxoci` runs the `acx` CLI."""

from acxoci.cli.main import main

if __name__ == "__main__":
    main()
