"""A recorded episode read back: its world rebuilt from the file (`world.open_world`), its stored actions
stepped again (`replay`), its labels computed again (`relabel`), its camera frames read or drawn from its states
(`frames`), and whether it was made in a held-out configuration (`held_out_check`)."""
