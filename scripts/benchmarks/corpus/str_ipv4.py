# expect: ok
def valid_ipv4(s):
    parts = s.split(".")
    if len(parts) != 4:
        return False
    for p in parts:
        if not p.isdigit() or (len(p) > 1 and p[0] == "0") or int(p) > 255:
            return False
    return True

assert valid_ipv4("192.168.1.1")
assert not valid_ipv4("256.1.1.1")
assert not valid_ipv4("01.1.1.1")
assert not valid_ipv4("1.1.1")
