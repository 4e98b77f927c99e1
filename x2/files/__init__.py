"""Files that appear whole or not at all: every writer of x2 goes through here.

`staging` is the one primitive and states the contract (a hidden sibling named by the writer's pid, fsync, rename
into place, leftovers of dead writers removed by the next one, refusals in words); `atomic` replaces one file
through it, and x2.datasets.building and x2.datasets.commit build datasets and commit episode files with it.
`digest` is the sha256 an index line records; `disk` puts a refused write (full disk, read-only target, a file in
the way) into one sentence; `hdf5_guard` catches the write failures HDF5 only prints.
"""
