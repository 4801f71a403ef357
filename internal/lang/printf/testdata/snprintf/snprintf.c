// snprintf formats, as bpftrace 0.17 does, one conversion per record read
// from stdin: a line with the conversion, a line with "i VALUE" (a 64-bit
// integer, passed as bpftrace passes it) or "s STRING". It writes each
// result followed by a NUL byte. For TestPrintfMatchesC.
// Build: gcc -o snprintf snprintf.c
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
	char fmt[256], arg[256], buf[1024];
	while (fgets(fmt, sizeof fmt, stdin) && fgets(arg, sizeof arg, stdin)) {
		fmt[strcspn(fmt, "\n")] = 0;
		arg[strcspn(arg, "\n")] = 0;
		int n;
		if (arg[0] == 'i')
			n = snprintf(buf, sizeof buf, fmt, (long long)strtoll(arg + 2, NULL, 10));
		else
			n = snprintf(buf, sizeof buf, fmt, arg + 2);
		if (n < 0)
			return 1;
		// bpftrace writes the buffer as a C string.
		fputs(buf, stdout);
		putchar(0);
	}
	return 0;
}
