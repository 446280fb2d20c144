# Never finishes the answer cell.
while True:
    pass
