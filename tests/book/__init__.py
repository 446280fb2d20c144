"""Tests of the course site built from book/ (jupyter-book)."""
