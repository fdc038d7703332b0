# expect: ok
import csv, io

data = "name,score\nann,90\nbob,75\ncy,88\n"
rows = list(csv.DictReader(io.StringIO(data)))
avg = sum(int(r["score"]) for r in rows) / len(rows)
assert [r["name"] for r in rows] == ["ann", "bob", "cy"]
assert round(avg, 2) == 84.33
