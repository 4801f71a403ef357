// Build: gcc -g -O1 -fno-omit-frame-pointer -o stack stack.c (the tests
// build it, then split its symbols into a separate debug file).
// On each line of stdin it prints "NAME ADDRESS" lines, then "done"; it
// exits at the end of its input. With the argument "loop" it calls
// level1 (and so leaf) every millisecond until killed, for bpftrace.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int leaf(int x) { return x * 2 + 1; }
__attribute__((noinline)) int level2(int x) { return leaf(x) + 1; }
__attribute__((noinline)) int level1(int x) { return level2(x) + 1; }

int main(int argc, char **argv) {
	char line[256];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && strcmp(argv[1], "loop") == 0) {
		volatile int sink = 0;
		for (;;) {
			sink += level1(sink);
			usleep(1000);
		}
	}
	while (fgets(line, sizeof line, stdin)) {
		printf("leaf %p\n", (void *)leaf);
		printf("level2 %p\n", (void *)level2);
		printf("level1 %p\n", (void *)level1);
		printf("main %p\n", (void *)main);
		printf("done\n");
	}
	return level1(0) == 0;
}
