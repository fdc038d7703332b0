# expect: ok
def hanoi(n, src="A", via="B", dst="C", moves=None):
    if moves is None:
        moves = []
    if n:
        hanoi(n - 1, src, dst, via, moves)
        moves.append((src, dst))
        hanoi(n - 1, via, src, dst, moves)
    return moves

assert len(hanoi(10)) == 1023
assert hanoi(2) == [("A", "B"), ("A", "C"), ("B", "C")]
