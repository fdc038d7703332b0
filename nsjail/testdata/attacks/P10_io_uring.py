print("P10 setup", sc(425, 8, ctypes.create_string_buffer(120)))
print("P10 enter", sc(426, 0, 0, 0, 0, None, 0), "register", sc(427, 0, 0, None, 0))
