# expect: ok
def nested_get(d, path, default=None):
    for key in path.split("."):
        if not isinstance(d, dict) or key not in d:
            return default
        d = d[key]
    return d

cfg = {"db": {"host": "localhost", "ports": {"main": 5432}}}
assert nested_get(cfg, "db.ports.main") == 5432
assert nested_get(cfg, "db.user", "root") == "root"
assert nested_get(cfg, "db.host.x") is None
