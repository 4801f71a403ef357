// mallocs is the target of trace_uprobe_test.go. Build:
//
//	gcc -O0 -g -o mallocs mallocs.c
//
// After each line read from stdin it calls add3(11, -22, 33) and mallocs
// the sizes 70001, 70002, 140003 (log2 buckets 16, 16 and 17), printing
// "ADD3 r", then "SIZE n PTR p" per allocation (p in decimal), then "DONE".
// The blocks are kept, so each pointer is distinct. add3_alias is a second
// name for add3 (one address, two symbols).
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long add3(int a, int b, int c) {
	return (long)a + b + c;
}

long add3_alias(int a, int b, int c) __attribute__((alias("add3")));

int main(void) {
	static const size_t sizes[] = {70001, 70002, 140003};
	char line[64];
	printf("READY\n");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		printf("ADD3 %ld\n", add3(11, -22, 33));
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			void *p = malloc(sizes[i]);
			printf("SIZE %zu PTR %lu\n", sizes[i], (unsigned long)p);
		}
		printf("DONE\n");
		fflush(stdout);
	}
	return 0;
}
