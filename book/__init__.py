"""The course site's sources (MyST pages, not modules); :mod:`book._ext` holds its
Sphinx extensions."""
