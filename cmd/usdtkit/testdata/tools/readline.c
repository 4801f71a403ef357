/* readline.c: the target of bashreadline.bt (trace_tools_test.go), a
 * stand-in for bash, whose readline needs a terminal. Built at test time:
 *   gcc -O1 -g -o readline readline.c
 * It prints "ready" and answers each line on stdin with "done"; for a line
 * "go" it first calls its own readline() once per entry of lines[], each
 * returning a fresh heap copy of the entry. It exits at the end of stdin.
 * With the argument "go" (for -c) it does that work once, prints nothing
 * and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *lines[] = {"ls -l", "cd /tmp", "echo 'hello world'", "ls -l", "exit"};
static unsigned next;

__attribute__((noinline)) char *readline(const char *prompt) {
	__asm__ volatile("" ::: "memory");
	(void)prompt;
	return strdup(lines[next++ % (sizeof lines / sizeof lines[0])]);
}

static void work(void) {
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		free(readline("$ "));
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
