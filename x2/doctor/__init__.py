"""`x2 doctor`'s checks of this machine (renderer, Python and extras, SteamVR, serial ports, display, disk):
`checks.diagnose()` reads, never changes."""
