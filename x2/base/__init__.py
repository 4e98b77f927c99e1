"""What every layer of x2 may use, and which imports nothing else of x2: the one exception root (`errors`), the
names of the numpy array types handed between modules (`arrays`), exact fast vector arithmetic (`vectors`) and
the seed streams every collector draws from (`seeding`)."""
