# expect: ok
from dataclasses import dataclass, field

@dataclass(order=True)
class Task:
    priority: int
    name: str = field(compare=False)

tasks = sorted([Task(3, "c"), Task(1, "a"), Task(2, "b")])
assert [t.name for t in tasks] == ["a", "b", "c"]
assert Task(1, "x") == Task(1, "y")
