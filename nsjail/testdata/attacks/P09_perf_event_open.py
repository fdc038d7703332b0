attr = ctypes.create_string_buffer(struct.pack("IIQ", 1, 128, 0), 128)       # SOFTWARE/CPU_CLOCK
print("P09 self", sc(298, attr, 0, -1, -1, 0), "cpu0-all", sc(298, attr, -1, 0, -1, 0))
