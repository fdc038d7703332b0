# expect: ok
import re

def iso_dates(text):
    return ["-".join((y, m, d)) for d, m, y in re.findall(r"\b(\d{2})/(\d{2})/(\d{4})\b", text)]

assert iso_dates("due 01/02/2024, paid 15/03/2024") == ["2024-02-01", "2024-03-15"]
