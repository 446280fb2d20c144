"""The HTTP API: the routes (:mod:`.app`), what every route starts from (:mod:`.handler`),
who is asking (:mod:`.auth` under the hub, :mod:`.local_auth` under ``make serve``), what a
signed-in learner and an instructor read (:mod:`.classroom`), the health check
(:mod:`.health`), answers held until a grading ends (:mod:`.waiting`) and the LTI routes
(:mod:`.lti_routes`). Only this room answers HTTP: the other rooms raise no HTTP errors."""
