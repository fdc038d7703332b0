import sys
print("to stdout")
print("to stderr", file=sys.stderr)
[][1]
