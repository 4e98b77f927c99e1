"""`python -m x2` is the `x2` command."""

from x2.cli.app import main

if __name__ == "__main__":  # spawned worker processes import this module as __mp_main__: no second CLI run
    main()
