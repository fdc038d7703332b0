chunks = []
while True:
    chunks.append(b"\x01" * (64 << 20))            # writes every page
    print("R01 MiB", 64 * len(chunks), flush=True)
