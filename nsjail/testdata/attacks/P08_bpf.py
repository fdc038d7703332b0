attr = ctypes.create_string_buffer(struct.pack("IIII", 2, 4, 4, 1), 128)     # BPF_MAP_CREATE ARRAY
print("P08 bpf map_create", sc(321, 0, attr, 128))
