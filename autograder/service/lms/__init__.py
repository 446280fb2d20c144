"""Grades back to a learning-management system (LTI 1.3): the outbox and its sender
(:mod:`.outbox`), the AGS and NRPS requests (:mod:`.ags`), the tool's registration and key
(:mod:`.lti_tool`) and the LMS's members (:mod:`.roster`)."""
