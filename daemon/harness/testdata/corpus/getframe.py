import sys
print(sys._getframe().f_code.co_filename, sys._getframe().f_code.co_name)
print(__builtins__ is __import__("builtins"))
print(len([k for k in dir(__import__("builtins")) if "agentjail" in k.lower() or "harness" in k.lower()]))
