"""Data files shipped with the package (see the README in this folder)."""
