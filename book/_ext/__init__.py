"""The site's Sphinx extensions.

Sphinx loads those ``_config.yml`` names from this folder by their bare names
(``local_extensions``); they, and the tests, import everything else by its full
name (``book._ext.lab_markdown``, ``scripts.drift_compare``, ``autograder.defaults``).
"""
