# expect: ok
class Queue:
    def __init__(self):
        self.inbox, self.outbox = [], []

    def put(self, x):
        self.inbox.append(x)

    def get(self):
        if not self.outbox:
            while self.inbox:
                self.outbox.append(self.inbox.pop())
        return self.outbox.pop()

q = Queue()
for i in range(3):
    q.put(i)
assert q.get() == 0
q.put(3)
assert [q.get(), q.get(), q.get()] == [1, 2, 3]
