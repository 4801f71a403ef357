// chain.c: known call chains for the stack capture and unwinding tests.
// Built at test time by stacktest.BuildChain, e.g.
//   gcc -O2 -fomit-frame-pointer -o chain chain.c
//   gcc -O0 -fno-omit-frame-pointer -o chain chain.c
// It reads commands on stdin and prints "done" after each:
//   sort    main → sort_them → qsort (libc) → cmp → leaf
//   levels  main → level1 → level2 → level3 → leaf
//   loop N  N times levels (for benchmarks)
//   loop N D  N times nest D: main → nest → nest … (D+1 calls, small
//           frames) → leaf
//   deep N  main → deep → deep … (N+1 calls, each frame over 1 KiB) → leaf
//   exec    prints "done", then executes itself again (a new image, the
//           same process, reading the same stdin)
// noipa keeps every function a real, separate call (no inlining, cloning
// or interprocedural shortcuts); each call's result is used after it, so
// no call becomes a tail jump. leaf never sets up a frame pointer, as
// leaf functions of -O2 code often do not: its first instruction is not
// `push %rbp`, so the kernel's walk at its entry misses its caller unless
// the capture reads the return address at the stack pointer.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile int sink;

__attribute__((noipa, optimize("omit-frame-pointer"))) int leaf(int x) {
	sink += x;
	return sink & 1;
}

__attribute__((noipa)) int cmp(const void *a, const void *b) {
	int x = *(const int *)a, y = *(const int *)b;
	sink += leaf(x);
	return (x > y) - (x < y);
}

__attribute__((noipa)) void sort_them(int *v, int n) {
	qsort(v, n, sizeof *v, cmp);
	sink += v[0];
}

__attribute__((noipa)) int level3(int x) { return leaf(x) + 1; }
__attribute__((noipa)) int level2(int x) { return level3(x) + 1; }
__attribute__((noipa)) int level1(int x) { return level2(x) + 1; }

// deep's frames are over 1 KiB each, so that a stack of a few spans
// several pages.
__attribute__((noipa)) int deep(int n) {
	volatile char pad[1200];
	pad[0] = (char)n;
	if (n <= 0)
		return leaf(pad[0]) + 1;
	return deep(n - 1) + pad[0];
}

// nest's frames are small: a chain of many frames on one page. The
// store after the call keeps it a call (no tail recursion turned into a
// loop).
__attribute__((noipa)) int nest(int n) {
	int r = n <= 0 ? leaf(n) : nest(n - 1);
	sink += n;
	return r + 1;
}

// reexec executes this program again, as "chain".
__attribute__((noipa)) void reexec(void) {
	char *argv[] = {"chain", NULL};
	execv("/proc/self/exe", argv);
	perror("execv");
	exit(1);
}

int main(void) {
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	// Unbuffered: no command read ahead is lost at exec.
	setvbuf(stdin, NULL, _IONBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		if (!strncmp(line, "sort", 4)) {
			int v[4] = {3, 1, 2, 0};
			sort_them(v, 4);
		} else if (!strncmp(line, "levels", 6)) {
			sink += level1(1);
		} else if (!strncmp(line, "deep ", 5)) {
			sink += deep(atoi(line + 5));
		} else if (!strncmp(line, "loop ", 5)) {
			// atol is called first: tests exit at its uprobe.
			long n = atol(line + 5);
			char *d = strchr(line + 5, ' ');
			int depth = d ? atoi(d) : -1;
			for (long i = 0; i < n; i++)
				sink += depth >= 0 ? nest(depth) : level1(1);
		} else if (!strncmp(line, "exec", 4)) {
			printf("done\n");
			reexec();
		}
		printf("done\n");
	}
	return 0;
}
