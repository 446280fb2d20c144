"""The command-line programs of the grading service, each ``python -m autograder.service
<command>`` (and ``python -m autograder.service.<command>``): :mod:`.worker` a grading
worker, :mod:`.regrade`, :mod:`.deadlines`, :mod:`.members` (with :mod:`.hub_admin`, the
hub's API it ends sessions with), :mod:`.passback` (grades and roster from and to the LMS)
and :mod:`.backup` (with :mod:`.course_files`, the course's own files it keeps)."""
