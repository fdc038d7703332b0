class Config:
    values = {"a": 1}
    missing = values["b"]
