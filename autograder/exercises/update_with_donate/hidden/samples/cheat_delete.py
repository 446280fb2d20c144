# Deletes state by hand instead of donating it to a compiled helper.
def update_with_donate(state, delta):
    out = state + delta
    state.delete()  # looks donated, but nothing was offered to a compiled helper
    return out
