"""`python -m x2` is the `x2` command."""

from x2.cli.app import main

main()
