"""Swept-volume-aware replay augmentation: new scenery around recorded motion, labels untouched."""
