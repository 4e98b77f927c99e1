"""Swept-volume-aware replay augmentation: recorded motion in new scenery, every state and label kept.

envelope (where anything moved) -> placement (distractors outside it) -> compose (the new world text)
-> check (true distances at every frame) -> augment (episode files); appearance restyles the booth.
"""
