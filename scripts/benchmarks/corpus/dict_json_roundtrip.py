# expect: ok
import json

def roundtrip(obj):
    return json.loads(json.dumps(obj, sort_keys=True))

doc = {"name": "x", "tags": ["a", "b"], "n": 3, "nested": {"ok": True, "none": None}}
assert roundtrip(doc) == doc
assert json.dumps({"b": 1, "a": 2}, sort_keys=True) == '{"a": 2, "b": 1}'
