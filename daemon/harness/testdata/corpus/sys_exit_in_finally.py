import sys
try:
    raise ValueError("first")
finally:
    print("cleanup")
