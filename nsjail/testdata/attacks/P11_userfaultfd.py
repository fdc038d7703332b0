print("P11 uffd", sc(323, os.O_CLOEXEC), "user-mode-only", sc(323, os.O_CLOEXEC | 1))   # UFFD_USER_MODE_ONLY
