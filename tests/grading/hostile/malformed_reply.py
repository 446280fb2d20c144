# Writes a reply of the wrong shape to the grader's pipe (cell_errors not a list).
import sys, os, json
f = sys._getframe()
while f and "reply" not in f.f_locals:
    f = f.f_back
json.dump({"cell_errors": 5, "obs": {}}, f.f_locals["reply"]); f.f_locals["reply"].flush(); os._exit(0)
