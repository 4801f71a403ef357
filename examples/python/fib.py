"""A small program for the usdtkit demo: CPython 3.11 fires its USDT
probes (function__entry, line, gc__start, ...) as it runs this."""


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    for n in range(5):
        print(f"fib({n}) = {fib(n)}")


main()
