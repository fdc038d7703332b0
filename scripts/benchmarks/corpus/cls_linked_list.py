# expect: ok
class Node:
    def __init__(self, val, nxt=None):
        self.val, self.next = val, nxt

def from_list(xs):
    head = None
    for x in reversed(xs):
        head = Node(x, head)
    return head

def to_list(node):
    out = []
    while node:
        out.append(node.val)
        node = node.next
    return out

def reverse(node):
    prev = None
    while node:
        node.next, prev, node = prev, node, node.next
    return prev

assert to_list(reverse(from_list([1, 2, 3, 4]))) == [4, 3, 2, 1]
assert to_list(reverse(None)) == []
