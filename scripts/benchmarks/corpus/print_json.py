# expect: print
import json

report = {"passed": 12, "failed": 1, "cases": [{"name": "a", "ok": True}, {"name": "b", "ok": False}]}
print(json.dumps(report, indent=2, sort_keys=True))
assert json.loads(json.dumps(report)) == report
