# expect: ok
people = [{"name": "ann", "age": 31}, {"name": "bob", "age": 25}, {"name": "cy", "age": 31}]

def by_age_then_name(ps):
    return [p["name"] for p in sorted(ps, key=lambda p: (-p["age"], p["name"]))]

assert by_age_then_name(people) == ["ann", "cy", "bob"]
