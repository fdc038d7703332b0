fh = ctypes.create_string_buffer(struct.pack("Ii", 128, 0) + b"\0" * 128); mid = ctypes.c_int()
print("F16 name_to_handle_at", sc(303, -100, b"/", fh, ctypes.byref(mid), 0))
print("F16 open_by_handle_at", sc(304, os.open("/", os.O_RDONLY), fh, os.O_RDONLY))
