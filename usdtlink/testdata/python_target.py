# For usdtlink's tests: prints the first line of byo_target, then calls it
# once for each "go" line on stdin and prints "done".
import sys


def byo_target():
    return 1


print(byo_target.__code__.co_firstlineno, flush=True)
for line in sys.stdin:
    if line.strip() == "go":
        byo_target()
        print("done", flush=True)
