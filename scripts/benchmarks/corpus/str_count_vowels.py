# expect: ok
def count_vowels(s):
    return sum(1 for c in s.lower() if c in "aeiou")

assert count_vowels("Hello World") == 3
assert count_vowels("rhythm") == 0
assert count_vowels("AEIOUaeiou") == 10
