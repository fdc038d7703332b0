import os
print("going")
os._exit(5)
