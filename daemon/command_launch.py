# agentjail's launcher of a run's "command" (daemon/command.go): it execs
# the argv it is given, found by PATH as execvp finds it. A program that is
# not there exits 127, as a shell's does, and says so on the report channel.
import os
import sys

argv = sys.argv[1:]
report = 3
try:
    os.set_inheritable(report, False)  # the command's fds are 0, 1 and 2
    os.execvp(argv[0], argv)
except FileNotFoundError:
    os.write(2, ("agentjail: %s: command not found\n" % argv[0]).encode("utf-8", "surrogateescape"))
    os.write(report, b"missing\n")
    os._exit(127)
except OSError as e:
    os.write(2, ("agentjail: %s: %s\n" % (argv[0], e.strerror)).encode("utf-8", "surrogateescape"))
    os._exit(126)
