/* coldstr maps the file COLDSTR_FILE (a -D macro) privately and never reads
 * it. Each line "K" on stdin fires the USDT probe coldstr:cold with a
 * pointer to the string at offset K MiB of the mapping, whose page the
 * process has not touched (no page table entry: reads with page faults
 * disabled fail), then prints "done". The pages are 1 MiB apart, so a
 * fault on one (and the kernel's fault-around, 64 KiB) maps no other. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sdt.h>

int main(void) {
	int fd = open(COLDSTR_FILE, O_RDONLY);
	if (fd < 0) {
		perror(COLDSTR_FILE);
		return 1;
	}
	char *p = mmap(NULL, 16 << 20, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	char line[32];
	while (fgets(line, sizeof line, stdin)) {
		long k = atol(line);
		char *s = p + (k << 20);
		DTRACE_PROBE1(coldstr, cold, s);
		printf("done\n");
		fflush(stdout);
	}
	return 0;
}
