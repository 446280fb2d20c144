# Crashes the interpreter outright.
import ctypes

ctypes.string_at(0)
