sys.stdout.write("S05\n"); sys.stdout.flush(); os._exit(137)
