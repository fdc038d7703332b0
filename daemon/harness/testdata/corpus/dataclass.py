from dataclasses import dataclass, field, asdict
from typing import List
@dataclass(order=True)
class Item:
    name: str
    tags: List[str] = field(default_factory=list)
print(Item("a", ["x"]), asdict(Item("b")), Item("a") < Item("b"))
print(__annotations__)
