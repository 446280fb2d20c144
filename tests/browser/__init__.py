"""Browser tests: the course site and the learner JupyterLab in Chromium (Playwright)."""
