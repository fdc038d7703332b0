os.makedirs("/tmp/m", exist_ok=True)
print("F14 mount-tmpfs", sc(165, b"none", b"/tmp/m", b"tmpfs", 0, None))
print("F14 bind-root", sc(165, b"/", b"/tmp/m", None, 0x1000 | 0x4000, None))       # MS_BIND|MS_REC
print("F14 umount2", sc(166, b"/tmp/m", 2))                                          # MNT_DETACH
print("F14 fsopen", sc(430, b"tmpfs", 0), "open_tree", sc(428, -100, b"/", 1), "move_mount", sc(429, -1, b"", -1, b"", 0))
