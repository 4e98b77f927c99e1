"""The backend contract suite (a package, so its conftest does not shadow tests/conftest.py as `conftest`)."""
