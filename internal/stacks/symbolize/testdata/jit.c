// Build: gcc -O1 -o jit jit.c (the tests build it).
// It maps an anonymous executable page, as a JIT compiler does, and writes
// /tmp/perf-PID.map naming two "functions" in it. On each line of stdin
// it prints "NAME ADDRESS" lines, then "done"; on the line "more" it
// appends a third symbol to the map and prints its line; at the end of its
// input it removes the map and exits.
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
	char line[256], path[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	page[0] = 0xc3;  // ret
	snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx 40 LJava/lang/String;::hashCode\n", (unsigned long)page);
	fprintf(f, "%lx 20 jit stub with spaces\n", (unsigned long)page + 0x40);
	fclose(f);
	while (fgets(line, sizeof line, stdin)) {
		if (line[0] == 'm') {  // "more": a third symbol, appended
			f = fopen(path, "a");
			if (!f)
				return 1;
			fprintf(f, "%lx 10 compiled later\n", (unsigned long)page + 0x80);
			fclose(f);
			printf("compiled later %p\n", (void *)(page + 0x80));
			printf("done\n");
			continue;
		}
		printf("LJava/lang/String;::hashCode %p\n", (void *)page);
		printf("jit stub with spaces %p\n", (void *)(page + 0x40));
		printf("done\n");
	}
	unlink(path);
	return 0;
}
