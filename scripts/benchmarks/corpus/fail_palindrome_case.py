# expect: AssertionError
def is_palindrome(s):
    return s == s[::-1]  # forgets to ignore case

assert is_palindrome("level")
assert is_palindrome("Level")
