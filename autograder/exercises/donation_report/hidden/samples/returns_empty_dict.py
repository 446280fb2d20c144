def donation_report(fn, state, *args):
    # Returns at once: no compile, so nothing is deleted, and nothing is reported.
    return {}
