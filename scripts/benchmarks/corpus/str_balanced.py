# expect: ok
def balanced(s):
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for c in s:
        if c in "([{":
            stack.append(c)
        elif c in pairs:
            if not stack or stack.pop() != pairs[c]:
                return False
    return not stack

assert balanced("{[()()]}")
assert not balanced("([)]")
assert not balanced("((")
assert balanced("no brackets")
