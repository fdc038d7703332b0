"""A module docstring."""
import sys
print("hello", __name__, __doc__)
print(sorted(globals()))
print(__file__, sys.argv, getattr(sys, "orig_argv", None)[1:])
print(type(__loader__).__name__, __loader__.name, __loader__.path, __spec__, __package__, __cached__)
print(sys.modules["__main__"] is sys.modules[__name__], type(__builtins__).__name__)
print(sys.path)
print(sys.flags.isolated, sys.flags.ignore_environment)
print(sorted(k for k in sys.modules if k.startswith("agentjail")))
print(list(globals())[:9])
