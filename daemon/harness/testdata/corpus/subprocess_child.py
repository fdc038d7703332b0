import subprocess, sys
r = subprocess.run([sys.executable, "-c", "import sys; print('child', sys.argv)"], capture_output=True, text=True)
print(r.stdout.strip(), r.returncode)
