print("P07 keyctl", sc(250, 0, -4, 0))                              # KEYCTL_GET_KEYRING_ID(@u)
print("P07 add_key", sc(248, b"user", b"sbx", b"v", 1, -2))          # into @p
print("P07 request_key", sc(249, b"user", b"sbx", None, -2))
