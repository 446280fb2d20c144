"""The grading service's LTI routes.

* ``GET <prefix>api/lti/jwks``: the tool's public key set (no sign-in: the LMS reads it
  to check the tool's signed token requests).
* ``POST <prefix>api/lti/resend`` (instructors, under the hub): post every learner's
  recorded grade to the LMS again (:func:`autograder.service.lms.outbox.resend_all`).
"""
from autograder.service.api.handler import Base, Refused
from autograder.service.lms import lti_tool, outbox


class Jwks(Base):
    open_to_all = True

    def get(self):
        try:
            pem = lti_tool.private_key_pem()
        except OSError as exc:
            raise Refused(503, "no_key", f"the tool's LTI key cannot be read: {exc.strerror}") from exc
        self.send(200, lti_tool.jwks(pem))


class Resend(Base):
    async def post(self):
        if not self.person.instructor:
            raise Refused(403, "instructors_only", "only instructors re-send grades to the LMS")
        count = await self.db(outbox.resend_all, self.store)
        if self.grading is not None:
            self.grading.passback_wanted.set()
        self.send(200, {"resent": count})


def handlers(prefix, signed_in):
    """The routes: the key set always; the re-send when people sign in (``signed_in``)."""
    return [(prefix + "api/lti/jwks", Jwks)] + \
        ([(prefix + "api/lti/resend", Resend)] if signed_in else [])
