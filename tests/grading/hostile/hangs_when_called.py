# Defined fine; hangs only when the tests call it.
def update_with_donate(state, delta):
    while True:
        pass
