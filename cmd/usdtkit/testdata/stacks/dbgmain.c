// dbgmain.c: calls dbglib.c's dbg_entry for each line on stdin and prints
// "done".
#include <stdio.h>

int dbg_entry(int x);

int main(void) {
	char line[64];
	int s = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		s += dbg_entry(1);
		printf("done\n");
	}
	return s == -1;
}
