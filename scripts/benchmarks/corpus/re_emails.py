# expect: ok
import re

def find_emails(text):
    return re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", text)

t = "Contact alice@example.com or bob.smith+tag@mail.example.org; not me@"
assert find_emails(t) == ["alice@example.com", "bob.smith+tag@mail.example.org"]
