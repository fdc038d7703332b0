raise ValueError("naïve café ✓")
