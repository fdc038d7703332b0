time.sleep(10 ** 9)
