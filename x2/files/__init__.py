"""Files that appear whole or not at all: every writer of x2 goes through here.

`atomic` replaces one file (a temporary sibling, fsync, rename); `staging` builds a file or folder in a hidden
sibling of its target and renames it into place; `digest` is the sha256 an index line records; `disk` puts a
refused write (full disk, read-only target, a file in the way) into one sentence; `hdf5_guard` catches the write
failures HDF5 only prints.
"""
