// strftime prints C's strftime(argv[2], gmtime(argv[1])), for
// TestStrftimeMatchesC. Build: gcc -o strftime strftime.c
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
	if (argc != 3)
		return 2;
	time_t t = (time_t)strtoll(argv[1], NULL, 10);
	struct tm tm;
	char buf[512];
	gmtime_r(&t, &tm);
	size_t n = strftime(buf, sizeof buf, argv[2], &tm);
	fwrite(buf, 1, n, stdout);
	return 0;
}
