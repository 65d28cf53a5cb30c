#!/usr/bin/env python3
"""Runs one command and prints what it cost, as one line:

    measure.py [--stdout FILE] [--stderr FILE] -- CMD [ARGS...]
    -> WALL_S USER_S SYS_S PEAK_RSS_KIB EXIT_STATUS

Wall time is measured around fork and wait (time.perf_counter); user and system time and the
peak resident set come from the kernel's rusage of the child (wait4), the same numbers
/usr/bin/time -v prints, with microsecond instead of 10 ms resolution. A child killed by a signal
has exit status 128 + the signal number. stdout and stderr default to /dev/null.
"""

import os
import sys
import time


def main():
    args = sys.argv[1:]
    out = err = os.devnull
    while args and args[0] != "--":
        if args[0] == "--stdout" and len(args) > 1:
            out, args = args[1], args[2:]
        elif args[0] == "--stderr" and len(args) > 1:
            err, args = args[1], args[2:]
        else:
            sys.exit(__doc__)
    cmd = args[1:]
    if not cmd:
        sys.exit(__doc__)
    out_fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err_fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(null_fd, 0)
            os.dup2(out_fd, 1)
            os.dup2(err_fd, 2)
            os.execvp(cmd[0], cmd)
        except OSError as e:
            os.write(2, ("measure.py: %s: %s\n" % (cmd[0], e)).encode())
        os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        code = 128 - code
    print("%.4f %.4f %.4f %d %d" % (wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss, code))


if __name__ == "__main__":
    main()
