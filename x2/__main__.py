"""`python -m x2` is the `x2` command (and the console script's entry point)."""


def main() -> None:
    # Imported here, not at the top: a worker spawned from the console script imports this module first,
    # and the CLI (seconds of imports) would delay the moment it arms its parent-death signal.
    from x2.cli.app import main as run

    run()


if __name__ == "__main__":  # spawned worker processes import this module as __mp_main__: no second CLI run
    main()
