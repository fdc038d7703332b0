# expect: ok
from string import Template

t = Template("Hello $name, you owe $$${amount}.")
assert t.substitute(name="Ann", amount="3.50") == "Hello Ann, you owe $3.50."
assert t.safe_substitute(name="Bob") == "Hello Bob, you owe $${amount}."
