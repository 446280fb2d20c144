"""How the course is deployed: :mod:`deploy.hub` is what ``make hub`` runs; the rest of
this folder is a large deployment on paper (README.md)."""
