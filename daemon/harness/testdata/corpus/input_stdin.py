name = input("name? ")
n = int(input())
print(f"hello {name}", n * 2)
import sys
print(repr(sys.stdin.read()))
input()
