print("P13 reboot", sc(169, 0xfee1dead, 0, 0, None))                    # bad magic2: EPERM unpriv, EINVAL if privileged
print("P13 kexec_load", sc(246, 0, 0, None, 0x8000), "kexec_file_load", sc(320, -1, -1, 0, b"", 0x8000))
