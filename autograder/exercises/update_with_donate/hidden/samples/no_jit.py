def update_with_donate(state, delta):
    return state + delta
