import json
try:
    json.loads("{bad")
except json.JSONDecodeError as e:
    e.add_note("while reading the config")
    raise
