"""x2.base.vectors gives numpy's bits: planning code uses it where np.linalg.norm and np.cross were, and every
recorded episode (x2 synth --sequential's in particular) must stay what it was."""

import numpy as np

from x2.base.vectors import cross, norm


def test_norm_and_cross_are_numpys_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20000):
        a = rng.normal(size=3) * 10.0 ** rng.uniform(-8, 4)
        b = rng.normal(size=3) * 10.0 ** rng.uniform(-8, 4)
        column = rng.normal(size=(3, 3))[:, 1]  # (a strided view, as a rotation matrix's axis is)
        assert norm(a) == np.linalg.norm(a) and norm(column) == np.linalg.norm(column)
        assert np.array_equal(cross(a, b), np.cross(a, b)) and np.array_equal(cross(column, a), np.cross(column, a))
    assert norm(np.zeros(3)) == 0.0 and np.array_equal(cross(np.ones(3), np.ones(3)), np.zeros(3))
