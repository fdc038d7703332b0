# expect: ValidationError
class ValidationError(Exception):
    pass

def check_age(age):
    if not 0 <= age <= 150:
        raise ValidationError(f"bad age: {age}")
    return age

assert check_age(30) == 30
check_age(-1)
