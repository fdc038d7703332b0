# expect: ok
import re

def natural_key(s):
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", s)]

files = ["file10.txt", "file2.txt", "File1.txt", "file1b.txt"]
assert sorted(files, key=natural_key) == ["File1.txt", "file1b.txt", "file2.txt", "file10.txt"]
