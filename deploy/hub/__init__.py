"""``make hub``: JupyterHub loads ``jupyterhub_config.py`` by its path and runs
``site.py`` as a file; they, and the tests, import the other modules here by name
(``deploy.hub.course_spawner``, ``deploy.hub.lti_sign_in``).

``learner_home.py`` and its staged copy of ``scripts/jupyter_local.py`` are the
exception: they run from a copy in a temporary folder, beside each other, where the
repository is hidden.
"""
