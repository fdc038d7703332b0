import sys
print("bye")
sys.exit(3)
