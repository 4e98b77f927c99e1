"""Geometry: `geom_distance` (the signed distance the motion planner and the contact checks read: > 0 apart,
< 0 penetrating, capped at `cutoff`), the contacts of the current state and the deepest one."""

from __future__ import annotations

import numpy as np
import pytest

from x2.sim import Backend

BLOCK, TABLE, PLATE = "block/cube", "table_top", "plate/dish"  # pick_place's geoms (the cube: 5 cm, origin below)


def _block_at_height(backend: Backend, z: float) -> None:
    """The block's bottom face `z` metres above the table top, away from the plate."""
    p = backend.object_pos("block").copy()
    backend.set_object_pose("block", np.array([p[0], p[1], backend.table_height + z]), np.array([1.0, 0, 0, 0]))


def test_distance_is_symmetric_and_matches_a_known_gap(backend: Backend) -> None:
    backend.reset(0)
    for gap in (0.1, 0.02):
        _block_at_height(backend, gap)
        d = backend.geom_distance(BLOCK, TABLE)
        assert d == pytest.approx(gap, abs=1e-6)
        assert backend.geom_distance(TABLE, BLOCK) == pytest.approx(d, abs=1e-9)
    assert backend.geom_distance(BLOCK, TABLE, cutoff=0.01) == pytest.approx(0.01)  # nothing beyond the cutoff


def test_separated_geoms_are_apart(backend: Backend) -> None:
    backend.reset(0)
    names = [backend.model.geom(i).name for i in range(backend.model.ngeom)]
    assert {BLOCK, TABLE, PLATE} <= set(names)
    for a, b in ((BLOCK, PLATE), (PLATE, BLOCK), ("right_pad_a", BLOCK), ("left_pad_a", TABLE)):
        assert backend.geom_distance(a, b) > 0.0, (a, b)


def test_penetration_is_negative_distance_and_the_deepest_contact(backend: Backend) -> None:
    backend.reset(0)
    _block_at_height(backend, -0.005)  # 5 mm into the table
    assert backend.geom_distance(BLOCK, TABLE) == pytest.approx(-0.005, abs=1e-6)
    assert backend.penetration() == pytest.approx(0.005, abs=1e-6)
    deepest = backend.deepest_contact()
    assert deepest is not None and {deepest.geom1, deepest.geom2} == {BLOCK, TABLE}
    assert {deepest.body1, deepest.body2} == {"world", "block/object"}
    assert deepest.distance == pytest.approx(-0.005, abs=1e-6)
    contacts = backend.contacts()
    assert deepest in contacts and min(c.distance for c in contacts) == deepest.distance

    _block_at_height(backend, 0.1)  # lifted clear: nothing left to report about it
    assert backend.penetration() == 0.0
    assert all(BLOCK not in (c.geom1, c.geom2) for c in backend.contacts())
