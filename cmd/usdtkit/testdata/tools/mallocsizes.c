/* mallocsizes.c: the target of mallocsizes.bt (trace_tools_test.go).
 * Built at test time:
 *   gcc -O1 -g -o mallocsizes mallocsizes.c
 * It prints "ready" and answers each line on stdin with "done"; for a line
 * "go" it first mallocs and frees 2^i + i bytes i+1 times for i from 4 to
 * 20 (221 calls, one histogram bucket per i). It exits at the end of
 * stdin; with the argument "go" (for -c) it does that work once, prints
 * nothing and exits. libc's stdio mallocs too (its buffers): both tracers
 * see the same calls of the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void work(void) {
	for (int i = 4; i <= 20; i++)
		for (int j = 0; j <= i; j++) {
			void *volatile p = malloc((1UL << i) + i);
			free(p);
		}
}

int main(int argc, char **argv) {
	char line[64];
	if (argc > 1 && strcmp(argv[1], "go") == 0) {
		work();
		return 0;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		if (strcmp(line, "go\n") != 0)
			goto answer;
		work();
	answer:
		printf("done\n");
		fflush(stdout);
	}
	return 0;
}
