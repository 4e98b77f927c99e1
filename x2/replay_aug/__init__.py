"""Replay augmentation: a recorded episode with its states, actions and labels kept byte for byte and
only its static layer (distractors, table, walls, floor, lighting) recomposed from a scenery variant."""
