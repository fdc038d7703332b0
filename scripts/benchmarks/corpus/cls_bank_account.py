# expect: ok
class InsufficientFunds(Exception):
    pass

class Account:
    def __init__(self, balance=0):
        self.balance = balance

    def withdraw(self, amount):
        if amount > self.balance:
            raise InsufficientFunds(amount)
        self.balance -= amount

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("amount must be positive")
        self.balance += amount

a = Account(100)
a.withdraw(30)
a.deposit(5)
assert a.balance == 75
try:
    a.withdraw(1000)
    assert False, "should have raised"
except InsufficientFunds:
    pass
