// stackslots.c: the target of TestStacksSlots (trace/stacks_slots_test.go),
// built there with gcc -O0 -fno-omit-frame-pointer. nofp has no frame
// pointer, so a uprobe at its entry needs the caller word: "two A B" calls
// it A times from one call site of two() and B times from another (one
// frame-pointer walk, two callers); "deep N R" calls it R times at each
// recursion depth 0..N-1 of deep() (N stacks). Each command prints "done".
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile int sink;

__attribute__((noinline, optimize("omit-frame-pointer"))) int nofp(int x) {
	sink += x;
	return sink & 1;
}

__attribute__((noinline)) int two(int a, int b) {
	int r = 0;
	for (int i = 0; i < a; i++)
		r += nofp(1);
	for (int i = 0; i < b; i++)
		r += nofp(2);
	return r;
}

__attribute__((noinline)) int deep(int d) {
	if (d == 0)
		return nofp(3);
	return deep(d - 1) + 1;
}

int main(void) {
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		int a = 0, b = 0;
		if (sscanf(line, "two %d %d", &a, &b) == 2)
			sink += two(a, b);
		else if (sscanf(line, "deep %d %d", &a, &b) == 2)
			for (int d = 0; d < a; d++)
				for (int i = 0; i < b; i++)
					sink += deep(d);
		printf("done\n");
	}
	return 0;
}
