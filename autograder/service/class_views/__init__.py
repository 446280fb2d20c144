"""The instructors' and learners' views of the class, read from the store: listings and
the class summary (:mod:`.class_view`), who is in the course (:mod:`.roster`), the class
page's numbers (:mod:`.class_stats`), its HTML (:mod:`.class_page`), its plots
(:mod:`.class_plots`) and its script and style (``static/``). Pure reads: no HTTP here
(the routes are :mod:`autograder.service.api.classroom`)."""
